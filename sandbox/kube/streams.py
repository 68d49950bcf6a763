"""Long-lived responses: ``?watch=true`` event streams and ``pods/<name>/log?follow=true``.

Both subscribe to the store under its lock (so nothing falls between the snapshot and the live feed),
receive callbacks on any thread and hop onto the event loop with ``call_soon_threadsafe``, and end on
``timeoutSeconds``, on server shutdown, or when the client disconnects (Starlette cancels the body).

Watch semantics: no ``resourceVersion`` (or ``0``) starts with synthetic ``ADDED`` events for the current
state; a number replays retained events after it, or sends one ``ERROR`` event with a 410 ``Expired``
``Status`` when that version was compacted away — what the client's ``Watch`` expects. A MODIFIED object
that enters or leaves the selection is sent as ADDED or DELETED. ``allowWatchBookmarks`` adds a BOOKMARK
at the end; ``sendInitialEvents`` ends the initial batch with the ``k8s.io/initial-events-end`` bookmark.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from starlette.responses import StreamingResponse

from sandbox.kube.errors import ApiError
from sandbox.kube.logs import Line, render
from sandbox.kube.resources import ResourceType
from sandbox.kube.responses import shaped
from sandbox.kube.store import Store, WatchEvent

POLL_SECONDS = 0.5
DEFAULT_WATCH_SECONDS = 1800


def _post(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue, item: Any) -> None:
    """Hand ``item`` to a stream from any thread; a stream whose loop is gone simply misses it."""
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(queue.put_nowait, item)


def _line(kind: str, obj: dict[str, Any]) -> bytes:
    return (json.dumps({"type": kind, "object": obj}, separators=(",", ":")) + "\n").encode()


@dataclass
class WatchRequest:
    store: Store
    resource_type: ResourceType
    version: str
    matches: Callable[[dict[str, Any]], bool]
    resource_version: str | None
    timeout: float
    bookmarks: bool
    initial_events_bookmark: bool


def _translate(request: WatchRequest, event: WatchEvent) -> bytes | None:
    now = request.matches(event.object)
    before = request.matches(event.old) if event.old else False
    kind: str | None = event.type
    if kind == "MODIFIED":
        kind = {(True, True): "MODIFIED", (True, False): "ADDED", (False, True): "DELETED"}.get((now, before))
    elif not now:
        kind = None
    if kind is None:
        return None
    return _line(kind, shaped(request.resource_type, event.object, request.version))


def _bookmark(request: WatchRequest, annotations: dict[str, str] | None = None) -> bytes:
    metadata: dict[str, Any] = {"resourceVersion": str(request.store.resource_version)}
    if annotations:
        metadata["annotations"] = annotations
    return _line("BOOKMARK", {"kind": request.resource_type.kind,
                              "apiVersion": request.resource_type.api_version(request.version), "metadata": metadata})


def watch_response(request: WatchRequest, stopping: threading.Event) -> StreamingResponse:
    """A 200 stream of watch events (errors after the headers travel as ``ERROR`` events)."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[WatchEvent] = asyncio.Queue()
    key = request.resource_type.key

    def listener(event: WatchEvent) -> None:
        if event.resource.key == key:
            _post(loop, queue, event)

    first: list[bytes] = []
    unsubscribe: Callable[[], None] = lambda: None  # noqa: E731
    with request.store.lock:
        try:
            if request.resource_version in (None, "", "0"):
                current = request.store.list(request.resource_type)
                first = [_line("ADDED", shaped(request.resource_type, obj, request.version))
                         for obj in current if request.matches(obj)]
                if request.initial_events_bookmark:
                    first.append(_bookmark(request, {"k8s.io/initial-events-end": "true"}))
                _, unsubscribe = request.store.subscribe(listener, None)
            else:
                backlog, unsubscribe = request.store.subscribe(listener, int(request.resource_version))
                first = [line for line in (_translate(request, event) for event in backlog
                                           if event.resource.key == key) if line]
        except ApiError as error:
            first = [_line("ERROR", error.status())]
            request = WatchRequest(request.store, request.resource_type, request.version, request.matches, None,
                                   0, False, False)

    async def body() -> AsyncIterator[bytes]:
        try:
            for line in first:
                yield line
            deadline = loop.time() + request.timeout
            while not stopping.is_set() and loop.time() < deadline:
                try:
                    event = await asyncio.wait_for(queue.get(), min(POLL_SECONDS, deadline - loop.time()))
                except TimeoutError:
                    continue
                translated = _translate(request, event)
                if translated:
                    yield translated
            if request.bookmarks:
                yield _bookmark(request)
        finally:
            unsubscribe()

    return StreamingResponse(body(), media_type="application/json")


@dataclass
class LogRequest:
    store: Store
    namespace: str
    pod: str
    container: str
    since: float | None
    tail: int | None
    timestamps: bool
    limit_bytes: int | None


def _terminated(pod: dict[str, Any] | None, container: str) -> bool:
    if pod is None:
        return True
    status = pod.get("status") or {}
    if status.get("phase") in ("Succeeded", "Failed"):
        return True
    for entry in [*(status.get("containerStatuses") or []), *(status.get("initContainerStatuses") or [])]:
        if entry.get("name") == container and "terminated" in (entry.get("state") or {}):
            return True
    return False


def follow_response(request: LogRequest, stopping: threading.Event) -> StreamingResponse:
    """Stream the container's log, then new lines as they are written, until the pod or container ends — or a
    log fault (``LogBook.cut``/``rotate``) ends it: the response then finishes cleanly without further lines."""
    loop = asyncio.get_running_loop()
    wake: asyncio.Queue[None] = asyncio.Queue()
    store = request.store
    target = (request.namespace, request.pod)

    def on_log(namespace: str, pod: str, container: str) -> None:
        if (namespace, pod, container) == (*target, request.container):
            _post(loop, wake, None)

    def on_event(event: WatchEvent) -> None:
        metadata = event.object["metadata"]
        if event.resource.plural == "pods" and (metadata.get("namespace"), metadata["name"]) == target:
            _post(loop, wake, None)

    with store.lock:
        lines, position, instance, _ = store.logs.since(request.namespace, request.pod, request.container, 0)
        stop_logs = store.logs.subscribe(on_log)
        stop_events = store.watch(on_event)
        follow = store.logs.open_follow(request.namespace, request.pod, request.container)

    def chunk(new: list[Line], first: bool, budget: int | None) -> bytes:
        return render(new, since=request.since, tail=request.tail if first else None, timestamps=request.timestamps,
                      limit_bytes=budget)

    async def body() -> AsyncIterator[bytes]:
        nonlocal position, instance
        budget = request.limit_bytes
        try:
            data = chunk(lines, True, budget)
            while True:
                if data:
                    yield data
                    if budget is not None:
                        budget -= len(data)
                        if budget <= 0:
                            return
                with store.lock:
                    if follow.cut:
                        return
                    ended = _terminated(store.find("pods", request.pod, request.namespace), request.container)
                    new, position, instance, restarted = store.logs.since(
                        request.namespace, request.pod, request.container, position, instance)
                    ended = ended or restarted
                if new:
                    data = chunk(new, False, budget)
                    continue
                if ended or stopping.is_set():
                    return
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.get(), POLL_SECONDS)
                data = b""
        finally:
            store.logs.close_follow(follow)
            stop_logs()
            stop_events()

    return StreamingResponse(body(), media_type="text/plain")
