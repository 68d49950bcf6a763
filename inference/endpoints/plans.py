"""What the endpoint operations would do, for a dry run's plan (``Phase.plan``): the endpoint row the service
checked and built (rolled back after a dry run) carries the manifests the phases would send."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from config.plans import Change, change
from costs import prices
from inference.endpoints.plan import secret_name
from inference.models import Endpoint, Exposure

LOAD_BALANCED = (Exposure.INTERNAL_LB, Exposure.INTERNET_LB)


def _endpoint(params: Mapping[str, Any]) -> Endpoint:
    return Endpoint.objects.select_related("cluster").get(pk=params["endpoint_id"])


def deploy_cost(params: Mapping[str, Any]) -> str | None:
    """What the endpoint's replicas occupy, by the hour: "Its replicas use 2 × ml.g5.8xlarge ≈ $6.12/hour,
    on-demand (instances of group workers)." — one instance of the group's type per replica, at its on-demand price
    (:mod:`costs.prices`); the instances are the cluster's, billed whether they serve or not."""
    endpoint = Endpoint.objects.filter(pk=params["endpoint_id"]).only("instance_type", "instance_group",
                                                                       "replicas").first()
    if endpoint is None or not endpoint.instance_type or endpoint.replicas <= 0:
        return None
    estimate = prices.estimate(params["region"], [(endpoint.instance_type, endpoint.replicas)])
    return f"Its replicas use {estimate.summary()} (instances of group {endpoint.instance_group})."


def scale_cost(params: Mapping[str, Any]) -> str | None:
    """An update's cost sentence when it changes the replicas (:func:`deploy_cost` at the new count)."""
    return deploy_cost(params) if "replicas" in params.get("changes", {}) else None


def create(params: Mapping[str, Any]) -> list[Change]:
    endpoint = _endpoint(params)
    where = f"{endpoint.namespace}/{endpoint.name}"
    changes = []
    if endpoint.hf_token:
        changes.append(change("create", "kubernetes", "Secret", f"{endpoint.namespace}/{secret_name(endpoint.name)}"))
    if endpoint.pool_id is None:
        changes.append(change("create", "kubernetes", "Deployment", where,
                              manifest=endpoint.manifest["deployment"]))
    for key in ("router_account", "router_role", "router_binding", "router", "workers"):
        if key in endpoint.manifest:
            made = endpoint.manifest[key]
            changes.append(change("create", "kubernetes", made["kind"],
                                  f"{endpoint.namespace}/{made['metadata']['name']}", manifest=made))
    changes.append(change("create", "kubernetes", "Service", where, manifest=endpoint.manifest["service"]))
    return changes


def expose(params: Mapping[str, Any]) -> list[Change]:
    endpoint = _endpoint(params)
    if endpoint.exposure not in LOAD_BALANCED:
        return []
    return [change("create", "aws", "Network Load Balancer", endpoint.name,
                   scheme="internet-facing" if endpoint.exposure == Exposure.INTERNET_LB else "internal",
                   by="the AWS Load Balancer Controller")]


def remove(params: Mapping[str, Any]) -> list[Change]:
    endpoint = _endpoint(params)
    where = f"{endpoint.namespace}/{endpoint.name}"
    changes = [change("delete", "kubernetes", "Service", where)]
    if endpoint.pool_id is None:
        changes.append(change("delete", "kubernetes", "Deployment", where, grace_seconds=30))
    if endpoint.hf_token:
        changes.append(change("delete", "kubernetes", "Secret", f"{endpoint.namespace}/{secret_name(endpoint.name)}"))
    if endpoint.exposure in LOAD_BALANCED:
        changes.append(change("delete", "aws", "Network Load Balancer", endpoint.hostname or endpoint.name,
                              by="the AWS Load Balancer Controller"))
    return changes


DEPLOY = {"create": create, "expose": expose}
DELETE = {"remove": remove}
