"""Service accounts through REST, MCP and the portal against real PostgreSQL and Redis: made by team admins, acting
through their tokens under their own name in the audit trail, never signing in to the portal, stopped at once when
deactivated."""

from __future__ import annotations

import pytest
from django.test import Client

from accounts import actions
from accounts.models import AuditEvent, Membership, ServiceAccount, User
from config.context import Source
from mcp_server.testing import call_tool


@pytest.fixture
def robot(cast, api) -> dict:
    """A service account of the cast's team (operator) made by its admin over REST, and a token of it."""
    admin = api(cast.admin)
    made = admin.post(f"/api/v1/teams/{cast.team.pk}/service-accounts",
                      {"name": "ci-bot", "role": "operator", "description": "GitHub Actions"})
    assert made.status_code == 201, made.json()
    issued = admin.post(f"/api/v1/teams/{cast.team.pk}/service-accounts/{made.json()['id']}/tokens",
                        {"name": "actions", "expires_in_days": 30})
    assert issued.status_code == 201, issued.json()
    return {**made.json(), "secret": issued.json()["token"], "token_id": issued.json()["id"]}


def test_a_team_admin_makes_a_service_account_that_acts_under_its_own_name(cast, api, robot):
    username = f"sa.{cast.team.slug}.ci-bot"
    assert robot["username"] == username and robot["role"] == "operator" and robot["active"]
    account = ServiceAccount.objects.get(pk=robot["id"])
    assert not account.user.has_usable_password()
    assert Membership.objects.get(user=account.user).role == "operator"
    assert AuditEvent.objects.filter(action=actions.SERVICE_ACCOUNT_CREATE, actor=cast.admin,
                                     team=cast.team).exists()

    listed = api(cast.viewer).get(f"/api/v1/teams/{cast.team.pk}/service-accounts").json()
    assert [(row["name"], [token["name"] for token in row["tokens"]]) for row in listed] == [("ci-bot", ["actions"])]
    assert listed[0]["capabilities"] == {actions.SERVICE_ACCOUNT_DEACTIVATE: False,
                                         actions.SERVICE_ACCOUNT_TOKEN_CREATE: False,
                                         actions.SERVICE_ACCOUNT_TOKEN_REVOKE: False}

    rest = Client().patch("/api/v1/me", {"current_team": None}, content_type="application/json",
                          HTTP_AUTHORIZATION=f"Bearer {robot['secret']}")
    assert rest.status_code == 200 and rest.json()["username"] == username
    is_error, body = call_tool(robot["secret"], "set_current_team", {"current_team": cast.team.pk})
    assert not is_error and body["current_team"] == cast.team.pk
    attributed = list(AuditEvent.objects.filter(action=actions.USER_SWITCH_TEAM, actor=account.user)
                      .order_by("id").values_list("actor_name", "source"))
    assert attributed == [(username, Source.API), (username, Source.MCP)]


def test_a_service_account_never_signs_in_to_the_portal(cast, robot, client):
    user = User.objects.get(pk=ServiceAccount.objects.get(pk=robot["id"]).user_id)
    user.set_password("correct-horse-battery")  # even if someone gave it one in Django admin
    user.save()
    answer = client.post("/login/", {"username": user.username, "password": "correct-horse-battery"})
    assert answer.status_code == 200 and b"invalid_login" in answer.content


def test_deactivating_it_refuses_its_tokens_at_once(cast, api, robot, token_for):
    admin = api(cast.admin)
    path = f"/api/v1/teams/{cast.team.pk}/service-accounts/{robot['id']}"
    assert call_tool(robot["secret"], "whoami")[0] is False

    assert api(cast.operator).delete(path).json()["code"] == "permission_denied"
    is_error, body = call_tool(token_for(cast.admin), "deactivate_service_account",
                               {"team_id": cast.team.pk, "service_account_id": robot["id"]})
    assert not is_error and body["active"] is False

    refused = Client().get("/api/v1/me", HTTP_AUTHORIZATION=f"Bearer {robot['secret']}")
    assert refused.status_code == 401 and refused.json()["code"] == "user_inactive"
    assert call_tool(robot["secret"], "whoami") == (True, refused.json())
    again = admin.post(f"{path}/tokens", {"name": "another"})
    assert again.status_code == 409 and again.json()["code"] == "service_account_deactivated"
    assert AuditEvent.objects.filter(action=actions.SERVICE_ACCOUNT_DEACTIVATE, source=Source.MCP).exists()


