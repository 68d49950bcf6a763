"""An agent, through MCP alone, downloads a model into the team's bucket, deploys it with vLLM, reads its models,
chats with it, scales it to two replicas and deletes it; every tool answers what REST answers."""

from __future__ import annotations

import pytest

from mcp_server.testing import call_tool
from operations.models import Operation
from tests.training.sandbox import training_cluster


@pytest.mark.django_db(transaction=True)
def test_an_agent_downloads_deploys_calls_scales_and_deletes(cast, token_for, sandbox, drive):
    cluster = training_cluster(cast.team, instance_type="ml.g5.12xlarge", count=1, operator=False, ray=False)
    secret = token_for(cast.operator)

    def tool(name: str, arguments: dict | None = None) -> dict:
        is_error, body = call_tool(secret, name, arguments or {})
        assert not is_error, (name, body)
        return body

    def finish(body: dict) -> None:
        assert drive(Operation.objects.get(pk=body["operation"]["id"]), timeout=60).state == "succeeded"

    finish(tool("download_model", {"cluster": cluster.pk, "name": "qwen", "repo_id": "Qwen/Qwen2.5-0.5B-Instruct"}))
    models = tool("list_bucket_models", {"cluster_id": cluster.pk})["models"]
    assert [(model["name"], model["path"]) for model in models] == [("qwen", "/mnt/shared/models/qwen")]

    deployed = tool("deploy_endpoint", {"cluster": cluster.pk, "name": "qwen", "model": models[0]["path"], "gpus": 1})
    finish(deployed)
    endpoint_id = deployed["endpoint"]["id"]
    assert tool("list_endpoint_models", {"endpoint_id": endpoint_id})["data"][0]["id"] == "qwen"
    answer = tool("call_endpoint", {"endpoint_id": endpoint_id, "messages": [{"role": "user", "content": "Hi"}],
                                    "max_tokens": 4})
    assert len(answer["choices"][0]["message"]["content"].split()) == 4
    finish(tool("update_endpoint", {"endpoint_id": endpoint_id, "replicas": 2}))
    assert tool("get_endpoint", {"endpoint_id": endpoint_id})["ready_replicas"] == 2
    assert [item["name"] for item in tool("list_endpoints", {"exposure": ["cluster_ip"]})["results"]] == ["qwen"]
    finish(tool("delete_endpoint", {"endpoint_id": endpoint_id}))
    assert tool("get_endpoint", {"endpoint_id": endpoint_id})["state"] == "deleted"
