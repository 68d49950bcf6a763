"""HyperPod-managed Karpenter autoscaling: HyperPod instance groups scale from zero for pending pods. It
manages HyperPod instance groups only — never general EC2 capacity.

Enabling, in order:

1. the cluster role ``instantstart-<cluster id>-hyperpod-autoscaling``, trusted by ``hyperpod.sagemaker.amazonaws.com``
   (AWS's documented trust) with an inline policy allowing ``sagemaker:BatchAddClusterNodes`` and
   ``sagemaker:BatchDeleteClusterNodes`` on this HyperPod cluster only;
2. ``UpdateCluster`` with ``AutoScaling {Mode: Enable, AutoScalerType: Karpenter}``, ``ClusterRole``,
   ``NodeProvisioningMode: Continuous`` and ``NodeRecovery: Automatic``, until InService;
3. per instance group Karpenter can scale (:func:`supported`: on-demand, no deep health checks), a
   ``HyperpodNodeClass`` (``karpenter.sagemaker.amazonaws.com/v1``, cluster-scoped,
   ``spec.instanceGroups: [group]``) and a Karpenter ``NodePool`` (``karpenter.sh/v1``) pointing at it, requiring
   the group's instance type and name, consolidating empty nodes after :data:`CONSOLIDATE_AFTER`. Both carry our
   labels; HyperPod installs their CRDs once autoscaling is on, so this step waits for them.

Disabling deletes our NodePools and node classes, sends ``AutoScaling {Mode: Disable}`` and deletes the role.
:func:`apply_group_objects` / :func:`remove_group_objects` keep step 3 in line when a group is added or deleted
while autoscaling is on (:func:`enabled` says whether it is).
"""

from __future__ import annotations

from typing import Any, cast

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from cloud import kube
from clusters.features import identity
from clusters.features.base import FeatureObservation, converge_hyperpod, require_hyperpod
from clusters.features.catalog import AUTOSCALING
from clusters.features.training import hyperpod_arn
from clusters.instance_groups import mirror, specs
from clusters.models import CapacityType, Cluster, FeatureState
from clusters.ownership import CLUSTER_LABEL, iam_name, kube_labels
from config.errors import Conflict
from operations.context import StepContext
from operations.pipeline import PhaseFailed, Progress

PURPOSE = "hyperpod-autoscaling"
SERVICE_PRINCIPAL = "hyperpod.sagemaker.amazonaws.com"
KARPENTER_GROUP, KARPENTER_VERSION, NODE_POOLS = "karpenter.sh", "v1", "nodepools"
NODE_CLASS_GROUP, NODE_CLASS_VERSION, NODE_CLASSES = "karpenter.sagemaker.amazonaws.com", "v1", "hyperpodnodeclasses"
NODE_CLASS_KIND = "HyperpodNodeClass"
GROUP_LABEL = "instantstart.io/instance-group"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
INSTANCE_GROUP_LABEL = "sagemaker.amazonaws.com/instance-group-name"
CONSOLIDATE_AFTER = "5m"


def policy(cluster: Cluster) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": [
        {"Sid": "ScaleThisCluster", "Effect": "Allow", "Resource": hyperpod_arn(cluster),
         "Action": ["sagemaker:BatchAddClusterNodes", "sagemaker:BatchDeleteClusterNodes"]}]}


def _autoscaling(described: dict[str, Any] | None) -> dict[str, Any]:
    return (described or {}).get("AutoScaling") or {}


def enabled(cluster: Cluster) -> bool:
    """Whether HyperPod autoscaling is on for ``cluster`` — read from DescribeCluster, not from the record."""
    return _autoscaling(mirror.describe(cluster)).get("Mode") == "Enable"


def object_name(group: str) -> str:
    """The NodePool's and HyperpodNodeClass's name for ``group`` (Kubernetes names are lower case)."""
    return f"instantstart-{group.lower()}"[:63]


def node_class(cluster: Cluster, group: str) -> dict[str, Any]:
    return {"apiVersion": f"{NODE_CLASS_GROUP}/{NODE_CLASS_VERSION}", "kind": NODE_CLASS_KIND,
            "metadata": {"name": object_name(group), "labels": {**kube_labels(cluster), GROUP_LABEL: group}},
            "spec": {"instanceGroups": [group]}}


def node_pool(cluster: Cluster, group: str, instance_type: str) -> dict[str, Any]:
    return {"apiVersion": f"{KARPENTER_GROUP}/{KARPENTER_VERSION}", "kind": "NodePool",
            "metadata": {"name": object_name(group), "labels": {**kube_labels(cluster), GROUP_LABEL: group}},
            "spec": {
                "template": {"spec": {
                    "nodeClassRef": {"group": NODE_CLASS_GROUP, "kind": NODE_CLASS_KIND, "name": object_name(group)},
                    "requirements": [
                        {"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": [instance_type]},
                        {"key": INSTANCE_GROUP_LABEL, "operator": "In", "values": [group]}]}},
                "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": CONSOLIDATE_AFTER}}}


