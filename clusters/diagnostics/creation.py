"""Cluster-creation failures: which phase failed, what the provider answered (code, message, request id), what
the failed creation left in AWS, and whether a quota or a shortage of capacity is the cause.

The record is ours — the operation's phases (state, error, ``error_detail`` with the provider's words) and
``outputs``, each started phase's ``reference`` (the ids it made or found) — plus, for a quota cause, the
cluster-usage quota of the instance type and what HyperPod clusters of the region already use. Suggestions
escalate: read the failed phase's log and the quotas or offers (investigate) → ``retry_operation`` once the cause
is fixed (only the failed phase runs again) → ``delete_cluster`` to remove what was left, then create again with
other choices (replace). Nothing is changed.
"""

from __future__ import annotations

from typing import Any

from clusters.diagnostics.report import ERROR, INFO, INVESTIGATE, REPLACE, RETRY, WARNING, Diagnosis
from clusters.inspection import capacity
from clusters.models import Cluster
from config.errors import ApplicationError
from operations.models import Operation, OperationState, PhaseState

QUOTA_CODES = frozenset({"ResourceLimitExceeded", "LimitExceededException", "ServiceQuotaExceededException",
                         "LimitExceeded", "VpcLimitExceeded", "AddressLimitExceeded", "NatGatewayLimitExceeded"})
CAPACITY_CODES = frozenset({"InsufficientInstanceCapacity", "InsufficientCapacityException",
                            "InsufficientCapacity", "CapacityError"})
#: Our own codes for a quota refusal (the provider's, translated, and the HyperPod phase's).
QUOTA_ERRORS = frozenset({"cloud_quota_exceeded", "quota_exceeded", "hyperpod_quota_exceeded"})
#: ``reference``/``outputs`` keys that name an AWS resource.
_RESOURCE_SUFFIXES = ("_id", "_ids", "_arn", "_name", "_uri")


def _resources(values: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in values.items()
            if key.endswith(_RESOURCE_SUFFIXES) or key in ("subnets", "security_groups", "route_tables")}


def _failed_phase(operation: Operation):
    return operation.phases.filter(state=PhaseState.FAILED).order_by("index").first()


def diagnose(cluster: Cluster, operation: Operation | None) -> Diagnosis:
    """The diagnosis of ``operation`` (the cluster's create or import; ``None`` when it has none)."""
    diagnosis = Diagnosis(subject={"cluster_id": cluster.pk, "cluster": cluster.name,
                                   "operation_id": operation.pk if operation else None})
    if operation is None:
        diagnosis.find("no_creation_record", INFO, f"Cluster {cluster.name} has no creation operation on record.")
        return diagnosis
    phases = list(operation.phases.order_by("index"))
    diagnosis.facts = {
        "operation": {"id": operation.pk, "kind": operation.kind, "state": operation.state, "phase": operation.phase,
                      "error_code": operation.error_code, "error_message": operation.error_message},
        "phases": [{"slug": p.slug, "state": p.state, "attempts": p.attempts} for p in phases],
        "resources_left": [{"phase": p.slug, "state": p.state, "resources": _resources(p.reference)}
                           for p in phases if p.state in (PhaseState.SUCCEEDED, PhaseState.FAILED)
                           and _resources(p.reference)],
        "outputs": _resources(operation.outputs),
    }
    if operation.state != OperationState.FAILED:
        diagnosis.find("creation_not_failed", INFO, f"{operation.title} is {operation.state}, not failed.",
                       [f"operation {operation.pk} state={operation.state} phase={operation.phase}"])
        if not operation.is_terminal:
            diagnosis.suggest(INVESTIGATE, "wait_for_operation", {"operation_id": operation.pk},
                              "The creation is still under way: follow it to its end.")
        return diagnosis
    failed = _failed_phase(operation)
    provider = dict(failed.error_detail) if failed else {}
    diagnosis.facts["provider"] = {key: provider.get(key, "") for key in ("service", "operation", "code", "message",
                                                                           "request_id")}
    slug = failed.slug if failed else operation.phase
    evidence = [f"phase {slug} failed with {failed.error_code if failed else operation.error_code}: "
                f"{failed.error_message if failed else operation.error_message}"]
    if provider.get("code"):
        evidence.append(f"{provider.get('service', 'AWS')} {provider.get('operation', '')} answered "
                        f"{provider['code']}: {provider.get('message', '')}".replace("  ", " "))
    if provider.get("request_id"):
        evidence.append(f"request id {provider['request_id']}")
    diagnosis.find("creation_failed", ERROR, f"{operation.title} failed in phase {slug}.", evidence, subject=slug)
    _causes(diagnosis, cluster, failed.error_code if failed else operation.error_code, provider)
    _suggest(diagnosis, cluster, operation, slug)
    return diagnosis


