"""What MCP adds to a REST read: latency, session opening and throughput of ``/mcp`` against ``/api/v1`` directly.

``.venv/bin/python -m bench.mcp_overhead_bench`` (``--help`` for the knobs). See ``bench/README.md`` for the last
numbers.

The product's one ASGI application (``config.asgi``) is served by uvicorn in a child process, as ``make run`` serves
it, on its own PostgreSQL database (dropped, created, migrated and seeded with one team, its admin, an API token and a
few clusters) and a private Redis. The bench process is the client. Every row measures the same read,
``list_clusters`` over MCP (the product) against ``GET /api/v1/clusters`` with the same token (the baseline), and is
printed as soon as it finishes with the ratio:

- **tools/call, SDK**: ``tools/call`` through the official ``mcp`` client on a session opened once, against REST
  over one keep-alive connection, the two alternating call by call so both see the same load (``--modes``: ``legacy``
  is the initialize handshake of protocol 2025-11-25; ``auto``, the client's default, discovers and uses the
  stateless 2026-07-28 protocol);
- **tools/call, raw POST**: the exact POST the SDK sent for that call (headers and body, captured), replayed with
  plain httpx: what the server costs, without the client library;
- **session open+close**: an SDK session opened (initialize or discover) and closed, against a REST read on a new
  connection;
- **N sessions** (throughput): ``--concurrency`` MCP sessions calling in a loop for ``--seconds`` (through the SDK,
  or as raw POSTs each on its own connection), right after as many REST clients did the same; calls per second.

The CPU columns are the server's CPU milliseconds per call (``/proc/<pid>/stat`` of the uvicorn process). A row that
fails prints its error and the run goes on; the load average is printed at the start, per row and at the end, since
the machine may be shared. Nothing here runs in ``make test``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import operations_bench as ob

REPO = Path(__file__).resolve().parents[1]
REST_PATH = "/api/v1/clusters"
TOOL = "list_clusters"
Call = Callable[[], Awaitable[None]]
Opener = Callable[[], contextlib.AbstractAsyncContextManager[Call]]
COLUMNS = ("row", "MCP p50 ms", "p95 ms", "REST p50 ms", "p95 ms", "ratio", "MCP CPU ms", "REST CPU ms", "load 1m")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def row(values: list[str]) -> str:
    cells = (f"{value:<{max(len(column), 8)}}" for value, column in zip(values, COLUMNS, strict=True))
    return "| " + " | ".join(cells) + " |"


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


@dataclass
class Measured:
    """Latencies (seconds) or a throughput (calls per second), with the server CPU per request."""

    samples: list[float]
    cpu_per_request: float
    per_second: float | None = None

    @property
    def p50(self) -> float:
        return statistics.median(self.samples)

    @property
    def p95(self) -> float:
        return percentile(self.samples, 0.95)


class Bench:
    """The served product and the clients that measure it."""

    def __init__(self, args: argparse.Namespace, base: str, secret: str, pid: int):
        self.args, self.base, self.secret, self.pid = args, base, secret, pid
        self.headers = {"Authorization": f"Bearer {secret}"}

    async def paired_latencies(self, product: Opener, baseline: Opener) -> tuple[Measured, Measured]:
        """``--requests`` calls of each, alternating (so both see the same load), after ``--warmup`` of each."""
        async with product() as product_call, baseline() as baseline_call:
            for _ in range(self.args.warmup):
                await product_call()
                await baseline_call()
            samples: dict[int, list[float]] = {0: [], 1: []}
            cpu = [0.0, 0.0]
            for number in range(self.args.requests):
                for index in (0, 1) if number % 2 == 0 else (1, 0):
                    call = (product_call, baseline_call)[index]
                    cpu_before, started = cpu_seconds(self.pid), time.perf_counter()
                    await call()
                    samples[index].append(time.perf_counter() - started)
                    cpu[index] += cpu_seconds(self.pid) - cpu_before
        return (Measured(samples[0], cpu[0] / self.args.requests),
                Measured(samples[1], cpu[1] / self.args.requests))

    async def throughput(self, make_worker: Opener) -> Measured:
        """``--concurrency`` workers, each opened once (``make_worker``), calling in a loop for ``--seconds``."""
        done: list[float] = []
        stop = asyncio.Event()
        ready = asyncio.Barrier(self.args.concurrency + 1)

        async def worker() -> None:
            async with make_worker() as call:
                await call()  # warm: connection open, tool list cached
                await ready.wait()
                while not stop.is_set():
                    started = time.perf_counter()
                    await call()
                    done.append(time.perf_counter() - started)

        tasks = [asyncio.create_task(worker()) for _ in range(self.args.concurrency)]
        await ready.wait()
        cpu, started = cpu_seconds(self.pid), time.perf_counter()
        count = len(done)
        await asyncio.sleep(self.args.seconds)
        count, elapsed, cpu = len(done) - count, time.perf_counter() - started, cpu_seconds(self.pid) - cpu
        stop.set()
        await asyncio.gather(*tasks)
        return Measured(done, cpu / max(count, 1), per_second=count / elapsed)

    # the clients -------------------------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def rest_client(self) -> AsyncIterator[Callable[[], Awaitable[None]]]:
        import httpx2

        async with httpx2.AsyncClient(base_url=self.base, headers=self.headers, timeout=60) as http:
            async def call() -> None:
                response = await http.get(REST_PATH)
                if response.status_code != 200:
                    raise RuntimeError(f"REST answered {response.status_code}: {response.text[:200]}")
            yield call

    @contextlib.asynccontextmanager
    async def mcp_session(self, mode: str, captured: list[Any] | None = None
                          ) -> AsyncIterator[Callable[[], Awaitable[None]]]:
        """An open SDK session; ``captured`` receives every POST it sends (for the raw replay)."""
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        async def record(request: Any) -> None:
            if captured is not None and request.method == "POST":
                captured.append((dict(request.headers), request.content))

        async with (
            httpx2.AsyncClient(headers=self.headers, timeout=60, event_hooks={"request": [record]}) as http,
            Client(streamable_http_client(f"{self.base}/mcp", http_client=http), mode=mode) as client,
        ):
            async def call() -> None:
                result = await client.call_tool(TOOL, {})
                if result.is_error:
                    raise RuntimeError(f"{TOOL} failed: {result.structured_content}")
            yield call

    @contextlib.asynccontextmanager
    async def raw_session(self, request: tuple[dict[str, str], bytes]
                          ) -> AsyncIterator[Callable[[], Awaitable[None]]]:
        """Replays one captured ``tools/call`` POST over its own keep-alive connection, reading the whole answer."""
        import httpx2

        headers, content = request
        headers = {name: value for name, value in headers.items() if name.lower() not in ("content-length", "host")}
        async with httpx2.AsyncClient(timeout=60) as http:
            async def call() -> None:
                response = await http.post(f"{self.base}/mcp", content=content, headers=headers)
                if response.status_code != 200 or b'"isError":true' in response.content:
                    raise RuntimeError(f"/mcp answered {response.status_code}: {response.text[:200]}")
            yield call

    async def captured_call(self, mode: str) -> tuple[dict[str, str], bytes]:
        """The POST the SDK sends for one ``tools/call`` in ``mode``."""
        captured: list[Any] = []
        async with self.mcp_session(mode, captured) as call:
            del captured[:]
            await call()
        calls = [(headers, body) for headers, body in captured if json.loads(body).get("method") == "tools/call"]
        if not calls:
            raise RuntimeError(f"no tools/call POST seen in mode {mode}")
        return calls[-1]

    @contextlib.asynccontextmanager
    async def session_opener(self, mode: str) -> AsyncIterator[Callable[[], Awaitable[None]]]:
        """Each call opens an SDK session (initialize or discover) and closes it again."""
        async def call() -> None:
            async with self.mcp_session(mode):
                pass
        yield call

    @contextlib.asynccontextmanager
    async def rest_opener(self) -> AsyncIterator[Callable[[], Awaitable[None]]]:
        """Each call is one REST read on a new connection (what a REST client pays to start)."""
        async def call() -> None:
            async with self.rest_client() as read:
                await read()
        yield call


def print_row(name: str, product: Measured | None, baseline: Measured | None, error: str = "") -> None:
    load = f"{os.getloadavg()[0]:.2f}"
    if product is None or baseline is None:
        print(row([name, f"failed: {error}"] + [""] * 7 + [load]), flush=True)
        return
    cpu = [f"{1000 * product.cpu_per_request:.2f}", f"{1000 * baseline.cpu_per_request:.2f}"]
    if product.per_second is not None and baseline.per_second:
        print(row([name, f"{product.per_second:.1f}/s", f"p50 {1000 * product.p50:.0f}", f"{baseline.per_second:.1f}/s",
                   f"p50 {1000 * baseline.p50:.0f}", f"{product.per_second / baseline.per_second:.2f}×", *cpu, load]),
              flush=True)
        return
    print(row([name, f"{1000 * product.p50:.2f}", f"{1000 * product.p95:.2f}", f"{1000 * baseline.p50:.2f}",
               f"{1000 * baseline.p95:.2f}", f"{product.p50 / baseline.p50:.2f}×", *cpu, load]), flush=True)


async def attempt(name: str, measure: Callable[[], Awaitable[tuple[Measured, Measured]]]) -> None:
    """Measure one row (product, baseline) and print it; a failure prints its error."""
    try:
        product, baseline = await measure()
    except Exception as exc:  # the run goes on: a failed row says why
        traceback.print_exc()
        print_row(name, None, None, f"{type(exc).__name__}: {exc}")
        return
    print_row(name, product, baseline)


async def run(bench: Bench, args: argparse.Namespace) -> None:
    print(row(list(COLUMNS)), flush=True)
    print("|" + "|".join("-" * (max(len(column), 8) + 2) for column in COLUMNS) + "|", flush=True)
    for mode in args.modes:
        await attempt(f"tools/call, SDK ({mode})",
                      lambda mode=mode: bench.paired_latencies(lambda: bench.mcp_session(mode), bench.rest_client))
        await attempt(f"tools/call, raw POST ({mode})", lambda mode=mode: raw_latencies(bench, mode))
        await attempt(f"session open+close ({mode})",
                      lambda mode=mode: bench.paired_latencies(lambda: bench.session_opener(mode), bench.rest_opener))
    if args.seconds <= 0:
        return
    for mode in args.modes:
        await attempt(f"{args.concurrency} sessions, SDK ({mode})",
                      lambda mode=mode: paired_throughput(bench, lambda: bench.mcp_session(mode)))
        await attempt(f"{args.concurrency} sessions, raw POST ({mode})", lambda mode=mode: raw_throughput(bench, mode))


async def raw_latencies(bench: Bench, mode: str) -> tuple[Measured, Measured]:
    request = await bench.captured_call(mode)
    return await bench.paired_latencies(lambda: bench.raw_session(request), bench.rest_client)


async def paired_throughput(bench: Bench, product: Opener) -> tuple[Measured, Measured]:
    """REST's throughput, then the product's right after it."""
    baseline = await bench.throughput(bench.rest_client)
    return await bench.throughput(product), baseline


async def raw_throughput(bench: Bench, mode: str) -> tuple[Measured, Measured]:
    request = await bench.captured_call(mode)
    return await paired_throughput(bench, lambda: bench.raw_session(request))


def seed(clusters: int) -> str:
    """One team with its admin, ``clusters`` active clusters and an API token; the token's secret."""
    from django.db import connections

    from accounts import services
    from accounts.models import Source, User
    from clusters.models import Cluster, ClusterState

    admin = User.objects.create_user(username="bench", email="bench@example.com", password="correct-horse-battery",
                                     is_superuser=True, is_staff=True)
    team = services.team_create(actor=admin, name="Bench", slug="bench", source=Source.SYSTEM)
    for number in range(clusters):
        Cluster.objects.create(team=team, name=f"bench-{number}", region="us-west-2", state=ClusterState.ACTIVE,
                               eks_name=f"bench-{number}", node_count=4, gpu_count=32)
    secret = services.token_create(actor=admin, name="bench", read_only=False, source=Source.SYSTEM).secret
    connections.close_all()
    return secret


