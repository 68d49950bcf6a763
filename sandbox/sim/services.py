"""Services: load balancer hostnames, and the Endpoints of selector-based Services.

A ``LoadBalancer`` Service gets ``status.loadBalancer.ingress[0].hostname`` after ``PROVISION_SECONDS``, in
the AWS Load Balancer Controller's NLB style: ``k8s-<namespace>-<name>-<hash>.elb.<region>.amazonaws.com``. One
annotated ``service.beta.kubernetes.io/aws-load-balancer-type: external`` (or ``nlb-ip``) is the controller's alone:
it gets a hostname only while the controller's Deployment (``kube-system/aws-load-balancer-controller``) has an
available replica.
Every Service with a selector has an Endpoints object of the same name listing the matching pods: Ready
ones under ``addresses``, the others under ``notReadyAddresses``, with the Service's ports resolved against
the pods' named container ports.
"""

from __future__ import annotations

import hashlib
from typing import Any

from sandbox import clock
from sandbox.kube.selectors import match_labels
from sandbox.sim import objects, pods
from sandbox.sim.context import Context

PROVISION_SECONDS = 60.0
LB_CONTROLLER = "aws-load-balancer-controller"
LB_TYPE = "service.beta.kubernetes.io/aws-load-balancer-type"
CONTROLLER = "services"


def hostname(service: dict[str, Any], region: str) -> str:
    """The DNS name of the load balancer fronting ``service``."""
    digest = hashlib.sha256(objects.uid(service).encode()).hexdigest()[:16]
    return f"k8s-{objects.own_namespace(service)[:8]}-{objects.name(service)[:8]}-{digest}.elb.{region}.amazonaws.com"


def lb_controller_runs(ctx: Context) -> bool:
    """Whether the AWS Load Balancer Controller runs: its Deployment in ``kube-system`` has an available replica."""
    found = ctx.store.find("deployments", LB_CONTROLLER, "kube-system")
    return found is not None and int((found.get("status") or {}).get("availableReplicas") or 0) > 0


def _load_balancer(ctx: Context, service: dict[str, Any], memory: dict[str, Any]) -> None:
    status = service.get("status") or {}
    if service["spec"].get("type") != "LoadBalancer" or (status.get("loadBalancer") or {}).get("ingress"):
        return
    if objects.annotation(service, LB_TYPE) in ("external", "nlb-ip") and not lb_controller_runs(ctx):
        return
    seen = memory.setdefault(objects.uid(service), {"since": ctx.now})["since"]
    if clock.due(seen, PROVISION_SECONDS):
        ctx.set_status("services", service, {**status, "loadBalancer": {"ingress": [
            {"hostname": hostname(service, ctx.region)}]}})


def _target_port(port: dict[str, Any], pod: dict[str, Any]) -> int | None:
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, int):
        return target
    for container in pod["spec"].get("containers") or []:
        for declared in container.get("ports") or []:
            if declared.get("name") == target:
                return int(declared["containerPort"])
    return None


def _endpoints(ctx: Context, service: dict[str, Any], all_pods: list[dict[str, Any]]) -> None:
    selector = service["spec"].get("selector")
    if not selector:
        return
    selected = [pod for pod in all_pods if objects.namespace(pod) == objects.namespace(service)
                and (pod.get("status") or {}).get("podIP") and not pods.terminal(pod)
                and match_labels({"matchLabels": selector}, objects.labels(pod))]
    subsets = []
    if selected:
        def address(pod: dict[str, Any]) -> dict[str, Any]:
            return {"ip": pod["status"]["podIP"], "nodeName": pod["spec"].get("nodeName"),
                    "targetRef": {"kind": "Pod", "name": objects.name(pod), "namespace": objects.namespace(pod),
                                  "uid": objects.uid(pod)}}

        ports = [{"name": port.get("name"), "port": _target_port(port, selected[0]) or port["port"],
                  "protocol": port.get("protocol", "TCP")} for port in service["spec"].get("ports") or []]
        subset: dict[str, Any] = {"ports": ports}
        ready = [address(pod) for pod in selected if pods.ready(pod)]
        not_ready = [address(pod) for pod in selected if not pods.ready(pod)]
        if ready:
            subset["addresses"] = ready
        if not_ready:
            subset["notReadyAddresses"] = not_ready
        subsets.append(subset)
    existing = ctx.store.find("endpoints", objects.name(service), objects.namespace(service))
    body = {"metadata": {"name": objects.name(service), "labels": objects.labels(service)}, "subsets": subsets}
    if existing is None:
        ctx.create("endpoints", body, service)
    elif (existing.get("subsets") or []) != subsets:
        ctx.store.update("endpoints", {**existing, "subsets": subsets}, objects.namespace(service))


def reconcile(ctx: Context) -> None:
    services = ctx.list("services")
    memory = ctx.remembered(CONTROLLER, services)
    all_pods = ctx.list("pods")
    for service in services:
        with ctx.guard(f"service {objects.namespace(service)}/{objects.name(service)}"):
            _load_balancer(ctx, service, memory)
            _endpoints(ctx, service, all_pods)
