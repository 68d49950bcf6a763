"""What an endpoint's objects on the cluster show now: replicas ready of desired, each pod (phase, readiness,
restarts, why a container waits or last ended), the Warning events about them (image pull, OOM, back-off), the last
log lines of a crashing container, and the load balancer's hostname.

:func:`problem` names the failure a rollout cannot recover from by waiting: an image that cannot be pulled
(``ErrImagePull``/``ImagePullBackOff``/``InvalidImageName``), a server that keeps crashing (``CrashLoopBackOff``),
a container killed for memory (``OOMKilled``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from inference import objects
from inference.endpoints import manifests
from inference.models import Endpoint

STUCK = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CrashLoopBackOff", "OOMKilled",
                   "CreateContainerConfigError"})
LOG_LINES = 20


@dataclass
class Seen:
    exists: bool
    desired: int = 0
    ready: int = 0
    updated: int = 0
    generation_observed: bool = True
    hostname: str = ""
    pods: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    logs: dict[str, list[str]] = field(default_factory=dict)

    @property
    def rolled_out(self) -> bool:
        return self.exists and self.generation_observed and self.ready >= self.desired and \
            self.updated >= self.desired

    def as_json(self) -> dict[str, Any]:
        return {"desired": self.desired, "ready": self.ready, "updated": self.updated, "pods": self.pods,
                "events": self.events, "logs": self.logs}


def _pod(pod: dict[str, Any]) -> dict[str, Any]:
    status = pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    server = next((entry for entry in statuses if entry.get("name") == manifests.CONTAINER), statuses[0] if statuses
                  else {})
    state, last = server.get("state") or {}, (server.get("lastState") or {}).get("terminated") or {}
    reason = ((state.get("waiting") or {}).get("reason") or (state.get("terminated") or {}).get("reason") or "")
    message = (state.get("waiting") or {}).get("message") or ""
    ready = any(entry.get("type") == "Ready" and entry.get("status") == "True" for entry in status.get("conditions")
                or [])
    unschedulable = next((entry.get("message", "") for entry in status.get("conditions") or []
                          if entry.get("type") == "PodScheduled" and entry.get("status") == "False"), "")
    return {"name": pod["metadata"]["name"], "node": (pod.get("spec") or {}).get("nodeName") or "",
            "phase": status.get("phase", "Pending"), "ready": ready, "restarts": int(server.get("restartCount") or 0),
            "reason": reason or ("Unschedulable" if unschedulable else ""), "message": message or unschedulable,
            "last_reason": last.get("reason", ""), "last_exit_code": last.get("exitCode"),
            "labels": (pod.get("metadata") or {}).get("labels") or {}}


def pods_of(endpoint: Endpoint, selector: str) -> list[dict[str, Any]]:
    found = objects.list_labelled(endpoint.cluster, objects.PODS, endpoint.namespace, selector)
    return sorted((_pod(pod) for pod in found if not pod["metadata"].get("deletionTimestamp")),
                  key=lambda pod: pod["name"])


def look(endpoint: Endpoint, *, with_logs: bool = True) -> Seen:
    """Observe the endpoint's Deployment (a pool endpoint: the pool's workers labelled for it), pods, events,
    crash logs and Service."""
    cluster, namespace = endpoint.cluster, endpoint.namespace
    service = objects.get(cluster, objects.SERVICES, namespace, endpoint.name)
    ingress = (((service or {}).get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    hostname = ingress[0].get("hostname", "") if ingress else ""
    if endpoint.pool_id is not None:
        pool = endpoint.pool
        assert pool is not None
        pods = pods_of(endpoint, f"{manifests.POOL_LABEL}={pool.name},{manifests.SERVES_LABEL}={endpoint.name}")
        ready = sum(1 for pod in pods if pod["ready"])
        seen = Seen(exists=service is not None, desired=len(pods), ready=ready, updated=len(pods),
                    hostname=hostname, pods=pods)
    else:
        deployment = objects.get(cluster, objects.DEPLOYMENTS, namespace, endpoint.name)
        if deployment is None:
            return Seen(exists=False, hostname=hostname)
        status = deployment.get("status") or {}
        generation = deployment["metadata"].get("generation", 1)
        seen = Seen(exists=True, desired=int(deployment["spec"].get("replicas") or 0),
                    ready=int(status.get("readyReplicas") or 0), updated=int(status.get("updatedReplicas") or 0),
                    generation_observed=status.get("observedGeneration", 0) >= generation, hostname=hostname,
                    pods=pods_of(endpoint, f"{manifests.ENDPOINT_LABEL}={endpoint.name}"))
    for pod in seen.pods:
        seen.events += [{**event, "pod": pod["name"]} for event in
                        objects.events_about(cluster, namespace, pod["name"]) if event["type"] == "Warning"]
        if with_logs and (pod["restarts"] or pod["reason"] in STUCK):
            lines = objects.pod_log(cluster, namespace, pod["name"], manifests.CONTAINER, tail=LOG_LINES,
                                    previous=bool(pod["restarts"]))
            seen.logs[pod["name"]] = lines or objects.pod_log(cluster, namespace, pod["name"], manifests.CONTAINER,
                                                              tail=LOG_LINES)
    return seen


def problem(seen: Seen) -> str:
    """The first failure waiting will not fix (see the module docstring), as a sentence; ``""``: none."""
    for pod in seen.pods:
        reason = pod["reason"] if pod["reason"] in STUCK else (
            pod["last_reason"] if pod["last_reason"] == "OOMKilled" else "")
        if not reason:
            continue
        detail = pod["message"] or next((event["message"] for event in reversed(seen.events)
                                         if event["pod"] == pod["name"]), "")
        lines = seen.logs.get(pod["name"]) or []
        tail = f" Last log line: {lines[-1]}" if lines else ""
        return f"Pod {pod['name']}: {reason}{': ' + detail if detail else ''}.{tail}"
    return ""
