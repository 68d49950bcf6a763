"""Permission-matrix cases of team invitations (added to tests.matrix.CASES): a team's admins invite, list and revoke;
every signed-in user lists, accepts and declines what is addressed to them."""

from tests.matrix import ADMINS, AUTHENTICATED, Case, team


def _invite(cast, actor):
    """An invitation addressed to ``actor`` (by username) to a team none of the cast belongs to, and its secret."""
    from accounts import services
    from accounts.models import Team

    other, _ = Team.objects.get_or_create(slug="matrix-invitations", defaults={"name": "Matrix invitations"})
    invitee = actor.username if actor is not None else "nobody"
    issued = services.invitation_create(actor=cast.superuser, team=other, invitee=invitee, role="viewer",
                                        source="system")
    return issued


def pending_of_team(cast, actor) -> dict:
    from accounts import services

    issued = services.invitation_create(actor=cast.admin, team=cast.team, invitee="someone@example.com",
                                        role="operator", source="system")
    return {"team_id": cast.team.pk, "invitation_id": issued.invitation.pk}


def addressed_to_actor(cast, actor) -> dict:
    return {"invitation_id": _invite(cast, actor).invitation.pk}


def link_of_actor(cast, actor) -> dict:
    return {"token": _invite(cast, actor).secret}


CASES = [
    Case("invitations_list", ADMINS, params=team),
    Case("invitations_create", ADMINS, body={"invitee": "newcomer", "role": "viewer"}, params=team),
    Case("invitations_retrieve", ADMINS, params=pending_of_team),
    Case("invitations_revoke", ADMINS, params=pending_of_team),
    Case("my_invitations_list", AUTHENTICATED, team_scoped=False),
    Case("my_invitations_accept", AUTHENTICATED, params=addressed_to_actor, team_scoped=False),
    Case("my_invitations_decline", AUTHENTICATED, params=addressed_to_actor, team_scoped=False),
    Case("invitations_accept_by_token", AUTHENTICATED, body=link_of_actor, team_scoped=False),
]
