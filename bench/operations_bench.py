"""Operations engine benchmark: N concurrent multi-phase operations against the sandbox, engine vs a fixed poller.

``.venv/bin/python -m bench.operations_bench`` (or ``make bench``); ``--help`` lists the knobs. See ``bench/README.md``
for what is measured, how, and the numbers of the last run.

The run, for each mode (``engine`` and ``fixed30``):

1. an empty sandbox (AWS side in this process, so it can count every call it answers), a private Redis, a fresh
   PostgreSQL database (``--database-url``, dropped and migrated at the start);
2. the real ``celery worker`` (prefork) and ``celery beat`` processes, with the mode's polling settings;
3. ``--operations`` demo operations created in one transaction, so they are enqueued at the same instant;
4. wait until every operation is terminal, sampling the worker's memory (main process + pool, RSS);
5. measure: operations/second, detection lag (the sandbox's add-on became ACTIVE → the operation succeeded), read
   calls (Describe/Get/Head/List) the sandbox answered per operation, poll steps per operation, peak worker RSS.

Time is compressed by ``--time-scale`` for both the sandbox (an EKS cluster takes 600 s × scale) and the engine's
poll intervals (``INSTANTSTART_OPERATIONS_POLL_SCALE`` and the min/max bounds scaled alike), so lags are reported
in real seconds and in AWS seconds (real ÷ scale).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

REPO = Path(__file__).resolve().parents[1]
REGION = "us-west-2"
READ_PREFIXES = ("Describe", "Get", "Head", "List")
#: Mutations each operation makes, once each, by pipeline (``--pipeline``).
MUTATIONS = {
    "bench": {"CreateBucket": 1, "CreateRole": 1, "AttachRolePolicy": 1, "CreateCluster": 1, "CreateAddon": 1},
    "demo": {"CreateBucket": 1, "CreateVpc": 1, "CreateSubnet": 2, "CreateRole": 1, "AttachRolePolicy": 1,
             "CreateCluster": 1, "CreateAddon": 1},
}
#: Production's engine settings (config/settings.py defaults), in AWS seconds.
POLL_MIN_SECONDS = 0.5
POLL_MAX_SECONDS = 20.0
FIXED_POLL_SECONDS = 30.0


#: Calls of the event channel (EventBridge → SQS, ``cloud.events``): the engine's cost of listening.
CHANNEL_CALLS = ("ReceiveMessage", "DeleteMessageBatch", "ChangeMessageVisibility", "PutRule", "PutTargets",
                 "CreateQueue", "SetQueueAttributes", "GetQueueUrl")


@dataclass
class Mode:
    name: str
    title: str
    poll_min: float  # AWS seconds
    poll_max: float
    schedules: bool  # known durations, event wake-ups, shared reads (operations.schedule, .wakeups, .context)


MODES = {
    "engine": Mode("engine", "engine (known durations + events)", POLL_MIN_SECONDS, POLL_MAX_SECONDS, True),
    "backoff": Mode("backoff", "engine, backoff only (before)", POLL_MIN_SECONDS, POLL_MAX_SECONDS, False),
    # min = max = 30 s: every poll (the first after a submit included) waits exactly 30 s, no backoff, no jitter.
    "fixed30": Mode("fixed30", "fixed 30 s poller (baseline)", FIXED_POLL_SECONDS, FIXED_POLL_SECONDS, False),
}


@dataclass
class Result:
    mode: str
    operations: int
    succeeded: int
    wall_seconds: float
    operations_per_second: float
    lag_p50: float
    lag_p95: float
    lag_max: float
    cluster_lag_p50: float
    cluster_lag_p95: float
    reads_per_operation: float
    describes_per_operation: float
    poll_steps_per_operation: float
    effective_mutations_per_operation: float
    exactly_once: bool
    steps_per_operation: float
    steps_per_second: float
    worker_cpu_seconds: float
    peak_worker_rss_mib: float
    peak_process_rss_mib: float
    reads_by_call: dict[str, int] = field(default_factory=dict)
    channel_calls_per_operation: float = 0.0


# processes --------------------------------------------------------------------------------------------------------


def rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree(pid: int) -> list[int]:
    pids = [pid]
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return pids
    for child in children:
        pids += tree(int(child))
    return pids


def cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


class Sampler(threading.Thread):
    """Every ``interval`` seconds: the RSS of a process tree (peak of the sum, peak of one member) and the CPU time
    of each member (the last reading counts)."""

    def __init__(self, pid: int, interval: float = 0.25):
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.peak_total = self.peak_single = 0
        self.cpu: dict[int, float] = {}
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.wait(self.interval):
            pids = tree(self.pid)
            sizes = [rss_kib(pid) for pid in pids]
            self.peak_total = max(self.peak_total, sum(sizes))
            self.peak_single = max(self.peak_single, max(sizes, default=0))
            for pid in pids:
                self.cpu[pid] = max(self.cpu.get(pid, 0.0), cpu_seconds(pid))


#: Runs ``celery`` on another tree's source alone: setuptools' finder of this checkout's editable install would
#: otherwise supply the modules that tree lacks from this checkout (a baseline then imports half of today's code).
_ALONE = ("import runpy, sys; "
          "sys.meta_path[:] = [finder for finder in sys.meta_path if '__editable__' not in str(finder)]; "
          "sys.path_hooks[:] = [hook for hook in sys.path_hooks if '__editable__' not in str(hook)]; "
          "sys.path_importer_cache.clear(); sys.argv[0] = 'celery'; runpy.run_module('celery', run_name='__main__')")


def start_process(arguments: list[str], env: dict[str, str], log: Path, root: Path = REPO) -> subprocess.Popen:
    """A ``celery`` process of the checkout at ``root`` (another tree than this one: a baseline's source, which
    then runs alone, see ``_ALONE``)."""
    command = ["-m", "celery"] if root == REPO else ["-c", _ALONE]
    with log.open("a") as output:
        return subprocess.Popen([sys.executable, *command, "-A", "config", *arguments], cwd=root, env=env,
                                stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                                start_new_session=True)


def stop_process(process: subprocess.Popen) -> None:
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


# set-up -----------------------------------------------------------------------------------------------------------


def fresh_database(url: str) -> None:
    """Drop and create the database ``url`` names, then migrate it."""
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    maintenance = urlunsplit(parts._replace(scheme="postgresql", path="/postgres"))
    with psycopg.connect(maintenance, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{name}"')
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "--verbosity", "0"], cwd=REPO, check=True,
                   env=os.environ | {"DATABASE_URL": url})


class CallCounter:
    """Counts every AWS call the in-process sandbox answers, by operation name."""

    def __init__(self):
        from sandbox.aws import protocol

        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()
        identify = protocol.identify

        def counting(environ, body):
            target = identify(environ, body)
            if target is not None and target.operation:
                with self._lock:
                    self.calls[target.operation] += 1
            return target

        protocol.identify = counting

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()

    def snapshot(self) -> Counter[str]:
        with self._lock:
            return Counter(self.calls)


class Durations:
    """Spreads the sandbox's EKS durations the way AWS's vary: each new cluster is CREATING for uniform(450, 750)
    AWS seconds instead of exactly 600, each add-on for uniform(30, 90) instead of 60 (the sandbox's nominal values
    are multiples of 30 s, which would let a 30-second poller land exactly on them). Remembers when each one becomes
    ACTIVE, by ARN."""

    CLUSTER_SPREAD = 150.0
    ADDON_SPREAD = 30.0

    def __init__(self, seed: int):
        import random

        from sandbox import clock
        from sandbox.aws import eks_model

        self.random = random.Random(seed)
        self.active_at: dict[str, float] = {}
        self._lock = threading.Lock()
        for model, nominal, spread in ((eks_model.EksCluster, eks_model.CLUSTER_CREATE_SECONDS, self.CLUSTER_SPREAD),
                                       (eks_model.Addon, eks_model.ADDON_SECONDS, self.ADDON_SPREAD)):
            model.__init__ = self._spreading(model.__init__, nominal, spread, clock)

    def _spreading(self, init, nominal: float, spread: float, clock):
        def spread_init(instance, *args, **kwargs):
            init(instance, *args, **kwargs)
            with self._lock:
                shift = self.random.uniform(-spread, spread) * clock.scale()
            instance.since -= shift  # due at since + nominal: a shift back makes it shorter, forward longer
            self.active_at[instance.arn] = instance.since + clock.duration(nominal)

        return spread_init


def shared_network() -> dict:
    """One VPC with two subnets in two zones, for every operation of the ``bench`` pipeline."""
    import boto3

    ec2 = boto3.client("ec2", region_name=REGION)
    zones = [zone["ZoneName"] for zone in ec2.describe_availability_zones()["AvailabilityZones"][:2]]
    vpc_id = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet_ids = [ec2.create_subnet(VpcId=vpc_id, CidrBlock=f"10.0.{index * 16}.0/20",
                                    AvailabilityZone=zone)["Subnet"]["SubnetId"] for index, zone in enumerate(zones)]
    return {"vpc_id": vpc_id, "subnet_ids": subnet_ids}


def start_operations(pipeline: str, count: int, user, team, network: dict | None) -> list[int]:
    """``count`` operations in one transaction: every enqueue runs at the commit, so they all start together."""
    from django.db import transaction

    from bench import pipeline as bench_pipeline
    from operations import demo, services

    with transaction.atomic():
        if pipeline == "demo":
            return [demo.demo_start(actor=user, team=team, name=f"b{index}", region=REGION, source="system").pk
                    for index in range(count)]
        return [services.operation_start(actor=user, team=team, kind=bench_pipeline.KIND, title=f"Bench b{index}",
                                         params={"name": f"b{index}", "region": REGION, **network},
                                         source="system")[0].pk
                for index in range(count)]


def cache_role_arn_partitions() -> None:
    """moto checks an EKS role ARN's partition by building a fresh boto3 ``Session`` and parsing botocore's
    endpoints file on every ``CreateCluster`` (~0.3 s of CPU in the sandbox's process each). Check it against a list
    built once; the check itself is unchanged."""
    import re

    from boto3 import Session
    from moto.eks import models
    from moto.eks.exceptions import InvalidParameterException

    partitions = frozenset(Session().get_available_partitions())
    role_arn = re.compile("arn:(?P<partition>.+):iam::(?P<account_id>[0-9]{12}):role/.+")

    def validate_role_arn(arn: str) -> None:
        match = role_arn.match(arn or "")
        if not match or match.group("partition") not in partitions:
            raise InvalidParameterException(message="Invalid Role Arn: '" + arn + "'")

    models.validate_role_arn = validate_role_arn


def warm_sandbox() -> None:
    """Load the moto backends the pipeline uses (EC2's first call loads 1,300 AMIs) before the clock starts."""
    import boto3

    for service, call in (("ec2", "describe_vpcs"), ("s3", "list_buckets"), ("iam", "list_roles"),
                          ("eks", "list_clusters"), ("sts", "get_caller_identity")):
        getattr(boto3.client(service, region_name=REGION), call)()


# one run ----------------------------------------------------------------------------------------------------------


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))]


