"""``python -m config.runner`` (``make run``): the whole product on one machine, stopped by one Ctrl-C.

Order: the embedded Redis (only when ``REDIS_URL`` is unset; its URL is exported to everything after),
the offline sandbox (only when ``INSTANTSTART_SANDBOX`` is on and ``AWS_ENDPOINT_URL`` is unset; its
endpoint, dummy credentials and region are exported to everything after) starting while the setup step runs
(``config.prepare``: unapplied migrations, static files when they changed, ``ensure_first_admin``, in one
process), then — once both are done, so nothing serves before the migrations — ``web`` (uvicorn serving
``config.asgi``: portal, REST, WebSockets and ``/mcp``), and once it answers ``/healthz`` (or after
``BACKGROUND_START_DELAY`` seconds) the background children ``worker`` and ``beat`` (Celery; beat runs the lean
``config.beat`` app; the training-log follower is a thread of the worker, ``INSTANTSTART_TRAINING_LOGS_IN_WORKER``),
so on a small machine the portal does not compete for the CPU with other imports of the app. Output lines are prefixed
with the child's name. The URLs are printed once ``/healthz`` answers.

Contract: SIGINT or SIGTERM stops every child (SIGTERM, up to ``STOP_TIMEOUT`` seconds, then SIGKILL to
its whole process group: every step of the product survives a kill, see docs/architecture.md), then Redis
(which snapshots its data set), and exits 0. A child that dies on its own, or a setup step that
fails, stops the rest and the runner exits 1. Data stays in ``INSTANTSTART_VAR_DIR`` (SQLite file, Redis
snapshot, beat schedule), so a restart continues where the last run stopped. With ``DATABASE_URL`` and
``REDIS_URL`` set those are used and no Redis is started.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request

from config.embedded import redis_url, start_redis
from config.settings import BASE_DIR, SANDBOX, VAR_DIR

#: Seconds the children get after SIGTERM before SIGKILL; uvicorn's own graceful shutdown is bounded below it.
STOP_TIMEOUT = 1.5
#: Seconds Redis gets to write its snapshot after SIGTERM.
REDIS_STOP_TIMEOUT = 10.0
#: The background children start when the web child answers, or this many seconds after it started.
BACKGROUND_START_DELAY = 30.0
SANDBOX_START_TIMEOUT = 60.0
SANDBOX_ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "sandbox",
    "AWS_SECRET_ACCESS_KEY": "sandbox",
    "AWS_DEFAULT_REGION": "us-west-2",
}
LOOPBACK_OR_ANY = {"127.0.0.1", "localhost", "::1", "0.0.0.0", "::"}
_output_lock = threading.Lock()


def say(name: str, line: str) -> None:
    with _output_lock:
        sys.stdout.write(f"{name:<6} | {line.rstrip()}\n")
        sys.stdout.flush()


def child_commands(host: str, port: int) -> dict[str, list[str]]:
    """The long-running children, web first. The embedded default's worker runs its two task slots as threads of
    one process (``--pool threads``): one import of the app instead of three processes."""
    python = sys.executable
    return {
        # uvicorn believes X-Forwarded-* only from the proxies the product trusts (accounts.addresses): none by default
        "web": [python, "-m", "uvicorn", "config.asgi:application", "--host", host, "--port", str(port),
                "--lifespan", "on", "--proxy-headers", "--timeout-graceful-shutdown", "1",
                "--forwarded-allow-ips", os.environ.get("INSTANTSTART_TRUSTED_PROXIES", "")],
        "worker": [python, "-m", "celery", "-A", "config", "worker", "--concurrency", "2", "--pool", "threads",
                   "--loglevel", "INFO"],
        "beat": [python, "-m", "celery", "-A", "config.beat", "beat", "--loglevel", "INFO",
                 "--schedule", str(VAR_DIR / "celerybeat-schedule")],
    }


class Child:
    """A child process, output prefixed with its name, in its own process group.

    The own group keeps a terminal's Ctrl-C away from it (the runner stops children itself, in order)
    and lets the final SIGKILL reach Celery's pool processes too.
    """

    def __init__(self, name: str, command: list[str]):
        self.name = name
        self.process = subprocess.Popen(
            command, cwd=BASE_DIR, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, errors="replace", process_group=0,
        )
        self.pump = threading.Thread(target=self._pump, daemon=True)
        self.pump.start()

    def _pump(self) -> None:
        assert self.process.stdout is not None  # started with stdout=PIPE
        for line in self.process.stdout:
            say(self.name, line)

    def finish(self, deadline: float) -> None:
        """Wait until ``deadline`` for the exit, then SIGKILL whatever is left of the process group and reap it."""
        self.kill_after(deadline)
        self.reap()

    def kill_after(self, deadline: float) -> None:
        """Wait until ``deadline`` for the exit, then SIGKILL whatever is left of the process group (Celery's or
        uvicorn's own children included) without waiting for it to die."""
        try:
            self.process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            say("runner", f"{self.name} did not stop within {STOP_TIMEOUT:g} s; killing it")
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)

    def reap(self) -> None:
        """Wait for the exit and for the last lines of output."""
        self.process.wait()
        self.pump.join(timeout=1)


def prepare() -> None:
    """Run the setup step (``python -m config.prepare``, output prefixed ``setup``) to completion; a failure
    raises."""
    child = Child("setup", [sys.executable, "-m", "config.prepare"])
    try:
        child.process.wait()
    except KeyboardInterrupt:
        child.process.terminate()
        raise
    finally:
        child.finish(time.monotonic() + STOP_TIMEOUT)
    if child.process.returncode != 0:
        raise RuntimeError(f"the setup step (config.prepare) exited with code {child.process.returncode}")


