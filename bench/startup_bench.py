"""Start and stop of ``python -m config.runner`` (``make run``), product and a baseline commit side by side.

For each tree (the working tree and ``--baseline`` extracted with ``git archive`` into a temporary directory, run
with the same ``.venv``) and each round, the benchmark runs the runner on the embedded defaults on free ports:

- **first run** on an empty var directory (fresh SQLite: every migration applied) and **restart** on the same
  directory;
- *start* = seconds from spawning the runner until ``/readyz`` answers 200, *settled* = until every child is
  up (the worker logged `` ready.``, beat ``Starting``, the follower ``following``), then each process's
  RSS and PSS (``/proc/<pid>/smaps_rollup``:
  proportional set size, which splits pages shared after a fork) and the totals;
- *stop* = seconds from SIGTERM (restart) or SIGINT (first run) to the runner until no process of its session is
  left.

Output lines of the runner are timestamped with ``--trace`` (where the start-up time goes). The two trees alternate
within a round so both see the same load; ``uptime`` is printed before and after. Nothing here runs in ``make test``.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: What the worker, beat and the log follower print once they are up (same in the baseline).
SETTLED = (' ready."', "beat: Starting", "following training job logs")
HIDDEN = {"REDIS_URL", "DATABASE_URL", "AWS_ENDPOINT_URL", "INSTANTSTART_ADMIN_USERNAME", "INSTANTSTART_ADMIN_PASSWORD"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def session_pids(session: int) -> list[int]:
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[3]) == session and fields[0] != "Z":
            pids.append(int(stat.parent.name))
    return sorted(pids)


def memory(pid: int) -> tuple[str, int, int] | None:
    """``(command, rss_kb, pss_kb)`` of a live process, ``None`` when it is gone."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        rollup = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:])
    except (FileNotFoundError, ProcessLookupError):
        return None
    return command, int(rollup["Rss"].split()[0]), int(rollup["Pss"].split()[0])


def label(command: str) -> str:
    """A short name for a process of the runner's session."""
    for needle, name in (("redis-server", "redis"), ("-m sandbox", "sandbox"), ("uvicorn", "web"),
                         ("config.runner", "runner"), (" beat", "beat"), (" worker", "worker"),
                         ("follow_training_logs", "logs")):
        if needle in command:
            return name
    return command[:40]


@dataclass
class Result:
    tree: str
    kind: str
    start: float = 0.0
    settled: float = 0.0
    stop: float = 0.0
    processes: list[tuple[str, int, int]] = field(default_factory=list)


class Run:
    def __init__(self, tree: Path, var_dir: Path, trace: bool):
        self.port = free_port()
        env = {key: value for key, value in os.environ.items() if key not in HIDDEN}
        env |= {"INSTANTSTART_VAR_DIR": str(var_dir), "INSTANTSTART_PORT": str(self.port),
                "INSTANTSTART_SANDBOX_AWS_PORT": str(free_port()), "INSTANTSTART_SANDBOX_KUBE_PORT": str(free_port())}
        self.started = time.monotonic()
        self.process = subprocess.Popen([sys.executable, "-m", "config.runner"], cwd=tree, env=env,
                                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True, errors="replace", start_new_session=True)
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, args=(trace,), daemon=True)
        self.reader.start()

    def _read(self, trace: bool) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            stamped = f"{time.monotonic() - self.started:7.2f} {line.rstrip()}"
            self.lines.append(stamped)
            if trace:
                print(f"    {stamped[:150]}", flush=True)

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    def wait_ready(self, limit: float) -> float:
        while not self.ready():
            if self.process.poll() is not None or time.monotonic() - self.started > limit:
                raise RuntimeError("runner not ready:\n" + "\n".join(self.lines[-30:]))
            time.sleep(0.05)
        return time.monotonic() - self.started

    def wait_settled(self, limit: float = 400.0) -> float:
        """Seconds until every background child said it is up (``SETTLED`` lines in the output); then one more
        second for the worker's pool processes."""
        while not all(any(marker in line for line in self.lines) for marker in SETTLED):
            if self.process.poll() is not None or time.monotonic() - self.started > limit:
                raise RuntimeError("runner not settled:\n" + "\n".join(self.lines[-30:]))
            time.sleep(0.1)
        settled = time.monotonic() - self.started
        time.sleep(1)
        return settled

    def stop(self, signum: int) -> float:
        began = time.monotonic()
        os.killpg(self.process.pid, signum)
        while session_pids(self.process.pid) and time.monotonic() - began < 60:
            time.sleep(0.02)
        self.process.wait(timeout=10)
        return time.monotonic() - began

    def kill(self) -> None:
        for pid in session_pids(self.process.pid):
            os.kill(pid, signal.SIGKILL)


def measure(name: str, tree: Path, var_dir: Path, kind: str, trace: bool) -> Result:
    result = Result(name, kind)
    run = Run(tree, var_dir, trace)
    try:
        result.start = run.wait_ready(limit=300)
        result.settled = run.wait_settled()
        for pid in session_pids(run.process.pid):
            if (sample := memory(pid)) is not None:
                result.processes.append((label(sample[0]), sample[1], sample[2]))
        result.stop = run.stop(signal.SIGINT if kind == "first run" else signal.SIGTERM)
    finally:
        run.kill()
    return result


def report(result: Result) -> None:
    rss = sum(process[1] for process in result.processes) / 1024
    pss = sum(process[2] for process in result.processes) / 1024
    print(f"  {result.tree:<9} {result.kind:<10} readyz {result.start:6.1f} s  settled {result.settled:6.1f} s  "
          f"stop {result.stop:5.2f} s  {len(result.processes)} processes  RSS {rss:6.0f} MB  PSS {pss:6.0f} MB",
          flush=True)
    print("      " + ", ".join(f"{name} {r / 1024:.0f}/{p / 1024:.0f}" for name, r, p in sorted(result.processes)),
          flush=True)


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", default="", help="git revision to compare with (default: none)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--trace", action="store_true", help="print the runner's output, timestamped")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="startup-bench-") as scratch:
        trees = {"product": REPO}
        if args.baseline:
            baseline = Path(scratch) / "baseline"
            baseline.mkdir()
            archive = subprocess.run(["git", "archive", args.baseline], cwd=REPO, check=True, capture_output=True)
            subprocess.run(["tar", "-x", "-C", str(baseline)], input=archive.stdout, check=True)
            commit = subprocess.run(["git", "rev-parse", "--short", args.baseline], cwd=REPO, check=True,
                                    capture_output=True, text=True).stdout.strip()
            print(f"baseline = {args.baseline} ({commit}), product = the working tree", flush=True)
            trees = {"baseline": baseline, **trees}
        results: list[Result] = []
        for round_number in range(1, args.rounds + 1):
            print(f"round {round_number}, load {load()}", flush=True)
            for name, tree in trees.items():
                var_dir = Path(scratch) / f"var-{round_number}-{len(results)}"
                for kind in ("first run", "restart"):
                    results.append(measure(name, tree, var_dir, kind, args.trace))
                    report(results[-1])
        print(f"load after {load()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
