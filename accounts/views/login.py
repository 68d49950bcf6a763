"""The sign-in page: the password form, the single sign-on button, or both (docs/identity.md); and sign-in refused
by the lockout (django-axes calls :func:`locked_out` as its ``AXES_LOCKOUT_CALLABLE``)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from accounts.sso import provider

#: The stable code of a sign-in refused by the lockout, shown on the page like any other sign-in error.
LOCKED_OUT = "login_locked_out"
#: ``?sso=<reason>`` after a refused single sign-on → (stable code, message).
SSO_REFUSALS = {
    "failed": ("sso_failed", "Single sign-on did not complete. Try again, or ask a platform admin to check the "
                             "identity provider's settings."),
    "unavailable": ("sso_unavailable", "The identity provider could not be reached. Try again in a moment."),
    "no_access": ("sso_no_access", "Your account is deactivated: none of your identity provider groups gives you "
                                   "access to a team here. Ask a platform admin to map one of your groups."),
}


def sign_in_options(request: HttpRequest) -> dict[str, Any]:
    """What the page offers: the single sign-on button when it is configured, the password form when local passwords
    are on — or, when they are off, on ``?break_glass=1`` (platform admins only)."""
    break_glass = request.GET.get("break_glass") == "1" or request.POST.get("break_glass") == "1"
    refusal = SSO_REFUSALS.get(request.GET.get("sso", ""))
    return {
        "sso": provider.configured(),
        "sso_provider": settings.INSTANTSTART_OIDC_PROVIDER_NAME,
        "passwords": settings.INSTANTSTART_LOCAL_PASSWORDS or break_glass,
        "break_glass": break_glass and not settings.INSTANTSTART_LOCAL_PASSWORDS,
        "sso_refusal": {"code": refusal[0], "message": refusal[1]} if refusal else None,
    }


class SignInView(auth_views.LoginView):
    """Django's sign-in. With local passwords off, a password sign-in without ``break_glass`` is refused
    (``password_sign_in_disabled``); with it, anyone but a platform admin gets the same ``invalid_login`` as a wrong
    password (``accounts.backends``), so the page does not tell whose password was right."""

    template_name = "accounts/login.html"
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        return {**super().get_context_data(**kwargs), **sign_in_options(self.request)}

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not sign_in_options(request)["passwords"]:
            return render(request, self.template_name, {
                **sign_in_options(request), "form": AuthenticationForm(request),
                "sso_refusal": {"code": "password_sign_in_disabled",
                                "message": "Password sign-in is turned off here; use single sign-on."},
            }, status=403)
        return super().post(request, *args, **kwargs)


def locked_out(request: HttpRequest, original_response: HttpResponse | None,
               credentials: dict[str, Any] | None) -> HttpResponse:
    """The sign-in page again, with 429 and a message that says why and for how long; the password is not checked
    while the username and address are locked out, so the answer does not tell whether it was right."""
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    form = AuthenticationForm(request, initial={"username": (credentials or {}).get("username", "")})
    return render(request, "accounts/login.html", {
        "form": form,
        **sign_in_options(request),
        "locked_out": {"code": LOCKED_OUT,
                       "message": f"Too many failed sign-ins for this username from your address. Try again in "
                                  f"{minutes} minutes, or ask a platform admin to unlock it."},
    }, status=429)
