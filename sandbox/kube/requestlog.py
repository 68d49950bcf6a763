"""The log of the Kubernetes writes clients sent, so tests can assert that nothing was written (a dry run).

Every request the emulator serves for a client (not the simulator, which writes to the stores directly) with a
method other than ``GET`` is recorded when it arrives (but a server-side dry run, ``dryRun=All``, which the API
server only validates): sequence number, the cluster (``region``, ``cluster``),
``method`` and ``path`` (from ``/api`` or ``/apis``, or the ``…/proxy/…`` path of a proxied call). Served at
``GET|DELETE /_sandbox/kube-requests``; cleared by a reset.
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
    region: str
    cluster: str
    method: str
    path: str

    def public(self) -> dict[str, Any]:
        return asdict(self)


def record(*, region: str, cluster: str, method: str, path: str) -> None:
    """Log one client request unless it only reads (``GET``)."""
    if method == "GET":
        return
    with _lock:
        _entries.append(Entry(seq=next(_seq), region=region, cluster=cluster, method=method, path=path))


def entries(since: int = 0) -> list[Entry]:
    with _lock:
        return [entry for entry in _entries if entry.seq > since]


@control.on_reset
def clear() -> None:
    with _lock:
        _entries.clear()
