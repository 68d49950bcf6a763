"""What every portal view shares: login, the 404/403 mapping of ``access`` errors, running a service without a form,
flashing its error, safe redirects."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme

from config.api.exceptions import error_body
from config.errors import ApplicationError, NotFound
from portal.forms import PAGE_ERRORS

Result = TypeVar("Result")

#: Most team feeds one page follows at once.
MAX_LIVE_TEAMS = 10


#: What a portal view answers: a page, or a stream (the inference playground's answer).
ViewResponse = TypeVar("ViewResponse", bound=HttpResponseBase)


def portal_view(view: Callable[..., ViewResponse]) -> Callable[..., ViewResponse]:
    """Require a logged-in user and turn ``NotFound`` into the 404 page and ``PermissionDenied`` into the
    403 page. The original error stays the ``__cause__``, so the error pages show its code and message."""

    @login_required
    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> ViewResponse:
        try:
            return view(request, *args, **kwargs)
        except NotFound as exc:
            raise Http404(exc.message) from exc
        except PAGE_ERRORS as exc:
            raise DjangoPermissionDenied(exc.message) from exc

    return wrapped


def perform(action: Callable[[], Result]) -> tuple[Result | None, dict[str, Any] | None]:
    """Run a service call without a form: ``(result, None)``, or ``(None, error body)`` for an application error.
    Page-level errors (not found, permission denied) propagate to ``portal_view``."""
    try:
        return action(), None
    except PAGE_ERRORS:
        raise
    except ApplicationError as exc:
        return None, error_body(exc)[0]


def act(request: HttpRequest, action: Callable[[], Result], *, to: str | Callable[[Result], str],
        success: str | Callable[[Result], str] | None = None, back: str | None = None) -> HttpResponse:
    """What a button that posts one service call answers: on an application error, flash it and go ``back``
    (required when ``to`` is made from the result, else ``to``); otherwise flash ``success`` (a text, or made from
    the result; nothing when ``None``) and go ``to`` (a URL, or made from the result). Page-level errors propagate
    to ``portal_view``, as with :func:`perform`."""
    result, error = perform(action)
    if error is not None:
        flash_error(request, error)
        fallback = back if back is not None else to
        if not isinstance(fallback, str):
            raise TypeError("act: give `back` when `to` is made from the result")
        return redirect(fallback)
    done = cast(Result, result)
    if success is not None:
        messages.success(request, success if isinstance(success, str) else success(done))
    return redirect(to if isinstance(to, str) else to(done))


def template_capabilities(capabilities: dict[str, bool]) -> dict[str, bool]:
    """``capabilities`` under names a template can read: ``instance_group.update`` → ``instance_group_update``."""
    return {action.replace(".", "_"): allowed for action, allowed in capabilities.items()}


def flash_error(request: HttpRequest, error: dict[str, Any]) -> None:
    """Flash a REST error body (field messages appended); the stable codes travel as the extra tags, the top-level
    code first, then each field's (``validation_failed`` alone would not say what failed)."""
    details = [f"{name}: {item['message']}" for name, items in error["fields"].items() for item in items]
    text = " ".join([error["message"], *details])
    codes = dict.fromkeys([error["code"], *(item["code"] for items in error["fields"].values() for item in items)])
    messages.error(request, text, extra_tags=" ".join(codes))


def next_url(request: HttpRequest, default: str) -> str:
    """The ``next`` value of the form when it stays on the page's own origin (a path, or a URL of the request's own
    host and, on HTTPS, scheme — not merely another of ``ALLOWED_HOSTS``), else ``default``."""
    candidate = request.POST.get("next") or request.GET.get("next") or ""
    if url_has_allowed_host_and_scheme(candidate, allowed_hosts={request.get_host()},
                                       require_https=request.is_secure()):
        return candidate
    return default
