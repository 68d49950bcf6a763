"""Personal API tokens: list, create (the secret is shown once), revoke."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib import messages
from django.core.cache import cache
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from accounts import access, actions, selectors, services
from accounts.api.serializers import TokenCreateSerializer
from accounts.requests import PortalRequest
from portal.forms import SerializerForm
from portal.views import act, portal_view

#: The session key holding the nonces of the token forms this session was shown and has not submitted yet.
FORM_NONCES = "token_form_nonces"
#: How many unsubmitted token forms (tabs) a session keeps valid at once; older ones must be reloaded.
OPEN_FORMS = 10
#: How long a submission holds its nonce against a concurrent resubmission (a double click) while it runs.
SUBMISSION_LOCK_SECONDS = 60


def _new_form_nonce(request: PortalRequest) -> str:
    """A one-time nonce for one rendering of the token form, remembered in the session."""
    nonce = secrets.token_urlsafe(16)
    request.session[FORM_NONCES] = [*request.session.get(FORM_NONCES, [])[-(OPEN_FORMS - 1):], nonce]
    return nonce


def _claim_form_nonce(request: PortalRequest, nonce: str) -> bool:
    """True once per nonce the session was given: the nonce is locked (a concurrent resubmission is refused) and
    must then be spent (``_spend_form_nonce``) or released (``_release_form_nonce``)."""
    if not nonce or nonce not in request.session.get(FORM_NONCES, []):
        return False
    return cache.add(f"token-form:{nonce}", 1, SUBMISSION_LOCK_SECONDS)


def _spend_form_nonce(request: PortalRequest, nonce: str) -> None:
    request.session[FORM_NONCES] = [kept for kept in request.session.get(FORM_NONCES, []) if kept != nonce]


def _release_form_nonce(nonce: str) -> None:
    cache.delete(f"token-form:{nonce}")


def _render_list(request: PortalRequest, form: SerializerForm, *, nonce: str | None = None) -> HttpResponse:
    return render(request, "accounts/tokens/list.html", {
        "section": "settings",
        "tokens": selectors.token_list(actor=request.user),
        "form": form,
        "form_nonce": nonce or _new_form_nonce(request),
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

    Each rendering of the form carries a one-time nonce (``form_nonce``) kept in the session: the first submission
    spends it, so a reload of the "token created" page (the browser's resubmit prompt) or a double click issues no
    second token and is sent back to the token list. The page does not redirect to show the secret: the secret would
    have to be parked in the session (a database row), and it must never be stored anywhere but in the response.
    """
    nonce = request.POST.get("form_nonce", "")
    if not _claim_form_nonce(request, nonce):
        messages.warning(request, "This form was already submitted, so no second token was created. A token's "
                                  "secret is shown only once: if you did not copy it, revoke that token and create "
                                  "a new one.", extra_tags="form_already_submitted")
        return redirect("token-list")
    form = SerializerForm(TokenCreateSerializer, request.POST, ignore=("form_nonce",))
    issued = form.submit(lambda **data: services.token_create(actor=request.user, source=request.source, **data))
    if issued is None:
        _release_form_nonce(nonce)
        return _render_list(request, form, nonce=nonce)
    _spend_form_nonce(request, nonce)
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
