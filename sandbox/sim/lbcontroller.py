"""The AWS Load Balancer Controller's pods: they start only with AWS credentials.

A pod labelled ``app.kubernetes.io/name: aws-load-balancer-controller`` asks EKS Pod Identity for credentials each
time its container starts (``sandbox.aws.pod_identity_view``): without an association for its namespace and service
account, or without the Pod Identity Agent add-on, the controller cannot initialise its AWS clients, logs why and
exits 1 — a crash loop, as on EKS. With credentials it logs its start-up once and runs; the kubelet makes it ready.
Only while such a pod is ready does the controller's Deployment have an available replica, which is what
``sandbox.sim.services`` waits for before a load balancer Service gets its hostname.
"""

from __future__ import annotations

import json
from typing import Any

from sandbox.aws import pod_identity_view
from sandbox.sim import objects, serving
from sandbox.sim.context import Context

APP = "aws-load-balancer-controller"


def _line(level: str, message: str, **fields: str) -> str:
    return json.dumps({"level": level, "ts": "2025-01-01T00:00:00Z", "logger": "setup", "msg": message, **fields})


def hold(ctx: Context, pod: dict[str, Any], state: dict[str, Any]) -> bool:
    """Run a started controller pod (``True``: it crash-loops and the kubelet leaves it to this function)."""
    if objects.labels(pod).get("app.kubernetes.io/name") != APP:
        return False
    namespace = objects.own_namespace(pod)
    account = (pod.get("spec") or {}).get("serviceAccountName") or "default"
    missing = pod_identity_view.credentials_for(ctx.region, ctx.store.name, namespace, account)
    if missing:
        serving.crash_loop(ctx, pod, state, [
            _line("info", "version", GitVersion="v3.5.0"),
            _line("error", "unable to initialize AWS cloud", error="operation error EC2: DescribeVpcs, get identity: "
                  f"get credentials: failed to refresh cached credentials, {missing}")])
        return True
    if not state.get("started_logged"):
        container = (((pod.get("spec") or {}).get("containers") or [{}])[0]).get("name", "")
        ctx.store.append_logs(namespace, objects.name(pod), container, [
            (_line("info", "version", GitVersion="v3.5.0"), None),
            (_line("info", "starting manager"), None)])
        state["started_logged"] = True
    return False
