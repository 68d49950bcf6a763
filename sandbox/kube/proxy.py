"""The ``proxy`` subresource of Services and Pods: ``/api/v1/namespaces/<ns>/services/<name>[:<port>]/proxy/<path>``
and ``…/pods/<name>[:<port>]/proxy/<path>``, as the apiserver forwards a request to a pod.

A Service forwards to one of the Ready pods its selector matches (round robin; the routing Service of a managed
endpoint with intelligent routing as its strategy picks, ``sandbox.sim.kvcache``); none is ``503 ServiceUnavailable``
``no endpoints available for service "<name>"``, as the apiserver answers. A Pod forwards when it is Running, else
``503`` with the dial error. The pod's answer is its model server's (``sandbox.sim.serving``); a pod that serves
nothing refuses the connection (``503``); an SGLang router pod routes to its workers (``sandbox.sim.router``). A
vLLM pod's completions move its prefix-cache counters, which its ``/metrics`` answer ends with
(``sandbox.sim.kvcache``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from sandbox.kube import requestlog
from sandbox.kube.errors import ApiError, not_found
from sandbox.kube.selectors import match_labels
from sandbox.kube.store import Store
from sandbox.sim import inference, kvcache, router, serving

_PATH = re.compile(r"^api/v1/namespaces/(?P<namespace>[^/]+)/(?P<kind>services|pods)/(?P<name>[^/]+)/proxy"
                   r"(?P<rest>/.*)?$")
_turns = itertools.count()


@dataclass(frozen=True)
class Target:
    namespace: str
    kind: str
    name: str
    rest: str


def parse(path: str) -> Target | None:
    """The proxy target of a path relative to the cluster prefix (``None``: not a proxy path)."""
    found = _PATH.match(path)
    if found is None:
        return None
    parts = found["name"].split(":")
    name = parts[1] if len(parts) == 3 else parts[0]
    return Target(found["namespace"], found["kind"], name, found["rest"] or "/")


def _unavailable(message: str) -> ApiError:
    return ApiError(503, "ServiceUnavailable", message, {})


def _ready(pod: dict) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and any(
        entry.get("type") == "Ready" and entry.get("status") == "True"
        for entry in (pod.get("status") or {}).get("conditions") or [])


def _pod(store: Store, target: Target, raw: bytes = b"", headers: Mapping[str, str] | None = None) -> dict:
    if target.kind == "pods":
        pod = store.find("pods", target.name, target.namespace)
        if pod is None:
            raise not_found("", "pods", target.name)
        if (pod.get("status") or {}).get("phase") != "Running":
            raise _unavailable(f"error trying to reach service: dial tcp {(pod.get('status') or {}).get('podIP')}: "
                               "connect: connection refused")
        return pod
    service = store.find("services", target.name, target.namespace)
    if service is None:
        raise not_found("", "services", target.name)
    selector = (service.get("spec") or {}).get("selector") or {}
    ready = [pod for pod in store.list("pods", target.namespace)
             if selector and match_labels({"matchLabels": selector}, (pod["metadata"].get("labels") or {}))
             and _ready(pod) and not pod["metadata"].get("deletionTimestamp")]
    if not ready:
        raise _unavailable(f'no endpoints available for service "{target.name}"')
    annotations = service["metadata"].get("annotations") or {}
    strategy = annotations.get(inference.ROUTING_ANNOTATION)
    if strategy:
        return kvcache.choose(ready, strategy, raw, headers or {},
                              keys=[_key(store, target.namespace, pod) for pod in ready],
                              session_header=annotations.get(inference.SESSION_ANNOTATION, kvcache.SESSION_HEADER))
    return ready[next(_turns) % len(ready)]


def _key(store: Store, namespace: str, pod: dict) -> str:
    return f"{store.region}/{store.name}/{namespace}/{pod['metadata']['name']}"


async def respond(request: Request, store: Store, target: Target) -> Response:
    """Forward ``request`` to the target's pod and answer what its server answers (a ``POST`` is logged first,
    ``sandbox.kube.requestlog``)."""
    requestlog.record(region=store.region, cluster=store.name, method=request.method,
                      path="/" + request.url.path.split("/", 4)[-1])
    raw = await request.body()
    pod = _pod(store, target, raw, request.headers)
    if not serving.serves(pod):
        raise _unavailable(f"error trying to reach service: dial tcp {(pod.get('status') or {}).get('podIP')}: "
                           "connect: connection refused")
    key = _key(store, target.namespace, pod)
    route = target.rest + (f"?{request.url.query}" if request.url.query else "")
    if router.is_router(pod):
        status, media_type, body = router.answer(store, key, pod, request.method, route, raw)
        if isinstance(body, bytes):
            return Response(body, status_code=status, media_type=media_type)
        return StreamingResponse(body, status_code=status, media_type=media_type)
    vllm = serving.engine(pod) == "vllm"
    if vllm and request.method == "POST" and target.rest in ("/v1/chat/completions", "/v1/completions"):
        kvcache.record(key, pod, raw)
    status, media_type, body = serving.answer(key, pod, request.method, route, raw)
    if vllm and isinstance(body, bytes) and status == 200 and target.rest == "/metrics":
        body += kvcache.metrics(key, pod, serving.model_name(pod)).encode()
    if isinstance(body, bytes):
        return Response(body, status_code=status, media_type=media_type)
    return StreamingResponse(body, status_code=status, media_type=media_type)
