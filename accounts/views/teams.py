"""Teams: my teams (and the invitations addressed to me), create a team, a team's members (invite, revoke an
invitation, change role, remove, leave)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from accounts import access, actions, selectors, services
from accounts.api.serializers import InvitationCreateSerializer, MembershipUpdateSerializer, TeamCreateSerializer
from accounts.models import Role, Team
from accounts.requests import PortalRequest
from accounts.services import IssuedInvitation
from portal.forms import SerializerForm
from portal.views import act, flash_error, portal_view

MEMBER_ACTIONS = [actions.INVITATION_CREATE, actions.INVITATION_VIEW, actions.INVITATION_REVOKE,
                  actions.MEMBERSHIP_UPDATE, actions.MEMBERSHIP_DELETE]


@portal_view
def team_list(request: PortalRequest) -> HttpResponse:
    teams = list(selectors.team_list(actor=request.user).order_by("name"))
    for team in teams:
        team.my_role = access.role_in(request.user, team)
    return render(request, "accounts/teams/list.html", {
        "section": "teams", "teams": teams, "can_create": access.can(request.user, actions.TEAM_CREATE),
        "invitations": selectors.my_invitation_list(actor=request.user),
    })


@portal_view
def team_create(request: PortalRequest) -> HttpResponse:
    """GET shows the form; POST validates with ``TeamCreateSerializer`` and calls ``services.team_create``."""
    access.require(request.user, actions.TEAM_CREATE)
    if request.method != "POST":
        form = SerializerForm(TeamCreateSerializer)
        return render(request, "accounts/teams/create.html", {"section": "teams", "form": form})
    form = SerializerForm(TeamCreateSerializer, request.POST)
    team = form.submit(lambda **data: services.team_create(actor=request.user, source=request.source, **data))
    if team is None:
        return render(request, "accounts/teams/create.html", {"section": "teams", "form": form}, status=form.status)
    messages.success(request, f"Team {team.name} created. You are its admin.")
    return redirect("team-detail", team_id=team.pk)


def _render_detail(request: PortalRequest, team: Team, *, invite_form: SerializerForm | None = None,
                   issued: IssuedInvitation | None = None) -> HttpResponse:
    memberships = list(selectors.membership_list(actor=request.user, team=team).order_by("user__username"))
    invite_form = invite_form or SerializerForm(InvitationCreateSerializer, initial={"role": Role.VIEWER})
    caps = {action.replace(".", "_"): allowed
            for action, allowed in access.capabilities(request.user, team, MEMBER_ACTIONS).items()}
    return render(request, "accounts/teams/detail.html", {
        "section": "teams",
        "team": team,
        "memberships": memberships,
        "my_membership": next((m for m in memberships if m.user_id == request.user.pk), None),
        "my_role": access.role_in(request.user, team),
        "caps": caps,
        "roles": Role.choices,
        "invite_form": invite_form,
        "invitations": selectors.invitation_list(actor=request.user, team=team) if caps["invitation_view"] else [],
        "issued": issued,
        "issued_url": request.build_absolute_uri(reverse("invitation-link", args=[issued.secret])) if issued else "",
    }, status=invite_form.status)


@portal_view
def team_detail(request: PortalRequest, team_id: int) -> HttpResponse:
    """404 for a team the user cannot see; management buttons only for those who may use them."""
    return _render_detail(request, selectors.team_get(actor=request.user, team_id=team_id))


@require_POST
@never_cache
@portal_view
def member_invite(request: PortalRequest, team_id: int) -> HttpResponse:
    """Invite by username or e-mail; the page answers with the invitation's link, shown this once. The answer is the
    same whether or not anyone has that username or e-mail. Sent again (a reload), it is ``invitation_pending``."""
    team = selectors.team_get(actor=request.user, team_id=team_id)
    access.require(request.user, actions.INVITATION_CREATE, team)
    form = SerializerForm(InvitationCreateSerializer, request.POST)
    issued = form.submit(
        lambda **data: services.invitation_create(actor=request.user, team=team, source=request.source, **data)
    )
    return _render_detail(request, team, invite_form=form if issued is None else None, issued=issued)


@require_POST
@portal_view
def invitation_revoke(request: PortalRequest, team_id: int, invitation_id: int) -> HttpResponse:
    team = selectors.team_get(actor=request.user, team_id=team_id)
    invitation = selectors.invitation_get(actor=request.user, team=team, invitation_id=invitation_id)
    return act(request, lambda: services.invitation_revoke(actor=request.user, invitation=invitation,
                                                           source=request.source),
               to=reverse("team-detail", args=[team.pk]),
               success=f"The invitation of {invitation.invitee} was revoked; its link no longer works.")


@require_POST
@portal_view
def member_role(request: PortalRequest, team_id: int, membership_id: int) -> HttpResponse:
    """Change a member's role; a last-admin conflict is flashed with its code."""
    team = selectors.team_get(actor=request.user, team_id=team_id)
    membership = selectors.membership_get(actor=request.user, team=team, membership_id=membership_id)
    access.require(request.user, actions.MEMBERSHIP_UPDATE, membership)
    form = SerializerForm(MembershipUpdateSerializer, request.POST)
    updated = form.submit(lambda **data: services.membership_update(
        actor=request.user, membership=membership, source=request.source, **data))
    if updated is None:
        assert form.error is not None  # submit answers None only after an error
        flash_error(request, form.error)
    else:
        messages.success(request, f"{membership.user.username} is now {updated.get_role_display()}.")
    return redirect("team-detail", team_id=team.pk)


@require_POST
@portal_view
def member_remove(request: PortalRequest, team_id: int, membership_id: int) -> HttpResponse:
    """Admins remove anyone; every member may remove themselves (leave). The last admin cannot go."""
    team = selectors.team_get(actor=request.user, team_id=team_id)
    membership = selectors.membership_get(actor=request.user, team=team, membership_id=membership_id)
    detail = reverse("team-detail", args=[team.pk])
    if membership.user_id == request.user.pk:
        to, success = reverse("team-list"), f"You left {team.name}."
    else:
        to, success = detail, f"{membership.user.username} was removed from {team.name}."
    return act(request, lambda: services.membership_delete(actor=request.user, membership=membership,
                                                           source=request.source), to=to, success=success, back=detail)
