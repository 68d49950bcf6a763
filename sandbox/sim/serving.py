"""Model-serving containers: what a vLLM (``vllm/vllm-openai``) or SGLang (``lmsysorg/sglang``) server does, and
the ways such a pod fails.

**Answers** (served through the API server's ``services``/``pods`` proxy, ``sandbox.kube.proxy``): ``GET /health``;
``GET /v1/models`` (the ``--served-model-name``, else the model argument); ``POST /v1/chat/completions`` and
``POST /v1/completions``, whole or streamed as server-sent events, with text derived deterministically from the
prompt (the same prompt always gets the same answer, ``max_tokens`` words long, at most :data:`MAX_WORDS`);
``GET /metrics`` in Prometheus text with the real servers' names — vLLM ``vllm:num_requests_running``,
``vllm:num_requests_waiting``, ``vllm:prompt_tokens_total``, ``vllm:generation_tokens_total``,
``vllm:request_success_total``, ``vllm:gpu_cache_usage_perc``; SGLang ``sglang:num_running_reqs``,
``sglang:num_queue_reqs``, ``sglang:prompt_tokens_total``, ``sglang:generation_tokens_total``,
``sglang:gen_throughput`` (generated tokens per second over the last :data:`THROUGHPUT_WINDOW` seconds) — counting
the requests each pod received. A server runs at most its batch size of streamed requests at once (vLLM
``--max-num-seqs``, SGLang ``--max-running-requests``; :data:`DEFAULT_BATCH` without the flag); more wait their turn
and count as waiting (``vllm:num_requests_waiting``, ``sglang:num_queue_reqs``). Streamed tokens come every
:data:`TOKEN_SECONDS` (simulated), or as the pod's ``sandbox.instantstart.dev/seconds-per-token`` annotation says (a
slow model, to load a server in tests and benchmarks). Any other image answers the same API (``owned_by`` its
image).

**Failures** (the kubelet, ``sandbox.sim.pods``, asks :func:`pull_fails` and :func:`hold`):

- an image whose reference contains ``does-not-exist`` cannot be pulled: the pod stays Pending with
  ``ErrImagePull`` then ``ImagePullBackOff`` and the ``Failed``/``BackOff`` events the kubelet records;
- a pod annotated ``sandbox.instantstart.dev/outcome: crash`` starts, logs a server traceback and exits 1, over and
  over (``CrashLoopBackOff``, restart count rising every :data:`BACKOFF_SECONDS`); ``oom`` is killed while loading
  the weights (``OOMKilled``, exit 137), over and over.

A serving pod that runs normally logs the server's start-up lines once.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

from sandbox import clock
from sandbox.sim import events, objects
from sandbox.sim.context import Context

MAX_WORDS = 64
DEFAULT_WORDS = 16
TOKEN_SECONDS = 0.02
#: Pod annotation: nominal seconds per streamed token (default :data:`TOKEN_SECONDS`) — a slow model, for load tests.
TOKEN_SECONDS_ANNOTATION = "sandbox.instantstart.dev/seconds-per-token"
DEFAULT_BATCH = 256
BATCH_FLAGS = ("--max-num-seqs", "--max-running-requests")
THROUGHPUT_WINDOW = 10.0
BACKOFF_SECONDS = 10.0
PULL_FAILURE = "does-not-exist"
WORDS = ("the", "model", "answers", "from", "the", "sandbox", "with", "words", "chosen", "by", "your", "prompt",
         "so", "every", "call", "repeats", "exactly", "tokens", "stream", "one", "by", "one", "through", "the",
         "kubernetes", "proxy", "while", "metrics", "count", "requests", "and", "generated", "tokens")

_lock = threading.Lock()
_counters: dict[str, dict[str, float]] = {}
_generated: dict[str, list[tuple[float, int]]] = {}


def engine(pod: dict[str, Any]) -> str:
    """``vllm``, ``sglang`` or ``custom`` from the first container's image."""
    image = str(((pod.get("spec") or {}).get("containers") or [{}])[0].get("image", ""))
    return "vllm" if "vllm" in image else "sglang" if "sglang" in image else "custom"


def serves(pod: dict[str, Any]) -> bool:
    """Whether ``pod`` runs a model server (a vLLM or SGLang image, or one InstantStart deployed as an endpoint)."""
    labels = objects.labels(pod)
    return engine(pod) != "custom" or "instantstart.io/endpoint" in labels or "instantstart.io/model-pool" in labels


def _command(pod: dict[str, Any]) -> list[str]:
    container = ((pod.get("spec") or {}).get("containers") or [{}])[0]
    return [str(part) for part in (container.get("command") or []) + (container.get("args") or [])]


