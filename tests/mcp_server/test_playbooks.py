"""Playbooks (``docs/playbooks``) over MCP: prompts with arguments, resources, the tools they name, and a scripted
agent (no LLM) that follows the create-cluster playbook through MCP to an active cluster — and resumes an
interrupted run from the state it reads."""

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

CATALOG_TOOLS = set(bind_catalog())
BOOKS = playbooks.playbooks()


def test_the_workflows_have_playbooks_naming_only_catalog_tools():
    assert {"create-cluster", "add-instance-group", "train-model"} <= set(BOOKS)
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
    assert "a training plan's zone overrides the user's zone" in flat or name == "train-model"
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


class ScriptedAgent:
    """Follows the create-cluster playbook as an agent would, knowing only what MCP tells it: the prompt's text and
    the tool list. It may call only tools the playbook names, and polls until the playbook's terminal words."""

    def __init__(self, caller: Caller, *, stop_after: str | None = None):
        self.caller = caller
        self.stop_after = stop_after
        self.calls: list[str] = []

        async def read(client: Client) -> tuple[str, set[str]]:
            prompt = await client.get_prompt("create-cluster", {"cluster_name": "scripted"})
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
        for _ in range(200):
            waited = self.call("wait_for_operation", {"operation_id": operation_id, "timeout_seconds": 5})
            if not waited["summary"].startswith("STILL RUNNING"):
                break
        assert waited["summary"].startswith("SUCCEEDED"), waited["summary"]
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
