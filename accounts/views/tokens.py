"""Personal API tokens: list, create (the secret is shown once), revoke."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from accounts import access, actions, selectors, services
from accounts.api.serializers import TokenCreateSerializer
from accounts.requests import PortalRequest
from portal.forms import SerializerForm
from portal.views import act, portal_view


def _render_list(request: PortalRequest, form: SerializerForm) -> HttpResponse:
    return render(request, "accounts/tokens/list.html", {
        "section": "settings",
        "tokens": selectors.token_list(actor=request.user),
        "form": form,
        "can_create": access.can(request.user, actions.TOKEN_CREATE),
        "max_days": settings.INSTANTSTART_TOKEN_MAX_DAYS,
    }, status=form.status)


@portal_view
def token_list(request: PortalRequest) -> HttpResponse:
    access.require(request.user, actions.TOKEN_VIEW)
    initial = {"expires_in_days": settings.INSTANTSTART_TOKEN_DEFAULT_DAYS}
    return _render_list(request, SerializerForm(TokenCreateSerializer, initial=initial))


@require_POST
@never_cache
@portal_view
def token_create(request: PortalRequest) -> HttpResponse:
    """Issue a token and answer with the page that shows its secret.

    Unlike other mutations this one does not redirect: the secret would have to be parked in the session
    (a database row) to survive the redirect, and it must never be stored anywhere but in the response.
    """
    form = SerializerForm(TokenCreateSerializer, request.POST)
    issued = form.submit(lambda **data: services.token_create(actor=request.user, source=request.source, **data))
    if issued is None:
        return _render_list(request, form)
    return render(request, "accounts/tokens/issued.html", {
        "section": "settings", "token": issued.token, "secret": issued.secret,
    })


@require_POST
@portal_view
def token_revoke(request: PortalRequest, token_id: int) -> HttpResponse:
    token = selectors.token_get(actor=request.user, token_id=token_id)
    return act(request, lambda: services.token_revoke(actor=request.user, token=token, source=request.source),
               to=reverse("token-list"),
               success=f"Token {token.name} was revoked. Clients using it are refused from now on.")
