"""Playbooks (``docs/playbooks``) over MCP: prompts with arguments, resources, the tools they name, and scripted
agents (no LLM) that follow the create-cluster playbook to an active cluster, the train-model playbook to a job that
succeeded, and the deploy-model playbook from a Hub repository to a model that answers (then scale it) through MCP
alone — each resuming an interrupted run from the state it reads."""

from __future__ import annotations

import re
from typing import Any

import pytest
from mcp import Client, MCPError

from config import playbooks
from mcp_server.auth import Caller, caller_for_secret
from mcp_server.server import VERSION, bind_catalog
from mcp_server.testing import call_tool_as, with_client
from tests.mcp_server.test_operations_tools import quick_waits, worker  # noqa: F401 - fixtures
from tests.training.sandbox import training_cluster

CATALOG_TOOLS = set(bind_catalog())
BOOKS = playbooks.playbooks()


def test_the_workflows_have_playbooks_naming_only_catalog_tools():
    assert {"create-cluster", "add-instance-group", "train-model", "download-model", "deploy-model"} <= set(BOOKS)
    for book in BOOKS.values():
        assert book.tools, book.name
        assert set(book.tools) <= CATALOG_TOOLS, (book.name, set(book.tools) - CATALOG_TOOLS)
        assert "[[" not in book.text and book.version >= 1


@pytest.mark.parametrize("name", sorted(BOOKS))
def test_every_playbook_states_the_three_rules_and_how_to_resume(name):
    text = BOOKS[name].text
    rules = " ".join(text[:text.index("## 1.")].split())
    assert "**Poll to the end" in rules and "done" in rules
    assert "**Ask only decisions" in rules and "never the region" in rules.lower()
    assert "**Inspect before" in rules
    assert "CIDR" in rules
    flat = " ".join(text.replace("*", "").split()).lower()
    assert ("a training plan's zone overrides the user's zone" in flat) is ("list_training_plans" in BOOKS[name].tools)
    assert "## 1. Resume" in text


def test_a_malformed_playbook_is_refused():
    with pytest.raises(ValueError, match="no front matter"):
        playbooks.parse("x", "# no front matter\n")
    with pytest.raises(ValueError, match="incomplete front matter"):
        playbooks.parse("x", "---\ntitle: X\n---\nbody\n")


def test_the_portal_shows_the_playbooks_to_anyone_signed_in(client, cast):
    assert client.get("/settings/playbooks/").status_code == 302  # to the login page
    client.force_login(cast.viewer)
    listing = client.get("/settings/playbooks/").content.decode()
    for book in BOOKS.values():
        assert f'href="/settings/playbooks/{book.name}/"' in listing and book.title in listing
    page = client.get("/settings/playbooks/create-cluster/").content.decode()
    assert "<code>wait_for_operation</code>" in page and "[[" not in page and "version 1" in page
    assert client.get("/settings/playbooks/nope/").status_code == 404


@pytest.fixture
def admin_caller(cast, token_for) -> Caller:
    cast.admin.current_team = cast.team
    cast.admin.save()
    return caller_for_secret(token_for(cast.admin))


def test_prompts_and_resources_through_the_client(admin_caller):
    async def exchange(client: Client) -> dict[str, Any]:
        listed = await client.list_prompts()
        prompt = await client.get_prompt("create-cluster", {"zone": "us-west-2b", "instance_type": ""})
        resources = await client.list_resources()
        read = await client.read_resource("instantstart://playbooks/train-model")
        errors = []
        for bad in (client.get_prompt("create-cluster", {"cidr": "10.0.0.0/16"}), client.get_prompt("nope"),
                    client.read_resource("instantstart://playbooks/nope")):
            with pytest.raises(MCPError) as raised:
                await bad
            errors.append(str(raised.value))
        return {"listed": listed, "prompt": prompt, "resources": resources, "read": read, "errors": errors,
                "server": client.server_info}

    got = with_client(admin_caller, exchange)
    prompts = {prompt.name: prompt for prompt in got["listed"].prompts}
    assert set(prompts) == set(BOOKS)
    assert {argument.name for argument in prompts["create-cluster"].arguments} == {
        "cluster_name", "zone", "instance_type", "instance_count", "capacity_type"}
    assert not any(argument.required for argument in prompts["create-cluster"].arguments)
    [message] = got["prompt"].messages
    assert message.role == "user"
    assert "Already chosen by the user" in message.content.text and "- zone: us-west-2b" in message.content.text
    assert "instance_type:" not in message.content.text.split("# Create")[0]  # empty means not chosen
    assert "`wait_for_operation`" in message.content.text
    resources = {str(resource.uri): resource for resource in got["resources"].resources}
    assert set(resources) == {f"instantstart://playbooks/{name}" for name in BOOKS}
    assert resources["instantstart://playbooks/train-model"].mime_type == "text/markdown"
    [content] = got["read"].contents
    assert content.text == BOOKS["train-model"].text
    assert "takes no argument cidr" in got["errors"][0]
    assert "nope" in got["errors"][1] and "nope" in got["errors"][2]
    assert got["server"].version == VERSION != ""


