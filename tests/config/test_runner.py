"""``python -m config.runner`` as a user runs it: real processes on the embedded defaults, stopped by a signal.

Also the beat schedule the runner's ``beat`` child executes: every entry names a registered task.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
import redis

from config.celery import app as celery_app
from operations.models import IdempotencyRecord
from operations.tasks import purge_idempotency_records

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT = 60
STOP_TIMEOUT = 15


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def session_members(session_id: int) -> list[int]:
    """Pids of live processes in ``session_id`` (the runner starts every child inside its own session)."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[3]) == session_id and fields[0] != "Z":
            members.append(int(stat.parent.name))
    return members


class Run:
    """One ``python -m config.runner`` in a new session, output in ``log``, on embedded defaults."""

    def __init__(self, var_dir: Path, log: Path):
        self.var_dir, self.log, self.port = var_dir, log, free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        hidden = {"REDIS_URL", "DATABASE_URL", "INSTANTSTART_ADMIN_USERNAME", "INSTANTSTART_ADMIN_PASSWORD",
                  "AWS_ENDPOINT_URL"}
        env = {key: value for key, value in os.environ.items() if key not in hidden}
        self.sandbox_port = free_port()
        env |= {"INSTANTSTART_VAR_DIR": str(var_dir), "INSTANTSTART_PORT": str(self.port),
                "INSTANTSTART_SANDBOX_AWS_PORT": str(self.sandbox_port),
                "INSTANTSTART_SANDBOX_KUBE_PORT": str(free_port())}
        with log.open("w") as output:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "config.runner"], cwd=REPO, env=env, stdin=subprocess.DEVNULL,
                stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
            )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_ready(self) -> dict:
        """Wait until ``/healthz`` and ``/readyz`` answer 200; return the readiness report."""
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"runner exited early:\n{self.output()[-4000:]}"
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    ready = httpx.get(f"{self.url}/readyz", timeout=5)
                    if ready.status_code == 200:
                        return ready.json()
            except httpx.TransportError:
                pass
            time.sleep(0.25)
        pytest.fail(f"runner not ready within {START_TIMEOUT} s:\n{self.output()[-4000:]}")

    def stop(self, signum: int) -> int:
        """Send ``signum`` the way a terminal does (to the foreground process group) and wait for the exit."""
        os.killpg(self.process.pid, signum)
        try:
            return self.process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"runner still running {STOP_TIMEOUT} s after {signum!r}:\n{self.output()[-4000:]}")

    def kill_leftovers(self) -> None:
        for pid in session_members(self.process.pid):
            os.kill(pid, signal.SIGKILL)
        self.process.wait()


def log_in(url: str, username: str, password: str) -> dict:
    """Log in through the admin login form (CSRF and all) and return ``/api/v1/me`` for the session."""
    with httpx.Client(base_url=url, timeout=10) as client:
        client.get("/admin/login/").raise_for_status()
        response = client.post("/admin/login/?next=/admin/", data={
            "csrfmiddlewaretoken": client.cookies["csrftoken"], "username": username, "password": password,
            "next": "/admin/",
        })
        assert response.status_code == 302, response.text[:2000]
        me = client.get("/api/v1/me")
        assert me.status_code == 200, me.text
        return me.json()


def credentials(var_dir: Path) -> dict[str, str]:
    lines = (var_dir / "first-admin.txt").read_text().splitlines()
    return dict(line.split(": ", 1) for line in lines)


@pytest.fixture
def runs(tmp_path):
    """Start runs on one var dir; anything still alive at teardown is killed."""
    started: list[Run] = []

    def start() -> Run:
        run = Run(tmp_path / "var", tmp_path / f"run{len(started) + 1}.log")
        started.append(run)
        return run

    yield start
    for run in started:
        run.kill_leftovers()


def assert_everything_stopped(run: Run) -> None:
    deadline = time.monotonic() + 2
    while session_members(run.process.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert session_members(run.process.pid) == [], run.output()[-4000:]
    assert not (run.var_dir / "redis.sock").exists()


@pytest.mark.slow
def test_runner_serves_the_product_stops_cleanly_and_keeps_data_across_restarts(runs):
    first = runs()
    report = first.wait_ready()
    assert {name: check["ok"] for name, check in report["checks"].items()} == {
        "database": True, "redis": True, "broker": True,
    }
    assert (first.var_dir / "first-admin.txt").stat().st_mode & 0o777 == 0o600
    admin = credentials(first.var_dir)
    assert admin["password"] in first.output()
    assert log_in(first.url, admin["username"], admin["password"])["username"] == admin["username"]
    sandbox = httpx.get(f"http://127.0.0.1:{first.sandbox_port}/_sandbox/clock", timeout=5)
    assert sandbox.status_code == 200
    queue = redis.Redis(unix_socket_path=str(first.var_dir / "redis.sock"))
    queue.set("instantstart:test:restart", "kept")
    queue.close()

    assert first.stop(signal.SIGINT) == 0
    assert_everything_stopped(first)

    second = runs()
    second.wait_ready()
    assert credentials(second.var_dir) == admin
    assert admin["password"] not in second.output()
    assert str(second.var_dir / "first-admin.txt") in second.output()
    assert log_in(second.url, admin["username"], admin["password"])["username"] == admin["username"]
    queue = redis.Redis(unix_socket_path=str(second.var_dir / "redis.sock"))
    assert queue.get("instantstart:test:restart") == b"kept"
    queue.close()

    assert second.stop(signal.SIGTERM) == 0
    assert_everything_stopped(second)


@pytest.mark.django_db
def test_beat_schedule_runs_registered_tasks(settings, make_user):
    celery_app.loader.import_default_modules()
    assert {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()} <= set(celery_app.tasks)
    user = make_user()
    stale = IdempotencyRecord.objects.create(user=user, key="old", fingerprint="f", method="POST", path="/x")
    IdempotencyRecord.objects.filter(pk=stale.pk).update(created_at=stale.created_at - timedelta(days=2))
    IdempotencyRecord.objects.create(user=user, key="new", fingerprint="f", method="POST", path="/x")

    assert purge_idempotency_records.apply().get() == 1
    assert list(IdempotencyRecord.objects.values_list("key", flat=True)) == ["new"]