def start_sandbox() -> Child:
    """Start ``python -m sandbox`` without waiting for it and point every later child at it (``AWS_ENDPOINT_URL``,
    its Hugging Face Hub as ``HF_ENDPOINT``, dummy credentials); :func:`wait_for_sandbox` waits."""
    os.environ.setdefault("INSTANTSTART_SANDBOX_STATE_DIR", str(VAR_DIR / "sandbox"))
    child = Child("sandbox", [sys.executable, "-m", "sandbox"])
    endpoint = sandbox_endpoint()
    os.environ["AWS_ENDPOINT_URL"] = endpoint
    os.environ.setdefault("HF_ENDPOINT", f"{endpoint}/_hub")
    for name, value in SANDBOX_ENVIRONMENT.items():
        os.environ.setdefault(name, value)
    return child


def sandbox_endpoint() -> str:
    return f"http://127.0.0.1:{int(os.environ.get('INSTANTSTART_SANDBOX_AWS_PORT', '4566'))}"


def wait_for_sandbox(child: Child, started: float) -> None:
    """Wait until the sandbox answers; raise when it exited or has not answered ``SANDBOX_START_TIMEOUT`` seconds
    after ``started``."""
    endpoint = sandbox_endpoint()
    while not answers(f"{endpoint}/_sandbox/clock"):
        if child.process.poll() is not None or time.monotonic() > started + SANDBOX_START_TIMEOUT:
            raise RuntimeError(f"the sandbox did not answer on {endpoint} within {SANDBOX_START_TIMEOUT:.0f} s")
        time.sleep(0.1)
    say("runner", f"sandbox AWS on {endpoint}, Kubernetes API servers under https://127.0.0.1:"
                  f"{os.environ.get('INSTANTSTART_SANDBOX_KUBE_PORT', '4567')}/clusters/")


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def supervise(children: list[Child], background: dict[str, list[str]], health_url: str, banner: str) -> int:
    """Start the ``background`` children once ``health_url`` answers (or ``BACKGROUND_START_DELAY`` seconds from
    now) and print ``banner``; return 1 as soon as any child exits."""
    announced = False
    background_due = time.monotonic() + BACKGROUND_START_DELAY
    while True:
        for child in children:
            if child.process.poll() is not None:
                say("runner", f"{child.name} exited with code {child.process.returncode}; stopping everything")
                return 1
        healthy = not announced and answers(health_url)
        if background and (healthy or time.monotonic() > background_due):
            children.extend(Child(name, command) for name, command in background.items())
            background = {}
        if healthy:
            announced = True
            with _output_lock:
                print(banner, flush=True)
        time.sleep(0.1 if background else 0.5)


def stop(children: list[Child], redis: subprocess.Popen[bytes] | None) -> None:
    """SIGTERM every child, give them ``STOP_TIMEOUT`` seconds in all (then SIGKILL), then stop Redis the same way
    with ``REDIS_STOP_TIMEOUT``."""
    for child in children:
        if child.process.poll() is None:
            child.process.terminate()
    deadline = time.monotonic() + STOP_TIMEOUT
    for child in children:
        child.kill_after(deadline)
    for child in children:
        child.reap()
    if redis is not None:
        redis.terminate()
        try:
            redis.wait(timeout=REDIS_STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            redis.kill()
            redis.wait()


def banner(public_url: str) -> str:
    credentials = VAR_DIR / "first-admin.txt"
    lines = [
        f"  Portal    {public_url}/",
        f"  MCP       {public_url}/mcp",
        f"  API docs  {public_url}/api/docs/",
        *([f"  First admin credentials: {credentials}"] if credentials.exists() else []),
        "  Ctrl-C stops everything.",
    ]
    return "\n" + "\n".join(lines) + "\n"


def main() -> int:
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    host = os.environ.get("INSTANTSTART_HOST", "127.0.0.1")
    port = int(os.environ.get("INSTANTSTART_PORT", "3099"))
    local_host = "127.0.0.1" if host in {"0.0.0.0", "::"} else host
    local_url = f"http://[{local_host}]:{port}" if ":" in local_host else f"http://{local_host}:{port}"
    public_url = f"http://localhost:{port}" if host in LOOPBACK_OR_ANY else local_url
    os.environ["PYTHONUNBUFFERED"] = "1"
    os.environ.setdefault("INSTANTSTART_TRAINING_LOGS_IN_WORKER", "1")  # one process fewer (training.logs.in_worker)
    redis = None
    children: list[Child] = []
    try:
        if not os.environ.get("REDIS_URL"):
            redis = start_redis(VAR_DIR)
            os.environ["REDIS_URL"] = redis_url(VAR_DIR)
            say("runner", f"embedded Redis on {os.environ['REDIS_URL']}")
        sandbox = None
        if SANDBOX and not os.environ.get("AWS_ENDPOINT_URL"):
            sandbox = start_sandbox()
            children.append(sandbox)
        sandbox_started = time.monotonic()
        prepare()
        if sandbox is not None:
            wait_for_sandbox(sandbox, sandbox_started)
        background = child_commands(host, port)
        children.append(Child("web", background.pop("web")))
        return supervise(children, background, f"{local_url}/healthz", banner(public_url))
    except KeyboardInterrupt:
        say("runner", "stopping")
        return 0
    except RuntimeError as error:
        say("runner", str(error))
        return 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        stop(children, redis)
        say("runner", "stopped")


if __name__ == "__main__":
    sys.exit(main())
