"""EKS cluster access policies as Kubernetes RBAC rules, and how a rule matches a request.

AWS describes its access policies as allow-only rules "similar to the Kubernetes user-facing cluster roles"; the
four the product uses or could use are those roles' rules (Kubernetes 1.32, without aggregated CRD rules — the
policies do not grow when an operator installs ``aggregate-to-*`` ClusterRoles):

* ``AmazonEKSClusterAdminPolicy`` — ``cluster-admin``: every verb on every resource and non-resource URL.
* ``AmazonEKSAdminPolicy`` — ``admin``: ``edit`` plus Roles and RoleBindings and local subject access reviews.
* ``AmazonEKSEditPolicy`` — ``edit``: ``view`` plus writes to workloads, pods (exec, attach, port-forward, eviction),
  Services, ConfigMaps, Secrets, ServiceAccounts, PVCs, Ingresses, NetworkPolicies, PDBs and HPAs, and reading Secrets.
* ``AmazonEKSViewPolicy`` — ``view``: reading those (not Secrets), Namespaces, Events, quotas and limit ranges.
* ``AmazonEKSAdminViewPolicy``: reading every resource, Secrets included.

None of them lets a principal write cluster-scoped objects except ``AmazonEKSClusterAdminPolicy``. The other
policies EKS lists (``AmazonEKSAutoNodePolicy``, ``…BlockStoragePolicy``, ``…ComputePolicy``,
``…LoadBalancingPolicy``, ``…NetworkingPolicy``, ``…HybridPolicy``) are for EKS's own components and grant
nothing here.
"""

from __future__ import annotations

from dataclasses import dataclass

READ = ("get", "list", "watch")
WRITE = ("create", "delete", "deletecollection", "patch", "update")
ALL = ("*",)


@dataclass(frozen=True)
class Rule:
    groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]


_VIEW = (
    Rule(("",), ("configmaps", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "pods",
                 "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts", "services",
                 "services/status", "bindings", "events", "limitranges", "namespaces/status", "pods/log",
                 "pods/status", "replicationcontrollers/status", "resourcequotas", "resourcequotas/status",
                 "namespaces"), READ),
    Rule(("apps",), ("controllerrevisions", "daemonsets", "daemonsets/status", "deployments", "deployments/scale",
                     "deployments/status", "replicasets", "replicasets/scale", "replicasets/status", "statefulsets",
                     "statefulsets/scale", "statefulsets/status"), READ),
    Rule(("autoscaling",), ("horizontalpodautoscalers", "horizontalpodautoscalers/status"), READ),
    Rule(("batch",), ("cronjobs", "cronjobs/status", "jobs", "jobs/status"), READ),
    Rule(("policy",), ("poddisruptionbudgets", "poddisruptionbudgets/status"), READ),
    Rule(("networking.k8s.io",), ("ingresses", "ingresses/status", "networkpolicies"), READ),
    Rule(("discovery.k8s.io",), ("endpointslices",), READ),
)
_EDIT = (
    *_VIEW,
    Rule(("",), ("pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"), READ),
    Rule(("",), ("serviceaccounts",), ("impersonate",)),
    Rule(("",), ("pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"), WRITE),
    Rule(("",), ("pods/eviction", "serviceaccounts/token"), ("create",)),
    Rule(("",), ("configmaps", "events", "persistentvolumeclaims", "replicationcontrollers",
                 "replicationcontrollers/scale", "secrets", "serviceaccounts", "services", "services/proxy"), WRITE),
    Rule(("apps",), ("daemonsets", "deployments", "deployments/rollback", "deployments/scale", "replicasets",
                     "replicasets/scale", "statefulsets", "statefulsets/scale"), WRITE),
    Rule(("autoscaling",), ("horizontalpodautoscalers",), WRITE),
    Rule(("batch",), ("cronjobs", "jobs"), WRITE),
    Rule(("networking.k8s.io",), ("ingresses", "networkpolicies"), WRITE),
    Rule(("policy",), ("poddisruptionbudgets",), WRITE),
)
_ADMIN = (
    *_EDIT,
    Rule(("authorization.k8s.io",), ("localsubjectaccessreviews",), ("create",)),
    Rule(("rbac.authorization.k8s.io",), ("rolebindings", "roles"), READ + WRITE),
)
_ADMIN_VIEW = (Rule(ALL, ALL, READ),)
_CLUSTER_ADMIN = (Rule(ALL, ALL, ALL),)

PREFIX = "arn:aws:eks::aws:cluster-access-policy/"
POLICIES: dict[str, tuple[Rule, ...]] = {
    "AmazonEKSClusterAdminPolicy": _CLUSTER_ADMIN, "AmazonEKSAdminPolicy": _ADMIN, "AmazonEKSEditPolicy": _EDIT,
    "AmazonEKSViewPolicy": _VIEW, "AmazonEKSAdminViewPolicy": _ADMIN_VIEW,
}


def rules_of(policy_arn: str) -> tuple[Rule, ...]:
    """The rules of an access policy ARN (any partition); nothing for a policy that grants nothing here."""
    name = policy_arn.rpartition(":cluster-access-policy/")[2]
    return POLICIES.get(name, ())


def allows(rules: tuple[Rule, ...], verb: str, group: str, resource: str) -> bool:
    """RBAC's match: ``resource`` is ``plural`` or ``plural/subresource``; ``*`` matches any group, verb or
    resource (subresources included), ``*/sub`` any resource's ``sub``."""
    for rule in rules:
        if not ("*" in rule.verbs or verb in rule.verbs) or not ("*" in rule.groups or group in rule.groups):
            continue
        sub = resource.partition("/")[2]
        if "*" in rule.resources or resource in rule.resources or (sub and f"*/{sub}" in rule.resources):
            return True
    return False
