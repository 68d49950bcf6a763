"""EKS node groups through REST, MCP and the portal against the sandbox: read live, scaled and deleted as operations,
the system node group protected; and the delete phase that clears node groups before the EKS cluster goes."""

from __future__ import annotations

import re

from django.test import Client
from django.urls import reverse

from accounts.models import AuditEvent
from cloud import aws
from clusters.phases import eks, system_nodes
from mcp_server.testing import call_tool
from operations import pipeline
from operations.models import Operation, OperationState
from operations.services import operation_start
from tests import matrix  # noqa: F401  (loads tests.matrix_node_groups after the names it builds on)
from tests.matrix_node_groups import node_groups_cluster

TEARDOWN = pipeline.register(pipeline.Pipeline(kind="test.node-groups-teardown",
                                               phases=(system_nodes.DELETE, eks.DELETE)))


def _codes(response) -> dict[str, str]:
    return {field: errors[0]["code"] for field, errors in response.json()["fields"].items()}


def _eks_groups(name: str) -> dict[str, dict]:
    client = aws.client("eks", region="us-west-2")
    return {group: client.describe_nodegroup(clusterName=name, nodegroupName=group)["nodegroup"]
            for group in client.list_nodegroups(clusterName=name)["nodegroups"]}


def test_node_groups_are_read_live_scaled_and_deleted_over_rest(api, cast, sandbox, drive):
    cluster = node_groups_cluster(cast.team)
    base = f"/api/v1/clusters/{cluster.pk}/node-groups"
    listed = api(cast.admin).get(base).json()
    assert [(g["name"], g["system"], g["managed"], g["status"]) for g in listed] == [
        ("system", True, True, "ACTIVE"), ("workers", False, False, "ACTIVE")]
    system, workers = listed
    assert (system["min_size"], system["desired_size"], system["max_size"]) == (1, 1, 2)
    assert system["labels"] == {"instantstart.dev/node-role": "system"} and system["instance_types"] == ["m5.large"]
    assert system["capabilities"] == {"node_group.scale": True, "node_group.delete": False}
    assert workers["capabilities"] == {"node_group.scale": True, "node_group.delete": True}
    assert api(cast.viewer).get(f"{base}/workers").json()["capabilities"] == {
        "node_group.scale": False, "node_group.delete": False}
    assert api(cast.viewer).get(f"{base}/missing").status_code == 404

    admin = api(cast.admin)
    unchanged = admin.patch(f"{base}/workers", {"desired_size": 1})
    assert (unchanged.status_code, unchanged.json()["changed"], unchanged.json()["operation"]) == (200, False, None)
    for body, codes in (({"desired_size": 4}, {"desired_size": "desired_above_max"}),
                        ({"min_size": 2}, {"desired_size": "desired_below_min"}),
                        ({"min_size": 4}, {"min_size": "min_above_max"}),
                        ({"max_size": 0}, {"max_size": "min_value"})):
        refused = admin.patch(f"{base}/workers", body)
        assert (refused.status_code, _codes(refused)) == (400, codes), refused.content
    refused = admin.patch(f"{base}/system", {"min_size": 0, "desired_size": 0})
    assert _codes(refused) == {"desired_size": "system_nodes_required"}
    refused = admin.delete(f"{base}/system")
    assert (refused.status_code, refused.json()["code"]) == (409, "system_node_group")
    assert not Operation.objects.exists() and not AuditEvent.objects.filter(action__startswith="node_group").exists()

    started = admin.patch(f"{base}/workers", {"desired_size": 3, "max_size": 3})
    assert started.status_code == 202, started.content
    assert started.json()["operation"]["kind"] == "node_group.scale"
    operation = Operation.objects.get(pk=started.json()["operation"]["id"])
    sandbox.control("PUT", "clock", {"scale": 10})  # EKS stays UPDATING until the test lets time run again
    drive(operation, timeout=30, until=lambda op: op.phases.get(slug="scale").polls >= 1)
    busy = admin.patch(f"{base}/workers", {"desired_size": 2})
    assert (busy.status_code, busy.json()["code"]) == (409, "node_group_busy")
    assert admin.get(f"{base}/workers").json()["capabilities"]["node_group.scale"] is False
    busy = admin.delete(f"{base}/workers")
    assert (busy.status_code, busy.json()["code"]) == (409, "cluster_busy")
    sandbox.control("PUT", "clock", {"scale": 0.001})
    scaled = drive(operation, timeout=30)
    assert scaled.state == OperationState.SUCCEEDED, scaled.error_message
    assert _eks_groups(cluster.name)["workers"]["scalingConfig"] == {"minSize": 0, "maxSize": 3, "desiredSize": 3}
    event = AuditEvent.objects.get(action="node_group.scale")
    assert (event.before, event.after) == ({"node_group": "workers", "desired_size": 1},
                                           {"node_group": "workers", "desired_size": 3})

    deleting = admin.delete(f"{base}/workers")
    assert deleting.status_code == 202, deleting.content
    deleted = drive(Operation.objects.get(pk=deleting.json()["operation"]["id"]), timeout=30)
    assert deleted.state == OperationState.SUCCEEDED, deleted.error_message
    assert list(_eks_groups(cluster.name)) == ["system"]
    assert AuditEvent.objects.filter(action="node_group.delete", team=cast.team).count() == 1


