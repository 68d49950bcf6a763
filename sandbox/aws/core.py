"""Shared machinery of the AWS extensions: one lock, the operation registry, errors, ids and pagination.

Every extension handler runs inside ``transaction()``: one re-entrant lock serialises all extension state
(requests, the ticker, and in-process readers in ``world``), and events queued while it is held (node events
for the simulator) are delivered after the outermost ``transaction()`` releases it, so a listener may call
back into the world API without deadlocking.

Handlers are registered with ``@operation(service, name)`` where ``service`` is botocore's service name
(``sagemaker``, ``eks``, ``service-quotas``, ``fsx``) and ``name`` the operation name of its model. A handler
takes a ``Call`` and returns the output structure as a dict keyed by the model's member names, raises
``ApiError`` for an AWS error, or returns ``PASS`` to let moto answer the request instead.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import secrets
import sys
import threading
import traceback
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from sandbox import endpoints

ACCOUNT_ID = endpoints.ACCOUNT_ID

_lock = threading.RLock()
#: One request at a time per service inside moto, whose backends are plain dicts: concurrent ``CreateRole`` and
#: ``AttachRolePolicy`` crashed IAM ("dictionary changed size during iteration") under 1,000 operations.
_moto_locks: dict[str, threading.Lock] = {}
_depth = threading.local()
_queue: list[tuple[Callable[[Any], None], Any]] = []


class ApiError(Exception):
    """An AWS error response: ``code`` as the service names it, its message and HTTP status.

    ``fields`` are extra members of the error structure (EKS errors carry ``clusterName``, ``addonName``…).
    ``status`` ``None`` means "as the service model says, else 400".
    """

    def __init__(self, code: str, message: str, status: int | None = None, **fields: Any):
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.fields = fields


def validation(message: str) -> ApiError:
    return ApiError("ValidationException", message)


class _Pass:
    def __repr__(self) -> str:
        return "PASS"


PASS = _Pass()
"""Returned by a handler to hand the request to moto unchanged."""


@dataclass
class Call:
    """One API request addressed to an extension handler."""

    service: str
    operation: str
    region: str
    params: dict[str, Any]
    access_key: str = "testing"
    account: str = ACCOUNT_ID

    def get(self, name: str, default: Any = None) -> Any:
        value = self.params.get(name)
        return default if value is None else value


Handler = Callable[[Call], Any]
_handlers: dict[tuple[str, str], Handler] = {}

F = TypeVar("F", bound=Handler)


def operation(service: str, name: str) -> Callable[[F], F]:
    """Register ``handler`` as the implementation of ``service:name``."""

    def register(handler: F) -> F:
        _handlers[(service, name)] = handler
        return handler

    return register


def handler_for(service: str, name: str) -> Handler | None:
    return _handlers.get((service, name))


def operations() -> list[str]:
    """Every ``service:Operation`` an extension answers."""
    return sorted(f"{service}:{name}" for service, name in _handlers)


@contextlib.contextmanager
def transaction() -> Iterator[None]:
    """Hold the extension lock; deliver queued events once the outermost holder leaves."""
    depth = getattr(_depth, "value", 0)
    _lock.acquire()
    _depth.value = depth + 1
    try:
        yield
    finally:
        _depth.value = depth
        pending: list[tuple[Callable[[Any], None], Any]] = []
        if depth == 0:
            pending[:] = _queue
            _queue.clear()
        _lock.release()
        for callback, event in pending:
            try:
                callback(event)
            except Exception:  # a listener's bug must neither fail the AWS call nor starve the other listeners
                traceback.print_exc(file=sys.stderr)


def moto_lock(service: str) -> threading.Lock:
    """The lock that serializes ``service``'s moto backend: every moto request of the service holds it, and so must
    the sandbox's own code that reads that backend from another service's handler (EKS reading IAM's roles)."""
    return _moto_locks.setdefault(service, threading.Lock())


def enqueue(callbacks: Sequence[Callable[[Any], None]], event: Any) -> None:
    """Queue ``event`` for each callback (call under ``transaction()``)."""
    _queue.extend((callback, event) for callback in callbacks)


def utc(timestamp: float) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(timestamp, tz=datetime.UTC)


def hex_id(length: int) -> str:
    return secrets.token_hex((length + 1) // 2)[:length]


def lower_alnum(length: int) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    return "".join(secrets.choice(alphabet) for _ in range(length))


def new_uuid() -> str:
    return str(uuid.uuid4())


def arn(service: str, region: str, resource: str) -> str:
    return f"arn:aws:{service}:{region}:{ACCOUNT_ID}:{resource}"


def tag_list(tags: list[dict[str, str]] | None) -> dict[str, str]:
    """SageMaker/FSx ``[{Key, Value}]`` tags as a dict."""
    return {tag["Key"]: tag.get("Value", "") for tag in tags or []}


def paginate(items: Sequence[Any], next_token: str | None, max_results: int | None,
             default_max: int = 100) -> tuple[list[Any], str | None]:
    """One page of ``items`` and the token of the next (``None`` on the last page).

    Tokens are opaque offsets; a token this sandbox did not issue is a ``ValidationException``.
    """
    start = 0
    if next_token:
        try:
            start = int(base64.urlsafe_b64decode(next_token.encode()).decode().removeprefix("offset:"))
        except ValueError as error:
            raise validation("Invalid pagination token") from error
    size = max_results or default_max
    page = list(items[start:start + size])
    more = start + size < len(items)
    token = base64.urlsafe_b64encode(f"offset:{start + size}".encode()).decode() if more else None
    return page, token
