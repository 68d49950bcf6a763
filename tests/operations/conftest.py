"""Fixtures for the operations engine: fast polling and a driver that plays the Celery task's part in-process."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from django.utils import timezone

from operations import engine
from operations.models import ACTIVE_STATES, Operation


@pytest.fixture
def fast_polling(settings):
    """Poll schedules at the sandbox's clock (a thousandth of AWS's time), polls at least every 10-200 ms."""
    settings.OPERATIONS_POLL_SCALE = 0.001
    settings.OPERATIONS_POLL_MIN_SECONDS = 0.01
    settings.OPERATIONS_POLL_MAX_SECONDS = 0.2


@pytest.fixture
def drive(fast_polling) -> Callable[..., Operation]:
    """Advance an operation the way ``advance_operation`` does — at each wake-up, until nobody needs to — and
    return it reloaded. Fails the test if it is still active after ``timeout`` seconds."""

    def run(operation: Operation, *, timeout: float = 60.0, until: Callable[[Operation], bool] | None = None):
        deadline = time.monotonic() + timeout
        while True:
            operation.refresh_from_db()
            if operation.state not in ACTIVE_STATES or (until is not None and until(operation)):
                return operation
            if time.monotonic() > deadline:
                pytest.fail(f"operation {operation.pk} still {operation.state} in {operation.phase} after {timeout}s")
            due = operation.next_poll_at
            if due is not None:
                time.sleep(max(0.0, (due - timezone.now()).total_seconds()))
            engine.advance(operation.pk, due=due)

    return run
