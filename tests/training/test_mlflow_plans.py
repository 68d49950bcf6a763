"""The dry-run plan of a tracking server's create and delete (``training/mlflow/plans.py``): the exact IAM and
SageMaker requests the real call then sends (compared with the sandbox's request log), and no write for the dry
run itself."""

from __future__ import annotations

import pytest

from operations.models import Operation, OperationState
from tests.clusters.test_dry_run_plans import calls, marks, sent, writes_since
from tests.operations.conftest import drive, fast_polling  # noqa: F401  (the engine driver, shared)
from training.models import TrackingServer

pytestmark = pytest.mark.django_db(transaction=False)


def test_create_and_delete_plans_are_the_requests_then_sent(api, cast, sandbox, drive):  # noqa: F811
    admin = api(cast.admin)
    body = {"team": cast.team.pk, "region": "us-west-2", "size": "Medium"}
    before = marks(sandbox)
    response = admin.post("/api/v1/mlflow-servers?dry_run=true", body)
    assert response.status_code == 200, response.content
    plan = response.json()
    assert writes_since(sandbox, before) == [] and not TrackingServer.objects.exists()
    assert [phase["slug"] for phase in plan["operation"]["phases"]] == ["role", "server"]

    mark = before[0]
    created = admin.post("/api/v1/mlflow-servers", body)
    assert created.status_code == 202, created.content
    operation = drive(Operation.objects.get(pk=created.json()["operation"]["id"]), timeout=60)
    assert operation.state == OperationState.SUCCEEDED, operation.error_message
    for call in ("iam:CreateRole", "iam:PutRolePolicy", "sagemaker:CreateMlflowTrackingServer"):
        assert sent(sandbox, mark, call) == calls(plan, call), call
    assert calls(plan, "sagemaker:CreateMlflowTrackingServer")[0]["TrackingServerSize"] == "Medium"

    path = f"/api/v1/mlflow-servers/{created.json()['server']['id']}"
    before = marks(sandbox)
    response = admin.delete(f"{path}?dry_run=true")
    assert response.status_code == 200, response.content
    deleting = response.json()
    assert writes_since(sandbox, before) == []
    [planned] = calls(deleting, "sagemaker:DeleteMlflowTrackingServer")
    deleted = admin.delete(path)
    assert deleted.status_code == 202, deleted.content
    drive(Operation.objects.get(pk=deleted.json()["operation"]["id"]), timeout=60)
    assert sent(sandbox, before[0], "sagemaker:DeleteMlflowTrackingServer") == [planned]
