"""Pytest plugin (loaded with ``-p tests.embedded`` before Django settings are read).

Without ``REDIS_URL`` the suite runs on the embedded defaults: a private ``var`` directory in a temp
folder (its own SQLite file and secret key) and the bundled Redis server started there. With
``REDIS_URL``/``DATABASE_URL`` set (CI), the real services are used and nothing is started.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

from config.embedded import redis_url, start_redis

if not os.environ.get("REDIS_URL"):
    _var_dir = Path(tempfile.mkdtemp(prefix="instantstart-test-"))
    os.environ.setdefault("INSTANTSTART_VAR_DIR", str(_var_dir))
    _redis = start_redis(_var_dir, persist=False)
    os.environ["REDIS_URL"] = redis_url(_var_dir)

    def _stop() -> None:
        _redis.terminate()
        _redis.wait(timeout=10)
        shutil.rmtree(_var_dir, ignore_errors=True)

    atexit.register(_stop)