def source_tree(ref: str | None, paths: list[str], workdir: Path) -> Path:
    """The source to serve: this checkout, or a copy of it (tracked and untracked files, as they are now) with
    ``paths`` as they were at ``ref`` (``git archive``; no working tree is touched) — the product before a change,
    everything else the same."""
    if ref is None:
        return REPO
    root = workdir / "source"
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / name)
    archive = subprocess.run(["git", "archive", ref, "--", *paths], cwd=REPO, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    return root


@contextlib.contextmanager
def served(env: dict[str, str], log: Path, root: Path = REPO) -> Any:
    """uvicorn serving ``config.asgi:application`` of ``root`` as ``make run`` does; yields its base URL and pid."""
    port = free_port()
    with open(log, "wb") as output:
        server = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "config.asgi:application", "--host", "127.0.0.1", "--port", str(port),
             "--lifespan", "on", "--timeout-graceful-shutdown", "1", "--log-level", "warning", "--no-access-log"],
            cwd=root, env=env, stdout=output, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{base}/readyz", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"uvicorn did not start: {log.read_text()[-2000:]}")
            time.sleep(0.1)
        yield base, server.pid
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.mcp_overhead_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300, help="timed calls per latency row (300)")
    parser.add_argument("--warmup", type=int, default=30, help="untimed calls before each latency row (30)")
    parser.add_argument("--concurrency", type=int, default=20, help="concurrent clients or sessions (20)")
    parser.add_argument("--seconds", type=float, default=6, help="length of each throughput row; 0 skips them (6)")
    parser.add_argument("--modes", default="legacy,auto",
                        help="the mcp client's modes, comma-separated: legacy (initialize), auto (2026 stateless)")
    parser.add_argument("--ref", help="serve the checkout with --paths as they were at this git ref (the product "
                                       "before a change)")
    parser.add_argument("--paths", default="mcp_server", help="comma-separated paths taken from --ref (mcp_server)")
    parser.add_argument("--clusters", type=int, default=5, help="clusters of the seeded team (5)")
    parser.add_argument("--database-url", default=os.environ.get(
        "INSTANTSTART_BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/instantstart_bench_mcp"),
        help="PostgreSQL database to DROP, create and use ($INSTANTSTART_BENCH_DATABASE_URL)")
    args = parser.parse_args(argv)
    args.modes = [mode.strip() for mode in args.modes.split(",") if mode.strip()]
    args.paths = [path.strip() for path in args.paths.split(",") if path.strip()]
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    workdir = Path(tempfile.mkdtemp(prefix="instantstart-mcp-bench-"))
    from config.embedded import redis_url, start_redis

    print(f"load average at start: {' '.join(f'{value:.2f}' for value in os.getloadavg())}", flush=True)
    redis = start_redis(workdir, persist=False)
    try:
        print(f"preparing {args.database_url} …", flush=True)
        ob.fresh_database(args.database_url)
        env = {key: value for key, value in os.environ.items() if key != "AWS_PROFILE"} | {
            "DATABASE_URL": args.database_url, "REDIS_URL": redis_url(workdir),
            "INSTANTSTART_VAR_DIR": str(workdir / "var"), "DJANGO_SETTINGS_MODULE": "config.settings",
            "INSTANTSTART_LOG_LEVEL": "WARNING", "INSTANTSTART_THROTTLE_TOKEN": "1000000/min",
        }
        os.environ |= env
        import django

        django.setup()
        secret = seed(args.clusters)
        root = source_tree(args.ref, args.paths, workdir)
        with served(env, workdir / "uvicorn.log", root) as (base, pid):
            print(f"serving {f'this checkout with {args.paths} of {args.ref}' if args.ref else 'this checkout'}: "
                  f"{REST_PATH} and the `{TOOL}` tool ({args.clusters} clusters) on uvicorn pid {pid}, "
                  f"{args.requests} calls per latency row after {args.warmup} untimed, {args.concurrency} "
                  f"concurrent for {args.seconds:g} s per throughput row, {os.cpu_count()} CPUs; baseline: REST\n",
                  flush=True)
            asyncio.run(run(Bench(args, base, secret, pid), args))
        print(f"\nload average at end: {' '.join(f'{value:.2f}' for value in os.getloadavg())}", flush=True)
        return 0
    finally:
        redis.terminate()
        redis.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