def model_name(pod: dict[str, Any]) -> str:
    """The name the server answers to: ``--served-model-name``, else ``--model``/``--model-path``, else the
    argument after ``serve``."""
    command = _command(pod)
    for flag in ("--served-model-name", "--model", "--model-path"):
        if flag in command and command.index(flag) + 1 < len(command):
            return command[command.index(flag) + 1]
    if "serve" in command and command.index("serve") + 1 < len(command):
        return command[command.index("serve") + 1]
    return objects.name(pod)


# --- failures -------------------------------------------------------------------------------------------------


def pull_fails(pod: dict[str, Any]) -> str:
    """The image of ``pod`` that cannot be pulled (``""``: every image can)."""
    return next((str(c.get("image")) for c in (pod.get("spec") or {}).get("containers") or []
                 if PULL_FAILURE in str(c.get("image", ""))), "")


def refuse_pull(ctx: Context, pod: dict[str, Any], image: str, state: dict[str, Any]) -> None:
    """Keep ``pod`` Pending: its image cannot be pulled (``ErrImagePull`` once, then ``ImagePullBackOff``)."""
    reason = "ImagePullBackOff" if state.get("pull_failed") else "ErrImagePull"
    message = (f'Back-off pulling image "{image}"' if reason == "ImagePullBackOff" else
               f'failed to pull and unpack image "docker.io/{image}": failed to resolve reference '
               f'"docker.io/{image}": docker.io/{image}: not found')
    status = pod.get("status") or {}
    waiting = {"waiting": {"reason": reason, "message": message}}
    statuses = [{**entry, "ready": False, "started": False, "state": waiting}
                for entry in status.get("containerStatuses") or []]
    ctx.set_status("pods", pod, {**status, "phase": "Pending", "containerStatuses": statuses})
    if not state.get("pull_failed"):
        events.record(ctx, pod, "Failed", f'Failed to pull image "{image}": rpc error: code = NotFound desc = '
                      f"{message}", kind="Warning", source="kubelet")
        events.record(ctx, pod, "BackOff", f'Back-off pulling image "{image}"', kind="Warning", source="kubelet")
        state["pull_failed"] = True


def _startup_lines(pod: dict[str, Any]) -> list[str]:
    name = model_name(pod)
    if engine(pod) == "sglang":
        return [f"[2025-01-01 00:00:00] server_args=ServerArgs(model_path='{name}')",
                "[2025-01-01 00:00:05] Load weight begin.", "[2025-01-01 00:00:40] Load weight end.",
                "[2025-01-01 00:00:41] INFO:     Uvicorn running on http://0.0.0.0:30000"]
    return [f"INFO 01-01 00:00:00 [api_server.py] vLLM API server version 0.10.1 serving {name}",
            "INFO 01-01 00:00:05 [model_runner.py] Starting to load model weights...",
            "INFO 01-01 00:00:40 [model_runner.py] Loading weights took 35.2 seconds",
            "INFO 01-01 00:00:41 [launcher.py] Starting vLLM API server on http://0.0.0.0:8000",
            "INFO:     Application startup complete."]


def _crash_lines(pod: dict[str, Any], outcome: str) -> list[str]:
    lines = _startup_lines(pod)[:2]
    if outcome == "oom":
        return lines
    return [*lines, "Traceback (most recent call last):",
            '  File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/api_server.py", line 1412, in '
            "run_server", f"OSError: {model_name(pod)} does not appear to have a file named config.json",
            "ERROR: the model server exited with code 1"]


def hold(ctx: Context, pod: dict[str, Any], state: dict[str, Any]) -> bool:
    """Run a started serving pod: log its start-up once; a pod annotated to crash or to run out of memory restarts
    in a loop instead (``True``: the kubelet leaves it to this function)."""
    container = (((pod.get("spec") or {}).get("containers") or [{}])[0]).get("name", "")
    namespace, name = objects.own_namespace(pod), objects.name(pod)
    outcome = objects.annotation(pod, objects.OUTCOME)
    if outcome not in ("crash", "oom"):
        if serves(pod) and not state.get("started_logged"):
            ctx.store.append_logs(namespace, name, container, [(line, None) for line in _startup_lines(pod)])
            state["started_logged"] = True
        return False
    exit_code, reason = (137, "OOMKilled") if outcome == "oom" else (1, "Error")
    crash_loop(ctx, pod, state, _crash_lines(pod, outcome), exit_code=exit_code, reason=reason)
    return True


