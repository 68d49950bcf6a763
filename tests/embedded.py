"""Pytest plugin (loaded with ``-p tests.embedded`` before Django settings are read).

Without ``REDIS_URL`` the suite runs on the embedded defaults: a private ``var`` directory in a temp
folder (its own SQLite file and secret key) and the bundled Redis server started there. With
``REDIS_URL``/``DATABASE_URL`` set (CI), the real services are used and nothing is started.

Under pytest-xdist (``-n 3`` in ``make test``) every worker process is isolated from the others: on the embedded
defaults it starts its own ``var`` directory and Redis (a worker inherits the controller's environment, so it
replaces what the controller started rather than sharing it); with ``REDIS_URL`` set it uses its own database
number, the URL's number plus the worker's index (``gw1`` of ``redis://host:6379/9`` uses ``/10``), so the cache,
the Channels layer, the Celery broker and the leases — and every test's ``cache.clear()`` — stay its own.
PostgreSQL test databases are already per worker (pytest-django suffixes them: ``test_<name>_gw1``).
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
from pathlib import Path

from config.embedded import redis_url, start_redis

#: Set by this plugin when the Redis behind ``REDIS_URL`` is one it started (not the user's or CI's).
EMBEDDED_MARK = "INSTANTSTART_TEST_EMBEDDED_REDIS"


def worker_index() -> int | None:
    """The xdist worker's index (``gw3`` → 3), or ``None`` outside a worker."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return int(worker.removeprefix("gw")) if worker else None


def worker_redis_url(url: str, index: int) -> str:
    """``url`` with its database number moved up by ``index`` (``redis://h:6379/9``, 1 → ``redis://h:6379/10``)."""
    match = re.fullmatch(r"(rediss?://[^/?#]*)(?:/(\d*))?(.*)", url)
    if match is None:
        raise ValueError(f"a per-worker Redis database needs a redis:// URL, not {url!r}")
    base, number, rest = match.groups()
    return f"{base}/{int(number or 0) + index}{rest}"


def start_embedded() -> None:
    """A private ``var`` directory (unless one is named, and it is not the controller's) and Redis started there."""
    var_dir = Path(tempfile.mkdtemp(prefix="instantstart-test-"))
    if os.environ.get(EMBEDDED_MARK) or not os.environ.get("INSTANTSTART_VAR_DIR"):
        os.environ["INSTANTSTART_VAR_DIR"] = str(var_dir)
    server = start_redis(var_dir, persist=False)
    os.environ["REDIS_URL"] = redis_url(var_dir)
    os.environ[EMBEDDED_MARK] = "1"

    def stop() -> None:
        server.terminate()
        server.wait(timeout=10)
        shutil.rmtree(var_dir, ignore_errors=True)

    atexit.register(stop)


if not os.environ.get("REDIS_URL") or (worker_index() is not None and os.environ.get(EMBEDDED_MARK)):
    start_embedded()
elif worker_index():
    os.environ["REDIS_URL"] = worker_redis_url(os.environ["REDIS_URL"], worker_index())
