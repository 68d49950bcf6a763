"""Writes withheld during a dry run: the gateways' guarantee that a preview changes nothing in AWS or Kubernetes.

While :func:`withholding` is active (in this thread's context), every AWS call that is not a read — its operation
name does not start with one of :data:`READ_PREFIXES`, the rule the sandbox's request log uses — and every
Kubernetes request that is not a ``GET``/``HEAD`` nor a server-side dry run (``dryRun=All``) — writes, and ``POST``s
through the service proxy alike — raises :class:`WriteWithheld` before anything is sent. Reads go through, so a dry
run makes the same checks as the real call. ``WriteWithheld`` derives from ``BaseException`` on purpose: no
``except Exception`` on its way up (a service, a view, DRF's handler) can swallow it and carry on as if the write
had happened.

The guard is installed on every client the gateways build (:func:`guard_aws_client`, :class:`GuardedApiClient`);
work a request hands to another thread does not inherit the context and is not guarded.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import kubernetes.client as k8s
from botocore.client import BaseClient

#: AWS operations that only read (``DescribeVpcs``, ``ListClusters``…): everything else is a write.
READ_PREFIXES = ("Describe", "List", "Get", "Search", "Head", "Lookup", "Query", "Scan", "Select", "Check",
                 "Preview", "Estimate", "Validate", "BatchGet", "BatchDescribe")
_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: What precedes ``/api``/``/apis`` in an API server URL (the sandbox serves each cluster under a prefix).
_API_PATH = re.compile(r"^.*?/(?=apis?/)")
#: A request the API server only checks (``dryRun=All``: validated and admitted, never persisted) is not a write.
_SERVER_DRY_RUN = re.compile(r"(^|&)dryRun=All(&|$)")
_active: contextvars.ContextVar[bool] = contextvars.ContextVar("instantstart_dry_run", default=False)


class WriteWithheld(BaseException):
    """A write the dry run did not send. ``change`` describes it: ``provider`` (``aws``/``kubernetes``),
    ``action`` (``call``), ``kind`` (``sagemaker:BatchRebootClusterNodes``, ``PATCH``) and ``name`` / ``detail``."""

    def __init__(self, change: dict[str, Any]):
        super().__init__(change.get("kind", "write"))
        self.change = change


def active() -> bool:
    """True inside :func:`withholding`."""
    return _active.get()


@contextlib.contextmanager
def withholding() -> Iterator[None]:
    """Withhold every AWS and Kubernetes write made in this context (see the module docstring)."""
    token = _active.set(True)
    try:
        yield
    finally:
        _active.reset(token)


def is_aws_read(operation: str) -> bool:
    return operation.startswith(READ_PREFIXES)


def _refuse_aws_write(params: Any, model: Any, **_: Any) -> None:
    if active() and not is_aws_read(model.name):
        service = model.service_model.endpoint_prefix
        raise WriteWithheld({"provider": "aws", "action": "call", "kind": f"{service}:{model.name}",
                             "name": "", "detail": dict(params or {})})


def guard_aws_client(client: BaseClient) -> BaseClient:
    """Make ``client`` withhold its writes during a dry run (a ``before-parameter-build`` handler, checked on every
    call before the request is even built)."""
    client.meta.events.register("before-parameter-build", _refuse_aws_write)
    return client


class GuardedApiClient(k8s.ApiClient):
    """The Kubernetes ``ApiClient`` whose writes a dry run withholds."""

    def call_api(self, method: str, url: str, header_params: Any = None, body: Any = None, *args: Any,
                 **kwargs: Any) -> Any:
        if active() and method.upper() not in _READ_METHODS and not _SERVER_DRY_RUN.search(urlsplit(url).query):
            path = urlsplit(url).path
            raise WriteWithheld({"provider": "kubernetes", "action": "call", "kind": method.upper(),
                                 "name": _API_PATH.sub("/", path, count=1),
                                 "detail": body if isinstance(body, dict) else {}})
        return super().call_api(method, url, header_params, body, *args, **kwargs)
