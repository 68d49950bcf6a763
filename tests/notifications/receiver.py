"""A webhook receiver on loopback for the notification tests: a small threaded HTTP server that records every request
and answers with the statuses it is told to (some first, then a default), and a driver that plays the Celery worker's
part for deliveries."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.utils import timezone

from notifications import tasks
from notifications.models import Delivery, DeliveryState


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def event(self) -> dict[str, Any]:
        return json.loads(self.body)

    def signed_with(self, secret: str, *, tolerance: float = 300) -> bool:
        """Verify ``X-InstantStart-Signature`` the way docs/notifications.md tells a receiver to."""
        parts = dict(item.split("=", 1) for item in self.headers["x-instantstart-signature"].split(","))
        expected = hmac.new(secret.encode(), f"{parts['t']}.".encode() + self.body, hashlib.sha256).hexdigest()
        return abs(time.time() - int(parts["t"])) < tolerance and hmac.compare_digest(expected, parts["v1"])


class Receiver:
    """Records each POST; answers the statuses queued by :meth:`answer_first`, then :attr:`status`."""

    def __init__(self) -> None:
        self.requests: list[Received] = []
        self.status = 200
        self._first: deque[int] = deque()
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver._lock:
                    receiver.requests.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()},
                                                      body))
                    status = receiver._first.popleft() if receiver._first else receiver.status
                answer = json.dumps({"status": status}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def answer_first(self, *statuses: int) -> None:
        with self._lock:
            self._first.extend(statuses)

    def of_type(self, event_type: str) -> list[Received]:
        return [item for item in self.requests if item.headers.get("x-instantstart-event") == event_type]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def drain(*, timeout: float = 10.0, until: Callable[[], bool] | None = None) -> None:
    """Run every pending delivery's attempt when it is due — what the Celery worker does with the task messages —
    until none is pending (or ``until()``); fails the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        pending = list(Delivery.objects.filter(state=DeliveryState.PENDING).values_list("pk", "next_attempt_at"))
        if not pending or (until is not None and until()):
            return
        if time.monotonic() > deadline:
            pytest.fail(f"deliveries still pending after {timeout}s: {pending}")
        now = timezone.now()
        due = [pk for pk, at in pending if at is None or at <= now]
        for delivery_id in due:
            tasks.deliver_notification(delivery_id)
        if not due:
            time.sleep(min(0.05, max(0.0, (min(at for _, at in pending) - now).total_seconds())))
