"""The instance-group mirror: ``InstanceGroup`` rows follow ``DescribeCluster``.

:func:`describe` reads the HyperPod cluster; :func:`mirror` writes what it says — one row per group (groups found
that InstantStart did not add are recorded with ``managed=False``), rows of groups AWS no longer has marked
``deleted`` — and the cluster's node and accelerator counts. Every writer that learns the groups (the create
pipeline, the group pipelines' polls, import, refresh) calls it, so the portal shows current against target count
while a group converges.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError
from django.db import transaction

from cloud import aws
from clusters.inspection import catalog
from clusters.instance_groups import specs
from clusters.instance_groups.update_cluster import cluster_name
from clusters.models import Cluster, ClusterState, InstanceGroup, Subnet
from config.errors import Conflict


def describe(cluster: Cluster) -> dict[str, Any] | None:
    """``DescribeCluster`` of the cluster's HyperPod cluster; ``None`` when it has none (or it is gone)."""
    if not cluster_name(cluster):
        return None
    with aws.translated("sagemaker", "DescribeCluster"):
        try:
            return aws.client("sagemaker", region=cluster.region).describe_cluster(ClusterName=cluster_name(cluster))
        except ClientError as error:
            if aws.error_is(error, "ResourceNotFound", "ResourceNotFoundException"):
                return None
            raise


def require_active(cluster: Cluster) -> dict[str, Any]:
    """DescribeCluster of an active cluster's HyperPod cluster, for a service about to change it:
    ``cluster_not_active`` (409) unless the cluster is active, ``hyperpod_missing`` (409) when it has none."""
    if cluster.state != ClusterState.ACTIVE:
        raise Conflict(f"Cluster {cluster.name} is {cluster.state}; it changes only while active.",
                       code="cluster_not_active")
    found = describe(cluster)
    if found is None:
        raise Conflict(f"Cluster {cluster.name} has no HyperPod cluster.", code="hyperpod_missing")
    return found


def _subnet_ids(described: dict[str, Any], details: dict[str, Any]) -> list[str]:
    override = details.get("OverrideVpcConfig") or {}
    return list(override.get("Subnets") or (described.get("VpcConfig") or {}).get("Subnets") or [])


def _values(described: dict[str, Any], details: dict[str, Any], zones: dict[str, str]) -> dict[str, Any]:
    spec = specs.specification(details)
    subnet_ids = _subnet_ids(described, details)
    storage: dict[str, Any] = next((config["EbsVolumeConfig"] for config in spec.get("InstanceStorageConfigs") or []
                    if "EbsVolumeConfig" in config), {})
    return {
        "instance_type": details.get("InstanceType") or "",
        "capacity_type": specs.capacity_type_of(details),
        "training_plan_arn": details.get("TrainingPlanArn") or "",
        "interface_mode": specs.interface_mode_of(details),
        "subnet_id": subnet_ids[0] if subnet_ids else "",
        "zone": next((zones[subnet] for subnet in subnet_ids if subnet in zones), ""),
        "target_count": details.get("TargetCount") or 0,
        "current_count": details.get("CurrentCount") or 0,
        "min_count": details.get("MinCount"),
        "threads_per_core": details.get("ThreadsPerCore"),
        "ebs_volume_gib": storage.get("VolumeSizeInGB"),
        "deep_health_checks": list(details.get("OnStartDeepHealthChecks") or []),
        "execution_role_arn": details.get("ExecutionRole") or "",
        "status": details.get("Status") or "",
        "spec": spec,
    }


def mirror(cluster: Cluster, described: dict[str, Any], *, ours: frozenset[str] = frozenset()) -> list[InstanceGroup]:
    """Record ``described`` (DescribeCluster of the cluster's HyperPod cluster): its groups and the cluster's node
    and accelerator counts. A group first seen here is ``managed`` when its name is in ``ours`` (the create
    pipeline's group). Returns the live rows, by name."""
    zones = dict(Subnet.objects.filter(network__cluster=cluster).values_list("subnet_id", "zone"))
    groups = {details["InstanceGroupName"]: details for details in described.get("InstanceGroups") or []}
    offers = catalog.catalog(cluster.region)
    with transaction.atomic():
        rows = {row.name: row for row in InstanceGroup.objects.select_for_update()
                .filter(cluster=cluster, deleted=False)}
        for name, gone in rows.items():
            if name not in groups:
                gone.deleted, gone.status, gone.current_count = True, "Deleted", 0
                gone.save(update_fields=["deleted", "status", "current_count", "updated_at"])
        live = []
        for name, details in groups.items():
            values = _values(described, details, zones)
            row = rows.get(name)
            if row is None:
                row = InstanceGroup.objects.create(cluster=cluster, team_id=cluster.team_id, name=name,
                                                   managed=name in ours, **values)
            else:
                for field, value in values.items():
                    setattr(row, field, value)
                row.save()
            live.append(row)
        nodes = sum(row.current_count for row in live)
        accelerators = sum(row.current_count * (offers[row.instance_type].accelerator_count
                                                if row.instance_type in offers else 0) for row in live)
        Cluster.objects.filter(pk=cluster.pk).update(node_count=nodes, gpu_count=accelerators)
        cluster.node_count, cluster.gpu_count = nodes, accelerators
    return sorted(live, key=lambda row: row.name)
