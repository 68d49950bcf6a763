"""Sign-in refused by the lockout (django-axes calls :func:`locked_out` as its ``AXES_LOCKOUT_CALLABLE``)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

#: The stable code of a sign-in refused by the lockout, shown on the page like any other sign-in error.
LOCKED_OUT = "login_locked_out"


def locked_out(request: HttpRequest, original_response: HttpResponse | None,
               credentials: dict[str, Any] | None) -> HttpResponse:
    """The sign-in page again, with 429 and a message that says why and for how long; the password is not checked
    while the username and address are locked out, so the answer does not tell whether it was right."""
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    form = AuthenticationForm(request, initial={"username": (credentials or {}).get("username", "")})
    return render(request, "accounts/login.html", {
        "form": form,
        "locked_out": {"code": LOCKED_OUT,
                       "message": f"Too many failed sign-ins for this username from your address. Try again in "
                                  f"{minutes} minutes, or ask a platform admin to unlock it."},
    }, status=429)
