"""The node tools (MCP, over the REST API with the caller's token) and the portal's nodes page."""

from __future__ import annotations

import re

from django.test import Client
from django.urls import reverse

from clusters import node_actions  # noqa: F401  (registers the node pipelines, as clusters.apps does)
from clusters.models import ActiveCluster
from mcp_server.testing import call_tool
from operations.models import Operation
from tests import matrix  # noqa: F401  (loads tests.matrix_nodes after the names it builds on)
from tests.matrix_nodes import running_node, sandbox_nodes_cluster


def portal_codes(response) -> set[str]:
    return set(re.findall(r'data-error-code="([^"]+)"', response.content.decode()))


def test_an_agent_lists_and_reboots_nodes_of_its_active_cluster(cast, token_for, sandbox, drive):
    cluster = sandbox_nodes_cluster(cast.team, groups={"workers": 2})
    ActiveCluster.objects.create(user=cast.operator, team=cast.team, cluster=cluster)
    cast.operator.current_team = cast.team
    cast.operator.save()
    secret = token_for(cast.operator)

    is_error, page = call_tool(secret, "list_cluster_nodes", {"page_size": 1})
    assert not is_error, page
    assert len(page["results"]) == 1 and page["next"]
    cursor = re.search(r"cursor=([^&]+)", page["next"]).group(1)
    is_error, second = call_tool(secret, "list_cluster_nodes", {"page_size": 1, "cursor": cursor})
    assert not is_error and second["results"][0]["instance_id"] != page["results"][0]["instance_id"]
    node = page["results"][0]["instance_id"]

    is_error, refused = call_tool(secret, "replace_cluster_nodes", {"node_ids": [node]})
    assert is_error and refused["fields"]["confirm_data_loss"][0]["code"] == "confirmation_required"
    is_error, refused = call_tool(secret, "delete_cluster_nodes", {"node_ids": [node]})
    assert is_error and refused["code"] == "permission_denied"

    is_error, started = call_tool(secret, "reboot_cluster_nodes", {"node_ids": [node], "idempotency_key": "r-1"})
    assert not is_error, started
    is_error, again = call_tool(secret, "reboot_cluster_nodes", {"node_ids": [node], "idempotency_key": "r-1"})
    assert not is_error and again["operation"]["id"] == started["operation"]["id"]
    operation = drive(Operation.objects.get(pk=started["operation"]["id"]), timeout=30)
    assert operation.source == "mcp"
    is_error, waited = call_tool(secret, "wait_for_operation", {"operation_id": operation.pk, "timeout_seconds": 0})
    assert not is_error and waited["state"] == "succeeded" and waited["summary"].startswith("SUCCEEDED")


def test_the_nodes_page_shows_the_table_and_only_the_actions_each_role_may_take(cast, sandbox):
    cluster = sandbox_nodes_cluster(cast.team, groups={"workers": 2})
    url = reverse("cluster-nodes", args=[cluster.pk])
    expected = {cast.viewer: set(), cast.operator: {"nodes-reboot", "nodes-replace"},
                cast.admin: {"nodes-reboot", "nodes-replace", "nodes-delete"}}
    for user, buttons in expected.items():
        browser = Client()
        browser.force_login(user)
        page = browser.get(url)
        assert page.status_code == 200
        html = page.content.decode()
        assert html.count('name="node_ids"') == 2 and "Running" in html and "Schedulable" in html
        shown = set(re.findall(r'data-testid="(nodes-(?:reboot|replace|delete))"', html))
        assert shown == buttons, (user, shown)
        assert ("data-loss-warning" in html) == ("nodes-replace" in buttons)
    browser = Client()
    browser.force_login(cast.outsider)
    assert browser.get(url).status_code == 404
    detail = Client()
    detail.force_login(cast.viewer)
    assert url in detail.get(reverse("cluster-detail", args=[cluster.pk])).content.decode()


def test_the_portal_starts_a_batch_and_shows_the_same_codes_as_rest(cast, sandbox, token_for):
    cluster = sandbox_nodes_cluster(cast.team, groups={"workers": 1})
    node = running_node(cluster)
    browser = Client()
    browser.force_login(cast.operator)
    secret = token_for(cast.operator)

    for action, data, field, code in [
        ("reboot", {"node_ids": ["i-0123456789abcdef0"]}, "node_ids", "unknown_node"),
        ("replace", {"node_ids": [node]}, "confirm_data_loss", "confirmation_required"),
        ("reboot", {}, "node_ids", "required"),
    ]:
        rest = Client().post(f"/api/v1/clusters/{cluster.pk}/nodes/{action}", data,
                             content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {secret}")
        portal = browser.post(reverse(f"cluster-nodes-{action}", args=[cluster.pk]), data)
        assert rest.json()["fields"][field][0]["code"] == code
        assert portal.status_code == rest.status_code == 400
        assert {"validation_failed", code} <= portal_codes(portal)
    assert not Operation.objects.exists()
    nothing_ticked = browser.post(reverse("cluster-nodes-reboot", args=[cluster.pk]), {}).content.decode()
    assert "Tick at least one node in the table" in nothing_ticked

    response = browser.post(reverse("cluster-nodes-replace", args=[cluster.pk]),
                            {"node_ids": [node], "confirm_data_loss": "true"}, follow=True)
    assert response.status_code == 200
    operation = Operation.objects.get()
    assert (operation.kind, operation.source, operation.params["node_ids"]) == ("node.replace", "portal", [node])
    html = response.content.decode()
    assert f'data-operation-progress="{operation.pk}"' in html and "Replace 1 node of" in html
