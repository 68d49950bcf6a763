"""The AWS world as the other sandbox parts see it, in-process: read-only, plus the simulator's channels back
(node health reports and Karpenter scaling).

For the Kubernetes emulator::

    eks_clusters() -> list[EksClusterView]        # every EKS cluster: name, region, status, endpoint, …
    eks_cluster(region, name) -> EksClusterView | None
    eks_addons(region, cluster) -> list[AddonView]  # its add-ons with status ([] for an unknown cluster)
    eks_nodegroup_nodes(region, cluster) -> list[NodegroupNodeView]
                                                  # the instances of its managed node groups
    eks_access(region, cluster) -> ClusterAccess | None
                                                  # authentication mode, access entries and their policies
    caller(access_key) -> Credential              # whose key it is and the secret it signs with

For the simulator::

    hyperpod_clusters() -> list[HyperPodView]     # clusters with instance groups and nodes
    hyperpod_cluster(arn) -> HyperPodView | None
    on_node_event(callback) / off_node_event(callback)
                                                  # NodeEvent per node change (launched, running, rebooting,
                                                  # rebooted, replacing, replaced, terminating, terminated)
    set_node_health(cluster_arn, instance_id, status)
    scale_out(cluster_arn, group, count, labels, taints) -> list[str]
                                                  # HyperPod's Karpenter: raise a group's target, launch nodes
    scale_in(cluster_arn, instance_id)            # terminate a node and lower its group's target
    task_governance(region, eks_cluster) -> GovernanceView | None
                                                  # the scheduler config and compute quotas in force, while the
                                                  # task-governance add-on is installed

Every reader first applies the transitions that are due, so what it returns is current. Node events are
delivered on the thread that observed the change (an API request thread, a reader, or the server's ticker,
which observes a few times a second) after the world's lock is released, so a callback may call back into
this module; callbacks should return quickly. ``set_node_health`` records the HyperPod health label the
simulator derived (``Schedulable``, ``Unschedulable``, ``UnschedulablePendingReboot``,
``UnschedulablePendingReplacement``); with the cluster's NodeRecovery ``Automatic`` (the default) the two
"pending" verdicts start a reboot or a replacement, as HyperPod does. It raises ``LookupError`` for an unknown
cluster or instance.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from sandbox.aws import callers, core, eks_model, fsx, governance, hyperpod, mlflow
from sandbox.aws import hyperpod_model as model
from sandbox.aws.hyperpod_groups import capacity_type
from sandbox.aws.network import subnet_facts
from sandbox.aws.views import (
    AddonView,
    EksClusterView,
    HyperPodView,
    InstanceGroupView,
    NodeEvent,
    NodegroupNodeView,
    NodeView,
    SubnetView,
)
from sandbox.kube.access import Association, ClusterAccess, Credential, Entry

__all__ = ["AddonView", "EksClusterView", "HyperPodView", "InstanceGroupView", "NodeEvent", "NodeView",
           "NodegroupNodeView", "SubnetView", "caller", "eks_access", "eks_addons", "eks_cluster", "eks_clusters",
           "eks_nodegroup_nodes",
           "hyperpod_cluster", "hyperpod_clusters", "off_node_event", "on_node_event", "refresh", "scale_in",
           "scale_out", "set_node_health", "snapshot", "task_governance"]


def refresh() -> None:
    """Apply every transition that is due (and queue the node events they cause)."""
    with core.transaction():
        eks_model.refresh()
        model.refresh()
        mlflow.refresh()
        fsx.refresh()
        governance.refresh()


def _eks_view(cluster: eks_model.EksCluster) -> EksClusterView:
    return EksClusterView(name=cluster.name, region=cluster.region, arn=cluster.arn, status=cluster.status,
                          version=cluster.version, endpoint=cluster.endpoint, oidc_issuer=cluster.oidc_issuer,
                          authentication_mode=cluster.authentication_mode, created_at=cluster.created_at)


def eks_clusters() -> list[EksClusterView]:
    with core.transaction():
        refresh()
        return [_eks_view(cluster) for cluster in eks_model.clusters()]


def eks_cluster(region: str, name: str) -> EksClusterView | None:
    with core.transaction():
        refresh()
        cluster = eks_model.find(region, name)
        return _eks_view(cluster) if cluster is not None else None


def eks_addons(region: str, cluster: str) -> list[AddonView]:
    with core.transaction():
        refresh()
        found = eks_model.find(region, cluster)
        if found is None:
            return []
        return [AddonView(name=addon.name, version=addon.version, status=addon.status,
                          configuration_values=addon.spec.get("configurationValues"),
                          service_account_role_arn=addon.spec.get("serviceAccountRoleArn"))
                for addon in found.addons.values()]


def task_governance(region: str, cluster: str) -> governance.GovernanceView | None:
    """The task-governance policies in force on the HyperPod cluster the EKS cluster orchestrates, or ``None`` while
    the EKS cluster lacks the ``amazon-sagemaker-hyperpod-taskgovernance`` add-on (installed: ACTIVE, UPDATING or
    DEGRADED) or orchestrates no HyperPod cluster."""
    with core.transaction():
        refresh()
        found = eks_model.find(region, cluster)
        addon = found.addons.get(governance.ADDON) if found is not None else None
        if found is None or addon is None or addon.status not in ("ACTIVE", "UPDATING", "DEGRADED"):
            return None
        return governance.task_governance(found.arn)


def eks_access(region: str, cluster: str) -> ClusterAccess | None:
    """Who may use the cluster's Kubernetes API (``None`` for an unknown cluster): its authentication mode, its
    access entries with their access policies, and its creator when EKS maps the creator to ``system:masters``
    (``CONFIG_MAP`` mode with ``bootstrapClusterCreatorAdminPermissions``)."""
    with core.transaction():
        found = eks_model.find(region, cluster)
        if found is None:
            return None
        entries = tuple(
            Entry(principal_arn=entry.principal_arn, username=entry.username, groups=tuple(entry.groups),
                  policies=tuple(Association(arn, tuple(scope["accessScope"]["namespaces"])
                                             if scope["accessScope"]["type"] == "namespace" else None)
                                 for arn, scope in entry.policies.items()))
            for entry in found.access_entries.values())
        return ClusterAccess(mode=found.authentication_mode, entries=entries,
                             creator_arn=found.creator_arn if found.bootstrap_admin else None)


def caller(access_key: str) -> Credential:
    """The credential behind an access key, as STS knows it (``sandbox.aws.callers``)."""
    with core.transaction():
        return callers.credential(access_key)


def eks_nodegroup_nodes(region: str, cluster: str) -> list[NodegroupNodeView]:
    """The instances of the EKS cluster's managed node groups ([] for an unknown cluster)."""
    with core.transaction():
        refresh()
        found = eks_model.find(region, cluster)
        if found is None:
            return []
        return [NodegroupNodeView(
            nodegroup=nodegroup.name, instance_id=instance.instance_id,
            instance_type=(nodegroup.spec.get("instanceTypes") or ["t3.medium"])[0],
            capacity_type=nodegroup.spec.get("capacityType", "ON_DEMAND"),
            ami_type=nodegroup.spec.get("amiType", "AL2023_x86_64_STANDARD"),
            availability_zone=instance.availability_zone, availability_zone_id=instance.availability_zone_id,
            private_ip=instance.private_ip, private_dns=instance.private_dns, launch_time=instance.launched_at,
            labels=dict(nodegroup.labels), taints=[dict(taint) for taint in nodegroup.taints])
            for nodegroup in found.nodegroups.values() for instance in nodegroup.instances]


