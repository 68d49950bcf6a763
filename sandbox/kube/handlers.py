"""REST verbs on resource paths: get, list (selectors, ``limit``/``continue``), watch, create, update, patch,
delete, deletecollection, and the ``status``, ``scale`` and ``log`` subresources.

Query parameters follow the apiserver: ``dryRun=All``, ``fieldValidation=Strict|Warn|Ignore`` (unknown
fields are dropped with a ``Warning`` header, or rejected under Strict), ``propagationPolicy`` /
``orphanDependents`` / ``gracePeriodSeconds`` and a ``DeleteOptions`` body on DELETE, ``fieldManager`` required
for apply patches.
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
from dataclasses import dataclass
from typing import Any

import yaml
from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import Response

from sandbox.kube import patch as patches
from sandbox.kube import podlogs, requestlog, streams
from sandbox.kube.builtins import RETURNS_DELETED_OBJECT
from sandbox.kube.crds import parse_yaml
from sandbox.kube.errors import bad_request, method_not_allowed, path_not_found, unsupported_media_type
from sandbox.kube.resources import ResourceType
from sandbox.kube.responses import json_response, shaped, success
from sandbox.kube.routing import ResourcePath
from sandbox.kube.selectors import field_selector, label_selector
from sandbox.kube.store import Store

_JOB_ORPHAN_WARNING = ("child pods are preserved by default when jobs are deleted; set propagationPolicy=Background "
                       "to remove them or set propagationPolicy=Orphan to suppress this warning")


@dataclass
class Call:
    store: Store
    resource_type: ResourceType
    path: ResourcePath
    method: str
    query: QueryParams
    body: bytes
    content_type: str
    stopping: threading.Event

    @property
    def version(self) -> str:
        return self.path.version

    def flag(self, name: str) -> bool:
        return self.query.get(name, "").lower() in ("true", "1")

    def integer(self, name: str) -> int | None:
        raw = self.query.get(name)
        if raw in (None, ""):
            return None
        try:
            return int(raw)
        except ValueError:
            raise bad_request(f"invalid value for {name}: {raw!r}") from None

    @property
    def dry_run(self) -> bool:
        return self.query.get("dryRun") == "All"

    @property
    def strict(self) -> bool:
        return self.query.get("fieldValidation") == "Strict"

    def document(self, *, yaml_allowed: bool = False) -> Any:
        if not self.body:
            return None
        try:
            if yaml_allowed and "yaml" in self.content_type:
                return parse_yaml(self.body)
            return json.loads(self.body)
        except (ValueError, yaml.YAMLError) as error:
            raise bad_request(f"the body of the request could not be decoded: {error}") from None

    def shaped(self, obj: dict[str, Any]) -> dict[str, Any]:
        return shaped(self.resource_type, obj, self.version)


def _continue_token(resource_version: int, last: tuple[str, str]) -> str:
    raw = json.dumps({"rv": resource_version, "start": list(last)}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _read_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        return int(data["rv"]), (str(data["start"][0]), str(data["start"][1]))
    except (ValueError, KeyError, IndexError, TypeError, binascii.Error):
        raise bad_request("continue key is not valid: incorrect encoded start resourceVersion") from None


def _matcher(call: Call) -> Any:
    by_labels = label_selector(call.query.get("labelSelector"))
    by_fields = field_selector(call.query.get("fieldSelector"), call.resource_type.plural)
    namespace, name = call.path.namespace, call.path.name

    def matches(obj: dict[str, Any]) -> bool:
        metadata = obj.get("metadata") or {}
        return ((namespace is None or metadata.get("namespace") == namespace)
                and (name is None or metadata.get("name") == name) and by_labels(obj) and by_fields(obj))

    return matches


def _list(call: Call) -> Response:
    store, resource_type = call.store, call.resource_type
    limit = call.integer("limit")
    token = call.query.get("continue")
    with store.lock:
        resource_version = store.resource_version
        items = store.list(resource_type, call.path.namespace, label_selector_text=call.query.get("labelSelector", ""),
                           field_selector_text=call.query.get("fieldSelector", ""))
    if token:
        resource_version, start = _read_continue(token)
        items = [obj for obj in items if (obj["metadata"].get("namespace", ""), obj["metadata"]["name"]) > start]
    metadata: dict[str, Any] = {"resourceVersion": str(resource_version)}
    if limit and limit > 0 and len(items) > limit:
        last = items[limit - 1]["metadata"]
        metadata["continue"] = _continue_token(resource_version, (last.get("namespace", ""), last["name"]))
        metadata["remainingItemCount"] = len(items) - limit
        items = items[:limit]
    return json_response({"kind": resource_type.list_kind, "apiVersion": resource_type.api_version(call.version),
                          "metadata": metadata,
                          "items": [shaped(resource_type, obj, call.version, in_list=True) for obj in items]})


def _watch(call: Call) -> Response:
    resource_version = call.query.get("resourceVersion")
    if resource_version not in (None, "") and not resource_version.isdigit():
        raise bad_request(f"invalid resource version: {resource_version!r}")
    timeout = call.integer("timeoutSeconds")
    return streams.watch_response(streams.WatchRequest(
        store=call.store, resource_type=call.resource_type, version=call.version, matches=_matcher(call),
        resource_version=resource_version, timeout=float(timeout if timeout else streams.DEFAULT_WATCH_SECONDS),
        bookmarks=call.flag("allowWatchBookmarks"), initial_events_bookmark=call.flag("sendInitialEvents"),
    ), call.stopping)


def _delete_options(call: Call) -> dict[str, Any]:
    options = call.document() or {}
    if not isinstance(options, dict):
        raise bad_request("DeleteOptions must be a JSON object")
    policy = call.query.get("propagationPolicy") or options.get("propagationPolicy")
    orphan = call.query.get("orphanDependents") or options.get("orphanDependents")
    if policy is None and orphan is not None:
        policy = "Orphan" if str(orphan).lower() == "true" else "Background"
    if policy not in (None, "Orphan", "Background", "Foreground"):
        raise bad_request(f"propagationPolicy: Unsupported value: {policy!r}")
    grace = call.query.get("gracePeriodSeconds", options.get("gracePeriodSeconds"))
    if grace is not None and not (isinstance(grace, int) or str(grace).lstrip("-").isdigit()):
        raise bad_request(f"invalid value for gracePeriodSeconds: {grace!r}")
    preconditions = options.get("preconditions")
    if preconditions is not None and not (
        isinstance(preconditions, dict) and all(isinstance(value, str) for value in preconditions.values())
    ):
        raise bad_request("preconditions must be an object of strings (uid, resourceVersion)")
    return {"propagation": policy, "preconditions": preconditions,
            "grace_period": int(grace) if grace is not None else None}


def _delete(call: Call) -> Response:
    options = _delete_options(call)
    store, resource_type = call.store, call.resource_type
    warnings = [_JOB_ORPHAN_WARNING] if resource_type.plural == "jobs" and options["propagation"] is None else []
    with store.transaction():
        obj = store.delete(resource_type, call.path.item, call.path.namespace, dry_run=call.dry_run, **options)
        pending = store.find(resource_type, call.path.item, call.path.namespace) is not None
    if pending or resource_type.plural in RETURNS_DELETED_OBJECT:
        return json_response(call.shaped(obj), warnings=warnings)
    return json_response(success(resource_type, obj), warnings=warnings)


def _delete_collection(call: Call) -> Response:
    options = _delete_options(call)
    deleted = call.store.delete_collection(
        call.resource_type, call.path.namespace, label_selector_text=call.query.get("labelSelector", ""),
        field_selector_text=call.query.get("fieldSelector", ""), propagation=options["propagation"],
        grace_period=options["grace_period"], dry_run=call.dry_run)
    resource_type = call.resource_type
    return json_response({"kind": resource_type.list_kind, "apiVersion": resource_type.api_version(call.version),
                          "metadata": {"resourceVersion": str(call.store.resource_version)},
                          "items": [shaped(resource_type, obj, call.version, in_list=True) for obj in deleted]})


def _patch_type(call: Call) -> str:
    media_type = call.content_type.split(";")[0].strip()
    if media_type not in patches.PATCH_TYPES:
        raise unsupported_media_type(media_type, list(patches.PATCH_TYPES))
    if media_type == patches.APPLY and not call.query.get("fieldManager"):
        raise bad_request("PATCH /apply requires fieldManager to be set")
    return media_type


def _scale(call: Call) -> Response:
    store, path = call.store, call.path
    if call.method == "GET":
        return json_response(store.scale(call.resource_type, path.item, path.namespace))
    if call.method == "PUT":
        body = call.document()
    elif call.method == "PATCH":
        patch_type = _patch_type(call)
        current = store.scale(call.resource_type, path.item, path.namespace)
        body = patches.apply(current, call.document(yaml_allowed=True), patch_type, custom=False)
    else:
        raise method_not_allowed()
    if not isinstance(body, dict):
        raise bad_request("the body must be a Scale object")
    return json_response(store.update_scale(call.resource_type, path.item, body, path.namespace, dry_run=call.dry_run))


def _item(call: Call) -> Response:
    store, path, resource_type = call.store, call.path, call.resource_type
    subresource = path.subresource
    warnings: list[str] = []
    options: dict[str, Any] = {"version": call.version, "dry_run": call.dry_run, "strict": call.strict,
                               "warnings": warnings}
    if call.method == "GET":
        return json_response(call.shaped(store.get(resource_type, path.item, path.namespace)))
    if call.method == "PUT":
        body = call.document()
        if isinstance(body, dict) and (body.get("metadata") or {}).get("name") not in (None, path.name):
            raise bad_request(f"the name of the object ({body['metadata']['name']}) does not match the name on "
                              f"the URL ({path.name})")
        if isinstance(body, dict):
            body.setdefault("metadata", {})["name"] = path.name
        obj = store.update(resource_type, body, path.namespace, subresource=subresource, **options)
        return json_response(call.shaped(obj), warnings=warnings)
    if call.method == "PATCH":
        patch_type = _patch_type(call)
        document = call.document(yaml_allowed=patch_type == patches.APPLY)
        obj = store.patch(resource_type, path.item, document, path.namespace, patch_type=patch_type,
                          subresource=subresource, **options)
        return json_response(call.shaped(obj), warnings=warnings)
    if call.method == "DELETE" and subresource is None:
        return _delete(call)
    raise method_not_allowed()


def _collection(call: Call) -> Response:
    if call.method == "GET":
        return _watch(call) if call.flag("watch") or call.path.legacy_watch else _list(call)
    if call.method == "POST":
        if call.resource_type.namespaced and call.path.namespace is None:
            raise method_not_allowed()
        warnings: list[str] = []
        obj = call.store.create(call.resource_type, call.document(), call.path.namespace, version=call.version,
                                dry_run=call.dry_run, strict=call.strict, warnings=warnings)
        return json_response(call.shaped(obj), 201, warnings)
    if call.method == "DELETE":
        return _delete_collection(call)
    raise method_not_allowed()


async def handle(request: Request, store: Store, path: ResourcePath, stopping: threading.Event) -> Response:
    """Serve one resource path of ``store`` (a write is logged first, ``sandbox.kube.requestlog``; a server-side
    dry run, ``dryRun=All``, writes nothing and is not logged)."""
    if request.query_params.get("dryRun") != "All":
        requestlog.record(region=store.region, cluster=store.name, method=request.method, path=_api_path(request))
    resource_type = store.registry.route(path.group, path.version, path.plural)
    if resource_type is None or (path.namespace is not None and not resource_type.namespaced) or \
            (path.name is not None and resource_type.namespaced and path.namespace is None):
        raise path_not_found()
    if path.subresource and path.subresource not in resource_type.subresources:
        raise path_not_found()
    call = Call(store=store, resource_type=resource_type, path=path, method=request.method, query=request.query_params,
                body=await request.body(), content_type=request.headers.get("content-type", "application/json"),
                stopping=stopping)
    if path.name is None:
        return _collection(call)
    if path.legacy_watch:
        return _watch(call)
    if path.subresource == "scale":
        return _scale(call)
    if path.subresource == "log":
        if call.method != "GET":
            raise method_not_allowed()
        return podlogs.respond(call.store, path.namespace or "", path.name, call.query, stopping)
    return _item(call)


def _api_path(request: Request) -> str:
    """The request's path from ``/api`` or ``/apis`` on (without the emulator's ``/clusters/<region>/<name>``)."""
    return "/" + request.url.path.split("/", 4)[-1]
