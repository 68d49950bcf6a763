"""Team invitations through REST and MCP: an admin invites by username or e-mail without learning who has an
account, the invitee lists, accepts (by id or by the link's token) or declines, the admin lists and revokes; every
step is audited. The portal face is in test_portal.py, the permission matrix in tests/matrix_invitations.py."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import AuditEvent, Invitation, Membership
from mcp_server.testing import call_tool

pytestmark = pytest.mark.django_db


def invite(api, cast, invitee: str, role: str = "viewer"):
    return api(cast.admin).post(f"/api/v1/teams/{cast.team.pk}/invitations", {"invitee": invitee, "role": role})


def test_the_invite_answer_never_says_whether_the_account_exists(cast, api, make_user):
    make_user("nina")
    known, unknown = invite(api, cast, "nina@example.com"), invite(api, cast, "ghost@example.com")
    assert known.status_code == unknown.status_code == 201

    def shape(body: dict) -> dict:
        return {key: value for key, value in body.items()
                if key not in {"id", "invitee", "created_at", "expires_at", "link"}}

    assert shape(known.json()) == shape(unknown.json())
    assert set(known.json()) == set(unknown.json())
    assert known.json()["link"].startswith("http://testserver/invitations/inv_")
    assert "nina" not in str(shape(known.json()))


def test_the_invitee_accepts_by_id_and_joins_with_the_role(cast, api, make_user):
    nina = make_user("nina")
    invitation = invite(api, cast, "NINA@example.com", role="operator").json()
    assert invitation["state"] == "pending"
    assert invitation["team"] == {"id": cast.team.pk, "name": "Vision", "slug": "vision"}

    mine = api(nina).get("/api/v1/me/invitations").json()
    assert [item["id"] for item in mine] == [invitation["id"]]
    assert api(cast.outsider).get("/api/v1/me/invitations").json() == []
    stranger = api(cast.outsider).post(f"/api/v1/me/invitations/{invitation['id']}/accept")
    assert stranger.status_code == 404

    accepted = api(nina).post(f"/api/v1/me/invitations/{invitation['id']}/accept")
    assert accepted.status_code == 201
    assert (accepted.json()["team"], accepted.json()["role"]) == (cast.team.pk, "operator")
    assert api(nina).get("/api/v1/me/invitations").json() == []
    assert api(nina).post(f"/api/v1/me/invitations/{invitation['id']}/accept").status_code == 404
    event = AuditEvent.objects.get(action="invitation.accept")
    assert (event.actor, event.team, event.after["role"]) == (nina, cast.team, "operator")


def test_the_link_token_accepts_once_for_the_invitee_only(cast, api, make_user):
    nina = make_user("nina")
    url = invite(api, cast, "nina").json()["link"]
    token = url.rstrip("/").rsplit("/", 1)[1]

    other = api(cast.outsider).post("/api/v1/invitations/accept", {"token": token})
    assert (other.status_code, other.json()["code"]) == (403, "invitation_not_for_you")
    assert api(nina).post("/api/v1/invitations/accept", {"token": "inv_made-up"}).status_code == 404

    assert api(nina).post("/api/v1/invitations/accept", {"token": token}).status_code == 201
    again = api(nina).post("/api/v1/invitations/accept", {"token": token})
    assert (again.status_code, again.json()["code"]) == (409, "invitation_not_pending")
    assert Membership.objects.filter(team=cast.team, user=nina).count() == 1


def test_an_expired_link_is_refused(cast, api, make_user):
    nina = make_user("nina")
    body = invite(api, cast, "nina").json()
    Invitation.objects.filter(pk=body["id"]).update(expires_at=timezone.now() - timedelta(minutes=1))
    token = body["link"].rstrip("/").rsplit("/", 1)[1]
    expired = api(nina).post("/api/v1/invitations/accept", {"token": token})
    assert (expired.status_code, expired.json()["code"]) == (409, "invitation_expired")
    assert api(cast.admin).get(f"/api/v1/teams/{cast.team.pk}/invitations").json() == []
    assert api(cast.admin).get(f"/api/v1/teams/{cast.team.pk}/invitations/{body['id']}").json()["state"] == "expired"


def test_the_admin_lists_and_revokes_and_the_invitee_declines(cast, api, make_user):
    nina = make_user("nina")
    first, second = invite(api, cast, "nina").json(), invite(api, cast, "someone@example.com").json()
    listed = api(cast.admin).get(f"/api/v1/teams/{cast.team.pk}/invitations").json()
    assert {item["invitee"] for item in listed} == {"nina", "someone@example.com"}
    assert api(cast.viewer).get(f"/api/v1/teams/{cast.team.pk}/invitations").status_code == 403

    revoked = api(cast.admin).delete(f"/api/v1/teams/{cast.team.pk}/invitations/{second['id']}")
    assert revoked.json()["state"] == "revoked"
    declined = api(nina).post(f"/api/v1/me/invitations/{first['id']}/decline")
    assert declined.json()["state"] == "declined"
    assert api(cast.admin).get(f"/api/v1/teams/{cast.team.pk}/invitations").json() == []
    late = api(cast.admin).delete(f"/api/v1/teams/{cast.team.pk}/invitations/{first['id']}")
    assert (late.status_code, late.json()["code"]) == (409, "invitation_not_pending")
    assert {"invitation.create", "invitation.revoke", "invitation.decline"} <= set(
        AuditEvent.objects.filter(team=cast.team).values_list("action", flat=True))


def test_adding_a_member_directly_is_gone(cast, api):
    response = api(cast.admin).post(f"/api/v1/teams/{cast.team.pk}/memberships", {"username": "vera"})
    assert response.status_code == 405


def test_invitations_over_mcp(cast, token_for, make_user):
    nina = make_user("nina")
    is_error, body = call_tool(token_for(cast.admin), "invite_to_team",
                               {"team_id": cast.team.pk, "invitee": "nina", "role": "operator"})
    assert not is_error and body["state"] == "pending"
    is_error, listed = call_tool(token_for(nina), "list_my_invitations", {})
    assert not is_error and [item["id"] for item in listed["results"]] == [body["id"]]
    is_error, joined = call_tool(token_for(nina), "accept_invitation", {"invitation_id": body["id"]})
    assert not is_error and joined["role"] == "operator"
    event = AuditEvent.objects.get(action="invitation.accept")
    assert event.source == "mcp"