def run_mode(mode: Mode, args, counter: CallCounter, durations: Durations, workdir: Path,
             base_env: dict[str, str], root: Path = REPO) -> Result:
    from accounts import services as accounts
    from accounts.models import User
    from config.celery import app as celery_app
    from operations import demo
    from operations.models import ACTIVE_STATES, Operation, OperationPhase
    from sandbox import clock, control
    from sandbox.aws import eks_model, requestlog

    scale = args.time_scale
    control.reset()
    clock.set_scale(scale)
    warm_sandbox()
    network = shared_network() if args.pipeline == "bench" else None
    Operation.objects.all().delete()
    counter.reset()

    env = base_env | {
        "INSTANTSTART_OPERATIONS_POLL_SCALE": str(scale),
        "INSTANTSTART_OPERATIONS_POLL_MIN_SECONDS": str(mode.poll_min * scale),
        "INSTANTSTART_OPERATIONS_POLL_MAX_SECONDS": str(mode.poll_max * scale),
        "INSTANTSTART_CLOUD_CALLS_PER_SECOND": str(args.calls_per_second / scale),
        "INSTANTSTART_CLOUD_CALLS_BURST": str(max(args.calls_per_second / scale, 20.0)),
        "INSTANTSTART_OPERATIONS_KNOWN_DURATIONS": "1" if mode.schedules else "0",
        "INSTANTSTART_OPERATIONS_EVENTS": "1" if mode.schedules else "0",
        "INSTANTSTART_OPERATIONS_SHARED_READS": "1" if mode.schedules else "0",
        "INSTANTSTART_OPERATIONS_EVENTS_DRAIN_SECONDS": str(2.0 * scale),  # production's 2 s, in compressed time
    }
    log = workdir / f"{mode.name}-{root.name}.log"
    worker = start_process(["worker", "--hostname", f"bench-{mode.name}@%h", "--pool", "prefork", "--concurrency",
                            str(args.concurrency), "--loglevel", "WARNING", "--without-gossip", "--without-mingle",
                            "--without-heartbeat", "--include", "bench.pipeline"], env, log, root)
    beat = start_process(["beat", "--loglevel", "WARNING", "--schedule", str(workdir / f"beat-{mode.name}")], env,
                         log, root)
    sampler = Sampler(worker.pid)
    try:
        deadline = time.monotonic() + 60
        while not celery_app.control.ping(timeout=0.5):
            if worker.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the worker did not start; see {log}")
        sampler.start()

        user = User.objects.create_superuser(username=f"bench-{mode.name}-{time.time_ns()}",
                                             password="unused-password")  # only platform admins create teams
        team = accounts.team_create(actor=user, name=f"Bench {mode.name} {time.time_ns()}",
                                    slug=f"bench-{mode.name}-{time.time_ns()}", source="system")
        print(f"[{mode.name}] creating {args.operations} operations…", flush=True)
        ids = start_operations(args.pipeline, args.operations, user, team, network)
        started = time.time()
        print(f"[{mode.name}] {len(ids)} operations enqueued; waiting…", flush=True)
        deadline = time.monotonic() + args.timeout
        while (active := Operation.objects.filter(pk__in=ids, state__in=ACTIVE_STATES).count()):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{active} operations still active after {args.timeout} s; see {log}")
            if worker.poll() is not None:
                raise RuntimeError(f"the worker exited with code {worker.returncode}; see {log}")
            time.sleep(0.5)
    finally:
        sampler.stopping.set()
        stop_process(worker)
        stop_process(beat)

    calls = counter.snapshot()
    operations = list(Operation.objects.filter(pk__in=ids))
    finished = [operation.finished_at.timestamp() for operation in operations if operation.finished_at]
    lags, cluster_lags = [], []
    cluster_done = {phase.operation_id: phase.finished_at.timestamp() for phase in
                    OperationPhase.objects.filter(operation_id__in=ids, slug="cluster", finished_at__isnull=False)}
    for operation in operations:
        cluster = eks_model.find(REGION, operation.outputs.get("cluster_name", ""))
        if cluster is None or operation.finished_at is None:
            continue
        cluster_lags.append(cluster_done[operation.pk] - durations.active_at[cluster.arn])
        addon = cluster.addons.get(demo.ADDON)
        if addon is not None:
            lags.append(operation.finished_at.timestamp() - durations.active_at[addon.arn])
    polls = sum(OperationPhase.objects.filter(operation_id__in=ids).values_list("polls", flat=True))
    phases = OperationPhase.objects.filter(operation_id__in=ids).count()
    reads = {name: count for name, count in calls.items() if name.startswith(READ_PREFIXES)}
    wall = max(finished) - started
    expected = MUTATIONS[args.pipeline]
    effective = Counter(entry.operation for entry in requestlog.entries(effective=True)
                        if entry.operation in expected)
    count = len(ids)
    return Result(
        mode=mode.name, operations=count,
        succeeded=sum(operation.state == "succeeded" for operation in operations),
        wall_seconds=wall, operations_per_second=count / wall,
        lag_p50=percentile(lags, 0.5), lag_p95=percentile(lags, 0.95), lag_max=max(lags, default=float("nan")),
        cluster_lag_p50=percentile(cluster_lags, 0.5), cluster_lag_p95=percentile(cluster_lags, 0.95),
        reads_per_operation=sum(reads.values()) / count,
        describes_per_operation=sum(n for name, n in reads.items() if name.startswith("Describe")) / count,
        poll_steps_per_operation=(polls + phases) / count,  # ``polls`` counts the polls that found "not yet"
        effective_mutations_per_operation=sum(effective.values()) / count,
        exactly_once=all(effective[name] == times * count for name, times in expected.items()),
        steps_per_operation=(polls + 2 * phases) / count,  # a submit step and a last ("done") poll per phase
        steps_per_second=(polls + 2 * phases) / wall, worker_cpu_seconds=sum(sampler.cpu.values()),
        peak_worker_rss_mib=sampler.peak_total / 1024, peak_process_rss_mib=sampler.peak_single / 1024,
        reads_by_call=dict(sorted(reads.items())),
        channel_calls_per_operation=sum(calls[name] for name in CHANNEL_CALLS) / count,
    )


