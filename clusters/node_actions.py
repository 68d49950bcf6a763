"""Batch node actions: reboot, replace and delete HyperPod nodes, each batch one operation on the cluster.

``node_batch`` checks everything before anything is sent to AWS — the list (``required``, ``too_many_nodes`` past
the API's batch limit, read from botocore's model), the cluster (``cluster_not_active``, ``cluster_busy``), the
replace confirmation (``confirmation_required``: an instance's local data — instance store and root volume — is
lost), then the nodes themselves from ``ListClusterNodes`` (``unknown_node``, ``node_not_running`` for a reboot or
replace of a node that is not Running, ``node_shutting_down`` for a delete of a node already going) — and starts
``node.<action>``: one phase that sends the batch call and polls until every node is healthy again (Running in
HyperPod, Ready and ``Schedulable`` in Kubernetes) or gone.

The phase's submit step persists what it found (each node's logical id, group and Kubernetes boot id, and every
instance id of the cluster) *before* sending, and on a re-run sends only to nodes still as they were: HyperPod's
batch calls take no client token, so the world is the record of what was sent. AWS's per-node ``Failed`` entries
fail the phase (``node_action_failed``) naming each node and code; a retry resends only to those.

Completion, per node:

- reboot: the instance Running and healthy again *after* it was seen leaving (or after its boot id changed);
- replace: the old instance gone and the instance with the same logical id (or, without logical ids, a new
  instance of the same group) Running and healthy;
- delete: the instance gone from HyperPod and from Kubernetes. HyperPod lowers the group's target count; the
  cluster's node and GPU counts (and the instance group rows) are brought up to date when the phase finishes.

A node HyperPod replaces on its own during a reboot (automatic node recovery) is followed to its replacement.
"""

from __future__ import annotations

from datetime import timedelta
from functools import cache
from typing import Any

import botocore.session
from django.db import transaction
from django.urls import reverse

from accounts import access, audit
from accounts.models import User
from cloud import aws
from clusters import nodes, plans
from clusters.instance_groups import mirror
from clusters.models import Cluster, ClusterState
from clusters.phases.common import cluster_of
from clusters.services import claim_idle, require_idle
from config.errors import Conflict, InvalidFields, ValidationFailed
from notifications import events
from operations import idempotency
from operations.context import StepContext
from operations.models import Operation
from operations.pipeline import Phase, PhaseFailed, Pipeline, Progress
from operations.services import operation_start

REBOOT, REPLACE, DELETE = "reboot", "replace", "delete"
ACTIONS = (REBOOT, REPLACE, DELETE)
#: action → (the HyperPod batch call, its botocore operation name, the words for people).
_CALLS = {
    REBOOT: ("batch_reboot_cluster_nodes", "BatchRebootClusterNodes", "reboot", "Reboot"),
    REPLACE: ("batch_replace_cluster_nodes", "BatchReplaceClusterNodes", "replace", "Replace"),
    DELETE: ("batch_delete_cluster_nodes", "BatchDeleteClusterNodes", "delete", "Delete"),
}
DATA_LOSS_WARNING = ("Replacing a node terminates its instance: everything on its instance store and root volume is "
                     "lost. Shared storage (FSx, S3) is not touched.")



def kind(action: str) -> str:
    return f"node.{action}"


@cache
def batch_limit(action: str) -> int:
    """How many instance ids one batch call of ``action`` takes (botocore's ``NodeIds`` maximum)."""
    model = botocore.session.get_session().get_service_model("sagemaker")
    return int(model.operation_model(_CALLS[action][1]).input_shape.members["NodeIds"].metadata["max"])


def _node_ids_error(code: str, message: str) -> ValidationFailed:
    return ValidationFailed.for_field("node_ids", code, message)


def _check_list(action: str, node_ids: list[str]) -> list[str]:
    unique = list(dict.fromkeys(node_ids))
    if not unique:
        raise _node_ids_error("required", f"Choose at least one node to {_CALLS[action][2]}.")
    limit = batch_limit(action)
    if len(unique) > limit:
        raise _node_ids_error("too_many_nodes", f"HyperPod takes at most {limit} nodes per {_CALLS[action][2]} "
                                                f"batch; {len(unique)} were given. Split them into batches.")
    return unique


