"""The SGLang router (``python3 -m sglang_router.launch_router``): a pod that spreads requests over SGLang workers it
discovers through the Kubernetes API, and reports what it did as Prometheus metrics.

A pod whose command runs ``sglang_router.launch_router`` with ``--service-discovery`` finds its workers as the real
router does: the Ready pods of ``--service-discovery-namespace`` (default its own) matching every ``--selector``
``key=value``, each as ``http://<pod IP>:<--service-discovery-port>``. Through the API server's proxy it answers
``/health``, ``/v1/models`` (a worker's), ``/v1/chat/completions`` and ``/v1/completions`` — forwarded to the worker
its ``--policy`` picks, whose own counters move (``sandbox.sim.serving``) — ``/liveness`` (200 while it runs, workers or
not) and ``/metrics``:
``sgl_router_requests_total`` per ``route`` and ``method`` (every request but ``/metrics``, counted as it arrives —
also those refused for want of a worker), ``sgl_router_processed_requests_total`` and ``sgl_router_running_requests``
per ``worker``, ``sgl_router_active_workers``, ``sgl_router_cache_hits_total``, ``sgl_router_cache_misses_total``.

Policies: ``cache_aware`` (the default) sends a prompt to the worker whose earlier prompts share the longest prefix
with it when that share of the prompt exceeds ``--cache-threshold`` (a hit), else to the worker with the least
recorded text (a miss); when the busiest worker runs more than ``--balance-abs-threshold`` requests over the idlest
and more than ``--balance-rel-threshold`` times as many, the idlest instead. ``round_robin``, ``random`` and
``power_of_two`` (the less busy of two) as named. No worker is ``503``.
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Iterator
from typing import Any

from sandbox.kube.selectors import match_labels
from sandbox.kube.store import Store
from sandbox.sim import objects, serving

MODULE = "sglang_router.launch_router"
COMPLETIONS = ("/v1/chat/completions", "/v1/completions")

_lock = threading.Lock()
_state: dict[str, dict[str, Any]] = {}


def _command(pod: dict[str, Any]) -> list[str]:
    container = ((pod.get("spec") or {}).get("containers") or [{}])[0]
    return [str(part) for part in (container.get("command") or []) + (container.get("args") or [])]


def is_router(pod: dict[str, Any]) -> bool:
    """Whether ``pod`` runs the SGLang router."""
    return MODULE in _command(pod)


def _options(pod: dict[str, Any]) -> dict[str, list[str]]:
    """The router's ``--flag value…`` options (a flag without values maps to ``[]``)."""
    found: dict[str, list[str]] = {}
    current = ""
    for part in _command(pod):
        if part.startswith("--"):
            current = part[2:]
            found[current] = []
        elif current:
            found[current].append(part)
    return found


def _number(options: dict[str, list[str]], name: str, default: float) -> float:
    try:
        return float((options.get(name) or [str(default)])[0])
    except ValueError:
        return default


def _ready(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp") and any(
        entry.get("type") == "Ready" and entry.get("status") == "True" for entry in status.get("conditions") or [])


