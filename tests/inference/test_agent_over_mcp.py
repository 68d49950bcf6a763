"""An agent through MCP alone — no REST call, no portal — on the module's GPU cluster running the HyperPod inference
operator: it deploys a managed endpoint from a model in the team's bucket with an L1+L2 KV cache and prefix-aware
routing, chats with it, and deletes it once a team admin approves; it deploys a 2-replica SGLang endpoint behind the
SGLang router and reads each worker's load; it turns KEDA autoscaling on for a vLLM endpoint and watches it scale out
under a load test and back in, then turns it off. Each long change is followed with ``wait_for_operation`` to a
terminal state before the agent says it is done. The harness only plays the world around the agent (a slow model, a
load test) and the person who approves."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from kubernetes import client as k8s

from cloud import kube_manifests
from mcp_server.auth import Caller, caller_for_secret
from mcp_server.testing import call_tool_as
from sandbox.sim.serving import TOKEN_SECONDS_ANNOTATION
from tests.inference.conftest import kube_api
from tests.mcp_server.test_operations_tools import quick_waits, worker  # noqa: F401 - fixtures
from tests.sandbox.sim.harness import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("worker", "quick_waits")]


@pytest.fixture
def agent(cast, token_for) -> Caller:
    """The MCP caller of an operator of the team (operators deploy and change endpoints)."""
    return caller_for_secret(token_for(cast.operator))


def tool(caller: Caller, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    result = call_tool_as(caller, name, arguments)
    assert not result.is_error, (name, result.structured_content)
    return result.structured_content


def follow(caller: Caller, answer: dict[str, Any]) -> None:
    """Poll the answer's operation with ``wait_for_operation`` until it is terminal; it must have succeeded."""
    for _ in range(200):
        waited = tool(caller, "wait_for_operation", {"operation_id": answer["operation"]["id"], "timeout_seconds": 5})
        if not waited["summary"].startswith("STILL RUNNING"):
            break
    assert waited["summary"].startswith("SUCCEEDED"), waited["summary"]


def chat(caller: Caller, endpoint_id: int, text: str, *, max_tokens: int = 4) -> dict[str, Any]:
    return tool(caller, "call_endpoint", {"endpoint_id": endpoint_id, "max_tokens": max_tokens,
                                          "messages": [{"role": "user", "content": text}]})


def test_a_managed_endpoint_with_kv_cache_and_prefix_routing_is_deployed_called_and_deleted(agent, api, cast,
                                                                                             managed_cluster):
    cluster = managed_cluster
    groups = tool(agent, "list_instance_groups", {"cluster_id": cluster.pk})["results"]
    models = tool(agent, "list_bucket_models", {"cluster_id": cluster.pk})["models"]
    assert [model["name"] for model in models] == ["llama"]
    answer = tool(agent, "create_managed_endpoint", {
        "cluster": cluster.pk, "name": "llama", "model_source": "shared", "model": "models/llama",
        "instance_type": groups[0]["instance_type"], "kv_cache": {"l1": True, "l1_size_gib": 20,
                                                                  "l2_backend": "tieredstorage"},
        "routing": {"strategy": "prefixaware"}})
    assert answer["endpoint"]["state"] == "deploying", "a submitted deploy is not serving"
    follow(agent, answer)
    endpoint = tool(agent, "get_managed_endpoint", {"endpoint_id": answer["endpoint"]["id"]})
    assert endpoint["state"] == "ready" and endpoint["ready_replicas"] == endpoint["replicas"] == 1
    assert endpoint["observed"]["state"] == "DeploymentComplete"
    assert "KV cache L1 + L2 (tieredstorage); intelligent routing prefixaware" in next(
        entry["message"] for entry in endpoint["observed"]["conditions"] if entry["type"] == "DeploymentComplete")
    said = chat(agent, endpoint["id"], "Hello there")
    assert len(said["choices"][0]["message"]["content"].split()) == 4

    # A delete is held for a team admin's approval: the agent follows the request, a person approves it (in the
    # portal or over REST — no tool decides), and the agent then waits for the operation it became.
    held = tool(agent, "delete_managed_endpoint", {"endpoint_id": endpoint["id"]})
    assert held["code"] == "approval_required" and held["approval_request"]["state"] == "pending"
    request_id = held["approval_request"]["id"]
    assert tool(agent, "get_managed_endpoint", {"endpoint_id": endpoint["id"]})["state"] == "ready", "nothing yet"
    approved = api(cast.admin).post(f"/api/v1/approval-requests/{request_id}/approve", {"reason": "done with it"})
    assert approved.status_code == 200, approved.content
    request = tool(agent, "get_approval_request", {"request_id": request_id})
    assert request["state"] == "executed" and request["operation_id"]
    follow(agent, {"operation": {"id": request["operation_id"]}})
    assert tool(agent, "get_managed_endpoint", {"endpoint_id": endpoint["id"]})["state"] == "deleted"


