"""Fixtures for the inference app: the operations engine driver, shared."""

from tests.operations.conftest import drive, fast_polling  # noqa: F401
