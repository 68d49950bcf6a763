"""Accounts services: authorization, business rules, audit rows, and no partial writes."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts import access, services
from accounts.models import ApiToken, AuditEvent, Invitation, Membership, Role, Team
from accounts.tokens import hash_secret
from config.context import Source, request_id_scope
from config.errors import Conflict, NotFound, PermissionDenied, ValidationFailed


@pytest.mark.usefixtures("open_team_creation")
def test_team_create_makes_the_creator_admin_and_current_and_audits(make_user):
    alice = make_user("alice")
    with request_id_scope("req-123456"):
        team = services.team_create(actor=alice, name="Vision", slug="vision", source=Source.API)
    assert Membership.objects.get(team=team, user=alice).role == Role.ADMIN
    alice.refresh_from_db()
    assert alice.current_team == team
    event = AuditEvent.objects.get(action="team.create")
    assert (event.actor, event.team, event.source, event.request_id) == (alice, team, "api", "req-123456")
    assert event.after == {"name": "Vision", "slug": "vision", "description": ""}


@pytest.mark.usefixtures("open_team_creation")
def test_team_names_and_slugs_are_unique_with_field_codes(make_user):
    alice = make_user()
    services.team_create(actor=alice, name="Vision", slug="vision", source=Source.API)
    with pytest.raises(ValidationFailed) as error:
        services.team_create(actor=alice, name="vision", slug="vision", source=Source.API)
    assert {field: [e["code"] for e in errors] for field, errors in error.value.fields.items()} == {
        "name": ["unique"], "slug": ["unique"],
    }
    assert Team.objects.count() == 1


def test_team_update_audits_only_changed_fields(cast):
    services.team_update(actor=cast.admin, team=cast.team, description="GPU people", name=cast.team.name,
                         source=Source.PORTAL)
    event = AuditEvent.objects.get(action="team.update")
    assert event.before == {"description": ""}
    assert event.after == {"description": "GPU people"}


def test_operator_cannot_update_team_and_outsider_cannot_see_it(cast):
    with pytest.raises(PermissionDenied):
        services.team_update(actor=cast.operator, team=cast.team, description="x", source=Source.API)
    with pytest.raises(NotFound):
        services.team_update(actor=cast.outsider, team=cast.team, description="x", source=Source.API)
    assert not AuditEvent.objects.filter(action="team.update").exists()


def test_an_invitation_by_email_is_accepted_once_by_its_invitee(cast, make_user):
    newcomer = make_user("nina")
    issued = services.invitation_create(actor=cast.admin, team=cast.team, invitee="NINA@example.com",
                                        role=Role.OPERATOR, source=Source.API)
    assert issued.secret.startswith("inv_")
    assert issued.secret not in str(Invitation.objects.filter(pk=issued.invitation.pk).values().get())
    with pytest.raises(PermissionDenied) as error:
        services.invitation_accept(actor=cast.outsider, invitation=issued.invitation, source=Source.API)
    assert error.value.code == "invitation_not_for_you"

    membership = services.invitation_accept(actor=newcomer, invitation=issued.invitation, source=Source.API)
    assert (membership.team, membership.role) == (cast.team, Role.OPERATOR)
    newcomer.refresh_from_db()
    assert newcomer.current_team == cast.team
    with pytest.raises(Conflict) as error:
        services.invitation_accept(actor=newcomer, invitation=issued.invitation, source=Source.API)
    assert error.value.code == "invitation_not_pending"
    assert list(AuditEvent.objects.filter(target_type="invitation").values_list("action", flat=True)
                .order_by("id")) == ["invitation.create", "invitation.accept"]


def test_inviting_says_nothing_about_who_has_an_account(cast, make_user):
    """The same answer, the same audit record, whether the invitee exists or not; no account is looked at."""
    make_user("nina")
    answers = []
    for invitee in ("nina", "ghost", "nina@example.com", "ghost@example.com"):
        issued = services.invitation_create(actor=cast.admin, team=cast.team, invitee=invitee, role=Role.VIEWER,
                                            source=Source.API)
        answers.append((issued.invitation.state, issued.invitation.invitee == invitee))
    assert set(answers) == {("pending", True)}
    assert all(set(event.after) == {"invitee", "role", "expires_at"}
               for event in AuditEvent.objects.filter(action="invitation.create"))


def test_an_expired_or_revoked_invitation_cannot_be_accepted(cast, make_user):
    newcomer = make_user("nina")
    issued = services.invitation_create(actor=cast.admin, team=cast.team, invitee="nina", role=Role.VIEWER,
                                        source=Source.API)
    Invitation.objects.filter(pk=issued.invitation.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    with pytest.raises(Conflict) as error:
        services.invitation_accept(actor=newcomer, invitation=issued.invitation, source=Source.API)
    assert error.value.code == "invitation_expired"
    assert not Membership.objects.filter(user=newcomer).exists()

    again = services.invitation_create(actor=cast.admin, team=cast.team, invitee="nina", role=Role.VIEWER,
                                       source=Source.API)
    with pytest.raises(Conflict) as error:
        services.invitation_create(actor=cast.admin, team=cast.team, invitee="NINA", role=Role.ADMIN,
                                   source=Source.API)
    assert error.value.code == "invitation_pending"
    services.invitation_revoke(actor=cast.admin, invitation=again.invitation, source=Source.API)
    with pytest.raises(Conflict) as error:
        services.invitation_accept(actor=newcomer, invitation=again.invitation, source=Source.API)
    assert error.value.code == "invitation_not_pending"


def test_only_team_admins_invite(cast):
    with pytest.raises(PermissionDenied):
        services.invitation_create(actor=cast.operator, team=cast.team, invitee="x", role=Role.VIEWER,
                                   source=Source.API)
    with pytest.raises(NotFound):
        services.invitation_create(actor=cast.outsider, team=cast.team, invitee="x", role=Role.VIEWER,
                                   source=Source.API)
    assert not Invitation.objects.exists()


def test_the_last_admin_can_neither_be_demoted_nor_leave(cast):
    admin_membership = Membership.objects.get(team=cast.team, user=cast.admin)
    with pytest.raises(Conflict) as error:
        services.membership_update(actor=cast.admin, membership=admin_membership, role=Role.VIEWER,
                                   source=Source.API)
    assert error.value.code == "last_admin"
    with pytest.raises(Conflict):
        services.membership_delete(actor=cast.admin, membership=admin_membership, source=Source.API)
    services.membership_update(actor=cast.admin, membership=Membership.objects.get(user=cast.operator),
                               role=Role.ADMIN, source=Source.API)
    services.membership_delete(actor=cast.admin, membership=admin_membership, source=Source.API)
    assert not Membership.objects.filter(pk=admin_membership.pk).exists()


def test_a_member_may_leave_and_loses_the_team_as_current(cast):
    services.user_switch_team(actor=cast.viewer, team=cast.team, source=Source.PORTAL)
    services.membership_delete(actor=cast.viewer, membership=Membership.objects.get(user=cast.viewer),
                               source=Source.PORTAL)
    cast.viewer.refresh_from_db()
    assert cast.viewer.current_team is None
    assert not access.can(cast.viewer, "team.view", cast.team)


def test_token_secret_is_returned_once_and_only_its_hash_is_stored(make_user):
    alice = make_user()
    issued = services.token_create(actor=alice, name="laptop", source=Source.PORTAL)
    stored = ApiToken.objects.get(pk=issued.token.pk)
    assert stored.key_hash == hash_secret(issued.secret)
    assert issued.secret not in {stored.key_hash, stored.prefix, stored.name}
    assert issued.secret.startswith(stored.prefix)
    event = AuditEvent.objects.get(action="token.create")
    assert issued.secret not in str(event.after)


def test_token_expiry_is_bounded(make_user, settings):
    with pytest.raises(ValidationFailed) as error:
        services.token_create(actor=make_user(), name="x", expires_in_days=settings.INSTANTSTART_TOKEN_MAX_DAYS + 1,
                              source=Source.API)
    assert "expires_in_days" in error.value.fields


def test_revoke_is_final_and_idempotent(make_user):
    alice = make_user()
    token = services.token_create(actor=alice, name="x", source=Source.API).token
    first = services.token_revoke(actor=alice, token=token, source=Source.API).revoked_at
    assert services.token_revoke(actor=alice, token=token, source=Source.API).revoked_at == first
    assert AuditEvent.objects.filter(action="token.revoke").count() == 1


def test_switching_to_a_team_you_cannot_see_is_not_found(cast):
    with pytest.raises(NotFound):
        services.user_switch_team(actor=cast.outsider, team=cast.team, source=Source.API)


def test_team_with_only_memberships_can_be_deleted_and_the_audit_survives(cast):
    team_id = cast.team.pk
    history = list(AuditEvent.objects.filter(team_id=team_id).values_list("pk", "team_id", "team_name"))
    assert history and all(name == "Vision" for _, _, name in history)
    services.team_delete(actor=cast.admin, team=cast.team, source=Source.API)
    assert not Team.objects.filter(pk=team_id).exists()
    event = AuditEvent.objects.get(action="team.delete")
    assert event.before["id"] == team_id
    assert list(AuditEvent.objects.filter(team_id=team_id).values_list("pk", "team_id", "team_name")) == history


def test_audit_events_are_append_only(cast):
    event = AuditEvent.objects.first()
    event.action = "tampered"
    with pytest.raises(ValueError):
        event.save()
    with pytest.raises(ValueError):
        event.delete()


def test_first_admin_is_created_once(db):
    user, created = services.first_admin_ensure(username="admin", password="s3cret-pass-phrase")
    again, created_again = services.first_admin_ensure(username="other", password="x")
    assert (created, created_again, again) == (True, False, user)
    assert user.is_superuser and user.check_password("s3cret-pass-phrase")
