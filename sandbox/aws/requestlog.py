"""The log of mutating AWS calls, so tests can assert that an effect happened exactly once.

Every request whose operation is not a read (``Describe*``, ``List*``, ``Get*``, ``Search*``…) is recorded
once per attempt, after it has been answered: sequence number, wall time, ``service``/``operation``/
``region``, the parsed parameters, the idempotency token the client sent (``ClientToken``,
``clientRequestToken``, … : any top-level member the model marks as an idempotency token), the HTTP status,
the error code when it failed, whether an injected fault answered it (``fault`` = rule id) and whether it was
an idempotent replay of an earlier call with the same token (``replayed``). A call that took effect is one
with a 2xx status that is neither a fault nor a replay.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import asdict, dataclass
from typing import Any

from sandbox import control

_lock = threading.Lock()
_seq = itertools.count(1)
_entries: list[Entry] = []


@dataclass(frozen=True)
class Entry:
    seq: int
    time: float
    service: str
    operation: str
    region: str
    params: dict[str, Any]
    client_token: str | None
    status: int
    error_code: str | None = None
    fault: int | None = None
    replayed: bool = False

    @property
    def took_effect(self) -> bool:
        return 200 <= self.status < 300 and self.fault is None and not self.replayed

    def public(self) -> dict[str, Any]:
        return {**asdict(self), "took_effect": self.took_effect}


def record(**fields: Any) -> Entry:
    with _lock:
        entry = Entry(seq=next(_seq), **fields)
        _entries.append(entry)
    return entry


def entries(service: str | None = None, operation: str | None = None, since: int = 0,
            effective: bool = False) -> list[Entry]:
    """Logged calls in order, filtered by service, operation, sequence (> ``since``) and effect."""
    with _lock:
        return [entry for entry in _entries
                if (service is None or entry.service == service)
                and (operation is None or entry.operation == operation)
                and entry.seq > since and (not effective or entry.took_effect)]


@control.on_reset
def clear() -> None:
    with _lock:
        _entries.clear()