# The scripted agent ------------------------------------------------------------------------------------------------

_NAMED = re.compile(r"`([a-z][a-z0-9_]*)`")


class PlaybookAgent:
    """Follows one playbook as an agent would, knowing only what MCP tells it: the prompt's text (with the
    decisions in ``chosen``) and the tool list. It may call only tools the playbook names, and polls until the
    playbook's terminal words."""

    playbook_name = ""

    def __init__(self, caller: Caller, chosen: dict[str, Any], *, stop_after: str | None = None):
        self.caller = caller
        self.stop_after = stop_after
        self.calls: list[str] = []

        async def read(client: Client) -> tuple[str, set[str]]:
            prompt = await client.get_prompt(self.playbook_name, chosen)
            tools = {tool.name for tool in (await client.list_tools()).tools}
            return prompt.messages[0].content.text, tools

        self.playbook, tools = with_client(caller, read)
        self.allowed = set(_NAMED.findall(self.playbook)) & tools

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        assert name in self.allowed, f"the playbook names no tool {name}"
        self.calls.append(name)
        result = call_tool_as(self.caller, name, arguments)
        assert not result.is_error, (name, result.structured_content)
        return result.structured_content

    def wait(self, operation_id: int) -> None:
        """Poll ``wait_for_operation`` until its summary is terminal; the playbook's happy path needs SUCCEEDED."""
        for _ in range(200):
            waited = self.call("wait_for_operation", {"operation_id": operation_id, "timeout_seconds": 5})
            if not waited["summary"].startswith("STILL RUNNING"):
                break
        assert waited["summary"].startswith("SUCCEEDED"), waited["summary"]


class ScriptedAgent(PlaybookAgent):
    """The create-cluster playbook, for a cluster named ``scripted``."""

    playbook_name = "create-cluster"

    def __init__(self, caller: Caller, *, stop_after: str | None = None):
        super().__init__(caller, {"cluster_name": "scripted"}, stop_after=stop_after)

    def run(self) -> dict[str, Any] | None:
        # 1. Resume: read state before anything else.
        clusters = {cluster["name"]: cluster for cluster in self.call("list_clusters")["results"]}
        operations = self.call("list_operations")["results"]
        existing = clusters.get("scripted")
        if existing is not None and existing["state"] == "creating":
            operation = next(op for op in operations if op["kind"] == "cluster.create"
                             and op["params"].get("cluster_id") == existing["id"])
            return self.follow(operation["id"])
        assert existing is None, existing
        # 2. Inspect.
        zone = self.call("list_availability_zones")["results"][0]["name"]
        types = self.call("list_instance_types", {"zone": zone, "accelerated": True})["results"]
        quotas = {quota["instance_type"]: quota["value"] for quota in self.call("list_cluster_quotas")["results"]}
        plans = self.call("list_training_plans")["results"]
        # 3. The user's decisions, from what the tools offered (a fresh sandbox has no plan: on-demand).
        assert plans == []
        choice = next(t["name"] for t in types if t["accelerator_count"] > 0 and quotas.get(t["name"], 0) >= 1)
        # 4. Create, with a key kept for a repeat.
        answer = self.call("create_cluster", {"name": "scripted", "zone": zone, "instance_type": choice,
                                              "instance_count": 1, "capacity_type": "on-demand",
                                              "idempotency_key": "scripted-create"})
        assert answer["operation"]["state"] in ("pending", "running"), "a submitted request is not done"
        if self.stop_after == "create_cluster":
            return None
        return self.follow(answer["operation"]["id"])

    def follow(self, operation_id: int) -> dict[str, Any]:
        # 5. Poll to a terminal state; 6. confirm.
        self.wait(operation_id)
        cluster = self.call("get_cluster")
        assert cluster["state"] == "active" and cluster["name"] == "scripted"
        return cluster


@pytest.mark.usefixtures("worker", "quick_waits")
def test_a_scripted_agent_follows_the_create_cluster_playbook_and_resumes_it(sandbox, admin_caller):
    interrupted = ScriptedAgent(admin_caller, stop_after="create_cluster")
    assert interrupted.run() is None
    assert interrupted.calls[:2] == ["list_clusters", "list_operations"], "state is read before anything else"

    resumed = ScriptedAgent(admin_caller)
    cluster = resumed.run()
    assert cluster is not None and cluster["state"] == "active"
    assert "create_cluster" not in resumed.calls, "the resumed run created nothing again"
    assert resumed.calls[:2] == ["list_clusters", "list_operations"] and resumed.calls[-1] == "get_cluster"


