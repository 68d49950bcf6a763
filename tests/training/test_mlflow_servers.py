"""A team's MLflow tracking server against the sandbox: create (role, server, ready), failure, attach by ARN and its
refusals, detach (forget an attached one, delete a managed one) — through the services, REST, MCP and the portal."""

from __future__ import annotations

import json

import pytest

import tests.matrix  # noqa: F401  (loads the matrix slices in their order)
from accounts.models import Membership, Role
from cloud import aws
from operations.models import Operation, OperationState
from tests.matrix_mlflow import sandbox_server
from tests.operations.conftest import drive, fast_polling  # noqa: F401  (the engine driver, shared)
from training.mlflow import servers, services
from training.mlflow.selectors import team_tracking_server
from training.models import TrackingServer, TrackingServerState

pytestmark = pytest.mark.django_db(transaction=False)


def sagemaker():
    return aws.client("sagemaker", region="us-west-2")


def create(api, user, team, **body):
    response = api(user).post("/api/v1/mlflow-servers", {"team": team.pk, "region": "us-west-2", **body})
    assert response.status_code == 202, response.content
    return response.json()


def test_create_makes_a_scoped_role_then_a_tagged_server_that_becomes_ready(api, cast, sandbox, drive):  # noqa: F811
    body = create(api, cast.admin, cast.team, size="Medium")
    assert body["server"]["state"] == "creating" and body["operation"]["kind"] == "mlflow.create"
    assert [phase["slug"] for phase in body["operation"]["phases"]] == ["role", "server"]
    operation = drive(Operation.objects.get(pk=body["operation"]["id"]), timeout=60)
    assert operation.state == OperationState.SUCCEEDED, operation.error_message

    server = TrackingServer.objects.get(pk=body["server"]["id"])
    assert (server.state, server.status, server.managed) == ("ready", "Created", True)
    assert server.name == f"instantstart-{cast.team.slug}" and server.url.startswith("https://")
    assert team_tracking_server(cast.team, "us-west-2") == server
    described = sagemaker().describe_mlflow_tracking_server(TrackingServerName=server.name)
    assert described["TrackingServerArn"] == server.arn and described["TrackingServerSize"] == "Medium"
    assert described["ArtifactStoreUri"] == server.artifact_store_uri
    assert server.artifact_store_uri.endswith(f"/teams/{cast.team.slug}/mlflow/")
    tags = {t["Key"]: t["Value"] for t in sagemaker().list_tags(ResourceArn=server.arn)["Tags"]}
    assert tags == {"instantstart:managed-by": "instantstart", "instantstart:team": cast.team.slug}

    iam = aws.client("iam", region="us-west-2")
    role = iam.get_role(RoleName=servers.role_name(cast.team, "us-west-2"))["Role"]
    assert role["Arn"] == described["RoleArn"] == server.role_arn
    assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {"Service": ["sagemaker.amazonaws.com"]}
    policy = iam.get_role_policy(RoleName=role["RoleName"], PolicyName="artifacts")["PolicyDocument"]
    resources = [r for statement in policy["Statement"] for r in statement["Resource"]]
    assert all(r.endswith(f"/teams/{cast.team.slug}/mlflow/*") for r in resources if r.count("/") > 1)

    again = api(cast.admin).post("/api/v1/mlflow-servers", {"team": cast.team.pk, "region": "us-west-2"})
    assert (again.status_code, again.json()["code"]) == (409, "tracking_server_exists")


def test_a_server_sagemaker_cannot_create_fails_the_operation_and_the_row(api, cast, sandbox, drive):  # noqa: F811
    sandbox.control("POST", "outcomes", {"resource": "mlflow-tracking-server", "outcome": "fail"})
    body = create(api, cast.admin, cast.team)
    operation = drive(Operation.objects.get(pk=body["operation"]["id"]), timeout=60)
    assert (operation.state, operation.error_code) == ("failed", "tracking_server_create_failed")
    server = TrackingServer.objects.get(pk=body["server"]["id"])
    assert server.state == "failed" and "CreateFailed" in server.last_error
    assert team_tracking_server(cast.team, "us-west-2") is None
    retried = create(api, cast.admin, cast.team)  # a failed row is replaced, not a conflict
    assert retried["server"]["id"] == server.pk


def test_attach_by_arn_then_detach_only_forgets(api, cast, sandbox):
    arn = sandbox_server("outside", team=cast.team)
    response = api(cast.admin).post("/api/v1/mlflow-servers/attach", {"team": cast.team.pk, "arn": arn})
    assert response.status_code == 201, response.content
    server = response.json()["server"]
    assert (server["state"], server["managed"], server["region"], server["arn"]) == ("ready", False, "us-west-2", arn)
    assert team_tracking_server(cast.team, "us-west-2").arn == arn

    conflict = api(cast.admin).post("/api/v1/mlflow-servers/attach", {"team": cast.team.pk, "arn": arn})
    assert (conflict.status_code, conflict.json()["code"]) == (409, "tracking_server_exists")

    detached = api(cast.admin).delete(f"/api/v1/mlflow-servers/{server['id']}")
    assert detached.status_code == 200 and detached.json() == {"server": None, "operation": None}
    assert not TrackingServer.objects.filter(pk=server["id"]).exists()
    outside = sagemaker().describe_mlflow_tracking_server(TrackingServerName="outside")
    assert outside["TrackingServerStatus"] == "Created"


