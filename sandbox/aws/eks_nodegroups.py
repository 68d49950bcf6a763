"""EKS managed node groups: CreateNodegroup, DescribeNodegroup, ListNodegroups, UpdateNodegroupConfig and
DeleteNodegroup, with EKS's checks and states.

A node group is created on an ACTIVE cluster only (``InvalidRequestException`` otherwise), under a name unique in
the cluster (``ResourceInUseException``), with a role ARN as ``nodeRole``, subnets EC2 knows in the cluster's VPC and a
scaling configuration given whole or not at all (default min 1, max 2, desired 2) where 0 <= min <= desired <= max
and max >= 1 (``InvalidParameterException``). It is CREATING, then ACTIVE with ``desiredSize`` instances (the
simulator makes each a Kubernetes Node labelled ``eks.amazonaws.com/nodegroup``); with access entries on, EKS
gives its node role an ``EC2_LINUX`` access entry. UpdateNodegroupConfig takes any part of the scaling
configuration (checked merged with the current one), labels and taints to add or remove, only while the group is
ACTIVE (``ResourceInUseException``), and a change that changes nothing is ``InvalidParameterException``; the group
is UPDATING until the instances follow. An outcome (``sandbox.aws.outcomes``, resource ``eks-nodegroup``) makes
creation end CREATE_FAILED with a ``NodeCreationFailure`` health issue and no instances. DeleteNodegroup is refused
while the group is CREATING (``ResourceInUseException``); the group is DELETING, then gone. The cluster cannot be
deleted while it has node groups (``sandbox.aws.eks.delete_cluster``).
"""

from __future__ import annotations

import re
from typing import Any

from sandbox import clock
from sandbox.aws import core, eks, eks_model, outcomes
from sandbox.aws.core import ApiError, Call, operation
from sandbox.aws.eks_model import EksCluster, Nodegroup
from sandbox.aws.network import subnet_facts, unknown_subnets

NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_-]{0,62}")
DEFAULT_SCALING = {"minSize": 1, "maxSize": 2, "desiredSize": 2}
DEFAULT_INSTANCE_TYPES = ["t3.medium"]
DEFAULT_AMI_TYPE = "AL2023_x86_64_STANDARD"
DEFAULT_DISK_GIB = 20
RELEASE_DATE = "20251120"
MAX_TAINTS = 50


def _invalid(cluster: EksCluster, message: str, nodegroup: str | None = None) -> ApiError:
    return eks.invalid(message, clusterName=cluster.name, **({"nodegroupName": nodegroup} if nodegroup else {}))


def _lookup(call: Call) -> tuple[EksCluster, Nodegroup]:
    cluster = eks.lookup(call, "clusterName")
    name = call.params["nodegroupName"]
    nodegroup = cluster.nodegroups.get(name)
    if nodegroup is None:
        raise ApiError("ResourceNotFoundException", f"No node group found for name: {name}.",
                       clusterName=cluster.name, nodegroupName=name)
    return cluster, nodegroup


def _check_scaling(cluster: EksCluster, name: str, scaling: dict[str, int]) -> None:
    low, high, desired = scaling["minSize"], scaling["maxSize"], scaling["desiredSize"]
    if low < 0 or desired < 0:
        raise _invalid(cluster, "minSize and desiredSize must be 0 or more.", name)
    if high < 1:
        raise _invalid(cluster, "maxSize must be at least 1.", name)
    if low > high:
        raise _invalid(cluster, f"Minimum capacity {low} can't be greater than maximum capacity {high}", name)
    if low > desired:
        raise _invalid(cluster, f"Minimum capacity {low} can't be greater than desired size {desired}", name)
    if desired > high:
        raise _invalid(cluster, f"Desired capacity {desired} can't be greater than max size {high}", name)


def _check_taints(cluster: EksCluster, name: str, taints: list[dict[str, str]]) -> None:
    if len(taints) > MAX_TAINTS:
        raise _invalid(cluster, f"A node group can have at most {MAX_TAINTS} taints.", name)
    for taint in taints:
        if not taint.get("key") or not taint.get("effect"):
            raise _invalid(cluster, "Every taint needs a key and an effect.", name)


