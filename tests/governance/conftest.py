"""Fixtures for task governance: the operations engine driver."""

from tests.operations.conftest import drive, fast_polling  # noqa: F401
