"""Fixtures of the notification tests: a webhook receiver on loopback and delivery settings that retry fast."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.notifications.receiver import Receiver
from tests.operations.conftest import drive, fast_polling  # noqa: F401  (the engine driver, shared)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver()
    yield running
    running.close()


@pytest.fixture
def fast_delivery(settings):
    """Loopback webhooks allowed, retries a few tens of milliseconds apart, a subscription off after 3 failures."""
    settings.NOTIFICATIONS_ALLOW_LOOPBACK = True
    settings.NOTIFICATIONS_TIMEOUT_SECONDS = 2
    settings.NOTIFICATIONS_RETRY_BASE_SECONDS = 0.02
    settings.NOTIFICATIONS_RETRY_MAX_SECONDS = 0.1
    settings.NOTIFICATIONS_MAX_ATTEMPTS = 4
    settings.NOTIFICATIONS_DISABLE_AFTER = 3
    settings.INSTANTSTART_PUBLIC_URL = "https://instantstart.example.com"