def _group_view(cluster: model.Cluster, group: model.Group) -> InstanceGroupView:
    details = hyperpod.group_details(cluster, group)
    kubernetes = group.kubernetes
    subnets = [subnet_facts(cluster.region, subnet) for subnet in model.group_subnets(cluster, group)]
    return InstanceGroupView(name=group.name, instance_type=group.instance_type, target_count=group.target,
                             current_count=details["CurrentCount"], status=details["Status"],
                             threads_per_core=group.spec.get("ThreadsPerCore"),
                             training_plan_arn=group.spec.get("TrainingPlanArn"),
                             labels=dict(kubernetes.get("Labels") or {}),
                             taints=[dict(taint) for taint in kubernetes.get("Taints") or []],
                             capacity_type=capacity_type(group.spec),
                             deep_health_checks=bool(group.spec.get("OnStartDeepHealthChecks")),
                             subnets=tuple(SubnetView(facts.subnet_id, facts.availability_zone,
                                                      facts.availability_zone_id) for facts in subnets))


def _hyperpod_view(cluster: model.Cluster) -> HyperPodView:
    eks_arn = cluster.eks_cluster_arn
    return HyperPodView(name=cluster.name, arn=cluster.arn, region=cluster.region, status=cluster.status,
                        eks_cluster_arn=eks_arn, eks_cluster_name=eks_arn.rsplit("/", 1)[-1] if eks_arn else None,
                        node_recovery=cluster.node_recovery,
                        instance_groups=tuple(_group_view(cluster, group) for group in cluster.groups.values()),
                        nodes=tuple(model.node_view(cluster, node) for node in cluster.nodes.values()),
                        autoscaling=(cluster.spec.get("AutoScaling") or {}).get("Mode") == "Enable"
                        and cluster.status in ("InService", "Updating"))


