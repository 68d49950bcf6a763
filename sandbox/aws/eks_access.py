"""EKS access entries, access policy associations and pod identity associations.

Access entries need the cluster's authentication mode to be API or API_AND_CONFIG_MAP (else
``InvalidRequestException``, as in EKS). Principals must be IAM role or user ARNs; types are STANDARD (the
default), EC2_LINUX, EC2_WINDOWS, FARGATE_LINUX, HYBRID_LINUX and HYPERPOD_LINUX, and only STANDARD entries
may name Kubernetes groups or a username. Policies are EKS's cluster access policies (``ListAccessPolicies``);
a ``namespace`` scope needs namespaces and a ``cluster`` scope must have none. Pod identity associations are
unique per (namespace, service account).
"""

from __future__ import annotations

import re
from typing import Any

from sandbox import clock
from sandbox.aws import core, eks, eks_model
from sandbox.aws.core import ApiError, Call, operation
from sandbox.aws.eks_model import AccessEntry, EksCluster, PodIdentity

ENTRY_TYPES = ("STANDARD", "EC2_LINUX", "EC2_WINDOWS", "FARGATE_LINUX", "HYBRID_LINUX", "HYPERPOD_LINUX")
POLICY_NAMES = ("AmazonEKSAdminPolicy", "AmazonEKSAdminViewPolicy", "AmazonEKSClusterAdminPolicy",
                "AmazonEKSEditPolicy", "AmazonEKSViewPolicy", "AmazonEKSAutoNodePolicy", "AmazonEKSBlockStoragePolicy",
                "AmazonEKSComputePolicy", "AmazonEKSLoadBalancingPolicy", "AmazonEKSNetworkingPolicy",
                "AmazonEKSHybridPolicy")
POLICY_PREFIX = "arn:aws:eks::aws:cluster-access-policy/"
_PRINCIPAL = re.compile(r"arn:aws[a-z-]*:iam::\d{12}:(role|user)/[\w+=,.@/-]+")


def _cluster(call: Call) -> EksCluster:
    cluster = eks.lookup(call, "clusterName")
    if cluster.authentication_mode not in eks_model.ACCESS_MODES_WITH_ENTRIES:
        raise ApiError("InvalidRequestException", "The cluster's authentication mode must be set to one of "
                       "[API, API_AND_CONFIG_MAP] to perform this operation.", clusterName=cluster.name)
    return cluster


def _entry(call: Call) -> tuple[EksCluster, AccessEntry]:
    cluster = _cluster(call)
    entry = cluster.access_entries.get(call.params["principalArn"])
    if entry is None:
        raise ApiError("ResourceNotFoundException", "The specified access entry resource could not be found.",
                       clusterName=cluster.name)
    return cluster, entry


def _render_entry(cluster: EksCluster, entry: AccessEntry) -> dict[str, Any]:
    return {"clusterName": cluster.name, "principalArn": entry.principal_arn, "kubernetesGroups": entry.groups,
            "accessEntryArn": entry.arn, "createdAt": core.utc(entry.created_at),
            "modifiedAt": core.utc(entry.modified_at), "tags": entry.tags or None, "username": entry.username,
            "type": entry.type}


@operation("eks", "CreateAccessEntry")
def create_access_entry(call: Call) -> dict[str, Any]:
    cluster = _cluster(call)
    principal = call.params["principalArn"]
    entry_type = call.get("type", "STANDARD")
    if not _PRINCIPAL.fullmatch(principal):
        raise eks.invalid(f"The specified principalArn is invalid: {principal}", clusterName=cluster.name)
    if entry_type not in ENTRY_TYPES:
        raise eks.invalid(f"The specified type is invalid: {entry_type}", clusterName=cluster.name)
    if entry_type != "STANDARD" and (call.get("kubernetesGroups") or call.get("username")):
        raise eks.invalid(f"kubernetesGroups and username cannot be specified for type {entry_type}.",
                          clusterName=cluster.name)
    if principal in cluster.access_entries:
        raise ApiError("ResourceInUseException", "The specified access entry resource is already in use on this "
                       "cluster.", clusterName=cluster.name)
    now = clock.now()
    groups = ["system:nodes"] if entry_type != "STANDARD" else list(call.get("kubernetesGroups", []))
    entry = AccessEntry(principal_arn=principal, arn=eks_model.access_entry_arn(cluster, principal),
                        type=entry_type, username=call.get("username") or eks_model.default_username(principal,
                                                                                                     entry_type),
                        groups=groups, tags=dict(call.get("tags", {})), created_at=now, modified_at=now)
    cluster.access_entries[principal] = entry
    return {"accessEntry": _render_entry(cluster, entry)}


