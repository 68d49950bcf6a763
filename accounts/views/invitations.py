"""Invitations addressed to me: accept or decline one (listed on the Teams page and the dashboard), or open the link
an admin sent (``/invitations/<secret>/``) and accept it there."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from accounts import selectors, services
from accounts.requests import PortalRequest
from portal.views import act, flash_error, perform, portal_view


@require_POST
@portal_view
def invitation_accept(request: PortalRequest, invitation_id: int) -> HttpResponse:
    invitation = selectors.my_invitation_get(actor=request.user, invitation_id=invitation_id)
    return act(request, lambda: services.invitation_accept(actor=request.user, invitation=invitation,
                                                           source=request.source),
               to=lambda membership: reverse("team-detail", args=[membership.team_id]), back=reverse("team-list"),
               success=f"You joined {invitation.team.name} as {invitation.get_role_display()}.")


@require_POST
@portal_view
def invitation_decline(request: PortalRequest, invitation_id: int) -> HttpResponse:
    invitation = selectors.my_invitation_get(actor=request.user, invitation_id=invitation_id)
    return act(request, lambda: services.invitation_decline(actor=request.user, invitation=invitation,
                                                            source=request.source),
               to=reverse("team-list"), success=f"You declined the invitation to {invitation.team.name}.")


@never_cache
@portal_view
def invitation_link(request: PortalRequest, secret: str) -> HttpResponse:
    """GET shows the invitation (to its invitee only: ``invitation_not_for_you`` otherwise); POST accepts it, or
    declines it with ``decline`` in the form. The link works once."""
    invitation = services.invitation_by_secret(actor=request.user, secret=secret)
    if request.method == "POST":
        decline = "decline" in request.POST
        _done, error = perform(lambda: (
            services.invitation_decline(actor=request.user, invitation=invitation, source=request.source)
            if decline else
            services.invitation_accept(actor=request.user, invitation=invitation, source=request.source)))
        if error is None:
            if decline:
                messages.success(request, f"You declined the invitation to {invitation.team.name}.")
                return redirect("team-list")
            messages.success(request, f"You joined {invitation.team.name} as {invitation.get_role_display()}.")
            return redirect("team-detail", team_id=invitation.team_id)
        flash_error(request, error)
        invitation.refresh_from_db()
    return render(request, "accounts/invitations/link.html", {
        "section": "teams", "invitation": invitation, "secret": secret,
    })
