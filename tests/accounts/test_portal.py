"""The accounts portal pages through Django's test client: the same serializers, services, codes and
permissions as the REST API, rendered as pages."""

from __future__ import annotations

import hashlib
import html
import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from accounts import audit, services
from accounts.models import ApiToken, AuditEvent, Invitation, Membership, Role, Team, User
from config import views as error_views
from config.context import Source

pytestmark = pytest.mark.django_db


def login(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def text(response) -> str:
    return response.content.decode()


def error_code_on_page(response, code: str) -> bool:
    return f'data-error-code="{code}"' in text(response)


def token_form(client: Client, **fields) -> dict:
    """The token form's fields as the token list renders it (with its one-time ``form_nonce``), updated by
    ``fields``."""
    page = text(client.get(reverse("token-list")))
    start = page.index('name="form_nonce" value="') + len('name="form_nonce" value="')
    return {"form_nonce": page[start:page.index('"', start)], **fields}


# --- login, logout, layout --------------------------------------------------------------------------------


def test_anonymous_is_sent_to_login(client):
    response = client.get(reverse("dashboard"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_login_with_the_form_lands_on_the_dashboard(client, cast):
    page = client.get(reverse("login"))
    assert page.status_code == 200
    assert 'name="csrfmiddlewaretoken"' in text(page)

    response = client.post(reverse("login"), {"username": "ada", "password": "correct-horse-battery"}, follow=True)
    assert response.redirect_chain[-1] == (reverse("dashboard"), 302)
    assert "Vision" in text(response)


def test_wrong_password_shows_the_error_code(client, cast):
    response = client.post(reverse("login"), {"username": "ada", "password": "nope"})
    assert response.status_code == 200
    assert error_code_on_page(response, "invalid_login")


def test_logout_is_a_post(cast):
    client = login(cast.admin)
    assert client.get(reverse("logout")).status_code == 405
    response = client.post(reverse("logout"))
    assert response.status_code == 302
    assert client.get(reverse("dashboard")).status_code == 302


def test_portal_posts_need_the_csrf_token(cast):
    client = Client(enforce_csrf_checks=True)
    client.force_login(cast.admin)
    response = client.post(reverse("team-create"), {"name": "Forged", "slug": "forged"})
    assert response.status_code == 403
    assert error_code_on_page(response, "csrf_failed")
    assert not Team.objects.filter(slug="forged").exists()


def test_layout_has_navigation_switcher_and_vendored_htmx(cast):
    page = text(login(cast.admin).get(reverse("dashboard")))
    for name in ["clusters", "training-jobs", "inference", "operations", "audit-list", "settings", "token-list"]:
        assert f'href="{reverse(name)}"' in page
    assert 'action="/me/team/"' in page
    assert "/static/vendor/htmx/htmx.min.js" in page
    assert "https://" not in page.split("</head>")[0]
    assert reverse("admin:index") not in page


def test_superusers_get_the_django_admin_link(cast):
    assert reverse("admin:index") in text(login(cast.superuser).get(reverse("dashboard")))


@pytest.mark.parametrize("name", ["clusters"])
def test_section_pages_are_honest_empty_states(cast, name):
    response = login(cast.viewer).get(reverse(name))
    assert response.status_code == 200
    assert "yet" in text(response)


# --- dashboard and team switcher --------------------------------------------------------------------------


def test_dashboard_for_a_member_summarises_the_current_team(cast):
    services.user_switch_team(actor=cast.viewer, team=cast.team, source=Source.SYSTEM)
    response = login(cast.viewer).get(reverse("dashboard"))
    page = text(response)
    assert response.status_code == 200
    assert 'data-testid="member-count">3<' in page
    assert "badge-role-viewer" in page
    assert "team.create" in page


def test_a_member_of_one_team_lands_in_it_and_of_two_is_asked_to_choose(cast, make_team):
    page = text(login(cast.viewer).get(reverse("dashboard")))
    assert 'data-testid="member-count">3<' in page and "Choose a team to work in" not in page
    Membership.objects.create(team=make_team("Second"), user=cast.viewer, role=Role.VIEWER)
    page = text(login(cast.viewer).get(reverse("dashboard")))
    assert "Choose a team to work in" in page
    assert f'<option value="{cast.team.pk}"' in page


def test_dashboard_without_a_team_invites_to_create_one(make_user):
    """Platform admins (who create teams under the default ``INSTANTSTART_TEAM_CREATION``) are invited to create
    one; anyone else is told to ask (tests/accounts/test_team_creation.py)."""
    response = login(make_user(is_superuser=True)).get(reverse("dashboard"))
    assert response.status_code == 200
    assert 'data-testid="create-first-team"' in text(response)


def test_switching_team_uses_the_service_and_records_the_portal_source(cast, make_team):
    other = make_team("Robotics", admin=cast.admin)
    client = login(cast.admin)
    response = client.post(reverse("switch-team"), {"current_team": other.pk, "next": reverse("team-list")})
    assert response.status_code == 302
    assert response["Location"] == reverse("team-list")
    cast.admin.refresh_from_db()
    assert cast.admin.current_team == other
    assert AuditEvent.objects.filter(action="user.switch_team", source=Source.PORTAL).exists()


def test_switching_to_a_team_you_cannot_see_is_not_found(cast):
    client = login(cast.outsider)
    response = client.post(reverse("switch-team"), {"current_team": cast.team.pk})
    assert response.status_code == 404
    cast.outsider.refresh_from_db()
    assert cast.outsider.current_team != cast.team


def test_switch_team_ignores_offsite_next(cast):
    response = login(cast.admin).post(reverse("switch-team"),
                                      {"current_team": cast.team.pk, "next": "https://evil.example/"})
    assert response["Location"] == reverse("dashboard")


# --- teams ------------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("open_team_creation")
def test_create_team_through_the_form(make_user):
    user = make_user()
    client = login(user)
    assert client.get(reverse("team-create")).status_code == 200
    response = client.post(reverse("team-create"), {"name": "Speech Lab", "slug": "speech-lab", "description": ""})
    team = Team.objects.get(slug="speech-lab")
    assert response.status_code == 302
    assert response["Location"] == reverse("team-detail", args=[team.pk])
    assert Membership.objects.get(team=team, user=user).role == Role.ADMIN
    assert AuditEvent.objects.get(action="team.create", team=team).source == Source.PORTAL
    follow = client.get(response["Location"])
    assert "Team Speech Lab created" in text(follow)


@pytest.mark.usefixtures("open_team_creation")
def test_bad_slug_shows_the_same_field_error_as_rest(make_user, api):
    user = make_user()
    response = login(user).post(reverse("team-create"), {"name": "Bad", "slug": "Bad Slug!"})
    assert response.status_code == 400
    assert error_code_on_page(response, "invalid_slug")
    assert 'value="Bad Slug!"' in text(response)
    assert not Team.objects.filter(name="Bad").exists()

    rest = api(user).post("/api/v1/teams", {"name": "Bad", "slug": "Bad Slug!"})
    assert rest.json()["fields"]["slug"][0]["code"] == "invalid_slug"
    assert rest.status_code == response.status_code


@pytest.mark.usefixtures("open_team_creation")
def test_duplicate_team_name_is_a_field_error_from_the_service(cast):
    response = login(cast.outsider).post(reverse("team-create"), {"name": "Vision", "slug": "vision-2"})
    assert response.status_code == 400
    assert error_code_on_page(response, "unique")


def test_team_list_shows_my_teams_with_roles(cast):
    page = text(login(cast.operator).get(reverse("team-list")))
    assert "Vision" in page
    assert "badge-role-operator" in page
    assert "Speech" not in page


def invitation_link_on(response) -> str:
    page = text(response)
    start = page.index('id="invitation-link" value="') + len('id="invitation-link" value="')
    return html.unescape(page[start:page.index('"', start)])


def test_admin_invites_the_invitee_accepts_then_roles_change_and_members_go(cast, make_user):
    newcomer = make_user("nina")
    client = login(cast.admin)
    detail = reverse("team-detail", args=[cast.team.pk])
    page = text(client.get(detail))
    assert 'id="invite-member"' in page
    assert "Change role" in page

    response = client.post(reverse("member-invite", args=[cast.team.pk]), {"invitee": "nina@example.com",
                                                                             "role": "operator"})
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    assert invitation_link_on(response).startswith("http://testserver/invitations/inv_")
    assert 'id="pending-invitations"' in text(response) and "nina@example.com" in text(response)
    assert not Membership.objects.filter(team=cast.team, user=newcomer).exists()

    invitee = login(newcomer)
    teams_page = text(invitee.get(reverse("team-list")))
    assert 'id="my-invitations"' in teams_page and "Vision" in teams_page
    assert 'id="my-invitations"' in text(invitee.get(reverse("dashboard")))
    invitation = Invitation.objects.get(team=cast.team, invitee="nina@example.com")
    accepted = invitee.post(reverse("invitation-accept", args=[invitation.pk]), follow=True)
    assert accepted.redirect_chain[-1][0] == detail
    membership = Membership.objects.get(team=cast.team, user=newcomer)
    assert membership.role == Role.OPERATOR

    client.post(reverse("member-role", args=[cast.team.pk, membership.pk]), {"role": "admin"})
    membership.refresh_from_db()
    assert membership.role == Role.ADMIN

    response = client.post(reverse("member-remove", args=[cast.team.pk, membership.pk]), follow=True)
    assert not Membership.objects.filter(pk=membership.pk).exists()
    assert "nina was removed" in text(response)
    assert list(AuditEvent.objects.filter(source=Source.PORTAL).order_by("id").values_list("action", flat=True)) == [
        "invitation.create", "invitation.accept", "membership.update", "membership.delete"]


def test_the_invite_answer_is_the_same_whether_or_not_the_account_exists(cast, make_user):
    """Today's add-member form answered "no such user" or echoed the account's e-mail: now the page is the same."""
    make_user("nina")
    client = login(cast.admin)
    url = reverse("member-invite", args=[cast.team.pk])

    def answer(invitee: str) -> tuple[int, str]:
        Invitation.objects.all().delete()
        response = client.post(url, {"invitee": invitee, "role": "viewer"})
        link = invitation_link_on(response)
        page = text(response).replace(html.escape(link), "<link>").replace(invitee, "<invitee>")
        page = re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", page)
        page = re.sub(r'data-invitation-id="\d+"|action="[^"]*/invitations/\d+/revoke/"', "", page)
        return response.status_code, re.sub(r"until [^.]+ UTC", "", page)

    assert answer("nina@example.com") == answer("ghost@example.com")
    assert answer("nina") == answer("ghost")


def test_the_link_accepts_once_for_the_invitee_only(cast, make_user):
    newcomer = make_user("nina")
    issued = services.invitation_create(actor=cast.admin, team=cast.team, invitee="nina", role="viewer",
                                        source=Source.SYSTEM)
    url = reverse("invitation-link", args=[issued.secret])

    stranger = login(cast.outsider)
    refused = stranger.get(url)
    assert refused.status_code == 403
    assert error_code_on_page(refused, "invitation_not_for_you")
    assert stranger.post(url).status_code == 403

    anonymous = Client().get(url)
    assert anonymous.status_code == 302 and anonymous["Location"].startswith(reverse("login"))

    invitee = login(newcomer)
    assert 'data-invitation-state="pending"' in text(invitee.get(url))
    joined = invitee.post(url, follow=True)
    assert joined.redirect_chain[-1][0] == reverse("team-detail", args=[cast.team.pk])
    assert Membership.objects.filter(team=cast.team, user=newcomer, role="viewer").exists()
    used = invitee.post(url, follow=True)
    assert error_code_on_page(used, "invitation_not_pending")
    assert 'data-invitation-state="accepted"' in text(used)
    assert invitee.get(reverse("invitation-link", args=["inv_made-up"])).status_code == 404


def test_the_invitee_declines_and_the_admin_revokes(cast, make_user):
    newcomer = make_user("nina")
    declined = services.invitation_create(actor=cast.admin, team=cast.team, invitee="nina", role="viewer",
                                          source=Source.SYSTEM)
    login(newcomer).post(reverse("invitation-decline", args=[declined.invitation.pk]))
    declined.invitation.refresh_from_db()
    assert declined.invitation.state == "declined"

    revoked = services.invitation_create(actor=cast.admin, team=cast.team, invitee="nina", role="viewer",
                                         source=Source.SYSTEM)
    admin = login(cast.admin)
    response = admin.post(reverse("invitation-revoke", args=[cast.team.pk, revoked.invitation.pk]), follow=True)
    assert "was revoked" in text(response)
    assert 'data-invitation-id' not in text(response)
    link = login(newcomer).post(reverse("invitation-link", args=[revoked.secret]), follow=True)
    assert error_code_on_page(link, "invitation_not_pending")
    assert not Membership.objects.filter(team=cast.team, user=newcomer).exists()


def test_invite_errors_are_shown_with_their_codes(cast):
    client = login(cast.admin)
    url = reverse("member-invite", args=[cast.team.pk])
    blank = client.post(url, {"invitee": "", "role": "viewer"})
    assert blank.status_code == 400
    assert error_code_on_page(blank, "blank")

    client.post(url, {"invitee": "nina", "role": "viewer"})
    again = client.post(url, {"invitee": "nina", "role": "viewer"})
    assert again.status_code == 409
    assert error_code_on_page(again, "invitation_pending")

    bad_role = client.post(url, {"invitee": "nobody", "role": "owner"})
    assert error_code_on_page(bad_role, "invalid_choice")


def test_platform_admins_create_accounts_in_the_portal(cast):
    admin = login(cast.superuser)
    assert 'href="/users/new/"' in text(admin.get(reverse("team-list")))
    form = {"username": "nina", "email": "nina@example.com", "password": "a-long-enough-passphrase"}
    created = admin.post(reverse("user-create"), form, follow=True)
    assert "Account nina created" in text(created)
    nina = User.objects.get(username="nina")
    assert nina.check_password("a-long-enough-passphrase") and not nina.is_superuser
    assert AuditEvent.objects.filter(action="user.create", target_id=str(nina.pk), source=Source.PORTAL).exists()

    taken = admin.post(reverse("user-create"), {**form, "password": "123"})
    assert taken.status_code == 400
    assert error_code_on_page(taken, "unique")
    assert error_code_on_page(taken, "password_too_short")
    assert "123" not in re.findall(r'value="([^"]*)"', text(taken))

    refused = login(cast.admin).post(reverse("user-create"), {**form, "username": "other"})
    assert refused.status_code == 403
    assert not User.objects.filter(username="other").exists()
    assert 'href="/users/new/"' not in text(login(cast.admin).get(reverse("team-list")))


def test_the_last_admin_cannot_be_demoted_or_leave(cast):
    client = login(cast.admin)
    own = Membership.objects.get(team=cast.team, user=cast.admin)
    response = client.post(reverse("member-role", args=[cast.team.pk, own.pk]), {"role": "viewer"}, follow=True)
    assert error_code_on_page(response, "last_admin")
    response = client.post(reverse("member-remove", args=[cast.team.pk, own.pk]), follow=True)
    assert error_code_on_page(response, "last_admin")
    own.refresh_from_db()
    assert own.role == Role.ADMIN


def test_viewer_sees_no_management_and_is_refused(cast):
    client = login(cast.viewer)
    page = text(client.get(reverse("team-detail", args=[cast.team.pk])))
    assert 'id="invite-member"' not in page
    assert "Change role" not in page
    assert 'data-testid="leave-team"' in page

    response = client.post(reverse("member-invite", args=[cast.team.pk]), {"invitee": "olga", "role": "admin"})
    assert response.status_code == 403
    assert error_code_on_page(response, "permission_denied")
    target = Membership.objects.get(team=cast.team, user=cast.operator)
    assert client.post(reverse("member-role", args=[cast.team.pk, target.pk]), {"role": "viewer"}).status_code == 403
    assert client.post(reverse("member-remove", args=[cast.team.pk, target.pk])).status_code == 403
    assert not Membership.objects.filter(team=cast.team, user=cast.outsider).exists()


def test_any_member_may_leave(cast):
    client = login(cast.viewer)
    own = Membership.objects.get(team=cast.team, user=cast.viewer)
    response = client.post(reverse("member-remove", args=[cast.team.pk, own.pk]))
    assert response["Location"] == reverse("team-list")
    assert not Membership.objects.filter(pk=own.pk).exists()


def test_outsider_gets_not_found_for_another_teams_pages(cast):
    client = login(cast.outsider)
    response = client.get(reverse("team-detail", args=[cast.team.pk]))
    assert response.status_code == 404
    assert error_code_on_page(response, "not_found")
    assert "Page not found" in text(response)
    assert client.post(reverse("member-invite", args=[cast.team.pk]), {"invitee": "olga"}).status_code == 404


# --- API tokens -------------------------------------------------------------------------------------------


def test_token_secret_is_shown_once_and_only_its_hash_is_stored(cast):
    client = login(cast.operator)
    response = client.post(reverse("token-create"),
                           token_form(client, name="laptop", expires_in_days="30", read_only="on"))
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    page = text(response)
    start = page.index('id="token-secret" value="') + len('id="token-secret" value="')
    secret = page[start:page.index('"', start)]
    assert secret.startswith("isk_")

    token = ApiToken.objects.get(user=cast.operator, name="laptop")
    assert token.read_only
    assert token.key_hash == hashlib.sha256(secret.encode()).hexdigest()
    stored = [str(value) for value in ApiToken.objects.filter(pk=token.pk).values().get().values()]
    assert all(secret not in value for value in stored)
    assert not AuditEvent.objects.filter(after__icontains=secret).exists()

    listing = text(client.get(reverse("token-list")))
    assert secret not in listing
    assert token.prefix in listing


def test_token_form_errors_use_the_serializer_codes(cast):
    client = login(cast.operator)
    response = client.post(reverse("token-create"), token_form(client, name="", expires_in_days="0"))
    assert response.status_code == 400
    assert error_code_on_page(response, "blank")
    assert error_code_on_page(response, "min_value")
    assert not ApiToken.objects.filter(user=cast.operator).exists()


def test_resubmitting_the_token_form_creates_no_second_token(cast):
    """Reloading the "token created" page resends the same POST: it is answered with the token list, not a token."""
    client = login(cast.operator)
    form = token_form(client, name="laptop", expires_in_days="30")
    first = client.post(reverse("token-create"), form)
    assert first.status_code == 200
    assert 'id="token-secret"' in text(first)

    again = client.post(reverse("token-create"), form, follow=True)
    assert again.redirect_chain == [(reverse("token-list"), 302)]
    assert error_code_on_page(again, "form_already_submitted")
    assert 'id="token-secret"' not in text(again)
    assert ApiToken.objects.filter(user=cast.operator).count() == 1

    forged = client.post(reverse("token-create"), {**form, "form_nonce": "made-up"})
    assert forged.status_code == 302
    assert ApiToken.objects.filter(user=cast.operator).count() == 1


def test_a_token_form_with_errors_can_be_corrected_and_sent_again(cast):
    client = login(cast.operator)
    form = token_form(client, name="", expires_in_days="30")
    assert client.post(reverse("token-create"), form).status_code == 400
    fixed = client.post(reverse("token-create"), {**form, "name": "laptop"})
    assert 'id="token-secret"' in text(fixed)
    assert ApiToken.objects.filter(user=cast.operator).count() == 1


def test_revoke_a_token(cast):
    issued = services.token_create(actor=cast.operator, name="ci", source=Source.SYSTEM)
    client = login(cast.operator)
    assert "Revoke" in text(client.get(reverse("token-list")))
    response = client.post(reverse("token-revoke", args=[issued.token.pk]), follow=True)
    issued.token.refresh_from_db()
    assert issued.token.revoked_at is not None
    assert "badge-state-revoked" in text(response)


def test_someone_elses_token_cannot_be_revoked(cast):
    issued = services.token_create(actor=cast.operator, name="ci", source=Source.SYSTEM)
    assert login(cast.admin).post(reverse("token-revoke", args=[issued.token.pk])).status_code == 404
    issued.token.refresh_from_db()
    assert issued.token.revoked_at is None


# --- audit ------------------------------------------------------------------------------------------------


def record_events(team: Team, actor: User, count: int, *, source: str = Source.API) -> None:
    for index in range(count):
        audit.record(actor=actor, source=source, action="test.touch", target=team, team=team,
                     after={"n": index})


def event_rows(response) -> int:
    return text(response).count("data-event-id=")


def test_audit_page_shows_only_visible_teams(cast):
    client = login(cast.admin)
    page = text(client.get(reverse("audit-list")))
    assert "Vision" in page
    speech = Team.objects.get(name="Speech")
    assert f">{speech.name}<" not in page
    foreign = AuditEvent.objects.filter(team=speech).first()
    assert client.get(reverse("audit-detail", args=[foreign.pk])).status_code == 404
    assert client.get(reverse("audit-row", args=[foreign.pk])).status_code == 404


def test_audit_filters_match_the_rest_filter(cast, api):
    record_events(cast.team, cast.operator, 3, source=Source.MCP)
    client = login(cast.admin)
    params = {"team": cast.team.pk, "source": "mcp", "actor": "otto", "action": "test."}
    response = client.get(reverse("audit-list"), params)
    assert event_rows(response) == 3
    rest = api(cast.admin).get("/api/v1/audit-events", **params)
    assert len(rest.json()["results"]) == 3

    by_target = client.get(reverse("audit-list"), {"target_type": "team", "target_id": str(cast.team.pk)})
    assert event_rows(by_target) == AuditEvent.objects.filter(target_type="team", target_id=str(cast.team.pk)).count()


def test_invalid_audit_filter_is_a_400_with_the_rest_code(cast):
    response = login(cast.admin).get(reverse("audit-list"), {"source": "carrier-pigeon"})
    assert response.status_code == 400
    assert error_code_on_page(response, "invalid_choice")


def test_audit_pages_by_cursor_fifty_at_a_time(cast):
    record_events(cast.team, cast.admin, 60)
    client = login(cast.admin)
    first = client.get(reverse("audit-list"), {"team": cast.team.pk})
    assert event_rows(first) == 50
    page = text(first)
    start = page.index('hx-get="') + len('hx-get="')
    next_link = page[start:page.index('"', start)].replace("&amp;", "&")
    assert next_link.startswith("/audit/?")
    second = client.get(next_link)
    total = AuditEvent.objects.filter(team=cast.team).count()
    assert event_rows(second) == total - 50
    assert 'hx-get="' not in text(second)


def test_audit_live_feed_is_offered_on_the_unfiltered_first_page(cast):
    client = login(cast.admin)
    assert f'data-live-team="{cast.team.pk}"' in text(client.get(reverse("audit-list")))
    assert "data-live-team" not in text(client.get(reverse("audit-list"), {"source": "api"}))


def test_audit_detail_shows_before_and_after(cast):
    membership = Membership.objects.get(team=cast.team, user=cast.viewer)
    services.membership_update(actor=cast.admin, membership=membership, role="operator", source=Source.API)
    event = AuditEvent.objects.get(action="membership.update")
    page = html.unescape(text(login(cast.viewer).get(reverse("audit-detail", args=[event.pk]))))
    assert '"role": "viewer"' in page
    assert '"role": "operator"' in page
    row = login(cast.viewer).get(reverse("audit-row", args=[event.pk]))
    assert f'data-event-id="{event.pk}"' in text(row)


# --- query counts (no N+1) --------------------------------------------------------------------------------


def queries_for(client: Client, url: str, **params) -> int:
    with CaptureQueriesContext(connection) as context:
        response = client.get(url, params)
    assert response.status_code == 200
    return len(context)


def test_audit_page_query_count_does_not_grow_with_rows(cast, django_assert_max_num_queries):
    client = login(cast.admin)
    record_events(cast.team, cast.admin, 5)
    few = queries_for(client, reverse("audit-list"))
    record_events(cast.team, cast.admin, 45)
    many = queries_for(client, reverse("audit-list"))
    assert few == many
    with django_assert_max_num_queries(10):
        assert event_rows(client.get(reverse("audit-list"))) == 50


def test_members_page_query_count_does_not_grow_with_members(cast, make_user, django_assert_max_num_queries):
    client = login(cast.admin)
    url = reverse("team-detail", args=[cast.team.pk])

    def add(count: int) -> None:
        for _ in range(count):
            Membership.objects.create(team=cast.team, user=make_user(), role=Role.VIEWER)

    add(2)
    few = queries_for(client, url)
    add(45)
    many = queries_for(client, url)
    assert few == many
    with django_assert_max_num_queries(10):
        assert text(client.get(url)).count("data-membership-id=") == 50


# --- error pages ------------------------------------------------------------------------------------------


def test_unknown_url_renders_our_404(cast):
    response = login(cast.admin).get("/no/such/page/")
    assert response.status_code == 404
    assert "Page not found" in text(response)
    assert "app.css" in text(response)


def test_403_page_shows_the_code(rf, cast):
    from django.core.exceptions import PermissionDenied

    request = rf.get("/")
    request.user = cast.viewer
    request.team = cast.team
    response = error_views.permission_denied(request, PermissionDenied())
    assert response.status_code == 403
    assert error_code_on_page(response, "permission_denied")


def test_500_page_is_static_and_needs_no_database(rf, django_assert_num_queries):
    with django_assert_num_queries(0):
        response = error_views.server_error(rf.get("/"))
    assert response.status_code == 500
    assert error_code_on_page(response, "internal_error")
    assert "app.css" in text(response)


def test_an_absurdly_long_number_in_a_form_is_a_field_error_not_a_crash(make_user):
    user = make_user()
    client = login(user)
    response = client.post(reverse("token-create"), token_form(client, name="x", expires_in_days="9" * 5000))
    assert response.status_code == 400
    assert error_code_on_page(response, "invalid_type")
