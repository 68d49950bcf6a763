"""Platform admins create accounts here (Django admin can too); everyone else is invited to teams by e-mail or
username once they have one."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render

from accounts import access, services
from accounts.api.serializers import UserCreateSerializer
from accounts.requests import PortalRequest
from portal.forms import SerializerForm
from portal.views import portal_view

ONLY_PLATFORM_ADMINS = "Only platform admins create accounts."


@portal_view
def user_create(request: PortalRequest) -> HttpResponse:
    """GET shows the form; POST validates with ``UserCreateSerializer`` and calls ``services.user_create``."""
    access.require_platform_admin(request.user, ONLY_PLATFORM_ADMINS)
    if request.method != "POST":
        form = SerializerForm(UserCreateSerializer)
        return render(request, "accounts/users/create.html", {"section": "users", "form": form})
    form = SerializerForm(UserCreateSerializer, request.POST)
    user = form.submit(lambda **data: services.user_create(actor=request.user, source=request.source, **data))
    if user is None:
        form.values.pop("password", None)
        return render(request, "accounts/users/create.html", {"section": "users", "form": form}, status=form.status)
    messages.success(request, f"Account {user.username} created. Give them the password you chose and invite them "
                              "to a team from the team's page.")
    return redirect("user-create")