def _check_subnets(cluster: EksCluster, name: str, subnet_ids: list[str]) -> None:
    """Every subnet exists in EC2 and lies in the cluster's VPC (``InvalidParameterException``, as EKS)."""
    if not subnet_ids:
        raise _invalid(cluster, "Subnets are required.", name)
    missing = unknown_subnets(cluster.region, subnet_ids)
    if missing:
        raise _invalid(cluster, eks.ec2_not_found("subnet ID", missing[0], "InvalidSubnetID.NotFound"), name)
    if any(subnet_facts(cluster.region, subnet_id).vpc_id != cluster.vpc_id for subnet_id in subnet_ids):
        raise _invalid(cluster, f"Specified subnets must belong to cluster's vpc {cluster.vpc_id}", name)


def render(cluster: EksCluster, nodegroup: Nodegroup) -> dict[str, Any]:
    """The ``Nodegroup`` structure."""
    spec = nodegroup.spec
    return {
        "nodegroupName": nodegroup.name, "nodegroupArn": nodegroup.arn, "clusterName": cluster.name,
        "version": spec.get("version") or cluster.version,
        "releaseVersion": spec.get("releaseVersion") or f"{cluster.version}.0-{RELEASE_DATE}",
        "createdAt": core.utc(nodegroup.created_at), "modifiedAt": core.utc(nodegroup.modified_at),
        "status": nodegroup.status, "capacityType": spec.get("capacityType", "ON_DEMAND"),
        "scalingConfig": dict(nodegroup.scaling), "instanceTypes": spec.get("instanceTypes", DEFAULT_INSTANCE_TYPES),
        "subnets": spec["subnets"], "amiType": spec.get("amiType", DEFAULT_AMI_TYPE), "nodeRole": spec["nodeRole"],
        "labels": dict(nodegroup.labels), "taints": [dict(taint) for taint in nodegroup.taints],
        "resources": {"autoScalingGroups": [{"name": f"eks-{nodegroup.name}-{nodegroup.arn.rsplit('/', 1)[-1]}"}]},
        "diskSize": spec.get("diskSize", DEFAULT_DISK_GIB), "health": {"issues": [dict(i) for i in nodegroup.issues]},
        "updateConfig": spec.get("updateConfig", {"maxUnavailable": 1}), "tags": dict(nodegroup.tags),
    }


@operation("eks", "CreateNodegroup")
def create_nodegroup(call: Call) -> dict[str, Any]:
    cluster = eks.lookup(call, "clusterName")
    name = call.params["nodegroupName"]
    if not NAME.fullmatch(name):
        raise _invalid(cluster, "Nodegroup name must be 1-63 letters, digits, hyphens and underscores, starting with "
                                "a letter or digit.", name)
    eks.require_active(cluster)
    if name in cluster.nodegroups:
        raise ApiError("ResourceInUseException", f"NodeGroup already exists with name {name} and cluster name "
                       f"{cluster.name}", clusterName=cluster.name, nodegroupName=name)
    role = call.params["nodeRole"]
    if not eks._ROLE_ARN.fullmatch(role):
        raise _invalid(cluster, f"The role with name {role} cannot be found.", name)
    _check_subnets(cluster, name, call.params["subnets"])
    given = call.get("scalingConfig", {})
    if given and set(given) != set(DEFAULT_SCALING):
        raise _invalid(cluster, "scalingConfig needs minSize, maxSize and desiredSize together.", name)
    scaling = dict(given or DEFAULT_SCALING)
    _check_scaling(cluster, name, scaling)
    taints = [dict(taint) for taint in call.get("taints", [])]
    _check_taints(cluster, name, taints)
    node_tags = dict(call.get("tags", {}))
    outcome = outcomes.take("eks-nodegroup", name, node_tags)
    now = clock.now()
    spec = {key: value for key, value in call.params.items()
            if key not in ("clusterName", "nodegroupName", "tags", "scalingConfig", "labels", "taints",
                           "clientRequestToken")}
    nodegroup = Nodegroup(name=name, arn=core.arn("eks", cluster.region, f"nodegroup/{cluster.name}/{name}/"
                                                                         f"{core.new_uuid()}"),
                          created_at=now, since=now, modified_at=now, spec=spec, tags=node_tags, scaling=scaling,
                          labels=dict(call.get("labels", {})), taints=taints,
                          pending_failure=outcome[1] if outcome else None)
    cluster.nodegroups[name] = nodegroup
    eks_model.ensure_node_entry(cluster, role, "EC2_LINUX")
    return {"nodegroup": render(cluster, nodegroup)}


