"""The *Agent playbooks* pages: the workflows an AI agent follows (``docs/playbooks``), as the MCP server serves
them, so a person can read what the agent was told."""

from __future__ import annotations

from django.http import Http404, HttpResponse
from django.shortcuts import render

from accounts.requests import PortalRequest
from config import playbooks
from portal.views import portal_view


@portal_view
def playbook_list(request: PortalRequest) -> HttpResponse:
    """Every playbook with its version and what it is for."""
    return render(request, "accounts/playbooks/list.html", {
        "section": "settings", "playbooks": list(playbooks.playbooks().values())})


@portal_view
def playbook_detail(request: PortalRequest, name: str) -> HttpResponse:
    """One playbook's text, its prompt arguments and the tools it names."""
    book = playbooks.playbooks().get(name)
    if book is None:
        raise Http404("No such playbook.")
    return render(request, "accounts/playbooks/detail.html", {"section": "settings", "playbook": book})