def crash_loop(ctx: Context, pod: dict[str, Any], state: dict[str, Any], lines: list[str], *, exit_code: int = 1,
               reason: str = "Error") -> None:
    """The first container of a started ``pod`` logs ``lines`` and exits with ``exit_code`` (``reason``), again
    every :data:`BACKOFF_SECONDS`: ``CrashLoopBackOff`` with the restart count rising and a ``BackOff`` event."""
    container = (((pod.get("spec") or {}).get("containers") or [{}])[0]).get("name", "")
    namespace, name = objects.own_namespace(pod), objects.name(pod)
    if "crashed_at" in state and not clock.due(state["crashed_at"], BACKOFF_SECONDS):
        return
    state["crashed_at"] = ctx.now
    state["restarts"] = state.get("restarts", 0) + 1
    ctx.store.append_logs(namespace, name, container, [(line, None) for line in lines])
    ctx.store.restart_log(namespace, name, container)
    status = pod.get("status") or {}
    waiting = {"reason": "CrashLoopBackOff",
               "message": f"back-off 10s restarting failed container={container} pod={name}"}
    statuses = [{**entry, "ready": False, "started": False, "restartCount": state["restarts"],
                 "state": {"waiting": waiting},
                 "lastState": {"terminated": {"exitCode": exit_code, "reason": reason,
                                              "finishedAt": objects.timestamp()}}}
                for entry in status.get("containerStatuses") or []]
    conditions = objects.condition(status.get("conditions"), "Ready", "False", "ContainersNotReady")
    ctx.set_status("pods", pod, {**status, "phase": "Running", "containerStatuses": statuses,
                                 "conditions": conditions})
    events.record(ctx, pod, "BackOff", f"Back-off restarting failed container {container} in pod {name}",
                  kind="Warning", source="kubelet")


# --- answers --------------------------------------------------------------------------------------------------


def _count(key: str, **deltas: float) -> None:
    with _lock:
        counters = _counters.setdefault(key, {})
        for name, delta in deltas.items():
            counters[name] = counters.get(name, 0.0) + delta


def batch_size(pod: dict[str, Any]) -> int:
    """How many requests the server runs at once (its batch-size flag, else :data:`DEFAULT_BATCH`)."""
    command = _command(pod)
    for flag in BATCH_FLAGS:
        if flag in command and command.index(flag) + 1 < len(command) and command[command.index(flag) + 1].isdigit():
            return max(int(command[command.index(flag) + 1]), 1)
    return DEFAULT_BATCH


def _take_slot(key: str, batch: int) -> None:
    """Wait (as a queued request) until fewer than ``batch`` requests run, then run."""
    _count(key, inflight=1)
    while True:
        with _lock:
            counters = _counters[key]
            if counters.get("running", 0.0) < batch:
                counters["running"] = counters.get("running", 0.0) + 1
                return
        time.sleep(max(clock.duration(0.02), 0.005))


def _record_generated(key: str, count: int) -> None:
    now, window = clock.now(), clock.duration(THROUGHPUT_WINDOW)
    with _lock:
        recent = [entry for entry in _generated.get(key, []) if now - entry[0] <= window]
        _generated[key] = [*recent, (now, count)]


def _throughput(key: str) -> float:
    """Tokens generated per (simulated) second over the last :data:`THROUGHPUT_WINDOW` simulated seconds."""
    now, window = clock.now(), clock.duration(THROUGHPUT_WINDOW)
    with _lock:
        recent = [tokens for at, tokens in _generated.get(key, []) if now - at <= window]
    return round(sum(recent) / THROUGHPUT_WINDOW, 3)


def _words(prompt: str, count: int) -> list[str]:
    seed = hashlib.sha256(prompt.encode()).digest()
    return [WORDS[(seed[index % len(seed)] + index) % len(WORDS)] for index in range(count)]


def _prompt(body: dict[str, Any]) -> str:
    if "messages" in body:
        return "\n".join(str(message.get("content", "")) for message in body.get("messages") or [])
    return str(body.get("prompt", ""))


def _chunk(kind: str, identity: str, model: str, index: int, text: str | None, finish: str | None) -> bytes:
    if kind == "chat":
        choice: dict[str, Any] = {"index": 0, "delta": {"content": text} if text is not None else {},
                                  "finish_reason": finish}
        payload = {"id": identity, "object": "chat.completion.chunk", "created": 0, "model": model,
                   "choices": [choice]}
    else:
        payload = {"id": identity, "object": "text_completion", "created": 0, "model": model,
                   "choices": [{"index": 0, "text": text or "", "finish_reason": finish}]}
    return f"data: {json.dumps(payload)}\n\n".encode()


