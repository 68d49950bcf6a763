"""A tracking server is attached, and its MLflow UI opened, only by the team that owns it: the team whose row
records it first, or whose ``instantstart:team`` tag it carries — on REST, MCP and the portal."""

from __future__ import annotations

import pytest
from django.test import Client

import tests.matrix  # noqa: F401  (loads the matrix slices in their order)
from accounts.models import Team
from cloud import aws
from clusters.ownership import TEAM_TAG
from mcp_server.testing import call_tool
from tests.matrix_mlflow import sandbox_server
from training.models import TrackingServer

pytestmark = pytest.mark.django_db(transaction=False)


def speech() -> Team:
    """The outsider's team (``cast`` makes it)."""
    return Team.objects.get(slug="speech")


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def attach(api, user, team, arn):
    return api(user).post("/api/v1/mlflow-servers/attach", {"team": team.pk, "arn": arn})


def refused_everywhere(api, token_for, user, team, arn, code):
    """Attaching ``arn`` to ``team`` as ``user`` is refused with ``code`` on REST, MCP and the portal."""
    rest = attach(api, user, team, arn)
    assert (rest.status_code, rest.json()["code"]) == (403, code), rest.content
    is_error, mcp = call_tool(token_for(user), "attach_mlflow_server", {"team": team.pk, "arn": arn})
    assert is_error and mcp["code"] == code
    portal = login(user).post("/training/mlflow/attach", {"team": team.pk, "arn": arn})
    assert portal.status_code == 403 and code.encode() in portal.content


def test_another_teams_server_is_never_attached(api, cast, sandbox, token_for):
    recorded = sandbox_server("speech-recorded")
    TrackingServer.objects.create(team=speech(), region="us-west-2", name="speech-recorded", arn=recorded,
                                  state="ready", managed=False)
    tagged = sandbox_server("speech-tagged", team=speech())
    for user in (cast.admin, cast.superuser):
        for arn in (recorded, tagged):
            refused_everywhere(api, token_for, user, cast.team, arn, "tracking_server_owned_by_another_team")
    assert not TrackingServer.objects.filter(team=cast.team).exists()


def test_a_server_nobody_owns_needs_the_teams_tag_or_a_platform_admin(api, cast, sandbox, token_for):
    arn = sandbox_server("nobodys")
    refused_everywhere(api, token_for, cast.admin, cast.team, arn, "tracking_server_not_owned")
    assert f"{TEAM_TAG}={cast.team.slug}" in attach(api, cast.admin, cast.team, arn).json()["message"]
    assert attach(api, cast.superuser, cast.team, arn).status_code == 201
    assert TrackingServer.objects.get(arn=arn).team == cast.team


def test_the_ui_link_checks_ownership_every_time(api, cast, sandbox):
    arn = sandbox_server("shared")
    theirs = TrackingServer.objects.create(team=speech(), region="us-west-2", name="shared", arn=arn, state="ready",
                                           managed=False, status="Created")
    # A row attached before ownership was checked: the same server, recorded later for this team.
    ours = TrackingServer.objects.create(team=cast.team, region="us-west-2", name="shared", arn=arn, state="ready",
                                         managed=False, status="Created")

    rest = api(cast.admin).post(f"/api/v1/mlflow-servers/{ours.pk}/ui-url")
    portal = login(cast.admin).post(f"/training/mlflow/{ours.pk}/open")
    assert (rest.status_code, rest.json()["code"]) == (403, "tracking_server_owned_by_another_team")
    assert portal.status_code == 403
    assert api(cast.outsider).post(f"/api/v1/mlflow-servers/{theirs.pk}/ui-url").status_code == 200

    theirs.delete()
    assert api(cast.admin).post(f"/api/v1/mlflow-servers/{ours.pk}/ui-url").status_code == 200
    aws.client("sagemaker", region="us-west-2").add_tags(ResourceArn=arn, Tags=[{"Key": TEAM_TAG, "Value": "speech"}])
    retagged = api(cast.admin).post(f"/api/v1/mlflow-servers/{ours.pk}/ui-url")
    assert (retagged.status_code, retagged.json()["code"]) == (403, "tracking_server_owned_by_another_team")
