"""The ASGI application: ``/clusters/<region>/<cluster>/...`` → that cluster's virtual API server.

Per request: the cluster must be one ``clusters()`` reports (else 404) and ACTIVE or UPDATING (else 503,
as an EKS endpoint that does not answer); its store is synced (add-on CRDs); the bearer token must be a valid
``aws eks get-token`` token for this cluster, signed with credentials ``identify`` knows, whose principal the
cluster's access maps to a user (``sandbox.kube.auth``, ``sandbox.kube.access``; else 401); the user must be
allowed the request (else 403); then the ``proxy`` subresource of a Service or Pod (``proxy``), discovery or a
resource verb. A ``ClusterRef`` without ``access`` (the emulator run alone, without an AWS side) makes every
authenticated principal cluster-admin. Every failure is a ``Status`` body; an unexpected exception becomes a 500
``InternalError`` and is logged, never a crash.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from sandbox.kube import access, discovery, handlers, proxy, world
from sandbox.kube.auth import Identify, authenticate
from sandbox.kube.errors import ApiError, internal, path_not_found, unauthorized, unavailable
from sandbox.kube.responses import error_response, json_response
from sandbox.kube.routing import Discovery, ResourcePath, parse
from sandbox.kube.store import Store

logger = logging.getLogger(__name__)

ClusterSource = Callable[[], list[world.ClusterRef]]
_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]


_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}
_ADMIN = access.User("cluster-admin", (access.MASTERS,))


def _cluster(clusters: ClusterSource, region: str, name: str) -> tuple[world.ClusterRef, Store]:
    ref = next((ref for ref in clusters() if ref.region == region and ref.name == name), None)
    if ref is None:
        raise ApiError(404, "NotFound", f'EKS cluster "{name}" in {region} does not exist', {})
    store = world.sync_cluster(ref)
    if store is None:
        raise unavailable(f'EKS cluster "{name}" is {ref.status}; its API server is not available')
    return ref, store


def _user(request: Request, ref: world.ClusterRef, store: Store, identify: Identify) -> access.User:
    credential = authenticate(request.headers.get("authorization"), ref.name, identify)
    if ref.access is None:
        return _ADMIN
    user = access.user_of(credential, ref.access, store.find("configmaps", "aws-auth", "kube-system"))
    if user is None:
        raise unauthorized()
    return user


def _verb(method: str, named: bool, watching: bool = False) -> str:
    """The authorization verb of a request, as the apiserver's RequestInfo derives it."""
    if method == "GET":
        return "get" if named else "watch" if watching else "list"
    if method == "DELETE":
        return "delete" if named else "deletecollection"
    return _VERBS[method]


def _resource_request(method: str, watching: bool, path: ResourcePath) -> access.Request:
    verb = _verb(method, path.name is not None, watching)
    namespace = path.name if (path.group, path.plural) == ("", "namespaces") else path.namespace
    return access.Request(verb, path.group, path.plural, path.subresource, namespace, path.name)


def _discovery(store: Store, target: Discovery) -> Response:
    if target.what == "health":
        return PlainTextResponse("ok")
    if target.what == "version":
        return json_response(discovery.version(store.kubernetes_version))
    if target.what == "root":
        return json_response({"paths": ["/api", "/api/v1", "/apis", "/healthz", "/livez", "/readyz", "/version"]})
    if target.what == "api":
        return json_response(discovery.api_versions())
    with store.lock:
        if target.what == "apis":
            return json_response(discovery.api_group_list(store.registry))
        body = (discovery.api_group(store.registry, target.group) if target.what == "group"
                else discovery.api_resource_list(store.registry, target.group, target.version))
    if body is None:
        raise path_not_found()
    return json_response(body)


def create_app(clusters: ClusterSource, identify: Identify, stopping: threading.Event) -> Starlette:
    """The emulator for the clusters ``clusters()`` reports, authenticating callers with ``identify``; long
    streams end when ``stopping`` is set."""

    async def endpoint(request: Request) -> Response:
        try:
            parts = request.url.path.split("/", 4)
            if len(parts) < 4 or parts[1] != "clusters":
                raise path_not_found()
            ref, store = _cluster(clusters, parts[2], parts[3])
            user = _user(request, ref, store, identify)
            proxied = proxy.parse(parts[4] if len(parts) > 4 else "")
            if proxied is not None:
                access.authorize(user, access.Request(_verb(request.method, True), "", proxied.kind, "proxy",
                                                      proxied.namespace, proxied.name), store)
                return await proxy.respond(request, store, proxied)
            target = parse(parts[4] if len(parts) > 4 else "")
            if target is None:
                raise path_not_found()
            if isinstance(target, Discovery):
                return _discovery(store, target)
            watching = request.query_params.get("watch", "").lower() in ("true", "1") or target.legacy_watch
            access.authorize(user, _resource_request(request.method, watching, target), store)
            return await handlers.handle(request, store, target, stopping)
        except ApiError as error:
            return error_response(error)
        except Exception as error:
            logger.exception("kube emulator failed on %s %s", request.method, request.url.path)
            return error_response(internal(f"{type(error).__name__}: {error}"))

    return Starlette(routes=[Route("/{path:path}", endpoint, methods=_METHODS)])
