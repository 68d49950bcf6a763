"""Prefix caching of the simulated vLLM servers, and the replica the inference operator's router picks.

**Cache.** A request's *prefix* is the first :data:`PREFIX_CHARS` characters of its prompt (the messages' text). A
vLLM pod keeps the prefixes it computed (vLLM's own prefix cache, extended to CPU memory by an L1 KV cache); a pod
with an L2 KV cache (``LMCACHE_REMOTE_URL``, the Redis or managed tiered storage the operator configured) also
shares them with every pod of the same L2. A request whose prefix is already cached — on its pod, or in its L2 —
counts its prefix's tokens as hits. ``/metrics`` shows vLLM's counters ``vllm:prefix_cache_queries_total`` (prompt
tokens looked up) and ``vllm:prefix_cache_hits_total`` (tokens found), per pod.

**Routing** (a Service carrying ``sandbox.sim.inference.ROUTING_ANNOTATION``): ``prefixaware`` sends a prefix to
the replica its hash names, so a repeated prefix lands where it is cached; ``kvaware`` sends it to a replica that
has it cached (else as prefix-aware); ``session`` keys on the session header the routing Service names
(default :data:`SESSION_HEADER`), a request without one taking turns; ``roundrobin``
(and any request without a prefix) takes turns. Round robin spreads a repeated prefix over the replicas, so each
computes it once — the lower hit rate prefix-aware routing avoids.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
from collections.abc import Mapping
from typing import Any

PREFIX_CHARS = 200
SESSION_HEADER = "x-session-id"

_lock = threading.Lock()
_cached: dict[str, set[str]] = {}
_counts: dict[str, dict[str, float]] = {}
_turns = itertools.count()


def _env(pod: dict[str, Any]) -> dict[str, str]:
    container = ((pod.get("spec") or {}).get("containers") or [{}])[0]
    return {str(entry.get("name")): str(entry.get("value", "")) for entry in container.get("env") or []}


def _prompt(raw: bytes) -> str:
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        return ""
    if not isinstance(body, dict):
        return ""
    if "messages" in body:
        return "\n".join(str(message.get("content", "")) for message in body.get("messages") or []
                         if isinstance(message, dict))
    return str(body.get("prompt", ""))


def prefix(raw: bytes) -> str:
    """The prefix of a request body (``""``: no prompt)."""
    return _prompt(raw)[:PREFIX_CHARS]


def _scopes(key: str, pod: dict[str, Any]) -> list[str]:
    """Where ``pod``'s cached prefixes live: the pod itself, and its L2 when it has one."""
    scopes = [f"pod:{key}"]
    remote = _env(pod).get("LMCACHE_REMOTE_URL")
    if remote:
        scopes.append(f"l2:{key.rsplit('/', 2)[0]}:{remote}")
    return scopes


def record(key: str, pod: dict[str, Any], raw: bytes) -> None:
    """Count a completion request's prompt tokens against ``pod``'s caches (``key`` names the pod), then cache its
    prefix there."""
    text, head = _prompt(raw), prefix(raw)
    if not head:
        return
    scopes = _scopes(key, pod)
    with _lock:
        hit = any(head in _cached.get(scope, set()) for scope in scopes)
        counts = _counts.setdefault(key, {"queries": 0.0, "hits": 0.0})
        counts["queries"] += len(text.split())
        counts["hits"] += len(head.split()) if hit else 0
        for scope in scopes:
            _cached.setdefault(scope, set()).add(head)


def metrics(key: str, pod: dict[str, Any], model: str) -> str:
    """The prefix-cache counters of a vLLM pod, in Prometheus text."""
    with _lock:
        counts = dict(_counts.get(key, {"queries": 0.0, "hits": 0.0}))
    label = f'model_name="{model}"'
    return (f"# TYPE vllm:prefix_cache_queries_total counter\nvllm:prefix_cache_queries_total{{{label}}} "
            f"{counts['queries']}\n# TYPE vllm:prefix_cache_hits_total counter\n"
            f"vllm:prefix_cache_hits_total{{{label}}} {counts['hits']}\n")


def _hashed(value: str, count: int) -> int:
    return int(hashlib.sha256(value.encode()).hexdigest()[:12], 16) % count


def choose(pods: list[dict[str, Any]], strategy: str, raw: bytes, headers: Mapping[str, str], *,
           keys: list[str], session_header: str = SESSION_HEADER) -> dict[str, Any]:
    """The replica the router sends a request to (``pods`` ready, ``keys`` their cache keys in the same order;
    ``session_header`` the header session routing keys on, matched without regard to case)."""
    order = sorted(range(len(pods)), key=lambda index: pods[index]["metadata"]["name"])
    head = prefix(raw)
    if strategy == "session":
        wanted = session_header.lower()
        session = next((value for name, value in headers.items() if name.lower() == wanted), "")
        if session:
            return pods[order[_hashed(session, len(order))]]
    elif strategy in ("prefixaware", "kvaware") and head:
        if strategy == "kvaware":
            with _lock:
                holding = [index for index in order
                           if any(head in _cached.get(scope, set()) for scope in _scopes(keys[index], pods[index]))]
            if holding:
                return pods[holding[0]]
        return pods[order[_hashed(head, len(order))]]
    return pods[order[next(_turns) % len(order)]]