def _causes(diagnosis: Diagnosis, cluster: Cluster, error_code: str, provider: dict[str, Any]) -> None:
    code = str(provider.get("code") or "")
    spec = cluster.spec or {}
    if code in QUOTA_CODES or error_code in QUOTA_ERRORS:
        diagnosis.find("quota_exceeded", ERROR, "An AWS quota was exceeded.", _quota_evidence(cluster, spec),
                       subject=code)
    elif code in CAPACITY_CODES or "insufficient capacity" in str(provider.get("message", "")).lower():
        diagnosis.find("insufficient_capacity", ERROR,
                       f"AWS has no capacity for {spec.get('instance_type', 'the instance type')} in "
                       f"{spec.get('zone', 'the zone')} right now.", [f"{code}: {provider.get('message', '')}"],
                       subject=code)
    elif error_code == "cloud_throttled":
        diagnosis.find("throttled", WARNING, "AWS throttled the requests; a retry usually succeeds.", [code])


def _quota_evidence(cluster: Cluster, spec: dict[str, Any]) -> list[str]:
    instance_type = spec.get("instance_type", "")
    requested = spec.get("instance_count")
    try:
        quota = next((q for q in capacity.quotas(cluster.region) if q.instance_type == instance_type), None)
        in_use = capacity.hyperpod_usage(cluster.region).get(instance_type, 0)
    except ApplicationError as error:
        return [f"the quotas could not be read: {error.message}"]
    if quota is None:
        return [f"no cluster-usage quota is listed for {instance_type}"]
    return [f"quota {quota.quota_name} ({quota.quota_code}) is {quota.value:g}",
            f"{in_use} {instance_type} already in use by HyperPod clusters in {cluster.region}",
            f"{requested} requested by this cluster"]


def _suggest(diagnosis: Diagnosis, cluster: Cluster, operation: Operation, slug: str) -> None:
    codes = {finding.code for finding in diagnosis.findings}
    diagnosis.suggest(INVESTIGATE, "list_operation_logs", {"operation_id": operation.pk, "phase": slug},
                      "Read what the failed phase sent and saw.")
    if "quota_exceeded" in codes:
        diagnosis.suggest(INVESTIGATE, "list_cluster_quotas", {"region": cluster.region},
                          "Compare the quota with what is in use; an increase is requested in AWS Service Quotas.")
    if "insufficient_capacity" in codes:
        diagnosis.suggest(INVESTIGATE, "list_training_plans", {"region": cluster.region},
                          "A training plan reserves capacity; its zone decides where the cluster runs.")
        diagnosis.suggest(INVESTIGATE, "list_instance_types", {"region": cluster.region, "accelerated": True},
                          "Other types or zones may have capacity.")
    diagnosis.suggest(RETRY, "retry_operation", {"operation_id": operation.pk},
                      "Once the cause is fixed (quota raised, capacity back): only the failed phase runs again.")
    diagnosis.suggest(REPLACE, "delete_cluster", {"cluster_id": cluster.pk, "confirm": cluster.name},
                      "If the choices themselves must change (zone, instance type, count): delete what the failed "
                      "creation left (listed in facts.resources_left), then create the cluster again — ask the user.")
