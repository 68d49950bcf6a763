"""UpdateCluster for instance groups, re-sending every group whole.

HyperPod takes no idempotency token on UpdateCluster and refuses it while the cluster is not ``InService``. So a
step reads the cluster first: when the change is already there (a re-run after the call went out) it sends nothing;
when the cluster is busy (Karpenter, another client) it waits for ``InService`` and sends then. The groups it sends
are :func:`clusters.instance_groups.specs.specification` of what DescribeCluster reports — every member, including
those set outside InstantStart — with only the intended change applied.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from clusters.instance_groups import mirror, specs
from clusters.instance_groups.update_cluster import update_cluster
from clusters.models import Cluster
from operations.context import StepContext
from operations.pipeline import PhaseFailed

IN_SERVICE = "InService"
#: Group statuses of a group that is not going to converge.
FAILED_GROUP_STATES = frozenset({"Failed", "Degraded"})


def described(cluster: Cluster) -> dict[str, Any]:
    """DescribeCluster of ``cluster``'s HyperPod cluster; ``resource_missing`` when there is none."""
    found = mirror.describe(cluster)
    if found is None:
        raise PhaseFailed(f"Cluster {cluster.name} has no HyperPod cluster.", code="resource_missing")
    return found


def group_details(found: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((group for group in found.get("InstanceGroups") or [] if group["InstanceGroupName"] == name), None)


def live_specifications(found: dict[str, Any]) -> list[dict[str, Any]]:
    """Every group of ``found`` that is not being deleted, as the specification that keeps it as it is."""
    return [specs.specification(group) for group in found.get("InstanceGroups") or []
            if group.get("Status") != "Deleting"]


def send(ctx: StepContext, cluster: Cluster, groups: list[dict[str, Any]], *, delete: tuple[str, ...] = ()) -> None:
    """UpdateCluster with ``groups`` (whole specifications) and ``delete`` (names to delete)."""
    members: dict[str, Any] = {"InstanceGroups": groups}
    if delete:
        members["InstanceGroupsToDelete"] = list(delete)
    update_cluster(cluster, members)
    ctx.record(sent=True)


Build = Callable[[dict[str, Any]], tuple[list[dict[str, Any]], tuple[str, ...]]]
"""From a description: the groups to send and the names to delete."""


def submit_or_wait(ctx: StepContext, cluster: Cluster, *, done: Callable[[dict[str, Any]], bool],
                   build: Build) -> None:
    """Send the update ``build`` makes from the current description — unless ``done`` says it is there already —
    or, when the cluster is not ``InService``, leave it to :func:`send_when_ready` (called by the poll)."""
    found = described(cluster)
    if done(found):
        ctx.log("The change is already in effect; nothing to send.")
        ctx.record(sent=True)
        return
    if found["ClusterStatus"] != IN_SERVICE:
        ctx.log(f"HyperPod cluster is {found['ClusterStatus']}; the update waits for InService.")
        ctx.record(sent=False)
        return
    groups, delete = build(found)
    send(ctx, cluster, groups, delete=delete)


def send_when_ready(ctx: StepContext, cluster: Cluster, found: dict[str, Any], *, build: Build) -> bool:
    """In a poll: send the update held back by :func:`submit_or_wait` once the cluster is ``InService``; whether
    it is sent (now or before)."""
    if ctx.reference.get("sent"):
        return True
    if found["ClusterStatus"] != IN_SERVICE:
        return False
    groups, delete = build(found)
    send(ctx, cluster, groups, delete=delete)
    return True


def require_healthy(found: dict[str, Any], name: str) -> None:
    """``hyperpod_update_failed`` when the cluster or the group failed."""
    details = group_details(found, name) or {}
    if found["ClusterStatus"] == "Failed" or details.get("Status") in FAILED_GROUP_STATES:
        message = found.get("FailureMessage") or f"instance group {name} is {details.get('Status')}"
        raise PhaseFailed(f"The HyperPod update failed: {message}", code="hyperpod_update_failed",
                          detail={"status": found["ClusterStatus"], "group_status": details.get("Status", "")})
