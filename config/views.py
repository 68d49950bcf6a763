"""Error pages, and ``/favicon.ico`` (which browsers ask for on every page without a ``<link rel="icon">``, such as
JSON answers) sent to the portal's icon. 403 and 404 render inside the portal layout and show the stable error
code; the 500 page is a static template rendered without the request, so it works when the database is the
problem."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseServerError
from django.shortcuts import redirect, render
from django.template import loader
from django.templatetags.static import static

from config.api.exceptions import error_body
from config.errors import ApplicationError


def _error_context(exception: Exception | None, fallback: Exception) -> dict[str, Any]:
    """The REST error body of the ``ApplicationError`` behind the page, or of the Django exception."""
    cause = getattr(exception, "__cause__", None)
    body, _ = error_body(cause if isinstance(cause, ApplicationError) else exception or fallback)
    return {"error": body}


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return render(request, "403.html", _error_context(exception, PermissionDenied()), status=403)


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return render(request, "404.html", _error_context(exception, Http404()), status=404)


def server_error(request: HttpRequest) -> HttpResponse:
    return HttpResponseServerError(loader.get_template("500.html").render())


def favicon(request: HttpRequest) -> HttpResponse:
    return redirect(static("img/favicon.svg"), permanent=True)
