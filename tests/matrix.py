"""The permission matrix: every REST endpoint (and, through its operation id, every MCP tool) × every
relationship an actor can have to the object.

Later issues register their endpoints by appending ``Case``s to ``CASES``; ``test_permission_matrix``
fails when the OpenAPI schema has an operation without a case, so nothing ships unregistered. A case names its
operation by ``operationId``: the HTTP method and path come from the OpenAPI description, never restated here.

An actor not in ``allowed`` gets: 401 when anonymous; 404 when the object is team-scoped and the
actor is not in that team (outsider); 403 otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from accounts.models import AuditEvent, Membership
from mcp_server import openapi

ROLES = ("anonymous", "outsider", "viewer", "operator", "admin", "superuser")
MEMBERS = frozenset({"viewer", "operator", "admin", "superuser"})
AUTHENTICATED = frozenset(ROLES) - {"anonymous"}
#: Platform-wide actions: team creation under the default ``INSTANTSTART_TEAM_CREATION=platform_admins``, the import
#: rules, deleting the AWS resources of an imported cluster.
PLATFORM_ADMINS = frozenset({"superuser"})


@dataclass(frozen=True)
class Case:
    """The operation ``operation_id`` (its HTTP method and path are the OpenAPI description's) and the roles in
    ``allowed`` that may call it."""

    operation_id: str
    allowed: frozenset[str]
    #: the JSON body, or a function of the cast and the acting user returning it
    body: dict[str, Any] | Callable[[Any, Any], dict[str, Any]] | None = None
    #: path parameters, and any query parameters the call needs, computed from the cast and the acting user
    params: Callable[[Any, Any], dict[str, Any]] = field(default=lambda cast, actor: {})
    team_scoped: bool = True
    #: the endpoint reaches AWS (through the sandbox) for allowed actors
    sandbox: bool = False

    @property
    def method(self) -> str:
        return openapi.operation(self.operation_id).method

    def url(self, values: dict[str, Any]) -> str:
        """The operation's path with ``values`` in its path parameters; the other values as its query string."""
        described = openapi.operation(self.operation_id)
        unknown = set(values) - {*described.path_params, *described.query_params}
        if unknown:
            raise ValueError(f"{self.operation_id} has no parameters {sorted(unknown)}")
        path = described.path.format(**{name: values[name] for name in described.path_params})
        query = {name: value for name, value in values.items() if name in described.query_params}
        return f"{path}?{urlencode(query)}" if query else path

    def payload(self, cast, actor) -> dict[str, Any] | None:
        return self.body(cast, actor) if callable(self.body) else self.body

    def denied_status(self, role: str) -> int:
        if role == "anonymous":
            return 401
        if role == "outsider" and self.team_scoped:
            return 404
        return 403


def team(cast, actor) -> dict:
    return {"team_id": cast.team.pk}


def member_of_team(cast, actor) -> dict:
    return {"team_id": cast.team.pk, "membership_id": Membership.objects.get(team=cast.team, user=cast.viewer).pk}


def own_token(cast, actor) -> dict:
    from accounts.services import token_create

    user = actor or cast.admin
    return {"token_id": token_create(actor=user, name="matrix", source="system").token.pk}


def team_event(cast, actor) -> dict:
    return {"event_id": AuditEvent.objects.filter(team=cast.team).latest("id").pk}


CASES: list[Case] = [
    Case("me_retrieve", AUTHENTICATED, team_scoped=False),
    Case("me_update", AUTHENTICATED, body={"current_team": None}, team_scoped=False),
    Case("teams_list", AUTHENTICATED, team_scoped=False),
    Case("teams_create", PLATFORM_ADMINS, body={"name": "Matrix", "slug": "matrix"}, team_scoped=False),
    Case("teams_retrieve", MEMBERS, params=team),
    Case("teams_update", frozenset({"admin", "superuser"}), body={"description": "changed"}, params=team),
    Case("teams_destroy", frozenset({"admin", "superuser"}), params=team),
    Case("memberships_list", MEMBERS, params=team),
    Case("memberships_retrieve", MEMBERS, params=member_of_team),
    Case("memberships_update", frozenset({"admin", "superuser"}), body={"role": "operator"}, params=member_of_team),
    # The viewer's own membership: admins remove it, and the viewer may leave.
    Case("memberships_destroy", frozenset({"admin", "superuser", "viewer"}), params=member_of_team),
    Case("tokens_list", AUTHENTICATED, team_scoped=False),
    Case("tokens_create", AUTHENTICATED, body={"name": "ci", "expires_in_days": 30}, team_scoped=False),
    Case("tokens_retrieve", AUTHENTICATED, params=own_token, team_scoped=False),
    Case("tokens_revoke", AUTHENTICATED, params=own_token, team_scoped=False),
    Case("audit_events_list", AUTHENTICATED, team_scoped=False),
    Case("audit_events_retrieve", MEMBERS, params=team_event),
]


def operation_in(state: str):
    """Path parameters naming a fresh demo operation of the cast's team in ``state`` (``failed``: its first phase
    failed)."""

    def params(cast, actor) -> dict:
        from operations import demo
        from operations.models import OperationPhase, PhaseState

        operation = demo.demo_start(actor=cast.admin, team=cast.team, name="matrix", region="us-west-2",
                                    source="system")
        if state != "pending":
            first = OperationPhase.objects.get(operation=operation, index=0)
            first.state = PhaseState.FAILED if state == "failed" else PhaseState.RUNNING
            first.save()
            operation.state = state
            operation.save()
        return {"operation_id": operation.pk}

    return params


OPERATORS = frozenset({"operator", "admin", "superuser"})

CASES += [
    Case("operations_list", AUTHENTICATED, team_scoped=False),
    Case("operations_retrieve", MEMBERS, params=operation_in("pending")),
    Case("operation_phases_list", MEMBERS, params=operation_in("pending")),
    Case("operation_logs_list", MEMBERS, params=operation_in("pending")),
    Case("operations_retry", OPERATORS, body={}, params=operation_in("failed")),
    Case("operations_cancel", OPERATORS, body={}, params=operation_in("running")),
    Case("demo_operations_create", OPERATORS,
         body=lambda cast, actor: {"team": cast.team.pk, "name": "matrix"}),
]


def cluster_in(state: str = "active", *, origin: str = "created"):
    """Path parameters naming a cluster row of the cast's team in ``state`` (no cloud resources behind it)."""

    def params(cast, actor) -> dict:
        from tests import factories

        return {"cluster_id": factories.cluster(cast.team, "matrix", state=state, origin=origin).pk}

    return params


def volume_of_cluster(cast, actor) -> dict:
    from tests import factories

    cluster = factories.cluster(cast.team, "matrix")
    volume = factories.storage_volume(cluster, "data", state="available", bucket="matrix-data")
    return {"cluster_id": cluster.pk, "volume_id": volume.pk}


def eks_in_sandbox(cast, actor) -> dict:
    """An EKS cluster made directly in the sandbox (not tracked by InstantStart), to import: an import rule of the
    cast's team allows it, so its admins may."""
    from clusters.models import ImportRule
    from tests.clusters.sandbox import make_eks_cluster

    ImportRule.objects.get_or_create(team=cast.team, name_pattern="matrix-*")
    return {"team": cast.team.pk, "region": "us-west-2", "eks_name": make_eks_cluster("matrix-import").name}


def import_rule_of_team(cast, actor) -> dict:
    from clusters.models import ImportRule

    return {"rule_id": ImportRule.objects.create(team=cast.team, name_pattern="matrix-*").pk}


def team_query(cast, actor) -> dict:
    return {"team": cast.team.pk}


CREATE_BODY = {"name": "matrix", "region": "us-west-2", "zone": "us-west-2a", "instance_type": "ml.g5.8xlarge",
               "instance_count": 1}
ADMINS = frozenset({"admin", "superuser"})

CASES += [
    Case("clusters_list", AUTHENTICATED, team_scoped=False),
    Case("clusters_create", ADMINS, sandbox=True,
         body=lambda cast, actor: {"team": cast.team.pk, **CREATE_BODY}),
    Case("clusters_preflight", ADMINS, sandbox=True,
         body=lambda cast, actor: {"team": cast.team.pk, **CREATE_BODY}),
    Case("clusters_import", ADMINS, sandbox=True, body=lambda cast, actor: eks_in_sandbox(cast, actor)),
    Case("clusters_retrieve", MEMBERS, params=cluster_in()),
    Case("clusters_delete", ADMINS, params=cluster_in(), body={"confirm": "matrix"}),
    Case("clusters_refresh", OPERATORS, params=cluster_in(), sandbox=True),
    Case("cluster_operations_list", MEMBERS, params=cluster_in()),
    Case("active_cluster_retrieve", MEMBERS, params=team_query),
    Case("active_cluster_set", MEMBERS,
         body=lambda cast, actor: {"cluster": cluster_in()(cast, actor)["cluster_id"]}),
    Case("cluster_volumes_list", MEMBERS, params=cluster_in()),
    Case("cluster_volumes_create", OPERATORS, params=cluster_in(),
         body={"name": "data", "kind": "s3", "bucket": "matrix-data"}),
    Case("cluster_volumes_retrieve", MEMBERS, params=volume_of_cluster),
    Case("cluster_volumes_destroy", OPERATORS, params=volume_of_cluster),
    *[Case(f"inspect_{what}", MEMBERS, params=team_query, sandbox=True)
      for what in ("regions", "zones", "instance_types", "quotas", "training_plans")],
    Case("inspect_import_candidates", ADMINS, params=team_query, sandbox=True),
    Case("import_rules_list", AUTHENTICATED, team_scoped=False),
    Case("import_rules_create", PLATFORM_ADMINS, body=lambda cast, actor: {"team": cast.team.pk,
                                                                          "name_pattern": "matrix-*"}),
    Case("import_rules_destroy", PLATFORM_ADMINS, params=import_rule_of_team),
]

# The slices build on the names above.
from tests import (  # noqa: E402
    matrix_approvals,
    matrix_costs,
    matrix_diagnostics,
    matrix_features,
    matrix_governance,
    matrix_groups,
    matrix_inference,
    matrix_invitations,
    matrix_logs,
    matrix_mlflow,
    matrix_node_groups,
    matrix_nodes,
    matrix_notifications,
    matrix_service_accounts,
    matrix_spending,
    matrix_training,
)

CASES += [*matrix_groups.CASES, *matrix_node_groups.CASES, *matrix_nodes.CASES, *matrix_features.CASES,
          *matrix_governance.CASES,
          *matrix_training.CASES, *matrix_logs.CASES, *matrix_mlflow.CASES, *matrix_inference.CASES,
          *matrix_invitations.CASES, *matrix_approvals.CASES, *matrix_diagnostics.CASES,
          *matrix_notifications.CASES, *matrix_costs.CASES,
          *matrix_service_accounts.CASES, *matrix_spending.CASES]


def case(operation_id: str) -> Case:
    return next(c for c in CASES if c.operation_id == operation_id)