# report -----------------------------------------------------------------------------------------------------------


def table(results: list[Result], scale: float, pipeline: str) -> str:
    def lag(value: float) -> str:
        return f"{value:.2f} s ({value / scale:.0f} s AWS)"

    rows = [
        ("operations (succeeded)", lambda r: f"{r.operations} ({r.succeeded})"),
        ("wall time, enqueue → last terminal", lambda r: f"{r.wall_seconds:.1f} s"),
        ("operations / second", lambda r: f"{r.operations_per_second:.2f}"),
        ("detection lag p50 (add-on ACTIVE → op succeeded)", lambda r: lag(r.lag_p50)),
        ("detection lag p95", lambda r: lag(r.lag_p95)),
        ("detection lag max", lambda r: lag(r.lag_max)),
        ("cluster phase lag p50 / p95 (cluster ACTIVE → phase done)",
         lambda r: f"{r.cluster_lag_p50:.2f} / {r.cluster_lag_p95:.2f} s"),
        ("Describe calls / operation", lambda r: f"{r.describes_per_operation:.1f}"),
        ("all read calls / operation (Describe, Get, Head, List)", lambda r: f"{r.reads_per_operation:.1f}"),
        ("event channel calls / operation (SQS, EventBridge)", lambda r: f"{r.channel_calls_per_operation:.1f}"),
        ("poll steps / operation", lambda r: f"{r.poll_steps_per_operation:.1f}"),
        (f"effective mutations / operation (expect {sum(MUTATIONS[pipeline].values())})",
         lambda r: f"{r.effective_mutations_per_operation:.2f}" + (" exactly once" if r.exactly_once else " (!)")),
        ("engine steps / operation (submits + polls)", lambda r: f"{r.steps_per_operation:.1f}"),
        ("engine steps / second", lambda r: f"{r.steps_per_second:.1f}"),
        ("worker CPU time (main + pool)", lambda r: f"{r.worker_cpu_seconds:.0f} s"),
        ("peak worker RSS (main + pool)", lambda r: f"{r.peak_worker_rss_mib:.0f} MiB"),
        ("peak RSS of one worker process", lambda r: f"{r.peak_process_rss_mib:.0f} MiB"),
    ]
    width = max(len(label) for label, _ in rows)
    columns = [MODES[result.mode].title for result in results]
    cell = max(28, *(len(column) for column in columns))
    lines = [f"| {'':<{width}} | " + " | ".join(f"{column:<{cell}}" for column in columns) + " |",
             f"|{'-' * (width + 2)}|" + "|".join("-" * (cell + 2) for _ in columns) + "|"]
    for label, value in rows:
        lines.append(f"| {label:<{width}} | " + " | ".join(f"{value(result):<{cell}}" for result in results) + " |")
    return "\n".join(lines)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.operations_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--operations", type=int, default=1000, help="concurrent operations per mode (1000)")
    parser.add_argument("--time-scale", type=float, default=0.1,
                        help="real seconds per AWS second, for the sandbox and the engine's polls (0.1)")
    parser.add_argument("--concurrency", type=int, default=6, help="the worker's prefork pool size (6)")
    parser.add_argument("--calls-per-second", type=float, default=1e6,
                        help="the engine's cloud-call budget per account and region, in AWS time (default: off)")
    parser.add_argument("--modes", default="engine,fixed30", help=f"comma-separated, of: {', '.join(MODES)}")
    parser.add_argument("--pipeline", choices=("bench", "demo"), default="bench",
                        help="bench: the demo's phases with one shared network (bench/pipeline.py); demo: the demo "
                             "pipeline itself, a VPC per operation (too heavy for moto at 1,000)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds to wait for one mode (900)")
    parser.add_argument("--database-url", default=os.environ.get(
        "INSTANTSTART_BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/instantstart_bench"),
        help="PostgreSQL database to DROP, create and use ($INSTANTSTART_BENCH_DATABASE_URL)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the EKS durations' spread (1)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    modes = [MODES[name.strip()] for name in args.modes.split(",") if name.strip()]
    workdir = Path(tempfile.mkdtemp(prefix="instantstart-bench-"))
    from config.embedded import redis_url, start_redis

    redis = start_redis(workdir, persist=False)
    try:
        print(f"preparing {args.database_url} …", flush=True)
        fresh_database(args.database_url)
        os.environ |= {
            "DATABASE_URL": args.database_url, "REDIS_URL": redis_url(workdir),
            "INSTANTSTART_VAR_DIR": str(workdir / "var"), "DJANGO_SETTINGS_MODULE": "config.settings",
            "INSTANTSTART_SANDBOX_STATE_DIR": str(workdir / "sandbox"), "INSTANTSTART_LOG_LEVEL": "WARNING",
            "AWS_ACCESS_KEY_ID": "sandbox", "AWS_SECRET_ACCESS_KEY": "sandbox", "AWS_DEFAULT_REGION": REGION,
        }
        os.environ.pop("AWS_PROFILE", None)
        import django

        django.setup()
        from sandbox.main import start_world

        counter = CallCounter()
        cache_role_arn_partitions()
        durations = Durations(args.seed)
        world = start_world(aws_port=0, kube_port=0)
        os.environ["AWS_ENDPOINT_URL"] = world.aws_url
        base_env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"} | {
            # no failures are injected: the sweeper and the lease keep production's values
            "INSTANTSTART_OPERATIONS_LEASE_SECONDS": "120", "INSTANTSTART_OPERATIONS_SWEEP_SECONDS": "15",
            "INSTANTSTART_OPERATIONS_SWEEP_GRACE_SECONDS": "60", "PYTHONUNBUFFERED": "1",
            # persistent connections, as the chart and the CloudFormation stack run the workers
            "INSTANTSTART_DB_CONN_MAX_AGE": os.environ.get("INSTANTSTART_DB_CONN_MAX_AGE", "60"),
        }
        results = []
        try:
            for mode in modes:
                began, load = time.monotonic(), os.getloadavg()[0]
                results.append(run_mode(mode, args, counter, durations, workdir, base_env))
                print(f"[{mode.name}] done in {time.monotonic() - began:.0f} s (load average {load:.1f} before, "
                      f"{os.getloadavg()[0]:.1f} after)", flush=True)
        finally:
            world.stop()
        print(f"\n{args.operations} concurrent operations of the {args.pipeline} pipeline (5 phases) per mode; "
              f"time scale {args.time_scale} "
              f"(EKS cluster {600 * args.time_scale:.1f} s, add-on {60 * args.time_scale:.1f} s real); worker: "
              f"1 × prefork {args.concurrency}; {os.cpu_count()} CPUs\n")
        print(table(results, args.time_scale, args.pipeline))
        if args.json:
            args.json.write_text(json.dumps({"arguments": {k: str(v) for k, v in vars(args).items()},
                                             "results": [asdict(result) for result in results]}, indent=2))
        return 0
    finally:
        redis.terminate()
        redis.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(main())