def _check_nodes(action: str, cluster: Cluster, node_ids: list[str]) -> list[dict[str, Any]]:
    """The ``ClusterNodeSummary`` of each requested node, or every refusal at once as ``node_ids`` errors."""
    summaries = {summary["InstanceId"]: summary for summary in nodes.hyperpod_nodes(
        aws.client("sagemaker", region=cluster.region), cluster.hyperpod_name)} if cluster.hyperpod_name else {}
    unknown = [node_id for node_id in node_ids if node_id not in summaries]
    refused = InvalidFields()
    if unknown:
        refused.add("node_ids", "unknown_node", f"Cluster {cluster.name} has no node {', '.join(unknown)}.")
    known = [summaries[node_id] for node_id in node_ids if node_id in summaries]
    status = {summary["InstanceId"]: (summary.get("InstanceStatus") or {}).get("Status", "") for summary in known}
    if action in (REBOOT, REPLACE):
        idle = [f"{node_id} ({state})" for node_id, state in status.items() if state != nodes.RUNNING]
        if idle:
            refused.add("node_ids", "node_not_running",
                        f"Only Running nodes can be {_CALLS[action][2]}ed: {', '.join(idle)}.")
    else:
        going = [node_id for node_id, state in status.items() if state == "ShuttingDown"]
        if going:
            refused.add("node_ids", "node_shutting_down", f"Already shutting down: {', '.join(going)}.")
    refused.raise_if_any()
    return known


def node_batch(*, actor: User, cluster: Cluster, action: str, node_ids: list[str], source: str,
               confirm_data_loss: bool = False, idempotency_key: str | None = None) -> Operation:
    """Reboot, replace or delete ``node_ids`` of ``cluster`` as one ``node.<action>`` operation.

    Reboot and replace are for operators, delete for admins. Every check runs before anything is sent to AWS (see
    the module's docstring for the codes); an ``idempotency_key`` already used in the team returns the first
    operation.
    """
    if action not in ACTIONS:
        raise ValueError(action)
    access.require(actor, f"node.{action}", cluster)
    replayed = idempotency.replayed(cluster.team, idempotency_key)
    if replayed is not None:
        return replayed
    node_ids = _check_list(action, node_ids)
    if action == REPLACE and not confirm_data_loss:
        raise ValidationFailed.for_field("confirm_data_loss", "confirmation_required",
                                         f"{DATA_LOSS_WARNING} Set confirm_data_loss to go ahead.")
    if cluster.state != ClusterState.ACTIVE:
        raise Conflict(f"Cluster {cluster.name} is {cluster.state}; nodes are acted on in active clusters.",
                       code="cluster_not_active")
    require_idle(cluster)
    known = _check_nodes(action, cluster, node_ids)
    title = _CALLS[action][3]
    with transaction.atomic():
        claim_idle(cluster)
        operation, _ = operation_start(
            actor=actor, team=cluster.team, kind=kind(action),
            title=f"{title} {len(node_ids)} node{'s' if len(node_ids) != 1 else ''} of {cluster.name}",
            params={"cluster_id": cluster.pk, "region": cluster.region, "hyperpod_name": cluster.hyperpod_name,
                    "node_ids": node_ids},
            source=source, target=cluster, idempotency_key=idempotency_key)
        audit.record(actor=actor, source=source, action=f"node.{action}", target=cluster, team=cluster.team,
                     before={"nodes": [{"instance_id": s["InstanceId"], "instance_group": s.get("InstanceGroupName"),
                                        "status": (s.get("InstanceStatus") or {}).get("Status")} for s in known]},
                     after={"operation": operation.pk, "node_ids": node_ids,
                            **({"data_loss_confirmed": True} if action == REPLACE else {})})
    return operation


# The pipelines -----------------------------------------------------------------------------------------------------


def _observe(ctx: StepContext, cluster: Cluster) -> tuple[dict[str, nodes.NodeRow], dict[str, str]]:
    """Every node of the cluster, merged (pods are not needed to judge health), and each Node's boot id."""
    summaries = nodes.hyperpod_nodes(ctx.client("sagemaker"), ctx.params["hyperpod_name"])
    kube_nodes = nodes.kube_nodes(nodes.core_api(cluster))
    boots = {instance_id: ((node.get("status") or {}).get("nodeInfo") or {}).get("bootID", "")
             for instance_id, node in kube_nodes.items()}
    return {row.instance_id: row for row in nodes.merge(summaries, kube_nodes, {})}, boots


