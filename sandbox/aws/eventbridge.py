"""State-change events the sandbox's services send to Amazon EventBridge, as AWS's own services do.

What is sent (AWS's EventBridge event reference, sources ``aws.eks`` and ``aws.sagemaker``):

- EKS, for an add-on: ``EKS Addon Creation Succeeded`` / ``EKS Addon Creation Failed`` when a create ends,
  ``EKS Addon Update Succeeded`` / ``EKS Addon Update Failed`` when an update ends, ``EKS Addon Deletion Succeeded``
  when a delete ends, ``EKS Addon Health Degraded`` when a create ends DEGRADED. EKS sends nothing when a *cluster*
  becomes ACTIVE, and neither does the sandbox.
- SageMaker, for a HyperPod cluster: ``SageMaker HyperPod Cluster State Change`` on every change of
  ``ClusterStatus``, with ``ClusterName``, ``ClusterArn`` and ``ClusterStatus`` in ``detail``.

Every event names its resource's ARN in ``resources`` and goes to the account's default event bus in the resource's
region: moto's EventBridge matches it against the rules there and sends it to their targets. Events are handed over
after the extension lock is released (``core.enqueue``), as the node events are. AWS delivers these events on a best
effort basis; the sandbox delivers every one, at once.

**Delivery to an SQS queue** needs what AWS needs (``moto_fixes`` applies the check): the queue's resource policy
must allow the service principal ``events.amazonaws.com`` ``sqs:SendMessage`` on the queue, and when the statement
has an ``aws:SourceArn`` condition, for the rule that matched. Without that, EventBridge cannot deliver and the event
is dropped (AWS counts it in the rule's ``FailedInvocations`` metric; the sandbox in :data:`failed_invocations`).
"""

from __future__ import annotations

import fnmatch
import json
from collections import Counter
from typing import Any

from sandbox import control
from sandbox.aws import core

#: Events a rule matched but could not deliver to its SQS target, by rule ARN (AWS's FailedInvocations metric).
failed_invocations: Counter[str] = Counter()


@control.on_reset
def _reset() -> None:
    failed_invocations.clear()

#: Add-on status after an operation ended → the event EKS sends, by the status the add-on had before.
_ADDON_EVENTS = {
    ("CREATING", "ACTIVE"): "EKS Addon Creation Succeeded",
    ("CREATING", "CREATE_FAILED"): "EKS Addon Creation Failed",
    ("CREATING", "DEGRADED"): "EKS Addon Health Degraded",
    ("UPDATING", "ACTIVE"): "EKS Addon Update Succeeded",
    ("UPDATING", "UPDATE_FAILED"): "EKS Addon Update Failed",
    ("DELETING", None): "EKS Addon Deletion Succeeded",
}


def addon_changed(*, region: str, cluster_name: str, addon_name: str, addon_arn: str, was: str,
                  status: str | None) -> None:
    """An add-on's operation ended: ``was`` its status before, ``status`` after (``None``: deleted). Call under
    ``core.transaction()``."""
    detail_type = _ADDON_EVENTS.get((was, status))
    if detail_type is None:
        return
    detail = {"clusterName": cluster_name, "addonName": addon_name, "addonArn": addon_arn,
              "status": status or "DELETED"}
    _send(region, "aws.eks", detail_type, addon_arn, detail)


def hyperpod_cluster_changed(*, region: str, cluster_name: str, cluster_arn: str, status: str,
                             failure_message: str = "") -> None:
    """A HyperPod cluster's ``ClusterStatus`` changed. Call under ``core.transaction()``."""
    detail = {"ClusterArn": cluster_arn, "ClusterName": cluster_name, "ClusterStatus": status,
              "FailureMessage": failure_message}
    _send(region, "aws.sagemaker", "SageMaker HyperPod Cluster State Change", cluster_arn, detail)


def _send(region: str, source: str, detail_type: str, resource_arn: str, detail: dict[str, Any]) -> None:
    entry = {"Source": source, "DetailType": detail_type, "Resources": [resource_arn], "Detail": json.dumps(detail)}
    core.enqueue([lambda event: _put(region, event)], entry)


def _put(region: str, entry: dict[str, Any]) -> None:
    from moto.events.models import events_backends

    with core.moto_lock("events"):  # as an EventBridge request would; the delivery to SQS takes SQS's lock
        events_backends[core.ACCOUNT_ID][region].put_events([entry])


def queue_accepts(queue_policy: str | None, queue_arn: str, rule_arn: str) -> bool:
    """Whether a queue's resource policy lets EventBridge send it ``rule_arn``'s events (IAM's evaluation reduced to
    what such a policy says: an Allow for the service principal, the action and the queue, its ``aws:SourceArn``
    condition if any; an explicit Deny of the same wins)."""
    if not queue_policy:
        return False
    try:
        statements = json.loads(queue_policy).get("Statement", [])
    except (ValueError, AttributeError):
        return False
    if isinstance(statements, dict):
        statements = [statements]
    verdicts = [statement.get("Effect") for statement in statements if isinstance(statement, dict)
                and _applies(statement, queue_arn, rule_arn)]
    return "Allow" in verdicts and "Deny" not in verdicts


def _applies(statement: dict[str, Any], queue_arn: str, rule_arn: str) -> bool:
    principal = statement.get("Principal", {})
    services = principal.get("Service", []) if isinstance(principal, dict) else [principal]
    if "events.amazonaws.com" not in _listed(services) and "*" not in _listed(services):
        return False
    if not any(fnmatch.fnmatchcase("sqs:SendMessage", action) for action in _listed(statement.get("Action", []))):
        return False
    if not any(fnmatch.fnmatchcase(queue_arn, resource) for resource in _listed(statement.get("Resource", "*"))):
        return False
    for operator, conditions in statement.get("Condition", {}).items():
        for key, values in conditions.items():
            if key.lower() != "aws:sourcearn":
                return False  # a condition the sandbox cannot evaluate: it does not grant
            if not any(fnmatch.fnmatchcase(rule_arn, value) if "Like" in operator else rule_arn == value
                       for value in _listed(values)):
                return False
    return True


def _listed(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value)