@pytest.mark.parametrize(("arn", "region", "code"), [
    ("arn:aws:sagemaker:us-west-2:123456789012:mlflow-tracking-server/nobody", None, "tracking_server_not_found"),
    ("arn:aws:s3:::bucket", None, "invalid_arn"),
    ("arn:aws:sagemaker:us-west-2:123456789012:mlflow-tracking-server/x", "us-east-1", "region_mismatch"),
])
def test_attach_refuses_what_is_not_a_server_of_the_account(api, cast, sandbox, arn, region, code):
    body = {"team": cast.team.pk, "arn": arn, **({"region": region} if region else {})}
    response = api(cast.admin).post("/api/v1/mlflow-servers/attach", body)
    assert response.status_code == 400, response.content
    assert response.json()["fields"]["arn"][0]["code"] == code
    assert not TrackingServer.objects.exists()


def test_detaching_a_managed_server_deletes_it_and_its_role(api, cast, sandbox, drive):  # noqa: F811
    body = create(api, cast.admin, cast.team)
    drive(Operation.objects.get(pk=body["operation"]["id"]), timeout=60)
    viewer = api(cast.viewer).delete(f"/api/v1/mlflow-servers/{body['server']['id']}")
    assert viewer.status_code == 403
    response = api(cast.admin).delete(f"/api/v1/mlflow-servers/{body['server']['id']}")
    assert response.status_code == 202, response.content
    assert response.json()["server"]["state"] == "deleting"
    operation = drive(Operation.objects.get(pk=response.json()["operation"]["id"]), timeout=60)
    assert operation.state == OperationState.SUCCEEDED, operation.error_message
    assert not TrackingServer.objects.exists()
    assert servers.describe("us-west-2", f"instantstart-{cast.team.slug}") is None
    names = {r["RoleName"] for r in aws.client("iam", region="us-west-2").list_roles()["Roles"]}
    assert servers.role_name(cast.team, "us-west-2") not in names


def test_ui_url_is_for_admins_and_tools_read_and_create(api, cast, sandbox, token_for):
    from mcp_server.testing import call_tool

    server = services.tracking_server_attach(actor=cast.admin, team=cast.team, arn=sandbox_server(team=cast.team),
                                             source="api")
    url = api(cast.admin).post(f"/api/v1/mlflow-servers/{server.pk}/ui-url")
    assert url.status_code == 200 and "authToken=" in url.json()["url"]
    assert api(cast.operator).post(f"/api/v1/mlflow-servers/{server.pk}/ui-url").status_code == 403

    is_error, body = call_tool(token_for(cast.viewer), "get_mlflow_server", {"server_id": server.pk})
    assert not is_error and body["arn"] == server.arn and body["capabilities"] == {
        "mlflow.view": True, "mlflow.manage": False}
    is_error, body = call_tool(token_for(cast.admin), "create_mlflow_server", {"team": cast.team.pk,
                                                                               "region": "us-west-2"})
    assert is_error and body["code"] == "tracking_server_exists"


def test_portal_page_creates_and_shows_attach_errors_next_to_the_field(client, cast, sandbox):
    client.force_login(cast.admin)
    page = client.get(f"/training/mlflow/?team={cast.team.pk}")
    assert page.status_code == 200 and b"No tracking server yet" in page.content
    refused = client.post("/training/mlflow/attach", {"team": cast.team.pk, "arn": "not-an-arn"})
    assert refused.status_code == 400 and b'data-error-code="invalid_arn"' in refused.content
    created = client.post("/training/mlflow/create", {"team": cast.team.pk, "region": "us-west-2", "size": "Small"})
    assert created.status_code == 302
    panel = client.get(f"/training/mlflow/servers/?team={cast.team.pk}")
    assert b"creating" in panel.content and b'hx-trigger="every 3s"' in panel.content

    client.force_login(cast.viewer)
    page = client.get(f"/training/mlflow/?team={cast.team.pk}")
    assert page.status_code == 200 and b"mlflow-create-form" not in page.content
    assert client.post("/training/mlflow/create", {"team": cast.team.pk, "region": "us-west-2"}).status_code == 403


def test_create_validates_region_and_size_before_writing(api, cast, sandbox):
    response = api(cast.admin).post("/api/v1/mlflow-servers", {"team": cast.team.pk, "region": "us-west-2",
                                                                "size": "Huge"})
    assert response.status_code == 400 and response.json()["fields"]["size"][0]["code"] == "invalid_choice"
    response = api(cast.admin).post("/api/v1/mlflow-servers", {"team": cast.team.pk, "region": "mars-north-1"})
    assert response.status_code == 400 and response.json()["fields"]["region"][0]["code"] == "unknown_region"
    assert not TrackingServer.objects.exists() and json.loads(api(cast.viewer).get(
        "/api/v1/mlflow-servers").content)["results"] == []


def test_create_state_is_creating_until_the_operation_runs(api, cast, sandbox):
    create(api, cast.admin, cast.team)
    assert TrackingServer.objects.get().state == TrackingServerState.CREATING


def test_the_mlflow_page_without_a_team_sends_people_to_their_teams(make_user):
    from django.test import Client

    browser = Client()
    browser.force_login(make_user("teamless"))
    response = browser.get("/training/mlflow/")
    assert response.status_code == 302 and response.url == "/teams/"


def test_a_create_key_another_admin_used_answers_with_the_first_server(api, cast, sandbox, make_user):
    other = make_user("ines")
    Membership.objects.create(team=cast.team, user=other, role=Role.ADMIN)
    body = {"team": cast.team.pk, "region": "us-west-2"}
    first = api(cast.admin).post("/api/v1/mlflow-servers", body, HTTP_IDEMPOTENCY_KEY="mlflow-1")
    again = api(other).post("/api/v1/mlflow-servers", {**body, "size": "Large"}, HTTP_IDEMPOTENCY_KEY="mlflow-1")
    assert first.status_code == again.status_code == 202, again.content
    assert again.json() == first.json()
    assert TrackingServer.objects.count() == 1 and Operation.objects.filter(kind="mlflow.create").count() == 1
