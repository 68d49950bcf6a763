"""A team's service accounts in the portal: the list with the form that creates one (team admins), and each one's
page with its tokens — issue one (the secret is shown once), revoke one, deactivate the account."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from accounts import access, actions, selectors
from accounts.api.serializers import TokenCreateSerializer
from accounts.api.service_account_serializers import ServiceAccountCreateSerializer
from accounts.requests import PortalRequest
from accounts.service_accounts import selectors as sa_selectors
from accounts.service_accounts import services as sa_services
from accounts.service_accounts.state_rules import service_account_allows
from portal.forms import SerializerForm
from portal.views import act, portal_view, template_capabilities


def _list_page(request: PortalRequest, team_id: int, form: SerializerForm) -> HttpResponse:
    team = selectors.team_get(actor=request.user, team_id=team_id)
    access.require(request.user, actions.SERVICE_ACCOUNT_VIEW, team)
    return render(request, "accounts/service_accounts/list.html", {
        "section": "teams", "team": team, "form": form,
        "accounts": sa_selectors.service_account_list(actor=request.user, team=team),
        "can_create": access.can(request.user, actions.SERVICE_ACCOUNT_CREATE, team),
    }, status=form.status)


@portal_view
def service_account_list(request: PortalRequest, team_id: int) -> HttpResponse:
    if request.method != "POST":
        return _list_page(request, team_id, SerializerForm(ServiceAccountCreateSerializer, initial={"role": "viewer"}))
    team = selectors.team_get(actor=request.user, team_id=team_id)
    form = SerializerForm(ServiceAccountCreateSerializer, request.POST)
    account = form.submit(lambda **data: sa_services.service_account_create(
        actor=request.user, team=team, source=request.source, **data))
    if account is None:
        return _list_page(request, team_id, form)
    messages.success(request, f"Service account {account.name} created. Issue it a token below.")
    return redirect("service-account-detail", team.pk, account.pk)


def _detail_page(request: PortalRequest, team_id: int, service_account_id: int, form: SerializerForm,
                 **extra: object) -> HttpResponse:
    team = selectors.team_get(actor=request.user, team_id=team_id)
    account = sa_selectors.service_account_get(actor=request.user, team=team, service_account_id=service_account_id)
    caps = access.capabilities(request.user, account, [actions.SERVICE_ACCOUNT_DEACTIVATE,
                                                       actions.SERVICE_ACCOUNT_TOKEN_CREATE,
                                                       actions.SERVICE_ACCOUNT_TOKEN_REVOKE], service_account_allows)
    return render(request, "accounts/service_accounts/detail.html", {
        "section": "teams", "team": team, "account": account, "form": form, "caps": template_capabilities(caps),
        "tokens": sorted(account.user.api_tokens.all(), key=lambda token: token.created_at, reverse=True),
        "max_days": settings.INSTANTSTART_TOKEN_MAX_DAYS, **extra,
    }, status=form.status)


@portal_view
def service_account_detail(request: PortalRequest, team_id: int, service_account_id: int) -> HttpResponse:
    initial = {"expires_in_days": settings.INSTANTSTART_TOKEN_DEFAULT_DAYS}
    return _detail_page(request, team_id, service_account_id, SerializerForm(TokenCreateSerializer, initial=initial))


@require_POST
@never_cache
@portal_view
def service_account_token_create(request: PortalRequest, team_id: int, service_account_id: int) -> HttpResponse:
    """Issue a token and answer with the page showing its secret once (never stored, never redirected with)."""
    team = selectors.team_get(actor=request.user, team_id=team_id)
    account = sa_selectors.service_account_get(actor=request.user, team=team, service_account_id=service_account_id)
    form = SerializerForm(TokenCreateSerializer, request.POST)
    issued = form.submit(lambda **data: sa_services.service_account_token_create(
        actor=request.user, service_account=account, source=request.source, **data))
    if issued is None:
        return _detail_page(request, team_id, service_account_id, form)
    initial = {"expires_in_days": settings.INSTANTSTART_TOKEN_DEFAULT_DAYS}
    return _detail_page(request, team_id, service_account_id, SerializerForm(TokenCreateSerializer, initial=initial),
                        issued=issued)


@require_POST
@portal_view
def service_account_token_revoke(request: PortalRequest, team_id: int, service_account_id: int,
                                 token_id: int) -> HttpResponse:
    team = selectors.team_get(actor=request.user, team_id=team_id)
    account = sa_selectors.service_account_get(actor=request.user, team=team, service_account_id=service_account_id)
    token = sa_selectors.service_account_token_get(service_account=account, token_id=token_id)
    return act(request, lambda: sa_services.service_account_token_revoke(
        actor=request.user, service_account=account, token=token, source=request.source),
        to=reverse("service-account-detail", args=[team.pk, account.pk]),
        success=f"Token {token.name} was revoked. Clients using it are refused from now on.")


@require_POST
@portal_view
def service_account_deactivate(request: PortalRequest, team_id: int, service_account_id: int) -> HttpResponse:
    team = selectors.team_get(actor=request.user, team_id=team_id)
    account = sa_selectors.service_account_get(actor=request.user, team=team, service_account_id=service_account_id)
    return act(request, lambda: sa_services.service_account_deactivate(
        actor=request.user, service_account=account, source=request.source),
        to=reverse("service-account-detail", args=[team.pk, account.pk]),
        success=f"Service account {account.name} deactivated; its tokens are refused from now on.")
