"""S3's CORS, as a browser meets it: a bucket answers a cross-origin request only as its CORS configuration allows.

A request carrying an ``Origin`` header to an existing bucket (path-style, ``/<bucket>/…``) is judged by the bucket's
rules the way S3 documents it: the **first** rule whose ``AllowedOrigins`` match the origin (one ``*`` wildcard
allowed) and whose ``AllowedMethods`` hold the method — for a preflight ``OPTIONS`` the
``Access-Control-Request-Method``, and every ``Access-Control-Request-Headers`` name matching an ``AllowedHeaders``
entry — decides:

* a preflight is answered here, never by moto: ``200`` with ``Access-Control-Allow-Origin``/``-Methods``/
  ``-Headers``, ``-Expose-Headers`` and ``-Max-Age`` from that rule; ``403 AccessForbidden`` ("CORS is not enabled
  for this bucket" without a configuration, "This CORS request is not allowed…" when no rule matches);
* any other request is served as usual, with ``Access-Control-Allow-Origin``, ``-Allow-Methods`` and
  ``-Expose-Headers`` only when a rule matches — without them a browser keeps the answer (and its ``ETag``) from the
  page.

moto's own CORS answers (a global "any origin" and a looser per-bucket reading) are turned off or replaced.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable
from typing import Any

from moto.core import DEFAULT_ACCOUNT_ID
from moto.s3.models import s3_backends

StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]

NOT_ENABLED = "CORSResponse: CORS is not enabled for this bucket."
NOT_ALLOWED = ("CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, "
               "request method / Access-Control-Request-Method or Access-Control-Request-Headers are not "
               "whitelisted by the resource's CORS spec.")


def _bucket(name: str) -> Any | None:
    """The bucket called ``name`` in any account and partition (bucket names are global), or ``None``."""
    for account_id in [DEFAULT_ACCOUNT_ID, *[a for a in list(s3_backends) if a != DEFAULT_ACCOUNT_ID]]:
        for backend in list(dict.values(s3_backends[account_id])):
            bucket = backend.buckets.get(name)
            if bucket is not None:
                return bucket
    return None


def _matches(value: str, patterns: list[str] | None, *, case: bool = True) -> bool:
    if not case:
        value, patterns = value.lower(), [pattern.lower() for pattern in patterns or []]
    return any(pattern == "*" or fnmatch.fnmatchcase(value, pattern) for pattern in patterns or [])


def matching_rule(bucket: Any, origin: str, method: str, headers: list[str]) -> Any | None:
    """The first CORS rule of ``bucket`` that allows ``method`` from ``origin`` with request ``headers``."""
    for rule in bucket.cors or []:
        if (_matches(origin, rule.allowed_origins) and method in (rule.allowed_methods or [])
                and all(_matches(header, rule.allowed_headers, case=False) for header in headers)):
            return rule
    return None


def _error(start_response: StartResponse, message: str) -> Iterable[bytes]:
    body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessForbidden</Code><Message>{message}'
            f"</Message></Error>").encode()
    start_response("403 Forbidden", [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))])
    return [body]


def _allow(rule: Any, origin: str, *, preflight_headers: str = "") -> list[tuple[str, str]]:
    allowed_origin = "*" if rule.allowed_origins == ["*"] else origin
    headers = [("Access-Control-Allow-Origin", allowed_origin), ("Vary", "Origin"),
               ("Access-Control-Allow-Methods", ", ".join(rule.allowed_methods))]
    if rule.exposed_headers:
        headers.append(("Access-Control-Expose-Headers", ", ".join(rule.exposed_headers)))
    if preflight_headers:
        headers.append(("Access-Control-Allow-Headers", preflight_headers))
    if rule.max_age_seconds is not None:
        headers.append(("Access-Control-Max-Age", str(rule.max_age_seconds)))
    return headers


def wrap(app: WsgiApp) -> WsgiApp:
    """``app`` behind S3's CORS (the module docstring)."""

    def served(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        origin = environ.get("HTTP_ORIGIN", "")
        name = environ.get("PATH_INFO", "").lstrip("/").split("/", 1)[0]
        bucket = _bucket(name) if origin and name and not name.startswith("_") else None
        if bucket is None:
            return app(environ, start_response)
        method = environ.get("REQUEST_METHOD", "GET")
        if method == "OPTIONS":
            wanted = environ.get("HTTP_ACCESS_CONTROL_REQUEST_METHOD", "")
            asked = environ.get("HTTP_ACCESS_CONTROL_REQUEST_HEADERS", "")
            headers = [header.strip() for header in asked.split(",") if header.strip()]
            if not bucket.cors:
                return _error(start_response, NOT_ENABLED)
            rule = matching_rule(bucket, origin, wanted, headers)
            if rule is None:
                return _error(start_response, NOT_ALLOWED)
            start_response("200 OK", [*_allow(rule, origin, preflight_headers=asked), ("Content-Length", "0")])
            return [b""]
        rule = matching_rule(bucket, origin, method, [])

        def respond(status: str, headers: list[tuple[str, str]], *rest: Any) -> Any:
            kept = [(key, value) for key, value in headers if not key.lower().startswith("access-control-")]
            return start_response(status, kept + (_allow(rule, origin) if rule is not None else []), *rest)

        return app(environ, respond)

    return served
