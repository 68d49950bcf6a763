"""HyperPod node operations: list, describe, and the batch delete / reboot / replace actions.

Batch actions answer like SageMaker: each requested id lands in ``Successful`` or in ``Failed`` with an error
code (``NodeIdNotFound``/``InvalidNodeStatus`` for deletes, ``InstanceIdNotFound``/``InvalidInstanceStatus``
for reboots and replacements), and the same for logical ids. Deleting a node also lowers its group's target
count, as HyperPod does, so the node is not replaced. Only Running nodes can be rebooted or replaced; any node
that is not already shutting down can be deleted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sandbox.aws import core
from sandbox.aws import hyperpod_model as model
from sandbox.aws.core import ApiError, Call, operation, validation
from sandbox.aws.hyperpod import lookup


def _status(node: model.Node) -> dict[str, Any]:
    status, message = model.node_status(node)
    return {"Status": status, "Message": message}


def _summary(cluster: model.Cluster, node: model.Node, logical_ids: bool) -> dict[str, Any]:
    group = cluster.groups.get(node.group)
    return {
        "InstanceGroupName": node.group, "InstanceId": node.instance_id,
        "NodeLogicalId": node.logical_id if logical_ids else None, "InstanceType": node.instance_type,
        "LaunchTime": core.utc(node.launched_at), "InstanceStatus": _status(node),
        "LastSoftwareUpdateTime": core.utc(node.software_updated_at) if node.software_updated_at else None,
        "PrivateDnsHostname": node.private_dns,
        "CurrentImageReleaseVersion": group.image_release if group else model.IMAGE_RELEASE_VERSION,
        "ImageVersionStatus": "UpToDate",
    }


def node_details(cluster: model.Cluster, node: model.Node) -> dict[str, Any]:
    group = cluster.groups.get(node.group)
    spec = group.spec if group else {}
    details = {**_summary(cluster, node, logical_ids=True),
               "Placement": {"AvailabilityZone": node.subnet.availability_zone,
                             "AvailabilityZoneId": node.subnet.availability_zone_id},
               "PrivatePrimaryIp": node.private_ip, "CapacityType": node.capacity_type,
               "DesiredImageReleaseVersion": (group.desired_release or group.image_release) if group else None}
    for key in ("LifeCycleConfig", "OverrideVpcConfig", "ThreadsPerCore", "InstanceStorageConfigs",
                "NetworkInterface"):
        if key in spec:
            details[key] = spec[key]
    if "ImageId" in spec:
        details.update(CurrentImageId=spec["ImageId"], DesiredImageId=spec["ImageId"])
    kubernetes = spec.get("KubernetesConfig")
    if kubernetes is not None:
        labels, taints = kubernetes.get("Labels", {}), kubernetes.get("Taints", [])
        details["KubernetesConfig"] = {"CurrentLabels": labels, "DesiredLabels": labels,
                                       "CurrentTaints": taints, "DesiredTaints": taints}
    return details


@operation("sagemaker", "ListClusterNodes")
def list_cluster_nodes(call: Call) -> dict[str, Any]:
    cluster = lookup(call)
    nodes = list(cluster.nodes.values())
    if call.get("InstanceGroupNameContains"):
        nodes = [node for node in nodes if call.params["InstanceGroupNameContains"] in node.group]
    after, before = call.get("CreationTimeAfter"), call.get("CreationTimeBefore")
    if after is not None:
        nodes = [node for node in nodes if node.launched_at > after.timestamp()]
    if before is not None:
        nodes = [node for node in nodes if node.launched_at < before.timestamp()]
    by_name = call.get("SortBy") == "NAME"
    nodes.sort(key=lambda node: node.instance_id if by_name else node.launched_at,
               reverse=call.get("SortOrder") == "Descending")
    page, token = core.paginate(nodes, call.get("NextToken"), call.get("MaxResults"))
    logical_ids = bool(call.get("IncludeNodeLogicalIds"))
    return {"ClusterNodeSummaries": [_summary(cluster, node, logical_ids) for node in page], "NextToken": token}


@operation("sagemaker", "DescribeClusterNode")
def describe_cluster_node(call: Call) -> dict[str, Any]:
    cluster = lookup(call)
    node_id, logical_id = call.get("NodeId"), call.get("NodeLogicalId")
    if not node_id and not logical_id:
        raise validation("Either NodeId or NodeLogicalId must be specified.")
    node = cluster.nodes.get(node_id) if node_id else next(
        (node for node in cluster.nodes.values() if node.logical_id == logical_id), None)
    if node is None:
        raise ApiError("ResourceNotFound", f"Node {node_id or logical_id} not found in cluster {cluster.name}.")
    return {"NodeDetails": node_details(cluster, node)}


def _batch(call: Call, allowed: tuple[str, ...], act: Callable[[model.Cluster, model.Node], None],
           code_key: str, not_found: str, invalid: str) -> dict[str, Any]:
    cluster = lookup(call)
    if cluster.status not in ("InService", "Updating"):
        raise validation(f"Cluster {cluster.name} is in {cluster.status} state; nodes can be acted on only when "
                         "it is InService or Updating.")
    node_ids, logical_ids = call.get("NodeIds", []), call.get("NodeLogicalIds", [])
    if not node_ids and not logical_ids:
        raise validation("Either NodeIds or NodeLogicalIds must be specified.")
    result: dict[str, list[Any]] = {"Successful": [], "Failed": [], "SuccessfulNodeLogicalIds": [],
                                    "FailedNodeLogicalIds": []}

    def handle(key: str, requested: str, node: model.Node | None, ok: str, failed: str) -> None:
        if node is None:
            result[failed].append({key: requested, code_key: not_found,
                                   "Message": f"Node {requested} was not found in cluster {cluster.name}."})
        elif node.phase not in allowed:
            status = model.node_status(node)[0]
            result[failed].append({key: requested, code_key: invalid,
                                   "Message": f"Node {requested} is in {status} status."})
        else:
            act(cluster, node)
            result[ok].append(requested)

    for node_id in dict.fromkeys(node_ids):
        handle("NodeId", node_id, cluster.nodes.get(node_id), "Successful", "Failed")
    for logical_id in dict.fromkeys(logical_ids):
        node = next((node for node in cluster.nodes.values() if node.logical_id == logical_id), None)
        handle("NodeLogicalId", logical_id, node, "SuccessfulNodeLogicalIds", "FailedNodeLogicalIds")
    return {key: value or None for key, value in result.items()}


@operation("sagemaker", "BatchDeleteClusterNodes")
def batch_delete_cluster_nodes(call: Call) -> dict[str, Any]:
    return _batch(call, ("launching", "running", "rebooting"), model.scale_in, "Code", "NodeIdNotFound",
                  "InvalidNodeStatus")


@operation("sagemaker", "BatchRebootClusterNodes")
def batch_reboot_cluster_nodes(call: Call) -> dict[str, Any]:
    return _batch(call, ("running",), model.reboot, "ErrorCode", "InstanceIdNotFound", "InvalidInstanceStatus")


@operation("sagemaker", "BatchReplaceClusterNodes")
def batch_replace_cluster_nodes(call: Call) -> dict[str, Any]:
    return _batch(call, ("running",), model.replace, "ErrorCode", "InstanceIdNotFound", "InvalidInstanceStatus")