def answer(key: str, pod: dict[str, Any], method: str, route: str,
           raw: bytes) -> tuple[int, str, bytes | Iterator[bytes]]:
    """The server's answer to ``method route`` with body ``raw``: ``(status, content type, body or a stream of
    server-sent-event chunks)``. ``key`` names the pod whose counters move."""
    model = model_name(pod)
    route = route.split("?", 1)[0] or "/"
    if route == "/health" and method == "GET":
        return 200, "text/plain", b""
    if route == "/v1/models" and method == "GET":
        body = {"object": "list", "data": [{"id": model, "object": "model", "created": 0,
                                             "owned_by": engine(pod), "root": model, "max_model_len": 32768}]}
        return 200, "application/json", json.dumps(body).encode()
    if route == "/metrics" and method == "GET":
        return 200, "text/plain; version=0.0.4", metrics(key, pod).encode()
    if route in ("/v1/chat/completions", "/v1/completions") and method == "POST":
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            return 400, "application/json", json.dumps({"object": "error", "message": "Invalid JSON body",
                                                        "type": "BadRequestError", "code": 400}).encode()
        if body.get("model") not in (None, model):
            message = f"The model `{body.get('model')}` does not exist."
            return 404, "application/json", json.dumps({"object": "error", "message": message,
                                                        "type": "NotFoundError", "code": 404}).encode()
        return _complete("chat" if route.endswith("chat/completions") else "text", key, model, body,
                         batch_size(pod), objects.float_annotation(pod, TOKEN_SECONDS_ANNOTATION, TOKEN_SECONDS))
    return 404, "application/json", json.dumps({"detail": "Not Found"}).encode()


def _complete(kind: str, key: str, model: str, body: dict[str, Any], batch: int = DEFAULT_BATCH,
              pace: float = TOKEN_SECONDS) -> tuple[int, str, bytes | Iterator[bytes]]:
    prompt = _prompt(body)
    count = max(1, min(int(body.get("max_tokens") or DEFAULT_WORDS), MAX_WORDS))
    words = _words(prompt, count)
    prompt_tokens = len(prompt.split())
    identity = f"{'chatcmpl' if kind == 'chat' else 'cmpl'}-{hashlib.sha256(prompt.encode()).hexdigest()[:24]}"
    _count(key, prompt_tokens=prompt_tokens, generation_tokens=count, requests=1)
    _record_generated(key, count)
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": count, "total_tokens": prompt_tokens + count}
    if body.get("stream"):
        def stream() -> Iterator[bytes]:
            _take_slot(key, batch)
            try:
                for index, word in enumerate(words):
                    yield _chunk(kind, identity, model, index, word if index == 0 else f" {word}", None)
                    time.sleep(clock.duration(pace))
                yield _chunk(kind, identity, model, count, None if kind == "chat" else "", "length")
                yield b"data: [DONE]\n\n"
            finally:
                _count(key, running=-1, inflight=-1)
        return 200, "text/event-stream", stream()
    text = " ".join(words)
    choice = ({"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"}
              if kind == "chat" else {"index": 0, "text": text, "finish_reason": "length"})
    result = {"id": identity, "object": "chat.completion" if kind == "chat" else "text_completion", "created": 0,
              "model": model, "choices": [choice], "usage": usage}
    return 200, "application/json", json.dumps(result).encode()


def metrics(key: str, pod: dict[str, Any]) -> str:
    """Prometheus text of the pod's server (see the module docstring for the names)."""
    with _lock:
        counters = dict(_counters.get(key, {}))
    model = model_name(pod)
    running, prompt = counters.get("running", 0.0), counters.get("prompt_tokens", 0.0)
    waiting = max(counters.get("inflight", 0.0) - running, 0.0)
    generated, requests = counters.get("generation_tokens", 0.0), counters.get("requests", 0.0)
    if engine(pod) == "sglang":
        label = f'model_name="{model}"'
        rows = [("sglang:num_running_reqs", "gauge", running), ("sglang:num_queue_reqs", "gauge", waiting),
                ("sglang:prompt_tokens_total", "counter", prompt),
                ("sglang:generation_tokens_total", "counter", generated),
                ("sglang:gen_throughput", "gauge", _throughput(key))]
    else:
        label = f'model_name="{model}"'
        rows = [("vllm:num_requests_running", "gauge", running), ("vllm:num_requests_waiting", "gauge", waiting),
                ("vllm:gpu_cache_usage_perc", "gauge", min(running * 0.05, 1.0)),
                ("vllm:prompt_tokens_total", "counter", prompt),
                ("vllm:generation_tokens_total", "counter", generated),
                ("vllm:request_success_total", "counter", requests)]
    lines = []
    for name, kind, value in rows:
        lines += [f"# TYPE {name} {kind}", f"{name}{{{label}}} {value}"]
    return "\n".join(lines) + "\n"