@operation("eks", "DescribeAccessEntry")
def describe_access_entry(call: Call) -> dict[str, Any]:
    cluster, entry = _entry(call)
    return {"accessEntry": _render_entry(cluster, entry)}


@operation("eks", "ListAccessEntries")
def list_access_entries(call: Call) -> dict[str, Any]:
    cluster = _cluster(call)
    policy = call.get("associatedPolicyArn")
    principals = sorted(arn for arn, entry in cluster.access_entries.items() if policy in (None, *entry.policies))
    page, token = core.paginate(principals, call.get("nextToken"), call.get("maxResults"))
    return {"accessEntries": page, "nextToken": token}


@operation("eks", "UpdateAccessEntry")
def update_access_entry(call: Call) -> dict[str, Any]:
    cluster, entry = _entry(call)
    if entry.type != "STANDARD" and (call.get("kubernetesGroups") or call.get("username")):
        raise eks.invalid(f"kubernetesGroups and username cannot be updated for type {entry.type}.",
                          clusterName=cluster.name)
    if "kubernetesGroups" in call.params:
        entry.groups = list(call.params["kubernetesGroups"])
    if call.get("username"):
        entry.username = call.params["username"]
    entry.modified_at = clock.now()
    return {"accessEntry": _render_entry(cluster, entry)}


@operation("eks", "DeleteAccessEntry")
def delete_access_entry(call: Call) -> dict[str, Any]:
    cluster, entry = _entry(call)
    del cluster.access_entries[entry.principal_arn]
    return {}


def _render_policy(policy_arn: str, association: dict[str, Any]) -> dict[str, Any]:
    return {"policyArn": policy_arn, "accessScope": association["accessScope"],
            "associatedAt": core.utc(association["associatedAt"]), "modifiedAt": core.utc(association["modifiedAt"])}


@operation("eks", "AssociateAccessPolicy")
def associate_access_policy(call: Call) -> dict[str, Any]:
    cluster, entry = _entry(call)
    policy_arn = call.params["policyArn"]
    if policy_arn.removeprefix(POLICY_PREFIX) not in POLICY_NAMES or not policy_arn.startswith(POLICY_PREFIX):
        raise ApiError("ResourceNotFoundException", f"The specified policy {policy_arn} could not be found.",
                       clusterName=cluster.name)
    scope = call.params["accessScope"]
    namespaces = scope.get("namespaces", [])
    if scope.get("type") == "namespace" and not namespaces:
        raise eks.invalid("A namespace access scope requires at least one namespace.", clusterName=cluster.name)
    if scope.get("type") == "cluster" and namespaces:
        raise eks.invalid("A cluster access scope cannot have namespaces.", clusterName=cluster.name)
    if entry.type != "STANDARD":
        raise eks.invalid(f"Access policies cannot be associated with access entries of type {entry.type}.",
                          clusterName=cluster.name)
    now = clock.now()
    previous = entry.policies.get(policy_arn)
    entry.policies[policy_arn] = {"accessScope": {"type": scope.get("type"), "namespaces": namespaces},
                                  "associatedAt": previous["associatedAt"] if previous else now, "modifiedAt": now}
    return {"clusterName": cluster.name, "principalArn": entry.principal_arn,
            "associatedAccessPolicy": _render_policy(policy_arn, entry.policies[policy_arn])}


@operation("eks", "ListAssociatedAccessPolicies")
def list_associated_access_policies(call: Call) -> dict[str, Any]:
    cluster, entry = _entry(call)
    page, token = core.paginate(sorted(entry.policies), call.get("nextToken"), call.get("maxResults"))
    return {"clusterName": cluster.name, "principalArn": entry.principal_arn, "nextToken": token,
            "associatedAccessPolicies": [_render_policy(arn, entry.policies[arn]) for arn in page]}


@operation("eks", "DisassociateAccessPolicy")
def disassociate_access_policy(call: Call) -> dict[str, Any]:
    cluster, entry = _entry(call)
    if entry.policies.pop(call.params["policyArn"], None) is None:
        raise ApiError("ResourceNotFoundException", f"The policy {call.params['policyArn']} is not associated "
                       "with the specified access entry.", clusterName=cluster.name)
    return {}