class TrainModelAgent(PlaybookAgent):
    """The train-model playbook: the user chose the PyTorch recipe, the script ``train.py`` in the team's bucket, one
    GPU per node and the name ``scripted-train``; the agent picks the group, submits and follows the job."""

    playbook_name = "train-model"
    #: A short run in the sandbox (its simulated trainer's steps); a user's config passes such annotations through.
    QUICK = {"sandbox.instantstart.dev/steps": "12"}

    def __init__(self, caller: Caller, *, stop_after: str | None = None):
        super().__init__(caller, {"recipe": "pytorch", "gpu_count": "1"}, stop_after=stop_after)

    def run(self) -> dict[str, Any] | None:
        # 1. Resume: a job of that name may already be on its way.
        jobs = {job["name"]: job for job in self.call("list_training_jobs")["results"]}
        existing = jobs.get("scripted-train")
        if existing is not None and existing["state"] in ("pending", "submitting", "running"):
            return self.follow(existing["id"])
        assert existing is None, existing
        # 2. Inspect: the active cluster, its groups, the training operator, the recipe's fields.
        cluster = self.call("get_active_cluster")["cluster"] or next(
            item for item in self.call("list_clusters")["results"] if item["state"] == "active")
        assert cluster["state"] == "active"
        groups = self.call("list_instance_groups", {"cluster_id": cluster["id"]})["results"]
        features = {item["feature"]: item for item in self.call(
            "get_advanced_features", {"cluster_id": cluster["id"]})["features"]}
        assert features["training_operator"]["enabled"], "the recipe needs the training operator"
        recipes = {recipe["slug"]: recipe for recipe in self.call("list_recipes")["results"]}
        assert "pytorch" in recipes
        group = max(groups, key=lambda item: item["current_count"])
        # 4. Submit with the user's decisions, a key kept for a repeat.
        answer = self.call("submit_training_job", {
            "cluster": cluster["id"], "recipe": "pytorch", "name": "scripted-train",
            "config": {"script": "train.py", "instance_group": group["name"], "replicas": group["current_count"],
                       "gpus_per_node": 1, "annotations": self.QUICK},
            "idempotency_key": "scripted-train"})
        assert answer["job"]["state"] in ("pending", "submitting"), "a submitted job is not done"
        if self.stop_after == "submit_training_job":
            return None
        return self.follow(answer["job"]["id"])

    def follow(self, job_id: int) -> dict[str, Any]:
        # 5. Follow it to a terminal summary; confirm.
        for _ in range(400):
            waited = self.call("wait_for_training_job", {"job_id": job_id, "timeout_seconds": 5})
            if not waited["summary"].startswith("STILL RUNNING"):
                break
        assert waited["summary"].startswith("SUCCEEDED"), waited["summary"]
        job = self.call("get_training_job", {"job_id": job_id})
        assert job["state"] == "succeeded" and job["name"] == "scripted-train"
        return job


@pytest.mark.usefixtures("worker", "quick_waits")
def test_a_scripted_agent_follows_the_train_model_playbook_and_resumes_it(sandbox, cast, admin_caller):
    training_cluster(cast.team, count=1, ray=False)
    interrupted = TrainModelAgent(admin_caller, stop_after="submit_training_job")
    assert interrupted.run() is None
    assert interrupted.calls[0] == "list_training_jobs", "state is read before anything else"
    assert interrupted.calls.index("get_advanced_features") < interrupted.calls.index("submit_training_job")

    resumed = TrainModelAgent(admin_caller)
    job = resumed.run()
    assert job is not None and job["state"] == "succeeded"
    assert "submit_training_job" not in resumed.calls, "the resumed run submitted nothing again"
    assert resumed.calls[0] == "list_training_jobs" and resumed.calls[-1] == "get_training_job"


