"""Fixtures for the streamable-HTTP tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.mcp_server.live import serving
from tests.operations.conftest import fast_polling  # noqa: F401 - for wait_for_operation on a real run


@pytest.fixture
def mcp_url(transactional_db) -> Iterator[str]:
    """The product's one ASGI application (``config.asgi``), served for real."""
    with serving("config.asgi:application") as url:
        yield url
