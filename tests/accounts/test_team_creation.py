"""Who may create teams (``INSTANTSTART_TEAM_CREATION``): platform admins by default, on every face; anyone signed
in when the deployment opens it."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from accounts.models import AuditEvent, Team
from mcp_server.testing import call_tool

BODY = {"name": "Takeover", "slug": "takeover"}


def test_the_default_lets_only_platform_admins_create_teams():
    assert settings.INSTANTSTART_TEAM_CREATION == "platform_admins"


def test_a_user_with_no_team_cannot_create_one_on_any_face(make_user, api, token_for):
    newcomer = make_user("newbie")
    client, secret = api(newcomer), token_for(newcomer)
    events = AuditEvent.objects.count()

    rest = client.post("/api/v1/teams", BODY)
    is_error, mcp = call_tool(secret, "create_team", BODY)
    browser = Client()
    browser.force_login(newcomer)
    form = browser.post(reverse("team-create"), BODY)
    dashboard = browser.get(reverse("dashboard")).content.decode()
    teams = browser.get(reverse("team-list")).content.decode()

    assert (rest.status_code, rest.json()["code"]) == (403, "permission_denied")
    assert "platform admins create teams" in rest.json()["message"]
    assert is_error and mcp["code"] == "permission_denied"
    assert form.status_code == 403
    assert reverse("team-create") not in dashboard + teams, "no button offers what would be refused"
    assert "ask one to create yours" in dashboard
    assert not Team.objects.filter(slug="takeover").exists()
    assert AuditEvent.objects.count() == events


def test_the_first_platform_admin_creates_teams_on_every_face(make_user, api, token_for):
    admin = make_user("admin", is_superuser=True, is_staff=True)

    assert api(admin).post("/api/v1/teams", BODY).status_code == 201
    is_error, _ = call_tool(token_for(admin), "create_team", {"name": "Second", "slug": "second"})
    browser = Client()
    browser.force_login(admin)
    form = browser.post(reverse("team-create"), {"name": "Third", "slug": "third"})

    assert not is_error
    assert form.status_code == 302
    assert set(Team.objects.values_list("slug", flat=True)) == {"takeover", "second", "third"}


@pytest.mark.usefixtures("open_team_creation")
def test_anyone_may_when_the_deployment_says_so(make_user, api):
    assert api(make_user()).post("/api/v1/teams", BODY).status_code == 201