@operation("eks", "ListAccessPolicies")
def list_access_policies(call: Call) -> dict[str, Any]:
    page, token = core.paginate(sorted(POLICY_NAMES), call.get("nextToken"), call.get("maxResults"))
    return {"accessPolicies": [{"name": name, "arn": POLICY_PREFIX + name} for name in page], "nextToken": token}


def _association(call: Call) -> tuple[EksCluster, PodIdentity]:
    cluster = eks.lookup(call, "clusterName")
    association = cluster.pod_identities.get(call.params["associationId"])
    if association is None:
        raise ApiError("ResourceNotFoundException", f"Association with id {call.params['associationId']} not "
                       "found.", clusterName=cluster.name)
    return cluster, association


def _render_association(cluster: EksCluster, association: PodIdentity) -> dict[str, Any]:
    return {"clusterName": cluster.name, "namespace": association.namespace,
            "serviceAccount": association.service_account, "roleArn": association.role_arn,
            "associationArn": association.arn, "associationId": association.id, "tags": association.tags or None,
            "createdAt": core.utc(association.created_at), "modifiedAt": core.utc(association.modified_at),
            "ownerArn": association.owner_arn, "disableSessionTags": association.disable_session_tags,
            "targetRoleArn": association.target_role_arn, "policy": association.policy}


@operation("eks", "CreatePodIdentityAssociation")
def create_pod_identity_association(call: Call) -> dict[str, Any]:
    cluster = eks.lookup(call, "clusterName")
    eks.require_active(cluster)
    namespace, service_account = call.params["namespace"], call.params["serviceAccount"]
    if any(a.namespace == namespace and a.service_account == service_account
           for a in cluster.pod_identities.values()):
        raise ApiError("ResourceInUseException", f"Association already exists: service account {service_account} "
                       f"in namespace {namespace}.", clusterName=cluster.name)
    now = clock.now()
    association_id = "a-" + core.lower_alnum(17)
    association = PodIdentity(
        id=association_id, arn=core.arn("eks", cluster.region, f"podidentityassociation/{cluster.name}/"
                                                               f"{association_id}"),
        namespace=namespace, service_account=service_account, role_arn=call.params["roleArn"], created_at=now,
        modified_at=now, tags=dict(call.get("tags", {})), target_role_arn=call.get("targetRoleArn"),
        disable_session_tags=bool(call.get("disableSessionTags", False)), policy=call.get("policy"))
    cluster.pod_identities[association_id] = association
    return {"association": _render_association(cluster, association)}


@operation("eks", "DescribePodIdentityAssociation")
def describe_pod_identity_association(call: Call) -> dict[str, Any]:
    cluster, association = _association(call)
    return {"association": _render_association(cluster, association)}


@operation("eks", "ListPodIdentityAssociations")
def list_pod_identity_associations(call: Call) -> dict[str, Any]:
    cluster = eks.lookup(call, "clusterName")
    selected = [a for a in cluster.pod_identities.values()
                if call.get("namespace") in (None, a.namespace)
                and call.get("serviceAccount") in (None, a.service_account)]
    page, token = core.paginate(sorted(selected, key=lambda a: a.created_at), call.get("nextToken"),
                                call.get("maxResults"))
    summaries = [{"clusterName": cluster.name, "namespace": a.namespace, "serviceAccount": a.service_account,
                  "associationArn": a.arn, "associationId": a.id, "ownerArn": a.owner_arn} for a in page]
    return {"associations": summaries, "nextToken": token}


@operation("eks", "UpdatePodIdentityAssociation")
def update_pod_identity_association(call: Call) -> dict[str, Any]:
    cluster, association = _association(call)
    if association.owner_arn:
        raise eks.invalid("This association is owned by an add-on; update it through the add-on.",
                          clusterName=cluster.name)
    for key, attribute in (("roleArn", "role_arn"), ("targetRoleArn", "target_role_arn"),
                           ("disableSessionTags", "disable_session_tags"), ("policy", "policy")):
        if key in call.params:
            setattr(association, attribute, call.params[key])
    association.modified_at = clock.now()
    return {"association": _render_association(cluster, association)}


@operation("eks", "DeletePodIdentityAssociation")
def delete_pod_identity_association(call: Call) -> dict[str, Any]:
    cluster, association = _association(call)
    if association.owner_arn:
        raise eks.invalid("This association is owned by an add-on; delete it through the add-on.",
                          clusterName=cluster.name)
    del cluster.pod_identities[association.id]
    return {"association": _render_association(cluster, association)}
