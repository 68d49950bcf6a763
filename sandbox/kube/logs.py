"""Pod container logs: what the kubelet would hold for each container, current and previous instance.

The simulator writes lines with ``append`` (or ``extend``, one listener call per batch); ``restart`` moves the
current instance's lines to "previous" (what ``previous=true`` reads) as a container restart does. ``render``
applies the read options of ``GET pods/<name>/log`` — ``sinceTime``/``sinceSeconds``, ``tailLines``,
``timestamps``, ``limitBytes`` — to a list of lines. Each container keeps its newest ``MAX_LINES`` lines.

Timestamps are whole microseconds and strictly increase per container (a line stamped at or before its
predecessor is moved one microsecond after it), so a follower that resumes with ``sinceTime=<its last line's
timestamp>`` and drops lines with exactly that timestamp loses and repeats nothing.

Faults for log followers: every ``follow=true`` stream registers a ``Follow`` (``open_follow``); ``cut``
ends the open follows of a namespace's pods (a dropped kubelet connection) and ``rotate`` empties their
containers' current logs first (the kubelet's log rotation: reads see only lines written afterwards).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from sandbox import clock
from sandbox.kube.meta import rfc3339_nano

MAX_LINES = 50_000

#: (microseconds since the epoch, text): whole microseconds, so ``sinceTime`` round-trips exactly.
Line = tuple[int, str]
LogListener = Callable[[str, str, str], None]


@dataclass
class ContainerLog:
    current: list[Line] = field(default_factory=list)
    previous: list[Line] | None = None
    trimmed: int = 0
    previous_trimmed: int = 0
    #: Which instance of the container ``current`` belongs to (0 until the first restart).
    instance: int = 0
    #: The newest timestamp handed out (microseconds), across restarts and rotations.
    last: int = 0

    @property
    def written(self) -> int:
        """Lines written by the current instance so far, including those trimmed away."""
        return self.trimmed + len(self.current)


@dataclass(eq=False)
class Follow:
    """An open ``follow=true`` stream of one container; ``cut`` is set when a fault ends it."""

    namespace: str
    pod: str
    container: str
    cut: bool = False


class LogBook:
    """Log lines per (namespace, pod, container); guarded by the owning store's lock."""

    def __init__(self, lock: threading.RLock):
        self._lock = lock
        self._logs: dict[tuple[str, str], dict[str, ContainerLog]] = {}
        self._listeners: list[LogListener] = []
        self._follows: list[Follow] = []

    def append(self, namespace: str, pod: str, container: str, line: str, timestamp: float | None = None) -> None:
        """Add one line (without its newline) written at ``timestamp`` (default: now)."""
        self.extend(namespace, pod, container, [(line, timestamp)])

    def extend(self, namespace: str, pod: str, container: str, lines: list[tuple[str, float | None]]) -> None:
        """Add ``(line, timestamp or None for now)`` pairs in order; listeners hear about the batch once."""
        if not lines:
            return
        with self._lock:
            log = self._logs.setdefault((namespace, pod), {}).setdefault(container, ContainerLog())
            now = clock.now()
            for text, timestamp in lines:
                log.last = max(round((now if timestamp is None else timestamp) * 1_000_000), log.last + 1)
                log.current.append((log.last, text.rstrip("\n")))
            if len(log.current) > MAX_LINES:
                log.trimmed += len(log.current) - MAX_LINES
                del log.current[:-MAX_LINES]
            self._notify(namespace, pod, container)

    def _notify(self, namespace: str, pod: str, container: str) -> None:
        for listener in list(self._listeners):
            listener(namespace, pod, container)

    def restart(self, namespace: str, pod: str, container: str) -> None:
        """The container restarted: its lines become the previous instance's, the current log is empty."""
        with self._lock:
            log = self._logs.setdefault((namespace, pod), {}).setdefault(container, ContainerLog())
            log.previous, log.current = log.current, []
            log.previous_trimmed, log.trimmed = log.trimmed, 0
            log.instance += 1

    def lines(self, namespace: str, pod: str, container: str, *, previous: bool = False) -> list[Line] | None:
        """A copy of the lines; ``None`` when that instance never wrote anything (or never existed)."""
        with self._lock:
            log = self._logs.get((namespace, pod), {}).get(container)
            if log is None:
                return None
            chosen = log.previous if previous else log.current
            return None if chosen is None else list(chosen)

    def since(self, namespace: str, pod: str, container: str, position: int,
              instance: int | None = None) -> tuple[list[Line], int, int, bool]:
        """A follower's next read: ``(lines, position, instance, restarted)``.

        ``lines`` are those written after the first ``position`` lines of container instance ``instance``
        (``None``: the current one). When that instance has since restarted, they are the rest of its lines and
        ``restarted`` is true — like the kubelet, a follow ends with the container it was following."""
        with self._lock:
            log = self._logs.get((namespace, pod), {}).get(container)
            if log is None:
                return [], 0, 0, False
            if instance is None or instance == log.instance:
                return log.current[max(position - log.trimmed, 0):], log.written, log.instance, False
            rest = log.previous[max(position - log.previous_trimmed, 0):] \
                if instance == log.instance - 1 and log.previous is not None else []
            return rest, position + len(rest), instance, True

    def open_follow(self, namespace: str, pod: str, container: str) -> Follow:
        """Register a follow stream (``close_follow`` it when the stream ends)."""
        with self._lock:
            follow = Follow(namespace, pod, container)
            self._follows.append(follow)
            return follow

    def close_follow(self, follow: Follow) -> None:
        with self._lock:
            if follow in self._follows:
                self._follows.remove(follow)

    def cut(self, namespace: str, pod: str | None = None) -> int:
        """End every open follow of ``pod`` (every pod of ``namespace`` when ``None``); returns how many.

        The streams finish cleanly at their next wake-up (which this triggers) without sending more lines; the
        log itself goes on."""
        with self._lock:
            ended = [f for f in self._follows if f.namespace == namespace and pod in (None, f.pod) and not f.cut]
            for follow in ended:
                follow.cut = True
                self._follows.remove(follow)
            for key in {(f.namespace, f.pod, f.container) for f in ended}:
                self._notify(*key)
            return len(ended)

    def rotate(self, namespace: str, pod: str | None = None) -> tuple[int, int]:
        """The kubelet rotated the log files of ``pod`` (every pod of ``namespace`` when ``None``): each
        container's current log keeps nothing written so far, and open follows end (``cut``). Returns
        ``(lines rotated away, streams ended)``; ``previous=true`` logs are untouched."""
        with self._lock:
            rotated = 0
            for (log_namespace, log_pod), containers in self._logs.items():
                if log_namespace == namespace and pod in (None, log_pod):
                    for log in containers.values():
                        rotated += len(log.current)
                        log.trimmed += len(log.current)
                        log.current = []
            return rotated, self.cut(namespace, pod)

    def forget(self, namespace: str, pod: str) -> None:
        with self._lock:
            self._logs.pop((namespace, pod), None)

    def clear(self) -> None:
        with self._lock:
            self._logs.clear()

    def subscribe(self, listener: LogListener) -> Callable[[], None]:
        """Call ``listener(namespace, pod, container)`` after every append (under the store lock; be quick)."""
        with self._lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe


def render(lines: list[Line], *, since: float | None = None, tail: int | None = None, timestamps: bool = False,
           limit_bytes: int | None = None) -> bytes:
    """The response body for ``lines`` under the read options (newline-terminated lines)."""
    if since is not None:
        since_micros = round(since * 1_000_000)
        lines = [line for line in lines if line[0] >= since_micros]
    if tail is not None:
        lines = lines[-tail:] if tail > 0 else []
    body = "".join((f"{rfc3339_nano(ts)} " if timestamps else "") + text + "\n" for ts, text in lines).encode()
    return body[:limit_bytes] if limit_bytes is not None else body
