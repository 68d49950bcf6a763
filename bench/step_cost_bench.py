"""Engine step cost, product against a baseline commit in the same run: steps per second at saturation.

``.venv/bin/python -m bench.step_cost_bench`` (``--help`` for the knobs). See ``bench/README.md`` for the last numbers.

The worker of the baseline is the same ``celery worker`` started from the baseline commit's source (``git archive``
of ``--baseline`` into a temporary directory); everything else is shared: one PostgreSQL database, one private
Redis, one in-process sandbox, the ``bench`` pipeline of ``bench/operations_bench.py`` (``bench/pipeline.py``) with
the engine's production polling policy, compressed by ``--time-scale``. A small time scale makes every wake-up due
at once, so the worker is saturated from the first commit to the last operation and *engine steps per second* (submits
and polls ÷ wall time) measures what a step costs. The two alternate, ``--runs`` times, and each row is printed as
soon as it is measured (a failed measurement prints its error and the run goes on), with the load average, since the
machine may be shared.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

from bench import operations_bench as ob

#: The commit before the step-cost work (issue 21): the engine and publisher it replaced.
DEFAULT_BASELINE = "6104389^"
COLUMNS = ("run", "variant", "load 1m", "ops", "wall s", "steps/op", "steps/s", "ops/s", "worker CPU s",
           "CPU ms/step", "Redis conns", "exactly once")


def baseline_tree(ref: str, workdir: Path) -> Path:
    """The source of ``ref``, unpacked (no working tree of the repository is touched)."""
    root = workdir / "baseline"
    root.mkdir()
    archive = subprocess.run(["git", "archive", ref], cwd=ob.REPO, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    return root


def redis_connections(url: str) -> int:
    """Connections the private Redis has accepted so far."""
    import redis

    return int(redis.Redis.from_url(url).info("stats")["total_connections_received"])


def row(values: list[str]) -> str:
    cells = (f"{value:<{max(len(column), 8)}}" for value, column in zip(values, COLUMNS, strict=True))
    return "| " + " | ".join(cells) + " |"


def measure(variant: str, root: Path, args, counter, durations, workdir: Path, base_env: dict[str, str],
            redis_url: str, run: int) -> float | None:
    """One saturated run of the worker of ``root``; prints its row and returns its steps per second."""
    load = os.getloadavg()[0]
    connections = redis_connections(redis_url)
    try:
        result = ob.run_mode(ob.MODES["engine"], args, counter, durations, workdir, base_env, root=root)
    except Exception as exc:  # the run goes on: a failed row says why
        traceback.print_exc()
        print(row([str(run), variant, f"{load:.1f}", f"failed: {type(exc).__name__}: {exc}"] + [""] * 8), flush=True)
        return None
    steps = result.steps_per_operation * result.operations
    print(row([str(run), variant, f"{load:.1f}→{os.getloadavg()[0]:.1f}", f"{result.succeeded}/{result.operations}",
               f"{result.wall_seconds:.1f}", f"{result.steps_per_operation:.1f}", f"{result.steps_per_second:.1f}",
               f"{result.operations_per_second:.2f}", f"{result.worker_cpu_seconds:.0f}",
               f"{1000 * result.worker_cpu_seconds / steps:.1f}", str(redis_connections(redis_url) - connections),
               "yes" if result.exactly_once else "NO"]), flush=True)
    return result.steps_per_second


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.step_cost_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--operations", type=int, default=300, help="concurrent operations per measurement (300)")
    parser.add_argument("--runs", type=int, default=2, help="baseline/product pairs (2)")
    parser.add_argument("--baseline", default=DEFAULT_BASELINE, help=f"git ref of the baseline ({DEFAULT_BASELINE})")
    parser.add_argument("--time-scale", type=float, default=0.01,
                        help="real seconds per AWS second (0.01: an EKS cluster takes 6 s, every poll is due)")
    parser.add_argument("--concurrency", type=int, default=6, help="the worker's prefork pool size (6)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds to wait for one measurement (900)")
    parser.add_argument("--database-url", default=os.environ.get(
        "INSTANTSTART_BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/instantstart_bench_steps"),
        help="PostgreSQL database to DROP, create and use ($INSTANTSTART_BENCH_DATABASE_URL)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the EKS durations' spread (1)")
    args = parser.parse_args(argv)
    args.pipeline, args.calls_per_second = "bench", 1e6  # run_mode's other knobs: the shared network, no limiter
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    workdir = Path(tempfile.mkdtemp(prefix="instantstart-step-bench-"))
    baseline = baseline_tree(args.baseline, workdir)
    from config.embedded import redis_url, start_redis

    redis = start_redis(workdir, persist=False)
    try:
        print(f"preparing {args.database_url} …", flush=True)
        ob.fresh_database(args.database_url)
        url = redis_url(workdir)
        os.environ |= {
            "DATABASE_URL": args.database_url, "REDIS_URL": url,
            "INSTANTSTART_VAR_DIR": str(workdir / "var"), "DJANGO_SETTINGS_MODULE": "config.settings",
            "INSTANTSTART_SANDBOX_STATE_DIR": str(workdir / "sandbox"), "INSTANTSTART_LOG_LEVEL": "WARNING",
            "AWS_ACCESS_KEY_ID": "sandbox", "AWS_SECRET_ACCESS_KEY": "sandbox", "AWS_DEFAULT_REGION": ob.REGION,
        }
        os.environ.pop("AWS_PROFILE", None)
        import django

        django.setup()
        from sandbox.main import start_world

        counter = ob.CallCounter()
        ob.cache_role_arn_partitions()
        durations = ob.Durations(args.seed)
        world = start_world(aws_port=0, kube_port=0)
        os.environ["AWS_ENDPOINT_URL"] = world.aws_url
        base_env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"} | {
            "INSTANTSTART_OPERATIONS_LEASE_SECONDS": "120", "INSTANTSTART_OPERATIONS_SWEEP_SECONDS": "15",
            "INSTANTSTART_OPERATIONS_SWEEP_GRACE_SECONDS": "60", "PYTHONUNBUFFERED": "1",
        }
        commit = subprocess.run(["git", "rev-parse", "--short", args.baseline], cwd=ob.REPO, capture_output=True,
                                text=True).stdout.strip()
        print(f"{args.operations} operations of the bench pipeline (5 phases) per row, time scale {args.time_scale}, "
              f"worker 1 × prefork {args.concurrency}, {os.cpu_count()} CPUs; baseline {args.baseline} ({commit}), "
              "product: this checkout\n", flush=True)
        print(row(list(COLUMNS)), flush=True)
        print("|" + "|".join("-" * (max(len(column), 8) + 2) for column in COLUMNS) + "|", flush=True)
        try:
            for run in range(1, args.runs + 1):
                before = measure("baseline", baseline, args, counter, durations, workdir, base_env, url, run)
                after = measure("product", ob.REPO, args, counter, durations, workdir, base_env, url, run)
                if before and after:
                    print(f"run {run}: product / baseline steps per second = {after / before:.2f}×", flush=True)
        finally:
            world.stop()
        return 0
    finally:
        redis.terminate()
        redis.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(main())
