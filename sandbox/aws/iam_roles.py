"""Whether a service may assume an IAM role passed to it, as EKS and SageMaker check on ``CreateCluster``.

A role passed to EKS (``roleArn``) must exist and trust ``eks.amazonaws.com``; a HyperPod group's
``ExecutionRole`` must exist and trust ``sagemaker.amazonaws.com``. The trust policy is read from moto's IAM: a
statement that allows ``sts:AssumeRole`` (or ``sts:*``/``*``) to the service principal.

IAM is eventually consistent: a role created moments ago may not be assumable yet, and AWS answers the same refusal
as for a missing role. The sandbox keeps a new role unassumable for :func:`propagation_seconds` of AWS time
(``INSTANTSTART_SANDBOX_IAM_PROPAGATION_SECONDS``, default 5; ``PUT /_sandbox/iam {"propagation_seconds": n}``;
scaled by the sandbox clock like every duration), so a caller's retry for a just-created role is exercised.
"""

from __future__ import annotations

import datetime
import json
import os
import re
from typing import Any
from urllib.parse import unquote

from moto.iam.models import iam_backends

from sandbox import clock, control
from sandbox.aws import core

DEFAULT_PROPAGATION_SECONDS = float(os.environ.get("INSTANTSTART_SANDBOX_IAM_PROPAGATION_SECONDS", "5"))
_ROLE_ARN = re.compile(r"arn:aws[a-z-]*:iam::(\d{12}):role/(?:[\w+=,.@-]+/)*([\w+=,.@-]+)")
_propagation = DEFAULT_PROPAGATION_SECONDS


def propagation_seconds() -> float:
    return _propagation


def set_propagation_seconds(value: float) -> None:
    """How long (nominal seconds) a new role stays unassumable (0 ≤ value ≤ 3600)."""
    if not 0 <= value <= 3600:
        raise ValueError("propagation_seconds must be between 0 and 3600")
    global _propagation
    _propagation = value


@control.on_reset
def _reset() -> None:
    set_propagation_seconds(DEFAULT_PROPAGATION_SECONDS)


def _role(arn: str) -> Any:
    match = _ROLE_ARN.fullmatch(arn)
    # moto's IAM backend is looked up only if something created it (creating it loads every managed policy).
    if match is None or match.group(1) != core.ACCOUNT_ID or core.ACCOUNT_ID not in iam_backends:
        return None
    backend = iam_backends[core.ACCOUNT_ID]["global"]
    with core.moto_lock("iam"):  # an IAM request may be adding a role meanwhile
        return next((role for role in backend.roles.values() if role.arn == arn), None)


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _trusts(document: str, service: str) -> bool:
    try:
        policy = json.loads(unquote(document) if document.startswith("%") else document)
    except ValueError:
        return False
    for statement in _listed(policy.get("Statement", [])):
        if not isinstance(statement, dict) or statement.get("Effect") != "Allow":
            continue
        actions = _listed(statement.get("Action", []))
        principal = statement.get("Principal", {})
        services = _listed(principal.get("Service", [])) if isinstance(principal, dict) else []
        if service in services and any(action in ("sts:AssumeRole", "sts:*", "*") for action in actions):
            return True
    return False


def assumable_by(arn: str, service: str) -> bool:
    """Whether ``service`` (``eks.amazonaws.com``…) may assume the role ``arn`` now: it exists, trusts the
    service, and IAM has propagated it."""
    role = _role(arn)
    if role is None or not _trusts(role.assume_role_policy_document, service):
        return False
    created = role.create_date if role.create_date.tzinfo else role.create_date.replace(tzinfo=datetime.UTC)
    return clock.due(created.timestamp(), _propagation)
