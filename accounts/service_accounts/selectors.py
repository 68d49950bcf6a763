"""Reads of service accounts, narrowed by ``access.visible`` to the teams the actor is in."""

from __future__ import annotations

from django.db.models import OuterRef, QuerySet, Subquery

from accounts import access
from accounts.models import ApiToken, Membership, ServiceAccount, Team, User
from accounts.selectors import get_visible


def service_account_list(*, actor: User, team: Team) -> QuerySet[ServiceAccount]:
    """The team's service accounts, each with ``role`` (its role in the team) and its tokens prefetched."""
    role = Membership.objects.filter(user_id=OuterRef("user_id"), team_id=OuterRef("team_id")).values("role")[:1]
    return (access.visible(actor, ServiceAccount).filter(team=team)
            .select_related("user", "team", "created_by").annotate(role=Subquery(role))
            .prefetch_related("user__api_tokens"))


def service_account_get(*, actor: User, team: Team, service_account_id: int | str) -> ServiceAccount:
    return get_visible(service_account_list(actor=actor, team=team), service_account_id, "service account")


def service_account_token_get(*, service_account: ServiceAccount, token_id: int | str) -> ApiToken:
    """A token of ``service_account`` (read by whoever may see the service account)."""
    return get_visible(ApiToken.objects.filter(user_id=service_account.user_id), token_id, "token")