def test_a_revoked_token_stops_and_bad_input_names_its_field(cast, api, robot):
    admin = api(cast.admin)
    path = f"/api/v1/teams/{cast.team.pk}/service-accounts"
    assert admin.delete(f"{path}/{robot['id']}/tokens/{robot['token_id']}").json()["revoked_at"]
    assert Client().get("/api/v1/me", HTTP_AUTHORIZATION=f"Bearer {robot['secret']}").json()["code"] == \
        "token_revoked"

    taken = admin.post(path, {"name": "ci-bot"}).json()
    assert taken["code"] == "validation_failed" and taken["fields"]["name"][0]["code"] == "unique"
    admin_role = admin.post(path, {"name": "boss", "role": "admin"}).json()
    assert admin_role["fields"]["role"][0]["code"] == "invalid_choice"
    assert admin.post(path, {"name": "Not A Slug"}).json()["fields"]["name"][0]["code"] == "invalid_slug"

    membership = Membership.objects.get(user__service_account__pk=robot["id"])
    promoted = admin.patch(f"/api/v1/teams/{cast.team.pk}/memberships/{membership.pk}", {"role": "admin"}).json()
    assert promoted["fields"]["role"][0]["code"] == "service_account_not_admin"
    assert admin.patch(f"/api/v1/teams/{cast.team.pk}/memberships/{membership.pk}",
                       {"role": "viewer"}).json()["role"] == "viewer"

    team_delete = admin.delete(f"/api/v1/teams/{cast.team.pk}")
    assert team_delete.status_code == 409 and team_delete.json()["code"] == "team_not_empty"


def test_the_portal_pages(cast, client):
    client.force_login(cast.admin)
    created = client.post(f"/teams/{cast.team.pk}/service-accounts/", {"name": "nightly", "role": "viewer"})
    account = ServiceAccount.objects.get(name="nightly")
    assert created["Location"] == f"/teams/{cast.team.pk}/service-accounts/{account.pk}/"
    issued = client.post(f"/teams/{cast.team.pk}/service-accounts/{account.pk}/tokens/",
                         {"name": "jenkins", "expires_in_days": "7"})
    assert issued.status_code == 200 and b'data-testid="token-secret"' in issued.content
    assert account.user.api_tokens.get().name == "jenkins"
    listed = client.get(f"/teams/{cast.team.pk}/service-accounts/")
    assert b"sa." + cast.team.slug.encode() + b".nightly" in listed.content
    duplicate = client.post(f"/teams/{cast.team.pk}/service-accounts/", {"name": "nightly", "role": "viewer"})
    assert duplicate.status_code == 400

    client.force_login(cast.viewer)
    page = client.get(f"/teams/{cast.team.pk}/service-accounts/{account.pk}/")
    assert page.status_code == 200 and b"Create token" not in page.content
    assert client.post(f"/teams/{cast.team.pk}/service-accounts/{account.pk}/deactivate/").status_code == 403
    account.refresh_from_db()
    assert account.is_active


def test_the_list_reads_a_fixed_number_of_queries(cast, api, robot, django_assert_max_num_queries):
    admin = api(cast.admin)
    path = f"/api/v1/teams/{cast.team.pk}/service-accounts"
    for name in ("two", "three"):
        made = admin.post(path, {"name": name}).json()
        admin.post(f"{path}/{made['id']}/tokens", {"name": "ci"})
    with django_assert_max_num_queries(7):
        assert len(admin.get(path).json()) == 3


def test_it_stays_in_its_own_team(cast, robot, settings, make_team):
    from accounts import services as account_services

    settings.INSTANTSTART_TEAM_CREATION = "anyone"
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {robot['secret']}"}
    created = Client().post("/api/v1/teams", {"name": "Shadow", "slug": "shadow"}, content_type="application/json",
                            **bearer)
    assert created.status_code == 403 and created.json()["code"] == "permission_denied"
    other = make_team("Elsewhere")
    issued = account_services.invitation_create(actor=other.memberships.get().user, team=other,
                                                invitee=robot["username"], role="admin", source=Source.SYSTEM)
    accepted = Client().post("/api/v1/invitations/accept", {"token": issued.secret}, content_type="application/json",
                             **bearer)
    assert accepted.status_code == 403
    assert list(Membership.objects.filter(user__service_account__pk=robot["id"]).values_list("team", flat=True)) == [
        cast.team.pk]

