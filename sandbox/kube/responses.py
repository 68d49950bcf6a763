"""HTTP answers of the emulator: JSON bodies, ``Status`` errors, and ``Warning`` headers as the apiserver
sends them (``299 - "unknown field ..."``)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from starlette.responses import Response

from sandbox.kube.errors import ApiError
from sandbox.kube.resources import ResourceType


def json_response(body: Any, status: int = 200, warnings: Iterable[str] = ()) -> Response:
    response = Response(json.dumps(body, separators=(",", ":")), status_code=status, media_type="application/json")
    for warning in warnings:
        response.raw_headers.append((b"warning", f'299 - "{warning}"'.encode().replace(b"\n", b" ")))
    return response


def error_response(error: ApiError) -> Response:
    return json_response(error.status(), error.code)


def success(resource_type: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """The ``Status`` a DELETE answers with once the object is gone (for kinds that do not echo the object)."""
    details: dict[str, Any] = {"name": obj["metadata"]["name"]}
    if resource_type.group:
        details["group"] = resource_type.group
    details.update(kind=resource_type.plural, uid=obj["metadata"]["uid"])
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}


def shaped(resource_type: ResourceType, obj: dict[str, Any], version: str, *, in_list: bool = False) -> dict[str, Any]:
    """``obj`` as served at ``version``: apiVersion/kind first (omitted for built-in list items, like the
    apiserver does), then metadata, spec, the rest, status last."""
    ordered: dict[str, Any] = {}
    if not in_list or resource_type.custom:
        ordered.update(apiVersion=resource_type.api_version(version), kind=resource_type.kind)
    for key in ("metadata", "spec"):
        if key in obj:
            ordered[key] = obj[key]
    ordered.update({k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata", "spec", "status")})
    if "status" in obj:
        ordered["status"] = obj["status"]
    return ordered
