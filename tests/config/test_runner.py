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
#: A start is judged by the work it does, not by the wall clock: the runner's processes (the sandbox, the setup
#: step, web, worker, beat, logs) are ready after about START_CPU_TYPICAL CPU-seconds
#: whatever the load, while the wall time of that work grows with it (130 s at load 16 on two cores). A start that
#: has used START_CPU_BUDGET CPU-seconds without being ready is too slow; one that used less than STALL_CPU
#: CPU-seconds in the last STALL_SECONDS while not ready is not starting but hanging. START_WALL_LIMIT bounds the rest.
START_CPU_TYPICAL = 30
START_CPU_BUDGET = 4 * START_CPU_TYPICAL
STALL_SECONDS = 60
STALL_CPU = 1.0
START_WALL_LIMIT = 900
#: The runner gives its children 1.5 s, then kills them, then gives Redis up to 10 s; more than this is a hang.
STOP_TIMEOUT = 45
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def session_stats(session_id: int) -> dict[int, list[str]]:
    """``/proc/<pid>/stat`` fields after the command name (state first) of every live process in ``session_id``
    (the runner starts every child inside its own session)."""
    members = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[3]) == session_id and fields[0] != "Z":
            members[int(stat.parent.name)] = fields
    return members


def session_members(session_id: int) -> list[int]:
    return list(session_stats(session_id))


def session_cpu_seconds(session_id: int) -> float:
    """CPU time used by the session's processes and by the children they reaped (``migrate`` and the others)."""
    return sum(sum(int(value) for value in fields[11:15])
               for fields in session_stats(session_id).values()) / CLOCK_TICKS


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

    def ready(self) -> dict | None:
        """The readiness report once ``/healthz`` and ``/readyz`` answer 200, else ``None``."""
        try:
            if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                ready = httpx.get(f"{self.url}/readyz", timeout=5)
                if ready.status_code == 200:
                    return ready.json()
        except httpx.TransportError:
            pass
        return None

    def wait_ready(self) -> dict:
        """Wait until the runner is ready and return its readiness report; fail when it exits, has used
        ``START_CPU_BUDGET`` CPU-seconds, has stalled for ``STALL_SECONDS`` or has taken ``START_WALL_LIMIT``."""
        started = time.monotonic()
        progress = [(started, 0.0)]
        while (report := self.ready()) is None:
            assert self.process.poll() is None, f"runner exited early:\n{self.output()[-4000:]}"
            now, used = time.monotonic(), session_cpu_seconds(self.process.pid)
            progress = [(at, cpu) for at, cpu in progress if at >= now - STALL_SECONDS] + [(now, used)]
            stalled = now - started >= STALL_SECONDS and used - progress[0][1] < STALL_CPU
            if used > START_CPU_BUDGET or stalled or now - started > START_WALL_LIMIT:
                why = "stalled" if stalled else "too slow"
                pytest.fail(f"runner not ready ({why}) after {now - started:.0f} s and {used:.0f} CPU-seconds "
                            f"(typical: {START_CPU_TYPICAL}):\n{self.output()[-4000:]}")
            time.sleep(0.5)
        return report

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
    deadline = time.monotonic() + START_WALL_LIMIT
    while "worker | " not in first.output() or "following training job logs" not in first.output():
        assert time.monotonic() < deadline, "the worker never started following training logs"
        time.sleep(0.5)
    assert not [line for line in first.output().splitlines() if line.startswith("logs")]  # no process of its own
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
