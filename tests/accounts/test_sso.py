"""Single sign-on against a real OpenID Connect provider on loopback (tests/support/oidc_provider.py): the Django
test client follows each redirect through the provider over HTTP, and InstantStart's backend calls its token, JWKS
and userinfo endpoints as it would call Okta or Keycloak."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest
from django.test import Client

from accounts import actions, services
from accounts.models import AuditEvent, GroupMapping, Membership, Role, SsoIdentity, User
from accounts.sso import services as sso_services
from config.context import Source
from config.errors import PermissionDenied
from mcp_server.auth import caller_for_secret
from mcp_server.testing import call_tool, call_tool_as
from tests.support.oidc_provider import CLIENT_SECRET, OidcProvider, Person, configure, running_provider


@pytest.fixture(scope="module")
def idp() -> Iterator[OidcProvider]:
    with running_provider() as provider:
        yield provider


@pytest.fixture
def sso(idp, settings) -> OidcProvider:
    idp.people.clear()
    configure(settings, idp)
    return idp


def sign_in(client: Client, idp: OidcProvider, person: Person):
    """Click "Sign in with …", let the provider sign ``person`` in and follow its redirect back: the response of
    InstantStart's callback."""
    idp.sign_in_as(person)
    start = client.get("/oidc/authenticate/")
    assert start.status_code == 302 and start["Location"].startswith(f"{idp.issuer}/authorize?")
    back = httpx.get(start["Location"], follow_redirects=False)
    assert back.status_code == 302
    callback = urlsplit(back.headers["location"])
    assert callback.path == "/oidc/callback/"
    return client.get(f"{callback.path}?{callback.query}")


def test_the_sign_in_page_offers_the_provider(sso, client, db):
    page = client.get("/login/")
    assert b"Sign in with Loopback IdP" in page.content
    assert b'name="password"' in page.content


def test_a_first_sign_in_makes_the_user_and_lands_them_in_the_team_their_group_maps_to(sso, client, make_team):
    team = make_team("Vision Lab")
    GroupMapping.objects.create(group="ml-engineers", team=team, role=Role.OPERATOR)
    alice = sso.add(Person("sub-alice", "alice", "alice@example.com", ["ml-engineers", "unrelated"]))

    answer = sign_in(client, sso, alice)

    assert answer.status_code == 302 and answer["Location"] == "/"
    user = User.objects.get(username="alice")
    assert user.email == "alice@example.com" and not user.has_usable_password()
    assert SsoIdentity.objects.get(user=user).subject == "sub-alice"
    membership = Membership.objects.get(user=user)
    assert (membership.team, membership.role, membership.mapped) == (team, Role.OPERATOR, True)
    dashboard = client.get("/")
    assert dashboard.status_code == 200 and dashboard.wsgi_request.user == user
    assert dashboard.wsgi_request.team == team
    assert b"IdP group</span>" in client.get(f"/teams/{team.pk}/").content
    recorded = list(AuditEvent.objects.filter(target_id__in=[str(user.pk), str(membership.pk)])
                    .values_list("action", "actor_name"))
    assert (actions.SSO_USER_CREATE, "alice") in recorded
    assert (actions.SSO_MEMBERSHIP_GRANT, "system") in recorded


def test_mappings_change_and_remove_only_what_they_made_at_the_next_sign_in(sso, client, make_team):
    mapped_team, invited_team = make_team("Mapped"), make_team("Invited")
    mapping = GroupMapping.objects.create(group="ml", team=mapped_team, role=Role.VIEWER)
    GroupMapping.objects.create(group="ml", team=invited_team, role=Role.ADMIN)
    carol = sso.add(Person("sub-carol", "carol", "carol@example.com", ["ml"]))
    sign_in(client, sso, carol)
    user = User.objects.get(username="carol")
    # an admin of the invited team had already given carol an operator role there: the mapping leaves it alone
    Membership.objects.filter(user=user, team=invited_team).update(mapped=False, role=Role.OPERATOR)

    mapping.role = Role.ADMIN
    mapping.save()
    sign_in(client, sso, carol)
    assert Membership.objects.get(user=user, team=mapped_team).role == Role.ADMIN
    assert Membership.objects.get(user=user, team=invited_team).role == Role.OPERATOR

    carol.groups, carol.email = [], "carol@new.example.com"
    answer = sign_in(client, sso, carol)
    assert answer.status_code == 302 and answer["Location"] == "/"
    assert list(Membership.objects.filter(user=user).values_list("team", "role")) == [(invited_team.pk,
                                                                                       Role.OPERATOR)]
    user.refresh_from_db()
    assert user.is_active and user.email == "carol@new.example.com"
    assert AuditEvent.objects.filter(action=actions.SSO_MEMBERSHIP_REMOVE, team=mapped_team).exists()
    assert AuditEvent.objects.get(action=actions.SSO_USER_UPDATE, target_id=str(user.pk)).after == {
        "email": "carol@new.example.com"}