def _custom(cluster: Cluster) -> k8s.CustomObjectsApi:
    return k8s.CustomObjectsApi(kube.api_client(cluster.eks_name, region=cluster.region))


_KINDS = ((NODE_CLASS_GROUP, NODE_CLASS_VERSION, NODE_CLASSES), (KARPENTER_GROUP, KARPENTER_VERSION, NODE_POOLS))


def _ours(found: dict[str, Any], cluster: Cluster) -> bool:
    return (found.get("metadata", {}).get("labels") or {}).get(CLUSTER_LABEL) == str(cluster.pk)


def _apply(api: k8s.CustomObjectsApi, cluster: Cluster, kind: tuple[str, str, str], body: dict[str, Any]) -> None:
    group, version, plural = kind
    name = body["metadata"]["name"]
    try:
        found = cast(dict[str, Any], api.get_cluster_custom_object(group, version, plural, name))  # a JSON object
    except ApiException as error:
        if error.status != 404:
            raise
        api.create_cluster_custom_object(group, version, plural, body)
        return
    if not _ours(found, cluster):
        raise Conflict(f"A {body['kind']} named {name} exists and is not InstantStart's.",
                       code="karpenter_object_taken")
    if found.get("spec") != body["spec"]:
        api.patch_cluster_custom_object(group, version, plural, name, {"spec": body["spec"]})


def apply_group_objects(cluster: Cluster, *, group: str, instance_type: str) -> None:
    """Create (or bring up to date) the HyperpodNodeClass and NodePool of instance group ``group``.

    Raises ``karpenter_object_taken`` (409) when an object of that name is not ours, and the Kubernetes error
    (404) while the Karpenter CRDs are not installed yet (autoscaling not on)."""
    api = _custom(cluster)
    _apply(api, cluster, _KINDS[0], node_class(cluster, group))
    _apply(api, cluster, _KINDS[1], node_pool(cluster, group, instance_type))


def remove_group_objects(cluster: Cluster, *, group: str) -> None:
    """Delete the NodePool and HyperpodNodeClass of ``group`` when they exist and are ours (nothing otherwise)."""
    api = _custom(cluster)
    for kind_group, version, plural in reversed(_KINDS):
        try:
            found = cast(dict[str, Any], api.get_cluster_custom_object(kind_group, version, plural,
                                                                       object_name(group)))
            if _ours(found, cluster):
                api.delete_cluster_custom_object(kind_group, version, plural, object_name(group))
        except ApiException as error:
            if error.status != 404:
                raise


def our_objects(cluster: Cluster) -> dict[str, list[str]]:
    """Names of our NodePools and node classes on ``cluster`` (empty lists when the CRDs are not installed)."""
    api = _custom(cluster)
    found: dict[str, list[str]] = {}
    for group, version, plural in _KINDS:
        try:
            items = cast(dict[str, Any], api.list_cluster_custom_object(
                group, version, plural, label_selector=f"{CLUSTER_LABEL}={cluster.pk}"))["items"]
        except ApiException as error:
            if error.status != 404:
                raise
            items = []
        found[plural] = sorted(item["metadata"]["name"] for item in items)
    return found


def supported(details: dict[str, Any]) -> bool:
    """Whether HyperPod's Karpenter can scale the group (one entry of DescribeCluster's ``InstanceGroups``): only
    on-demand capacity (no spot, no training plan) without on-start deep health checks, AWS documents."""
    return (specs.capacity_type_of(details) == CapacityType.ON_DEMAND and not details.get("OnStartDeepHealthChecks")
            and bool(details.get("InstanceType")))


def groups(described: dict[str, Any]) -> list[tuple[str, str]]:
    """``(name, instance type)`` of each instance group of a DescribeCluster answer that Karpenter can scale."""
    return [(group["InstanceGroupName"], group["InstanceType"])
            for group in described.get("InstanceGroups", []) if supported(group)]


SCALE_DOWN_WARNING = "autoscaling_may_scale_to_zero"


def scale_down_warning(described: dict[str, Any] | None) -> dict[str, Any] | None:
    """The warning for turning autoscaling on while groups Karpenter will manage have instances: AWS documents that
    Karpenter may then scale them down, to 0 when their nodes are empty. ``None`` when no such group has any."""
    running = {group["InstanceGroupName"]: int(group.get("CurrentCount") or group.get("TargetCount") or 0)
               for group in (described or {}).get("InstanceGroups", []) if supported(group)}
    running = {name: count for name, count in running.items() if count > 0}
    if not running:
        return None
    listed = ", ".join(f"{name} ({count} instance{'s' if count != 1 else ''})"
                       for name, count in sorted(running.items()))
    return {"code": SCALE_DOWN_WARNING, "groups": sorted(running),
            "message": "With autoscaling on, Karpenter manages the count of these instance groups and may scale them "
                       f"down, to 0 when their nodes are empty: {listed}."}


