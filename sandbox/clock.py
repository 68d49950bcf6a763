"""Compressible time. Every simulated duration goes through ``duration``.

``scale`` is the fraction of the nominal AWS/Kubernetes duration that really elapses: ``1.0`` is real
time, the demo default ``0.05`` turns a 10-minute EKS control-plane creation into 30 seconds, tests use
``0.001``. Transitions are evaluated lazily against ``now()``, so nothing needs a timer thread to move a
resource from CREATING to ACTIVE: the next describe sees the new state.
"""

from __future__ import annotations

import os
import threading
import time

DEFAULT_SCALE = float(os.environ.get("INSTANTSTART_SANDBOX_TIME_SCALE", "0.05"))

_lock = threading.Lock()
_scale = DEFAULT_SCALE


def scale() -> float:
    return _scale


def set_scale(value: float) -> None:
    """Change the time scale (0 ≤ value ≤ 10). It is retroactive: ``due`` measures every step in flight
    against the new scale, so 0 finishes all of them at their next observation and a larger scale delays them."""
    if not 0 <= value <= 10:
        raise ValueError("time scale must be between 0 and 10")
    global _scale
    with _lock:
        _scale = value


def now() -> float:
    """Seconds since the epoch (wall clock, so timestamps in API answers look real)."""
    return time.time()


def duration(nominal_seconds: float) -> float:
    """How many real seconds a step that takes ``nominal_seconds`` in AWS takes here."""
    return nominal_seconds * _scale


def due(started_at: float, nominal_seconds: float) -> bool:
    """Has a step that started at ``started_at`` and nominally lasts ``nominal_seconds`` finished?"""
    return now() >= started_at + duration(nominal_seconds)
