"""Single sign-on's pages: the start of a sign-in and the provider's redirect back (mozilla-django-oidc's views with
the endpoints from discovery and InstantStart's refusals), and the platform admins' settings page — the provider's
configuration (read only: it lives in the environment, the client secret with it) and the group mappings."""

from __future__ import annotations

import logging
from typing import Any

import requests
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import SuspiciousOperation
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from accounts import access, selectors
from accounts.api.group_mapping_serializers import GroupMappingCreateSerializer
from accounts.requests import PortalRequest
from accounts.sso import provider
from accounts.sso import selectors as sso_selectors
from accounts.sso import services as sso_services
from portal.forms import SerializerForm
from portal.views import act, portal_view

logger = logging.getLogger(__name__)


def _refused(reason: str) -> HttpResponseRedirect:
    return HttpResponseRedirect(f"{reverse('login')}?sso={reason}")


class SsoStartView(OIDCAuthenticationRequestView):  # type: ignore[misc]  # the library has no type hints
    """Redirects the browser to the provider's authorization endpoint (from discovery)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super(OIDCAuthenticationRequestView, self).__init__(*args, **kwargs)
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID

    def get(self, request: HttpRequest) -> HttpResponse:
        if not provider.configured():
            return redirect("login")
        try:
            self.OIDC_OP_AUTH_ENDPOINT = provider.endpoints().authorization
        except provider.ProviderUnavailable:
            return _refused("unavailable")
        response: HttpResponse = super().get(request)
        return response


class SsoCallbackView(OIDCAuthenticationCallbackView):  # type: ignore[misc]
    """The provider's redirect back: signs the user in, or back to the sign-in page saying why not."""

    def get(self, request: HttpRequest) -> HttpResponse:
        try:
            response: HttpResponse = super().get(request)
        except provider.ProviderUnavailable:
            return _refused("unavailable")
        except (requests.RequestException, SuspiciousOperation) as error:
            # an endpoint of the provider refused or failed, or its tokens did not pass the checks
            logger.warning("Single sign-on refused: %s", error)
            return _refused("failed")
        return response

    def login_failure(self) -> HttpResponse:
        user = getattr(self, "user", None)
        return _refused("no_access" if user is not None and not user.is_active else "failed")


def _page(request: PortalRequest, form: SerializerForm) -> HttpResponse:
    return render(request, "accounts/sso/settings.html", {
        "section": "sso",
        "configured": provider.configured(),
        "issuer": settings.INSTANTSTART_OIDC_ISSUER,
        "provider_name": settings.INSTANTSTART_OIDC_PROVIDER_NAME,
        "client_id": settings.OIDC_RP_CLIENT_ID,
        "client_secret_set": bool(settings.OIDC_RP_CLIENT_SECRET),
        "scopes": settings.OIDC_RP_SCOPES,
        "groups_claim": settings.INSTANTSTART_OIDC_GROUPS_CLAIM,
        "username_claim": settings.INSTANTSTART_OIDC_USERNAME_CLAIM,
        "local_passwords": settings.INSTANTSTART_LOCAL_PASSWORDS,
        "redirect_uri": request.build_absolute_uri(reverse("oidc_authentication_callback")),
        "mappings": sso_selectors.group_mapping_list(actor=request.user),
        "teams": selectors.team_list(actor=request.user),
        "form": form,
    }, status=form.status)


@portal_view
def sso_settings(request: PortalRequest) -> HttpResponse:
    access.require_platform_admin(request.user, sso_services.ONLY_PLATFORM_ADMINS)
    return _page(request, SerializerForm(GroupMappingCreateSerializer, initial={"role": "viewer"}))


@require_POST
@portal_view
def group_mapping_create(request: PortalRequest) -> HttpResponse:
    access.require_platform_admin(request.user, sso_services.ONLY_PLATFORM_ADMINS)
    form = SerializerForm(GroupMappingCreateSerializer, request.POST)
    mapping = form.submit(lambda **data: sso_services.group_mapping_create(actor=request.user, source=request.source,
                                                                           **data))
    if mapping is None:
        return _page(request, form)
    messages.success(request, f"Members of {mapping.group} get {mapping.role} in {mapping.team.name} at their next "
                              "sign-in.")
    return redirect("sso-settings")


@require_POST
@portal_view
def group_mapping_delete(request: PortalRequest, mapping_id: int) -> HttpResponse:
    mapping = sso_selectors.group_mapping_get(actor=request.user, mapping_id=mapping_id)
    return act(request, lambda: sso_services.group_mapping_delete(actor=request.user, mapping=mapping,
                                                                  source=request.source),
               to=reverse("sso-settings"),
               success=f"Mapping of {mapping.group} removed; its memberships go at each member's next sign-in.")