def hyperpod_clusters() -> list[HyperPodView]:
    with core.transaction():
        refresh()
        return [_hyperpod_view(cluster) for cluster in model.clusters()]


def hyperpod_cluster(arn: str) -> HyperPodView | None:
    with core.transaction():
        refresh()
        cluster = model.find(arn, region="")
        return _hyperpod_view(cluster) if cluster is not None else None


def on_node_event(callback: Callable[[NodeEvent], None]) -> Callable[[NodeEvent], None]:
    """Subscribe ``callback`` to node events (usable as a decorator); subscriptions survive resets."""
    return model.on_node_event(callback)


def off_node_event(callback: Callable[[NodeEvent], None]) -> None:
    """Unsubscribe ``callback`` (no-op if it is not subscribed)."""
    model.off_node_event(callback)


def set_node_health(cluster_arn: str, instance_id: str, status: str) -> None:
    with core.transaction():
        refresh()
        model.set_health(*_cluster_and_node(cluster_arn, instance_id), status)


def _cluster_and_node(cluster_arn: str, instance_id: str) -> tuple[model.Cluster, model.Node]:
    cluster = model.find(cluster_arn, region="")
    node = cluster.nodes.get(instance_id) if cluster is not None else None
    if cluster is None or node is None:
        raise LookupError(f"no node {instance_id} in HyperPod cluster {cluster_arn}")
    return cluster, node


def _cluster_and_group(cluster_arn: str, group_name: str) -> tuple[model.Cluster, model.Group]:
    cluster = model.find(cluster_arn, region="")
    group = cluster.groups.get(group_name) if cluster is not None else None
    if cluster is None or group is None or group.deleting:
        raise LookupError(f"no instance group {group_name} in HyperPod cluster {cluster_arn}")
    return cluster, group


class LimitExceeded(Exception):
    """A launch the account's service quota does not allow (``ResourceLimitExceeded``; the message is AWS's)."""


def scale_out(cluster_arn: str, group_name: str, count: int, labels: dict[str, str],
              taints: list[dict[str, str]]) -> list[str]:
    """Raise the group's target by ``count`` and launch as many instances carrying the Kubernetes ``labels`` and
    ``taints`` (``Key``/``Value``/``Effect``) besides the group's, as HyperPod's Karpenter does for a NodeClaim;
    returns their instance ids. ``LookupError`` for an unknown cluster or group, ``LimitExceeded`` when the
    region's "<type> for cluster usage" quota does not allow ``count`` more instances."""
    with core.transaction():
        refresh()
        cluster, group = _cluster_and_group(cluster_arn, group_name)
        if not group.spec.get("TrainingPlanArn"):
            refusal = hyperpod.usage_refusal(cluster.region, group.instance_type, count)
            if refusal:
                raise LimitExceeded(refusal)
        return [node.instance_id for node in model.scale_out(cluster, group, count, labels, taints)]


def scale_in(cluster_arn: str, instance_id: str) -> None:
    """Terminate the instance and lower its group's target (``LookupError`` for an unknown one)."""
    with core.transaction():
        refresh()
        model.scale_in(*_cluster_and_node(cluster_arn, instance_id))


def snapshot() -> dict[str, Any]:
    """The world as JSON-ready data (``GET /_sandbox/world``)."""
    return {"eks_clusters": [{**asdict(view), "addons": [asdict(addon) for addon in eks_addons(view.region,
                                                                                                view.name)]}
                             for view in eks_clusters()],
            "hyperpod_clusters": [asdict(view) for view in hyperpod_clusters()]}
