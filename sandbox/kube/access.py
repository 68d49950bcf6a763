"""Who a verified caller is on a cluster, and what EKS lets them do (authorization).

The AWS side describes each cluster's access (``ClusterAccess``: its authentication mode, access entries with
their associated access policies, and the creator when EKS makes the creator an implicit admin). ``user_of``
maps a verified ``Credential`` to a ``User`` as EKS's authenticator does:

* ``API`` / ``API_AND_CONFIG_MAP``: the access entry whose principal is the caller's IAM principal (an
  assumed role's session is its role). Its username is the entry's (``{{SessionName}}`` and ``{{AccountID}}``
  filled in), its Kubernetes groups the entry's, its permissions the entry's access policies.
* ``CONFIG_MAP`` / ``API_AND_CONFIG_MAP`` (when no entry matched): the cluster creator when
  ``bootstrapClusterCreatorAdminPermissions`` held at creation and the mode is ``CONFIG_MAP`` (EKS's implicit
  ``system:masters`` mapping; in the other modes EKS made the creator an access entry instead), else the
  ``mapRoles``/``mapUsers`` item of the ``kube-system/aws-auth`` ConfigMap naming the principal.

Nobody matched: ``None`` — the request is ``401 Unauthorized``, as EKS answers. ``authorize`` then allows a
request when the user is in ``system:masters``, when it is discovery (non-resource paths and self subject reviews,
which every authenticated user may do), or when an associated policy's rules (``sandbox.kube.policies``) allow it
within the association's scope: ``cluster`` anywhere, ``namespace`` only for requests inside one of its
namespaces (a trailing ``*`` matches a prefix) — never cluster-scoped objects or lists across namespaces; else
``403 Forbidden`` worded like the apiserver's RBAC refusal — unless the cluster's RBAC bindings grant the user's
name or Kubernetes groups the request (``sandbox.kube.rbac``), as EKS authorizes after its access policies.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import yaml

from sandbox.kube import policies, rbac
from sandbox.kube.errors import ApiError, qualified

if TYPE_CHECKING:
    from sandbox.kube.store import Store

MASTERS = "system:masters"
_ASSUMED = re.compile(r"arn:[^:]+:sts::(\d{12}):assumed-role/([^/]+)/(.+)")
_SELF_REVIEWS = {("authorization.k8s.io", "selfsubjectaccessreviews"),
                 ("authorization.k8s.io", "selfsubjectrulesreviews"), ("authentication.k8s.io", "selfsubjectreviews")}


@dataclass(frozen=True)
class Credential:
    """What the AWS side knows of an access key: its secret, the session token issued with it (temporary
    credentials), the ARN ``GetCallerIdentity`` reports and the IAM principal access entries name."""

    access_key: str
    secret_key: str
    session_token: str | None
    arn: str
    principal_arn: str


@dataclass(frozen=True)
class Association:
    """An associated access policy; ``namespaces`` is ``None`` for the ``cluster`` scope."""

    policy_arn: str
    namespaces: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Entry:
    principal_arn: str
    username: str
    groups: tuple[str, ...] = ()
    policies: tuple[Association, ...] = ()


@dataclass(frozen=True)
class ClusterAccess:
    mode: str = "API"
    entries: tuple[Entry, ...] = ()
    creator_arn: str | None = None
    """The principal EKS maps to ``system:masters`` in ``CONFIG_MAP`` mode (``None`` without bootstrap)."""


@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...] = ()
    policies: tuple[Association, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class Request:
    """The authorization attributes of a request; ``resource`` is ``None`` for non-resource paths."""

    verb: str
    group: str = ""
    resource: str | None = None
    subresource: str | None = None
    namespace: str | None = None
    name: str | None = None


def _username(template: str, credential: Credential) -> str:
    assumed = _ASSUMED.fullmatch(credential.arn)
    session = assumed.group(3) if assumed else ""
    account = credential.principal_arn.split(":")[4] if credential.principal_arn.count(":") >= 5 else ""
    return template.replace("{{SessionName}}", session).replace("{{AccountID}}", account)


def _aws_auth(config_map: dict[str, Any] | None, credential: Credential) -> User | None:
    data = (config_map or {}).get("data") or {}
    for key, arn_key in (("mapRoles", "rolearn"), ("mapUsers", "userarn")):
        try:
            items = yaml.safe_load(data.get(key) or "[]") or []
        except yaml.YAMLError:
            continue
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict) and item.get(arn_key) == credential.principal_arn:
                return User(_username(str(item.get("username") or credential.arn), credential),
                            tuple(str(group) for group in item.get("groups") or ()))
    return None


def user_of(credential: Credential, access: ClusterAccess, aws_auth: dict[str, Any] | None) -> User | None:
    """The Kubernetes user EKS maps ``credential`` to (see the module docstring), or ``None`` (401).
    ``aws_auth`` is the cluster's ``kube-system/aws-auth`` ConfigMap, if any."""
    if access.mode != "CONFIG_MAP":
        entry = next((e for e in access.entries if e.principal_arn == credential.principal_arn), None)
        if entry is not None:
            return User(_username(entry.username, credential), entry.groups, entry.policies)
    if access.mode == "API":
        return None
    if access.mode == "CONFIG_MAP" and access.creator_arn == credential.principal_arn:
        return User("kubernetes-admin", (MASTERS,))
    return _aws_auth(aws_auth, credential)


def _in_scope(association: Association, request: Request) -> bool:
    if association.namespaces is None:
        return True
    namespace = request.namespace
    return namespace is not None and any(
        namespace == allowed or (allowed.endswith("*") and namespace.startswith(allowed[:-1]))
        for allowed in association.namespaces)


def _forbidden(user: User, request: Request) -> ApiError:
    assert request.resource is not None
    resource = request.resource + (f"/{request.subresource}" if request.subresource else "")
    where = f'in the namespace "{request.namespace}"' if request.namespace else "at the cluster scope"
    why = (f'User "{user.name}" cannot {request.verb} resource "{resource}" in API group "{request.group}" '
           f"{where}")
    subject = qualified(request.group, request.resource)
    message = f'{subject} "{request.name}" is forbidden: {why}' if request.name else f"{subject} is forbidden: {why}"
    details: dict[str, Any] = {"name": request.name} if request.name else {}
    if request.group:
        details["group"] = request.group
    details["kind"] = request.resource
    return ApiError(403, "Forbidden", message, details)


def authorize(user: User, request: Request, store: Store | None = None) -> None:
    """Raise ``403 Forbidden`` unless ``user`` may make ``request`` (by its access policies, else by the RBAC
    bindings in ``store``)."""
    if MASTERS in user.groups or request.resource is None or (request.group, request.resource) in _SELF_REVIEWS:
        return
    resource = request.resource + (f"/{request.subresource}" if request.subresource else "")
    for association in user.policies:
        if _in_scope(association, request) and policies.allows(policies.rules_of(association.policy_arn),
                                                                request.verb, request.group, resource):
            return
    if store is not None and rbac.allows(store, user, request):
        return
    raise _forbidden(user, request)