class DeployModelAgent(PlaybookAgent):
    """The deploy-model playbook: the user chose the model (a Hub repository not yet in the bucket), one GPU, the
    in-cluster exposure and the name ``qwen``; the agent downloads it, deploys it and calls it."""

    playbook_name = "deploy-model"
    REPO = "Qwen/Qwen2.5-0.5B-Instruct"

    def __init__(self, caller: Caller, *, stop_after: str | None = None):
        super().__init__(caller, {"model": self.REPO, "gpu_count": "1", "exposure": "cluster_ip", "name": "qwen"},
                         stop_after=stop_after)

    def run(self) -> dict[str, Any] | None:
        # 1. Resume: the endpoint, or a download of its model, may already be on its way.
        endpoint = next((item for item in self.call("list_endpoints")["results"] if item["name"] == "qwen"), None)
        downloads = self.call("list_model_downloads")["results"]
        if endpoint is not None and endpoint["state"] in ("deploying", "updating"):
            return self.follow(endpoint["operation"], endpoint["id"])
        assert endpoint is None and downloads == [], (endpoint, downloads)
        # 2. Inspect: the cluster, its groups and their GPUs, the bucket's models.
        cluster = next(item for item in self.call("list_clusters")["results"] if item["state"] == "active")
        groups = self.call("list_instance_groups", {"cluster_id": cluster["id"]})["results"]
        types = {item["name"]: item for item in self.call(
            "list_instance_types", {"zone": groups[0]["zone"], "accelerated": True})["results"]}
        group = next(item for item in groups if types[item["instance_type"]]["accelerator_count"] >= 1)
        models = self.call("list_bucket_models", {"cluster_id": cluster["id"]})["models"]
        # 4. The model is not in the bucket: download it and poll to the end.
        assert "qwen" not in {item["name"] for item in models}
        started = self.call("download_model", {"cluster": cluster["id"], "name": "qwen", "repo_id": self.REPO,
                                               "idempotency_key": "scripted-download"})
        assert started["download"]["state"] in ("pending", "running"), "a started download is not done"
        self.wait(started["operation"]["id"])
        download = self.call("get_model_download", {"download_id": started["download"]["id"]})
        assert download["state"] == "succeeded" and download["files_done"] == download["files_total"]
        models = self.call("list_bucket_models", {"cluster_id": cluster["id"]})["models"]
        assert [(item["name"], item["path"]) for item in models] == [("qwen", "/mnt/shared/models/qwen")]
        # 5. Deploy with the user's decisions, a key kept for a repeat.
        answer = self.call("deploy_endpoint", {
            "cluster": cluster["id"], "name": "qwen", "model": download["path"], "gpus": 1,
            "instance_group": group["name"], "exposure": "cluster_ip", "idempotency_key": "scripted-deploy"})
        assert answer["endpoint"]["state"] == "deploying", "a submitted deploy is not serving"
        if self.stop_after == "deploy_endpoint":
            return None
        return self.follow(answer["operation"]["id"], answer["endpoint"]["id"])

    def follow(self, operation_id: int, endpoint_id: int) -> dict[str, Any]:
        # 6. Poll to a terminal state; 7. confirm it serves.
        self.wait(operation_id)
        endpoint = self.call("get_endpoint", {"endpoint_id": endpoint_id})
        assert endpoint["state"] == "ready" and endpoint["ready_replicas"] == endpoint["replicas"], endpoint
        served = self.call("list_endpoint_models", {"endpoint_id": endpoint_id})["data"][0]["id"]
        answer = self.call("call_endpoint", {"endpoint_id": endpoint_id, "max_tokens": 3,
                                             "messages": [{"role": "user", "content": "Hello"}]})
        assert answer["model"] == served and len(answer["choices"][0]["message"]["content"].split()) == 3
        return endpoint


@pytest.mark.usefixtures("worker", "quick_waits")
def test_a_scripted_agent_follows_the_deploy_model_playbook_and_resumes_it(sandbox, cast, admin_caller):
    training_cluster(cast.team, instance_type="ml.g5.12xlarge", count=1, operator=False, ray=False)
    interrupted = DeployModelAgent(admin_caller, stop_after="deploy_endpoint")
    assert interrupted.run() is None
    assert interrupted.calls[:2] == ["list_endpoints", "list_model_downloads"], "state is read before anything else"
    assert interrupted.calls.index("download_model") < interrupted.calls.index("deploy_endpoint")

    resumed = DeployModelAgent(admin_caller)
    endpoint = resumed.run()
    assert endpoint is not None and endpoint["name"] == "qwen"
    assert not {"download_model", "deploy_endpoint"} & set(resumed.calls), "the resumed run created nothing again"
    assert resumed.calls[-1] == "call_endpoint"

    # Beyond the playbook, on the same endpoint: scale it and filter by exposure, each answering what REST does.
    def tool(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = call_tool_as(admin_caller, name, arguments)
        assert not result.is_error, (name, result.structured_content)
        return result.structured_content

    resumed.wait(tool("update_endpoint", {"endpoint_id": endpoint["id"], "replicas": 2})["operation"]["id"])
    assert tool("get_endpoint", {"endpoint_id": endpoint["id"]})["ready_replicas"] == 2
    assert [item["name"] for item in tool("list_endpoints", {"exposure": ["cluster_ip"]})["results"]] == ["qwen"]
    assert tool("list_endpoints", {"exposure": ["internet_lb"]})["results"] == []
