"""Every simulator test runs in the shared sandbox, emptied for it (``sandbox`` in tests/conftest.py), and leaves
it empty: the simulator is process-wide, so clusters left behind would be simulated during later tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _empty_sandbox(sandbox) -> Iterator[None]:
    yield
    sandbox.control("POST", "reset")