def _snapshot(rows: dict[str, nodes.NodeRow], boots: dict[str, str], node_ids: list[str]) -> dict[str, Any]:
    """What the nodes were before anything was sent: logical id, group, boot id; and every instance id the cluster
    had (a replacement is an instance not among them)."""
    return {"nodes": {node_id: {"logical_id": rows[node_id].logical_id if node_id in rows else None,
                                "group": rows[node_id].instance_group if node_id in rows else "",
                                "boot_id": boots.get(node_id, "")} for node_id in node_ids},
            "instances": sorted(rows)}


def _untouched(action: str, row: nodes.NodeRow | None, before: dict[str, Any], boot_id: str) -> bool:
    """Whether the batch call has not reached this node yet (so sending it is still needed)."""
    if row is None:
        return False
    if action == DELETE:
        return row.status != "ShuttingDown"
    return row.status == nodes.RUNNING and (not before["boot_id"] or boot_id == before["boot_id"])


def _submit(action: str):
    method, operation_name, verb, _ = _CALLS[action]

    def submit(ctx: StepContext) -> None:
        rows, boots = _observe(ctx, cluster_of(ctx))
        snapshot = ctx.intend("snapshot", lambda: _snapshot(rows, boots, ctx.params["node_ids"]))
        pending = [node_id for node_id in ctx.params["node_ids"]
                   if _untouched(action, rows.get(node_id), snapshot["nodes"][node_id], boots.get(node_id, ""))]
        if not pending:
            ctx.log(f"Every node already shows the {verb}; nothing to send.")
            return
        answer = getattr(ctx.client("sagemaker"), method)(ClusterName=ctx.params["hyperpod_name"], NodeIds=pending)
        successful = list(answer.get("Successful") or [])
        failed = [{"node_id": entry.get("NodeId"), "code": entry.get("ErrorCode") or entry.get("Code") or "",
                   "message": entry.get("Message") or ""} for entry in answer.get("Failed") or []]
        ctx.record(successful=sorted({*ctx.reference.get("successful", []), *successful}), failed=failed)
        if successful:
            ctx.log(f"HyperPod accepted the {verb} of {', '.join(successful)} ({operation_name}).")
        if failed:
            named = "; ".join(f"{item['node_id']} ({item['code']}: {item['message']})" for item in failed)
            raise PhaseFailed(f"HyperPod refused to {verb} {len(failed)} node(s): {named}", code="node_action_failed",
                              detail={"code": failed[0]["code"], "message": named})

    return submit


def _replacement(rows: dict[str, nodes.NodeRow], before: dict[str, Any], known: set[str],
                 taken: set[str]) -> nodes.NodeRow | None:
    """The instance that took over from a gone node: same logical id, else a new instance of the same group."""
    for row in rows.values():
        if row.instance_id in known or row.instance_id in taken:
            continue
        if before["logical_id"] and row.logical_id == before["logical_id"]:
            return row
        if not before["logical_id"] and row.instance_group == before["group"]:
            return row
    return None


def _describe(row: nodes.NodeRow) -> str:
    facts = [row.status + (f" ({row.status_message})" if row.status_message else "")]
    if row.node_name is None:
        facts.append("not in Kubernetes")
    else:
        facts.append("Ready" if row.ready else "not Ready")
        if not row.schedulable:
            facts.append("cordoned")
        if row.health_status and row.health_status != nodes.SCHEDULABLE:
            facts.append(row.health_status)
    return ", ".join(facts)