def test_an_agent_and_the_portal_see_and_scale_node_groups(cast, token_for, sandbox):
    cluster = node_groups_cluster(cast.team)
    secret = token_for(cast.admin)
    is_error, listed = call_tool(secret, "list_node_groups", {"cluster_id": cluster.pk})
    assert not is_error and [group["name"] for group in listed["results"]] == ["system", "workers"]
    is_error, answer = call_tool(secret, "scale_node_group", {"cluster_id": cluster.pk, "name": "system",
                                                              "desired_size": 1})
    assert not is_error and answer["changed"] is False
    is_error, refused = call_tool(secret, "delete_node_group", {"cluster_id": cluster.pk, "name": "system"})
    assert is_error and refused["code"] == "system_node_group"

    browser = Client()
    browser.force_login(cast.admin)
    page = browser.get(reverse("cluster-detail", args=[cluster.pk])).content.decode()
    assert reverse("cluster-node-groups", args=[cluster.pk]) in page
    panel = browser.get(reverse("cluster-node-groups", args=[cluster.pk])).content.decode()
    assert 'data-node-group="system"' in panel and 'data-testid="node-group-delete-workers"' in panel
    assert 'data-testid="node-group-delete-system"' not in panel
    answer = browser.post(reverse("cluster-node-group-scale", args=[cluster.pk, "workers"]), {"max_size": "9"},
                          follow=True)
    assert "desired_above_max" not in answer.content.decode()
    assert "Scale node group workers" in answer.content.decode()
    refused = browser.post(reverse("cluster-node-group-delete", args=[cluster.pk, "system"]), follow=True)
    assert "system_node_group" in re.findall(r'data-error-code="([^"]+)"', refused.content.decode())


def _teardown(cast, cluster, drive, **params) -> Operation:
    operation, _ = operation_start(actor=cast.admin, team=cast.team, kind=TEARDOWN.kind, title="teardown",
                                   params={"cluster_id": cluster.pk, "region": cluster.region, **params},
                                   source="system", target=cluster)
    return drive(operation, timeout=30)


def test_the_delete_phase_clears_node_groups_before_the_eks_cluster(cast, sandbox, drive):
    cluster = node_groups_cluster(cast.team)
    client = aws.client("eks", region="us-west-2")
    try:
        client.delete_cluster(name=cluster.name)
        raise AssertionError("EKS deleted a cluster that has node groups")
    except client.exceptions.ResourceInUseException:
        pass
    kept = _teardown(cast, cluster, drive)
    assert kept.state == OperationState.SUCCEEDED, kept.error_message
    assert list(_eks_groups(cluster.name)) == ["workers"], "only ours goes while the EKS cluster is not deleted"
    assert client.describe_cluster(name=cluster.name)["cluster"]["status"] == "ACTIVE"

    gone = _teardown(cast, cluster, drive, imported=True)
    assert gone.state == OperationState.SUCCEEDED, gone.error_message
    assert cluster.name not in client.list_clusters()["clusters"]
