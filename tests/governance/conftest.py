"""Fixtures for task governance: the operations engine driver, and the loopback webhook receiver of the notification
tests."""

from tests.notifications.conftest import fast_delivery, receiver  # noqa: F401
from tests.operations.conftest import drive, fast_polling  # noqa: F401
