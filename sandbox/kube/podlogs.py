"""``GET /api/v1/namespaces/<ns>/pods/<name>/log``: option parsing and the kubelet's refusals.

Answers 400 like the apiserver when a multi-container pod gets no ``container``, the container is not in
the pod, it is still waiting to start (a ``waiting`` state in ``containerStatuses``, or a Pending pod
without any log yet), or ``previous=true`` names a container that never restarted. Options:
``container``, ``follow``, ``previous``, ``timestamps``, ``sinceTime`` (RFC 3339), ``sinceSeconds``,
``tailLines``, ``limitBytes``.
"""

from __future__ import annotations

import threading
from typing import Any

from starlette.datastructures import QueryParams
from starlette.responses import Response

from sandbox import clock
from sandbox.kube import streams
from sandbox.kube.errors import ApiError, bad_request
from sandbox.kube.logs import render
from sandbox.kube.meta import parse_rfc3339
from sandbox.kube.store import Store


def _number(query: QueryParams, name: str, minimum: int) -> int | None:
    raw = query.get(name)
    if raw in (None, ""):
        return None
    if not raw.lstrip("-").isdigit() or int(raw) < minimum:
        raise ApiError(422, "Invalid", f'PodLogOptions "" is invalid: {name}: Invalid value: {raw}: must be '
                                       f"greater than {minimum - 1}", {})
    return int(raw)


def _container(pod: dict[str, Any], requested: str | None) -> str:
    spec = pod.get("spec") or {}
    name = pod["metadata"]["name"]
    containers = [c.get("name") for c in spec.get("containers") or []]
    init = [c.get("name") for c in spec.get("initContainers") or []]
    if not requested:
        if len(containers) == 1:
            return containers[0]
        message = f"a container name must be specified for pod {name}, choose one of: [{' '.join(containers)}]"
        if init:
            message += f" or one of the init containers: [{' '.join(init)}]"
        raise bad_request(message)
    if requested not in containers + init:
        raise bad_request(f"container {requested} is not valid for pod {name}")
    return requested


def _waiting_reason(pod: dict[str, Any], container: str, has_lines: bool) -> str | None:
    status = pod.get("status") or {}
    for entry in [*(status.get("containerStatuses") or []), *(status.get("initContainerStatuses") or [])]:
        if entry.get("name") == container:
            waiting = (entry.get("state") or {}).get("waiting")
            return (waiting.get("reason") or "ContainerCreating") if waiting is not None and not has_lines else None
    if status.get("phase", "Pending") == "Pending" and not has_lines:
        return "ContainerCreating"
    return None


def respond(store: Store, namespace: str, pod_name: str, query: QueryParams, stopping: threading.Event) -> Response:
    """The log body, or a follow stream (see the module docstring)."""
    since_time, since_seconds = query.get("sinceTime"), _number(query, "sinceSeconds", 1)
    if since_time and since_seconds is not None:
        raise ApiError(422, "Invalid", "PodLogOptions \"\" is invalid: at most one of `sinceTime` or `sinceSeconds` "
                                       "may be specified", {})
    try:
        since = parse_rfc3339(since_time) if since_time else None
    except ValueError:
        raise bad_request(f'parsing time "{since_time}" as "2006-01-02T15:04:05Z07:00": cannot parse') from None
    if since_seconds is not None:
        since = clock.now() - since_seconds
    tail, limit = _number(query, "tailLines", 0), _number(query, "limitBytes", 1)
    timestamps = query.get("timestamps", "").lower() == "true"
    with store.lock:
        pod = store.get("pods", pod_name, namespace)
        container = _container(pod, query.get("container"))
        if query.get("previous", "").lower() == "true":
            lines = store.logs.lines(namespace, pod_name, container, previous=True)
            if lines is None:
                raise bad_request(f'previous terminated container "{container}" in pod "{pod_name}" not found')
            return Response(render(lines, since=since, tail=tail, timestamps=timestamps, limit_bytes=limit),
                            media_type="text/plain")
        lines = store.logs.lines(namespace, pod_name, container) or []
        reason = _waiting_reason(pod, container, bool(lines))
        if reason:
            raise bad_request(f'container "{container}" in pod "{pod_name}" is waiting to start: {reason}')
        if query.get("follow", "").lower() != "true":
            return Response(render(lines, since=since, tail=tail, timestamps=timestamps, limit_bytes=limit),
                            media_type="text/plain")
    return streams.follow_response(streams.LogRequest(store, namespace, pod_name, container, since, tail, timestamps,
                                                      limit), stopping)
