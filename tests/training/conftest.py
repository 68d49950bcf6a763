"""Fixtures for the training app: the operations engine driver, shared."""

from tests.operations.conftest import drive, fast_polling  # noqa: F401
