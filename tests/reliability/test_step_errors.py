"""A step's cloud error that the gateway translated to ``Conflict`` fails the phase with the cloud's code.

Regression: the engine re-raised every ``Conflict`` from a step as if its own rows had changed (a cancel meanwhile)
and looked again at once — so a step that used ``aws.translated`` and met e.g. ``ResourceInUseException`` re-sent
its mutation at every wake-up, with no delay, until the phase's deadline, and the user never saw the cloud's error.
"""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from cloud import aws
from operations import engine, services
from operations.models import OperationState, PhaseState
from operations.pipeline import Phase, Pipeline, Progress, register

pytestmark = [pytest.mark.reliability, pytest.mark.django_db(transaction=True)]

KIND = "reliability.cloud-conflict"
sent: list[str] = []


def submit_in_use(ctx) -> None:
    sent.append("CreateCluster")
    error = ClientError({"Error": {"Code": "ResourceInUseException", "Message": "Cluster already exists"},
                         "ResponseMetadata": {"HTTPStatusCode": 409}}, "CreateCluster")
    with aws.translated("eks", "CreateCluster"):
        raise error


register(Pipeline(kind=KIND, phases=(
    Phase("cluster", "EKS control plane", submit_in_use, lambda ctx: Progress.finished()),)))


def test_a_translated_cloud_conflict_fails_the_phase_once(cast, settings):
    sent.clear()
    operation, _ = services.operation_start(actor=cast.admin, team=cast.team, kind=KIND, title="conflict",
                                            params={"region": "us-west-2"}, source="api")
    for _ in range(5):
        operation.refresh_from_db()
        if operation.state != OperationState.RUNNING and operation.state != OperationState.PENDING:
            break
        engine.advance(operation.pk, due=operation.next_poll_at)
    operation.refresh_from_db()

    assert sent == ["CreateCluster"]
    assert (operation.state, operation.error_code) == (OperationState.FAILED, "cloud_conflict")
    assert "ResourceInUseException: Cluster already exists" in operation.error_message
    phase = operation.phases.get()
    assert (phase.state, phase.error_detail["code"]) == (PhaseState.FAILED, "ResourceInUseException")