def workers(store: Store, router: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The router's workers now: ``(url, pod)`` of each Ready pod its selector matches."""
    options = _options(router)
    if "service-discovery" not in options:
        return []
    namespace = (options.get("service-discovery-namespace") or [objects.own_namespace(router)])[0]
    selector = dict(item.split("=", 1) for item in options.get("selector", []) if "=" in item)
    port = (options.get("service-discovery-port") or ["80"])[0]
    found = [pod for pod in store.list("pods", namespace) if selector and _ready(pod) and not is_router(pod)
             and match_labels({"matchLabels": selector}, objects.labels(pod))]
    return [(f"http://{(pod.get('status') or {}).get('podIP', '')}:{port}", pod)
            for pod in sorted(found, key=objects.name)]


def _prompt(raw: bytes) -> str:
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        return ""
    if "messages" in body:
        return "\n".join(str(message.get("content", "")) for message in body.get("messages") or [])
    return str(body.get("prompt", ""))


def _shared(text: str, other: str) -> int:
    length = 0
    for mine, theirs in zip(text, other, strict=False):
        if mine != theirs:
            break
        length += 1
    return length


def _pick(state: dict[str, Any], options: dict[str, list[str]], urls: list[str], prompt: str) -> tuple[str, bool]:
    """The worker ``--policy`` picks for ``prompt`` and whether it was a cache hit (under the lock)."""
    policy = (options.get("policy") or ["cache_aware"])[0]
    running = {url: state["running"].get(url, 0) for url in urls}
    if policy == "round_robin":
        state["turn"] = state.get("turn", -1) + 1
        return urls[state["turn"] % len(urls)], False
    if policy == "random":
        return random.choice(urls), False
    if policy == "power_of_two":
        first, second = random.sample(urls, 2) if len(urls) > 1 else (urls[0], urls[0])
        return (first if running[first] <= running[second] else second), False
    busiest, idlest = max(running.values()), min(running.values())
    if busiest - idlest > _number(options, "balance-abs-threshold", 32) and \
            busiest > idlest * _number(options, "balance-rel-threshold", 1.0001):
        return min(urls, key=lambda url: running[url]), False
    trees: dict[str, list[str]] = state["trees"]
    best = max(urls, key=lambda url: max((_shared(prompt, seen) for seen in trees.get(url, [])), default=0))
    matched = max((_shared(prompt, seen) for seen in trees.get(best, [])), default=0)
    if prompt and matched / len(prompt) > _number(options, "cache-threshold", 0.5):
        return best, True
    return min(urls, key=lambda url: sum(len(seen) for seen in trees.get(url, []))), False


def metrics(key: str, urls: list[str]) -> str:
    """The router's Prometheus text."""
    with _lock:
        state = _state.get(key) or {"processed": {}, "running": {}, "hits": 0, "misses": 0}
        processed, running = dict(state["processed"]), dict(state["running"])
        hits, misses = state["hits"], state["misses"]
    intake = dict(state.get("requests") or {})
    lines = ["# TYPE sgl_router_requests_total counter"]
    lines += [f'sgl_router_requests_total{{route="{route}",method="{method}"}} {count}'
              for (route, method), count in sorted(intake.items())]
    lines += ["# TYPE sgl_router_processed_requests_total counter"]
    lines += [f'sgl_router_processed_requests_total{{worker="{url}"}} {processed.get(url, 0)}'
              for url in sorted({*urls, *processed})]
    lines += ["# TYPE sgl_router_running_requests gauge"]
    lines += [f'sgl_router_running_requests{{worker="{url}"}} {running.get(url, 0)}'
              for url in sorted({*urls, *running})]
    lines += ["# TYPE sgl_router_active_workers gauge", f"sgl_router_active_workers {len(urls)}",
              "# TYPE sgl_router_cache_hits_total counter", f"sgl_router_cache_hits_total {hits}",
              "# TYPE sgl_router_cache_misses_total counter", f"sgl_router_cache_misses_total {misses}"]
    return "\n".join(lines) + "\n"


def answer(store: Store, key: str, router: dict[str, Any], method: str, route: str,
           raw: bytes) -> tuple[int, str, bytes | Iterator[bytes]]:
    """The router's answer to ``method route`` (see the module docstring); ``key`` names the router pod."""
    path = route.split("?", 1)[0] or "/"
    found = workers(store, router)
    urls = [url for url, _ in found]
    if path == "/metrics" and method == "GET":
        return 200, "text/plain; version=0.0.4", metrics(key, urls).encode()
    with _lock:
        intake = _state.setdefault(key, {"processed": {}, "running": {}, "hits": 0, "misses": 0,
                                         "trees": {}}).setdefault("requests", {})
        intake[(path, method)] = intake.get((path, method), 0) + 1
    if path == "/liveness" and method == "GET":
        return 200, "text/plain", b""
    if path == "/health" and method == "GET":
        return (200, "text/plain", b"") if found else (503, "text/plain", b"no healthy workers")
    if not found:
        return 503, "application/json", json.dumps({"error": "No available workers"}).encode()
    by_url = dict(found)
    if path not in COMPLETIONS or method != "POST":
        url, pod = found[0]
        return serving.answer(_worker_key(store, pod), pod, method, route, raw)
    prompt = _prompt(raw)
    with _lock:
        state = _state.setdefault(key, {"processed": {}, "running": {}, "hits": 0, "misses": 0, "trees": {}})
        url, hit = _pick(state, _options(router), urls, prompt)
        state["processed"][url] = state["processed"].get(url, 0) + 1
        state["running"][url] = state["running"].get(url, 0) + 1
        state["hits" if hit else "misses"] += 1
        state["trees"].setdefault(url, []).append(prompt)
    status, media_type, body = serving.answer(_worker_key(store, by_url[url]), by_url[url], method, route, raw)
    if isinstance(body, bytes):
        _done(key, url)
        return status, media_type, body

    def relayed() -> Iterator[bytes]:
        try:
            yield from body
        finally:
            _done(key, url)

    return status, media_type, relayed()


def _worker_key(store: Store, pod: dict[str, Any]) -> str:
    """The counters' key of a worker pod (the one ``sandbox.kube.proxy`` gives the pod)."""
    return f"{store.region}/{store.name}/{objects.own_namespace(pod)}/{objects.name(pod)}"


def _done(key: str, url: str) -> None:
    with _lock:
        running = _state[key]["running"]
        running[url] = max(running.get(url, 0) - 1, 0)