def _poll(action: str):
    verb = _CALLS[action][2]

    def poll(ctx: StepContext) -> Progress:
        cluster = cluster_of(ctx)
        snapshot = ctx.intent["snapshot"]
        rows, boots = _observe(ctx, cluster)
        known = set(snapshot["instances"])
        seen_down = set(ctx.reference.get("seen_down", []))
        replacements = dict(ctx.reference.get("replacements", {}))
        waiting, failed, replaced = [], [], []
        for node_id in ctx.params["node_ids"]:
            before = snapshot["nodes"][node_id]
            row = rows.get(node_id)
            if action == DELETE:
                if row is not None:
                    waiting.append(f"{node_id}: {_describe(row)}")
                elif node_id in boots:
                    waiting.append(f"{node_id}: gone from HyperPod, its Kubernetes Node not yet")
                continue
            if row is not None and action == REBOOT:
                if not row.healthy:
                    seen_down.add(node_id)
                if row.status == "Failure":
                    failed.append(f"{node_id} ({row.status_message or 'Failure'})")
                elif not row.healthy or (node_id not in seen_down and boots.get(node_id, "") == before["boot_id"]
                                         and before["boot_id"]):
                    waiting.append(f"{node_id}: {_describe(row) if not row.healthy else 'reboot not started yet'}")
                continue
            if row is not None:
                seen_down.add(node_id)
                waiting.append(f"{node_id}: {_describe(row)}")
                continue
            seen_down.add(node_id)
            new = rows.get(replacements.get(node_id, "")) or _replacement(
                rows, before, known, set(replacements.values()))
            if new is None:
                waiting.append(f"{node_id}: gone, waiting for its replacement")
                continue
            if replacements.get(node_id) != new.instance_id:
                replacements[node_id] = new.instance_id
                replaced.append((node_id, new))
                ctx.log(f"{node_id} is replaced by {new.instance_id}"
                        + (f" (logical id {new.logical_id})." if new.logical_id else "."))
            if new.status == "Failure":
                failed.append(f"{new.instance_id}, replacing {node_id} ({new.status_message or 'Failure'})")
            elif not new.healthy:
                waiting.append(f"{node_id} → {new.instance_id}: {_describe(new)}")
        if seen_down != set(ctx.reference.get("seen_down", [])) or replacements != ctx.reference.get(
                "replacements", {}):
            ctx.record(seen_down=sorted(seen_down), replacements=replacements)
        for node_id, new in replaced:
            _notify_replaced(ctx, cluster, node_id, new)
        if failed:
            raise PhaseFailed(f"HyperPod reports node failure: {'; '.join(failed)}", code="node_failed")
        total = len(ctx.params["node_ids"])
        if waiting:
            return Progress.waiting(f"{total - len(waiting)}/{total} done; {'; '.join(waiting)}"[:500])
        if action == DELETE:
            _record_counts(cluster)
        ctx.log(f"Every node is {'gone' if action == DELETE else 'Running and schedulable'} after the {verb}.")
        return Progress.finished(f"{total}/{total} {'gone' if action == DELETE else 'healthy'}")

    return poll


def _notify_replaced(ctx: StepContext, cluster: Cluster, node_id: str, new: nodes.NodeRow) -> None:
    """Tell the team's subscribers (``node.replaced``) once the replacement is recorded."""
    events.emit(events.NODE_REPLACED, team_id=cluster.team_id,
                summary=f"Node {node_id} of cluster {cluster.name} was replaced by {new.instance_id}",
                subject=events.Subject(kind="node", id=node_id, name=node_id,
                                       path=reverse("cluster-nodes", args=[cluster.pk])),
                details={"cluster": {"id": cluster.pk, "name": cluster.name}, "instance_group": new.instance_group,
                         "replaced_by": new.instance_id, "logical_id": new.logical_id or "",
                         "operation_id": ctx.operation_id})


def _record_counts(cluster: Cluster) -> None:
    """After a delete: the instance groups (HyperPod lowered their target counts) and the cluster's node and GPU
    counts, through the instance-group mirror every writer that learns the groups uses."""
    described = mirror.describe(cluster)
    if described is not None:
        mirror.mirror(cluster, described)


_TIMEOUTS = {REBOOT: timedelta(hours=1), REPLACE: timedelta(hours=3), DELETE: timedelta(hours=1)}

PIPELINES: dict[str, Pipeline] = {action: Pipeline(kind=kind(action), phases=(
    Phase(slug=action, title=f"{_CALLS[action][3]} nodes", submit=_submit(action), poll=_poll(action),
          plan=plans.node_batch(action, _CALLS[action][1]), timeout=_TIMEOUTS[action], poll_interval=15),
)) for action in ACTIONS}