def observe(cluster: Cluster) -> FeatureObservation:
    described = mirror.describe(cluster)
    config = _autoscaling(described)
    on = config.get("Mode") == "Enable"
    details: dict[str, Any] = {"scope": "HyperPod instance groups only"}
    if on:
        details.update(status=config.get("Status", ""), cluster_role=(described or {}).get("ClusterRole", ""),
                       groups=[name for name, _ in groups(described or {})])
    state = FeatureState.ENABLED if on else FeatureState.DISABLED
    managed = not on or (described or {}).get("ClusterRole", "").endswith(f"/{iam_name(cluster, PURPOSE)}")
    return FeatureObservation(AUTOSCALING, state, managed=managed, details=details)


def role(cluster: Cluster) -> identity.RoleSpec:
    """The cluster role HyperPod's Karpenter scales this cluster's groups with."""
    return identity.RoleSpec(purpose=PURPOSE, trust=identity.service_trust(SERVICE_PRINCIPAL), policy=policy(cluster),
                             description=f"InstantStart: HyperPod autoscaling of {cluster.name}")


ENABLED = {"Mode": "Enable", "AutoScalerType": "Karpenter"}


def enable_members(role_arn: str) -> dict[str, Any]:
    """The ``UpdateCluster`` members that turn autoscaling on with ``role_arn`` as the cluster role."""
    return {"AutoScaling": ENABLED, "ClusterRole": role_arn, "NodeProvisioningMode": "Continuous",
            "NodeRecovery": "Automatic"}


def submit_enable(ctx: StepContext, cluster: Cluster) -> None:
    require_hyperpod(cluster)
    spec = role(cluster)
    role_arn = identity.ensure_role(cluster, purpose=spec.purpose, trust=spec.trust, policy=spec.policy,
                                    description=spec.description)
    ctx.record(cluster_role_arn=role_arn)
    ctx.log(f"Cluster role {role_arn} ready for HyperPod autoscaling.")


def poll_enable(ctx: StepContext, cluster: Cluster) -> Progress:
    role_arn = ctx.reference.get("cluster_role_arn") or (identity.role_summary(cluster, PURPOSE) or {})["arn"]
    progress = converge_hyperpod(
        cluster, what="Autoscaling",
        matches=lambda described: ({key: _autoscaling(described).get(key) for key in ENABLED} == ENABLED
                                   and described.get("ClusterRole") == role_arn),
        update=enable_members(role_arn))
    if not progress.done:
        return progress
    described = require_hyperpod(cluster)
    try:
        for name, instance_type in groups(described):
            apply_group_objects(cluster, group=name, instance_type=instance_type)
    except ApiException as error:
        if error.status == 404:
            return Progress.waiting("Waiting for HyperPod to install the Karpenter CRDs")
        raise
    except Conflict as error:
        raise PhaseFailed(error.message, code=error.code) from None
    ctx.log("NodePools for " + (", ".join(name for name, _ in groups(described)) or "no group") + ".")
    skipped = sorted({group["InstanceGroupName"] for group in described.get("InstanceGroups", [])}
                     - {name for name, _ in groups(described)})
    if skipped:
        ctx.log(f"Not autoscaled (spot, training plan or deep health checks): {', '.join(skipped)}.")
    return Progress.finished("Autoscaling on")


def submit_disable(ctx: StepContext, cluster: Cluster) -> None:
    require_hyperpod(cluster)
    ctx.log("Turning HyperPod autoscaling off.")


def poll_disable(ctx: StepContext, cluster: Cluster) -> Progress:
    if cluster.eks_name and _autoscaling(require_hyperpod(cluster)).get("Mode") == "Enable":
        left = our_objects(cluster)
        if any(left.values()):
            api = _custom(cluster)
            for (group, version, plural) in reversed(_KINDS):
                for name in left[plural]:
                    try:
                        api.delete_cluster_custom_object(group, version, plural, name)
                    except ApiException as error:
                        if error.status != 404:
                            raise
            ctx.log("Deleted " + ", ".join(name for names in left.values() for name in names) + ".")
    progress = converge_hyperpod(cluster, what="Autoscaling",
                                 matches=lambda described: _autoscaling(described).get("Mode") != "Enable",
                                 update={"AutoScaling": {"Mode": "Disable"}})
    if not progress.done:
        return progress
    deleted = identity.delete_role(cluster, PURPOSE)
    if deleted:
        ctx.log(f"Deleted the IAM role {deleted}.")
    return Progress.finished("Autoscaling off")