def test_a_two_replica_sglang_endpoint_serves_through_the_router(agent, shared_cluster):
    answer = tool(agent, "deploy_endpoint", {"cluster": shared_cluster.pk, "name": "routed", "engine": "sglang",
                                             "model": "models/qwen", "gpus": 1, "replicas": 2})
    assert answer["endpoint"]["router"]["policy"] == "cache_aware"
    follow(agent, answer)
    endpoint_id = answer["endpoint"]["id"]
    replies = {chat(agent, endpoint_id, "The same long question, asked again")["choices"][0]["message"]["content"]
               for _ in range(3)}
    assert len(replies) == 1
    router = tool(agent, "get_endpoint", {"endpoint_id": endpoint_id})["observed"]["router"]
    assert router["active_workers"] == 2
    assert sorted(entry["processed"] for entry in router["workers"]) == [0, 3], "cache-aware: one worker"


def _replicas(cluster, namespace: str, name: str) -> int:
    return int(k8s.AppsV1Api(kube_api(cluster)).read_namespaced_deployment_scale(name, namespace).spec.replicas or 0)


def _slow_model_under_load(cluster, namespace: str, name: str, requests: int) -> list[threading.Thread]:
    """The world: the model takes 20 simulated seconds a token, and a load test sends ``requests`` at once."""
    apps = k8s.AppsV1Api(kube_api(cluster))
    apps.patch_namespaced_deployment(name, namespace, {"spec": {"template": {"metadata": {"annotations": {
        TOKEN_SECONDS_ANNOTATION: "20"}}}}})
    wait_for(lambda: apps.read_namespaced_deployment(name, namespace).status,
             lambda status: status.updated_replicas == status.ready_replicas == status.replicas == 1, timeout=30)
    body = {"model": name, "messages": [{"role": "user", "content": "load"}], "max_tokens": 16, "stream": True}
    url = f"/api/v1/namespaces/{namespace}/services/{name}:80/proxy/v1/chat/completions"
    threads = [threading.Thread(target=kube_manifests.send, args=(kube_api(cluster), "POST", url),
                                kwargs={"body": body}) for _ in range(requests)]
    for thread in threads:
        thread.start()
    return threads


def test_keda_autoscaling_scales_out_under_load_and_back_in(agent, shared_cluster):
    answer = tool(agent, "deploy_endpoint", {
        "cluster": shared_cluster.pk, "name": "auto", "model": "models/qwen", "gpus": 1,
        "command": ["vllm", "serve", "/mnt/shared/models/qwen", "--served-model-name", "auto", "--port", "8000",
                    "--max-num-seqs", "1"]})
    follow(agent, answer)
    endpoint_id, namespace = answer["endpoint"]["id"], answer["endpoint"]["namespace"]
    turned_on = tool(agent, "set_endpoint_autoscaling", {
        "endpoint_id": endpoint_id, "metric": "waiting_requests", "target": 1, "min_replicas": 1, "max_replicas": 3,
        "cooldown_seconds": 60, "polling_seconds": 5})
    follow(agent, turned_on)

    threads = _slow_model_under_load(shared_cluster, namespace, "auto", 5)
    # The agent watches the endpoint's autoscaling view until its scaling history shows the scale-out. (Not the
    # desired replicas: at the tests' time scale the load is over, and the HPA back at 1, within about a second.)
    seen = wait_for(lambda: tool(agent, "get_endpoint", {"endpoint_id": endpoint_id})["observed"].get("autoscaling"),
                    lambda scaling: any(event["reason"] == "SuccessfulRescale" and event["message"].startswith(
                        "New size: 3;") for event in (scaling or {}).get("history", [])), timeout=30)
    assert seen["metric_name"] == "vllm:num_requests_waiting" and seen["target"] == 1.0
    for thread in threads:
        thread.join()
    wait_for(lambda: tool(agent, "get_endpoint", {"endpoint_id": endpoint_id})["observed"]["autoscaling"],
             lambda scaling: scaling["desired_replicas"] == 1, timeout=30)
    wait_for(lambda: _replicas(shared_cluster, namespace, "auto"), lambda count: count == 1, timeout=30)

    follow(agent, tool(agent, "disable_endpoint_autoscaling", {"endpoint_id": endpoint_id}))
    assert tool(agent, "get_endpoint", {"endpoint_id": endpoint_id})["autoscaling"] == {}
