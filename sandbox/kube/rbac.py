"""Kubernetes RBAC over the Roles, ClusterRoles and bindings stored in a cluster, for the usernames and groups EKS
maps principals to (access entries' ``kubernetesGroups``, ``aws-auth`` groups).

A ClusterRoleBinding grants its ClusterRole's rules everywhere; a RoleBinding grants its Role's (or ClusterRole's)
rules in the binding's namespace only. Subjects match by ``User`` name or ``Group`` name (every mapped user is also
in ``system:authenticated``); ``ServiceAccount`` subjects never match a principal. A rule with ``resourceNames``
applies only to requests naming one of them. ClusterRole ``aggregationRule``s are not expanded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sandbox.kube import policies

if TYPE_CHECKING:
    from sandbox.kube.access import Request, User
    from sandbox.kube.store import Store

_GROUP = "rbac.authorization.k8s.io"


def _binds(binding: dict[str, Any], user: User) -> bool:
    groups = {*user.groups, "system:authenticated"}
    return any((subject.get("kind") == "User" and subject.get("name") == user.name)
               or (subject.get("kind") == "Group" and subject.get("name") in groups)
               for subject in binding.get("subjects") or [])


def _grants(role: dict[str, Any] | None, request: Request, resource: str) -> bool:
    for rule in (role or {}).get("rules") or []:
        names = rule.get("resourceNames") or []
        if names and request.name not in names:
            continue
        granted = policies.Rule(tuple(rule.get("apiGroups") or ()), tuple(rule.get("resources") or ()),
                                tuple(rule.get("verbs") or ()))
        if policies.allows((granted,), request.verb, request.group, resource):
            return True
    return False


def allows(store: Store, user: User, request: Request) -> bool:
    """Whether a binding in ``store`` lets ``user`` make the resource ``request``."""
    assert request.resource is not None
    resource = request.resource + (f"/{request.subresource}" if request.subresource else "")
    for binding in store.list(f"clusterrolebindings.{_GROUP}"):
        if _binds(binding, user) and _grants(
                store.find(f"clusterroles.{_GROUP}", (binding.get("roleRef") or {}).get("name", "")), request,
                resource):
            return True
    if request.namespace is None:
        return False
    for binding in store.list(f"rolebindings.{_GROUP}", request.namespace):
        ref = binding.get("roleRef") or {}
        role = (store.find(f"roles.{_GROUP}", ref.get("name", ""), request.namespace) if ref.get("kind") == "Role"
                else store.find(f"clusterroles.{_GROUP}", ref.get("name", "")))
        if _binds(binding, user) and _grants(role, request, resource):
            return True
    return False
