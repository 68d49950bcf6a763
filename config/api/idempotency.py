"""The ``Idempotency-Key`` mechanism that every mutating REST endpoint of every app uses.

Same user, same key and same request (method, path, body) → the original 2xx response, replayed with
``Idempotent-Replayed: true``. Same key with a different request → ``idempotency_key_reused`` (409).
A key whose first request is still running → ``idempotency_in_progress`` (409). Keys live
``IDEMPOTENCY_TTL``; failed requests free their key. Each key use is an ``operations.models.IdempotencyRecord``.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone
from rest_framework.request import Request
from rest_framework.response import Response

from config import plans
from config.errors import Conflict, ValidationFailed
from operations.models import IdempotencyRecord

if TYPE_CHECKING:
    from rest_framework.views import APIView  # importing it here would close an import cycle through DRF's settings

    from accounts.requests import ApiRequest

HEADER = "Idempotency-Key"
IDEMPOTENCY_TTL = timedelta(hours=24)
#: A claim whose request has not finished by then died with its process; its key may be claimed again.
IN_PROGRESS_LEASE = timedelta(minutes=5)
MAX_KEY_LENGTH = 255

_View = TypeVar("_View", bound="APIView")
_Request = TypeVar("_Request", bound="ApiRequest")
_Args = ParamSpec("_Args")


def fingerprint(request: Request) -> str:
    body = request.data if isinstance(request.data, dict | list) else {}
    canonical = json.dumps([request.method, request.path, body], sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def purge_expired() -> int:
    """Delete records older than the TTL; returns how many went."""
    deleted, _ = IdempotencyRecord.objects.filter(created_at__lt=timezone.now() - IDEMPOTENCY_TTL).delete()
    return deleted


def _claim(request: ApiRequest, key: str) -> IdempotencyRecord | Response:
    """Insert the in-progress record, or answer from an existing one."""
    digest = fingerprint(request)
    now = timezone.now()
    IdempotencyRecord.objects.filter(user=request.user, key=key).filter(
        Q(created_at__lt=now - IDEMPOTENCY_TTL) | Q(status_code__isnull=True, created_at__lt=now - IN_PROGRESS_LEASE)
    ).delete()
    try:
        with transaction.atomic():
            return IdempotencyRecord.objects.create(
                user=request.user, key=key, fingerprint=digest, method=request.method or "", path=request.path
            )
    except IntegrityError:
        existing = IdempotencyRecord.objects.filter(user=request.user, key=key).first()
    if existing is None:
        return _claim(request, key)
    if existing.fingerprint != digest:
        raise Conflict(
            "This Idempotency-Key was used with a different request.", code="idempotency_key_reused"
        )
    if existing.status_code is None:
        raise Conflict("A request with this Idempotency-Key is still in progress.", code="idempotency_in_progress")
    response = Response(existing.response_body, status=existing.status_code)
    response["Idempotent-Replayed"] = "true"
    return response


def idempotent(*, redact: tuple[str, ...] = ()) -> Callable[
    [Callable[Concatenate[_View, _Request, _Args], Response]], Callable[Concatenate[_View, _Request, _Args], Response]
]:
    """Decorate a mutating APIView method. ``redact`` names response fields never stored (secrets)."""

    def decorator(
        method: Callable[Concatenate[_View, _Request, _Args], Response],
    ) -> Callable[Concatenate[_View, _Request, _Args], Response]:
        def wrapper(view: _View, request: _Request, /, *args: _Args.args, **kwargs: _Args.kwargs) -> Response:
            key = request.headers.get(HEADER)
            if key is None:
                return method(view, request, *args, **kwargs)
            if not key or len(key) > MAX_KEY_LENGTH:
                raise ValidationFailed.for_field(
                    HEADER, "invalid", f"Use a non-empty key of at most {MAX_KEY_LENGTH} characters."
                )
            if plans.active():  # a dry run checks the key's form but neither consumes nor replays it
                return method(view, request, *args, **kwargs)
            claimed = _claim(request, key)
            if isinstance(claimed, Response):
                return claimed
            try:
                response = method(view, request, *args, **kwargs)
            except BaseException:
                claimed.delete()
                raise
            if 200 <= response.status_code < 300:
                body = response.data
                if isinstance(body, dict) and redact:
                    body = {k: ("<shown once>" if k in redact else v) for k, v in body.items()}
                claimed.status_code = response.status_code
                claimed.response_body = body
                claimed.save(update_fields=["status_code", "response_body"])
            else:
                claimed.delete()
            return response

        functools.update_wrapper(wrapper, method)
        vars(wrapper)["honours_idempotency_key"] = True  # the OpenAPI description documents it (config.api.schema)
        return wrapper

    return decorator
