"""Cancelling a cluster create undoes it, finished: cancelled in any phase (network, EKS still CREATING, EKS ACTIVE,
the system node group, HyperPod), the undo is polled to its end and nothing tagged as the cluster's is left in the
sandbox (read with boto3); the cluster is nobody's active cluster. An undo the cloud refuses leaves the operation
``cancelled`` with ``undo_incomplete`` naming what is left and how to remove it — and Delete then removes it."""

from __future__ import annotations

import httpx
import pytest

from clusters.models import ActiveCluster, Cluster, ClusterState
from mcp_server.testing import call_tool
from operations.models import Operation, OperationState, PhaseState, PhaseStep
from tests.clusters.sandbox import tagged_resources
from tests.clusters.test_pipeline import create


def _polling(slug: str):
    def reached(operation: Operation) -> bool:
        phase = operation.phases.get(slug=slug)
        return operation.phase == slug and phase.state == PhaseState.RUNNING and phase.step == PhaseStep.POLL

    return reached


def _cancel(api, cast, operation: Operation) -> None:
    response = api(cast.admin).post(f"/api/v1/operations/{operation.pk}/cancel", {})
    assert response.status_code == 202, response.content


def _undone(operation: Operation) -> None:
    assert (operation.state, operation.error_code) == (OperationState.CANCELLED, ""), operation.error_message
    states = {phase.slug: phase.state for phase in operation.phases.all()}
    assert set(states.values()) <= {PhaseState.COMPENSATED, PhaseState.CANCELLED}, states
    cluster = Cluster.objects.get(pk=operation.params["cluster_id"])
    assert cluster.state == ClusterState.DELETED
    assert not ActiveCluster.objects.filter(cluster=cluster).exists()
    assert tagged_resources(cluster.pk) == []


@pytest.mark.parametrize("slug", ["network", "system-nodes", "hyperpod"])
def test_a_create_cancelled_in_any_phase_leaves_nothing_behind(api, cast, sandbox, drive, slug):
    operation = drive(create(api, cast), timeout=120, until=_polling(slug))
    assert operation.state == OperationState.RUNNING
    if slug != "network":
        assert tagged_resources(operation.params["cluster_id"]), "the phases before made something to undo"
    _cancel(api, cast, operation)
    operation = drive(operation, timeout=120)
    _undone(operation)
    undone = [line.message for line in operation.logs.filter(message__endswith=": undone.").order_by("seq")]
    assert undone[-1] == "Network: undone."


def test_a_cancel_while_eks_is_creating_waits_for_it_then_deletes_it(api, cast, sandbox, drive, settings):
    settings.OPERATIONS_STEPS_PER_RUN = 1  # stop between the network phase's end and the EKS request
    operation = drive(create(api, cast), timeout=120,
                      until=lambda op: op.phases.get(slug="network").state == PhaseState.SUCCEEDED)
    sandbox.control("PUT", "clock", {"scale": 10})  # EKS stays CREATING until the test lets time run again
    operation = drive(operation, timeout=60, until=_polling("eks"))
    sent = httpx.get(f"{sandbox.aws_url}/_sandbox/requests", params={"service": "eks", "operation": "CreateCluster"})
    assert sent.json()["requests"], "the EKS cluster was requested"
    _cancel(api, cast, operation)

    operation = drive(operation, timeout=60, until=lambda op: op.phases.get(slug="eks").polls >= 2)
    phase = operation.phases.get(slug="eks")
    assert (operation.state, phase.state, phase.status_reason) == (OperationState.CANCELLING, PhaseState.UNDOING,
                                                                  "EKS cluster CREATING")
    sandbox.control("PUT", "clock", {"scale": 0.001})
    _undone(drive(operation, timeout=120))


def test_an_undo_the_cloud_refuses_is_named_in_the_summary_and_delete_removes_it(api, cast, sandbox, drive,
                                                                               token_for):
    operation = drive(create(api, cast), timeout=120, until=_polling("dependencies"))
    cluster = Cluster.objects.get(pk=operation.params["cluster_id"])
    assert ActiveCluster.objects.filter(user=cast.admin, cluster=cluster).exists()
    sandbox.control("POST", "faults", {"target": "ec2:DeleteVpc", "kind": "error", "code": "UnauthorizedOperation",
                                       "status": 403, "message": "not allowed here", "count": 100})
    _cancel(api, cast, operation)
    operation = drive(operation, timeout=120)

    assert (operation.state, operation.error_code) == (OperationState.CANCELLED, "undo_incomplete")
    network = operation.phases.get(slug="network")
    assert (network.state, network.error_code) == (PhaseState.FAILED, "undo_failed")
    assert operation.phases.get(slug="eks").state == PhaseState.COMPENSATED
    vpc = f"VPC {cluster.network.vpc_id}"
    assert vpc in network.error_message and "not allowed here" in network.error_message
    assert vpc in operation.error_message and "delete_cluster" in operation.error_message
    assert f"/api/v1/clusters/{cluster.pk}/delete" in operation.error_message
    cluster.refresh_from_db()
    assert cluster.state == ClusterState.FAILED
    assert not ActiveCluster.objects.filter(cluster=cluster).exists()
    assert [entry.split(":")[0] for entry in tagged_resources(cluster.pk)] == ["vpc"]
    is_error, waited = call_tool(token_for(cast.admin), "wait_for_operation", {"operation_id": operation.pk})
    assert not is_error and waited["summary"].startswith("CANCELLED:") and "NOT everything" in waited["summary"]
    assert vpc in waited["summary"]

    sandbox.control("DELETE", "faults")
    response = api(cast.admin).post(f"/api/v1/clusters/{cluster.pk}/delete", {"confirm": cluster.name})
    assert response.status_code == 202, response.content
    deletion = drive(Operation.objects.get(pk=response.json()["operation"]["id"]), timeout=120)
    assert deletion.state == OperationState.SUCCEEDED, deletion.error_message
    assert tagged_resources(cluster.pk) == []