@operation("eks", "DescribeNodegroup")
def describe_nodegroup(call: Call) -> dict[str, Any]:
    cluster, nodegroup = _lookup(call)
    return {"nodegroup": render(cluster, nodegroup)}


@operation("eks", "ListNodegroups")
def list_nodegroups(call: Call) -> dict[str, Any]:
    cluster = eks.lookup(call, "clusterName")
    page, token = core.paginate(sorted(cluster.nodegroups), call.get("nextToken"), call.get("maxResults"))
    return {"nodegroups": page, "nextToken": token}


def _changed_taints(nodegroup: Nodegroup, change: dict[str, Any]) -> list[dict[str, str]]:
    removed = {(taint["key"], taint.get("effect")) for taint in change.get("removeTaints") or []}
    added = [dict(taint) for taint in change.get("addOrUpdateTaints") or []]
    replaced = {taint["key"] for taint in added}
    kept = [taint for taint in nodegroup.taints
            if (taint["key"], taint.get("effect")) not in removed and taint["key"] not in replaced]
    return kept + added


@operation("eks", "UpdateNodegroupConfig")
def update_nodegroup_config(call: Call) -> dict[str, Any]:
    cluster, nodegroup = _lookup(call)
    name = nodegroup.name
    if nodegroup.status != "ACTIVE":
        raise ApiError("ResourceInUseException", f"Nodegroup {name} is {nodegroup.status}; only an ACTIVE node group "
                       "can be updated.", clusterName=cluster.name, nodegroupName=name)
    scaling = {**nodegroup.scaling, **call.get("scalingConfig", {})}
    _check_scaling(cluster, name, scaling)
    label_change = call.get("labels", {})
    labels = {key: value for key, value in nodegroup.labels.items()
              if key not in (label_change.get("removeLabels") or [])}
    labels.update(label_change.get("addOrUpdateLabels") or {})
    taints = _changed_taints(nodegroup, call.get("taints", {}))
    _check_taints(cluster, name, taints)
    update_config = call.get("updateConfig")
    if (scaling == nodegroup.scaling and labels == nodegroup.labels and taints == nodegroup.taints
            and update_config in (None, nodegroup.spec.get("updateConfig"))):
        raise _invalid(cluster, "No changes needed", name)
    params = [{"type": key[0].upper() + key[1:], "value": str(value)} for key, value in scaling.items()
              if value != nodegroup.scaling[key]]
    if labels != nodegroup.labels:
        params.append({"type": "LabelsToAdd", "value": str(label_change.get("addOrUpdateLabels") or {})})
    if taints != nodegroup.taints:
        params.append({"type": "TaintsToAdd", "value": str(call.get("taints", {}).get("addOrUpdateTaints") or [])})
    nodegroup.scaling, nodegroup.labels, nodegroup.taints = scaling, labels, taints
    if update_config is not None:
        nodegroup.spec["updateConfig"] = update_config
    nodegroup.status, nodegroup.since, nodegroup.modified_at = "UPDATING", clock.now(), clock.now()
    return {"update": eks.start_nodegroup_update(cluster, name, params)}


@operation("eks", "DeleteNodegroup")
def delete_nodegroup(call: Call) -> dict[str, Any]:
    cluster, nodegroup = _lookup(call)
    if nodegroup.status == "CREATING":
        raise ApiError("ResourceInUseException", f"Nodegroup {nodegroup.name} is currently being created.",
                       clusterName=cluster.name, nodegroupName=nodegroup.name)
    if nodegroup.status != "DELETING":
        nodegroup.status, nodegroup.since, nodegroup.modified_at = "DELETING", clock.now(), clock.now()
    return {"nodegroup": render(cluster, nodegroup)}