def test_removed_from_every_mapped_group_the_user_is_deactivated_and_their_tokens_refused_at_once(
        sso, client, make_team, api):
    team = make_team("Speech")
    GroupMapping.objects.create(group="speech", team=team, role=Role.OPERATOR)
    bob = sso.add(Person("sub-bob", "bob", "bob@example.com", ["speech"]))
    sign_in(client, sso, bob)
    user = User.objects.get(username="bob")
    secret = services.token_create(actor=user, name="laptop", source=Source.SYSTEM).secret
    assert api_me(secret).status_code == 200
    accepted_caller = caller_for_secret(secret)  # as the /mcp door keeps it for up to 30 s

    bob.groups = ["another"]
    refused = sign_in(Client(), sso, bob)

    assert refused.status_code == 302 and refused["Location"] == "/login/?sso=no_access"
    user.refresh_from_db()
    assert not user.is_active and SsoIdentity.objects.get(user=user).deactivated_by_mapping
    assert not Membership.objects.filter(user=user).exists()
    assert api_me(secret).json()["code"] == "user_inactive"
    assert call_tool(secret, "whoami")[1]["code"] == "user_inactive"
    at_the_door = call_tool_as(accepted_caller, "whoami")
    assert at_the_door.is_error and at_the_door.structured_content["code"] == "user_inactive"
    assert client.get("/").status_code == 302  # the session signed in earlier is over too
    assert AuditEvent.objects.filter(action=actions.SSO_USER_DEACTIVATE, target_id=str(user.pk)).exists()
    assert b"sso_no_access" in Client().get(refused["Location"]).content

    bob.groups = ["speech"]
    assert sign_in(Client(), sso, bob)["Location"] == "/"
    user.refresh_from_db()
    assert user.is_active and api_me(secret).status_code == 200


def api_me(secret: str):
    return Client().get("/api/v1/me", HTTP_AUTHORIZATION=f"Bearer {secret}")


def test_a_user_deactivated_by_an_admin_stays_deactivated(sso, client, make_team):
    team = make_team("Audio")
    GroupMapping.objects.create(group="audio", team=team, role=Role.VIEWER)
    dana = sso.add(Person("sub-dana", "dana", "dana@example.com", ["audio"]))
    sign_in(client, sso, dana)
    User.objects.filter(username="dana").update(is_active=False)
    assert sign_in(Client(), sso, dana)["Location"] == "/login/?sso=no_access"
    assert not User.objects.get(username="dana").is_active


def test_an_id_token_for_another_client_or_a_refused_client_secret_fails_the_sign_in(sso, client, settings, db):
    erin = sso.add(Person("sub-erin", "erin", "erin@example.com"))
    sso.audience = "another-client"
    try:
        assert sign_in(client, sso, erin)["Location"] == "/login/?sso=failed"
    finally:
        sso.audience = None
    settings.OIDC_RP_CLIENT_SECRET = "wrong"
    assert sign_in(client, sso, erin)["Location"] == "/login/?sso=failed"
    assert not User.objects.filter(username="erin").exists()

    settings.OIDC_RP_CLIENT_SECRET, settings.OIDC_TOKEN_USE_BASIC_AUTH = CLIENT_SECRET, True
    assert sign_in(client, sso, erin)["Location"] == "/"  # client_secret_basic


def test_local_passwords_off_hides_the_form_and_refuses_all_but_platform_admins(sso, client, settings, make_user):
    settings.INSTANTSTART_LOCAL_PASSWORDS = False
    make_user("frank", password="correct-horse-battery")
    User.objects.create_superuser("root", "root@example.com", "correct-horse-battery")
    page = client.get("/login/")
    assert b"Sign in with Loopback IdP" in page.content and b'name="password"' not in page.content

    refused = client.post("/login/", {"username": "frank", "password": "correct-horse-battery"})
    assert refused.status_code == 403 and b"password_sign_in_disabled" in refused.content
    break_glass = {"username": "frank", "password": "correct-horse-battery", "break_glass": "1"}
    assert b"invalid_login" in client.post("/login/", break_glass).content
    assert client.post("/login/", {**break_glass, "username": "root"}).status_code == 302


def test_platform_admins_keep_the_group_mappings_in_the_portal(sso, client, make_team, make_user):
    team = make_team("Robotics")
    root = User.objects.create_superuser("root", "root@example.com", "correct-horse-battery")
    client.force_login(root)
    page = client.get("/settings/sso/")
    assert page.status_code == 200 and sso.issuer.encode() in page.content
    assert b"http://testserver/oidc/callback/" in page.content and b"loopback-client-secret" not in page.content

    assert client.post("/settings/sso/mappings/", {"group": "robots", "team": team.pk, "role": "admin"}).status_code \
        == 302
    mapping = GroupMapping.objects.get(group="robots")
    assert (mapping.team, mapping.role, mapping.created_by) == (team, Role.ADMIN, root)
    again = client.post("/settings/sso/mappings/", {"group": "robots", "team": team.pk, "role": "viewer"})
    assert again.status_code == 400 and b"is already mapped to Robotics" in again.content
    assert AuditEvent.objects.filter(action=actions.GROUP_MAPPING_CREATE, actor=root, team=team).count() == 1

    client.post(f"/settings/sso/mappings/{mapping.pk}/delete/")
    assert not GroupMapping.objects.exists()
    assert AuditEvent.objects.filter(action=actions.GROUP_MAPPING_DELETE, actor=root).exists()

    client.force_login(team.memberships.get().user)
    assert client.get("/settings/sso/").status_code == 403
    with pytest.raises(PermissionDenied):
        sso_services.group_mapping_create(actor=team.memberships.get().user, group="x", team=team, role="viewer",
                                          source=Source.SYSTEM)


def test_an_unreachable_or_mismatched_provider_is_said_so(settings, client, db):
    from tests.support.oidc_provider import CLIENT_ID

    with running_provider() as gone:
        issuer = gone.issuer
    settings.INSTANTSTART_OIDC_ISSUER, settings.OIDC_RP_CLIENT_ID = issuer, CLIENT_ID
    answer = client.get("/oidc/authenticate/")
    assert answer.status_code == 302 and answer["Location"] == "/login/?sso=unavailable"
    assert b"sso_unavailable" in client.get(answer["Location"]).content

    with running_provider() as other:
        settings.INSTANTSTART_OIDC_ISSUER = other.issuer
        other.issuer = "https://another-issuer.example.com"  # its discovery document now names another issuer
        assert client.get("/oidc/authenticate/")["Location"] == "/login/?sso=unavailable"
