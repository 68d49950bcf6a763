"""Fixtures for spending: the operations engine driver (task governance set up through REST)."""

from tests.operations.conftest import drive, fast_polling  # noqa: F401
