"""What the clusters pipelines would do, for a dry run's plan (``Phase.plan``): each function takes the operation's
params and answers ``config.plans.change`` items, reading rows (and nothing in AWS) — the phases themselves decide
the details (CIDRs, ids) when they run.

``cluster.create`` plans the network, the EKS control plane, the system node group, the active-cluster choice, the
dependencies, the HyperPod cluster and the storage from the cluster's spec; ``cluster.delete`` plans the removal of
what the cluster's rows say exists (an imported cluster's AWS clusters only when they were asked to go);
``instance_group.add`` the compute subnet, the group and its autoscaling objects; an instance group's update and
delete, and a node batch (reboot, replace, delete) the instance group or nodes they act on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django.conf import settings

from clusters import dependencies
from clusters.models import Cluster, InstanceGroup, NetworkPlan, StorageState
from clusters.ownership import iam_name, team_namespace
from config.plans import Change, change

Params = Mapping[str, Any]


def _cluster(params: Params) -> Cluster:
    return Cluster.objects.select_related("team").get(pk=params["cluster_id"])


def network(params: Params) -> list[Change]:
    name, zone = params["name"], params["zone"]
    subnets = [change("create", "aws", "EC2 subnet", f"{name}-{role}-{where}", cidr="/22", zone=where_name)
               for role in ("public", "private") for where, where_name in (("first", zone), ("second", "another zone"))]
    return [change("create", "aws", "EC2 VPC", f"{name}-vpc", cidr="a free /16 in 10.0.0.0/8", region=params["region"]),
            *subnets,
            change("create", "aws", "EC2 internet gateway", f"{name}-igw"),
            change("create", "aws", "EC2 Elastic IP", f"{name}-nat"),
            change("create", "aws", "EC2 NAT gateway", f"{name}-nat", subnet="the first public subnet"),
            change("create", "aws", "EC2 route table", f"{name}-public-routes", default_route="internet gateway"),
            change("create", "aws", "EC2 route table", f"{name}-private-routes", default_route="NAT gateway"),
            change("create", "aws", "EC2 security group", f"{name}-cluster"),
            change("create", "aws", "EC2 VPC endpoint", f"{name}-s3", service="s3", type="Gateway")]


def eks(params: Params) -> list[Change]:
    cluster = _cluster(params)
    return [change("create", "aws", "IAM role", iam_name(cluster, "eks-cluster"), trusts="eks.amazonaws.com"),
            change("create", "aws", "EKS cluster", params["name"],
                   version=params.get("kubernetes_version") or "EKS default", authentication_mode="API"),
            change("create", "aws", "IAM OIDC provider", f"oidc.eks.{params['region']}.amazonaws.com"),
            change("create", "aws", "EKS access entry", "the control plane's principal",
                   policy="AmazonEKSClusterAdminPolicy")]


def system_nodes(params: Params) -> list[Change]:
    cluster = _cluster(params)
    return [change("create", "aws", "IAM role", iam_name(cluster, "eks-nodes"), trusts="ec2.amazonaws.com"),
            change("create", "aws", "EKS node group", "system", instance_type=settings.SYSTEM_NODES_INSTANCE_TYPE,
                   count=settings.SYSTEM_NODES_COUNT, capacity_type="ON_DEMAND")]


def activate(params: Params) -> list[Change]:
    return [change("update", "instantstart", "active cluster", params["name"], of="the requester")]


def dependency_install(params: Params) -> list[Change]:
    return [change("create", "aws" if component.kind == "addon" else "kubernetes",
                   "EKS add-on" if component.kind == "addon" else "Kubernetes manifests", component.name)
            for component in dependencies.ON_CREATE]


def hyperpod(params: Params) -> list[Change]:
    cluster = _cluster(params)
    return [change("create", "aws", "IAM role", iam_name(cluster, "hyperpod-exec"), trusts="sagemaker.amazonaws.com"),
            change("create", "aws", "S3 objects", "lifecycle scripts", bucket="the shared bucket"),
            change("create", "aws", "EC2 subnet", f"{params['name']}-compute-{params['zone']}", cidr="/20",
                   zone=params["zone"]),
            change("create", "aws", "SageMaker HyperPod cluster", params["name"], orchestrator="EKS",
                   node_recovery="Automatic", instance_groups=[{
                       "name": "workers", "instance_type": params["instance_type"],
                       "instance_count": params["instance_count"], "capacity_type": params.get("capacity_type"),
                       "training_plan_arn": params.get("training_plan_arn") or None,
                       "deep_health_checks": bool(params.get("deep_health_checks"))}])]


def storage(params: Params) -> list[Change]:
    cluster = _cluster(params)
    namespace = team_namespace(cluster.team)
    changes = [change("create", "kubernetes", "Namespace", namespace),
               change("create", "kubernetes", "PersistentVolume", "shared", backing="the team's prefix of the shared "
                      "S3 bucket (Mountpoint S3 CSI)"),
               change("create", "kubernetes", "PersistentVolumeClaim", f"{namespace}/shared")]
    if params.get("fsx_capacity_gib"):
        changes += [change("create", "aws", "FSx for Lustre file system", f"{params['name']}-fsx",
                           capacity_gib=params["fsx_capacity_gib"]),
                    change("create", "kubernetes", "PersistentVolume", "fsx"),
                    change("create", "kubernetes", "PersistentVolumeClaim", f"{namespace}/fsx")]
    return changes


def storage_delete(params: Params) -> list[Change]:
    cluster = _cluster(params)
    changes = []
    for volume in cluster.volumes.exclude(state=StorageState.DELETED):
        changes += [change("delete", "kubernetes", "PersistentVolumeClaim", f"{volume.namespace}/{volume.pvc_name}"),
                    change("delete", "kubernetes", "PersistentVolume", volume.pv_name)]
        if volume.kind == "fsx" and volume.file_system_id:
            changes.append(change("delete", "aws", "FSx for Lustre file system", volume.file_system_id))
    return changes


def hyperpod_delete(params: Params) -> list[Change]:
    cluster = _cluster(params)
    if not (cluster.hyperpod_arn or cluster.hyperpod_name):
        return []
    groups = list(InstanceGroup.objects.filter(cluster=cluster, deleted=False).values_list("name", flat=True))
    return [change("delete", "aws", "SageMaker HyperPod cluster", cluster.hyperpod_name or cluster.hyperpod_arn,
                   instance_groups=groups),
            change("delete", "aws", "IAM role", iam_name(cluster, "hyperpod-exec"), when="ours"),
            change("delete", "aws", "S3 objects", "lifecycle scripts", when="ours")]


def dependency_removal(params: Params) -> list[Change]:
    cluster = _cluster(params)
    return [change("delete", "aws" if row.kind == "addon" else "kubernetes",
                   "EKS add-on" if row.kind == "addon" else "Kubernetes manifests", row.component)
            for row in cluster.dependencies.filter(managed=True).exclude(observed_state="absent")]


def system_nodes_delete(params: Params) -> list[Change]:
    cluster = _cluster(params)
    return [change("delete", "aws", "EKS node group", "system", when="ours"),
            change("delete", "aws", "IAM role", iam_name(cluster, "eks-nodes"), when="ours")]


def eks_delete(params: Params) -> list[Change]:
    cluster = _cluster(params)
    return [change("delete", "aws", "EKS cluster", cluster.eks_name),
            change("delete", "aws", "IAM OIDC provider", f"of {cluster.eks_name}", when="ours"),
            change("delete", "aws", "IAM role", iam_name(cluster, "eks-cluster"), when="ours")]


def network_delete(params: Params) -> list[Change]:
    plan = NetworkPlan.objects.filter(cluster_id=params["cluster_id"]).first()
    if plan is None or not plan.vpc_id:
        return [change("delete", "aws", "EC2 network", "every VPC resource tagged with the cluster's id")]
    changes = [change("delete", "aws", "EC2 VPC endpoint", endpoint) for endpoint in plan.endpoints.values()]
    changes += [change("delete", "aws", "EC2 NAT gateway", plan.nat_gateway_id),
                change("delete", "aws", "EC2 Elastic IP", plan.elastic_ip_allocation_id),
                change("delete", "aws", "EC2 internet gateway", plan.internet_gateway_id)]
    changes += [change("delete", "aws", "EC2 route table", table) for table in plan.route_tables.values()]
    changes += [change("delete", "aws", "EC2 security group", group) for group in plan.security_groups.values()]
    changes += [change("delete", "aws", "EC2 subnet", subnet.subnet_id, cidr=subnet.cidr)
                for subnet in plan.subnets.all()]
    changes.append(change("delete", "aws", "EC2 VPC", plan.vpc_id, cidr=plan.vpc_cidr))
    return changes


def group_placement(params: Params) -> list[Change]:
    return [change("create", "aws", "EC2 subnet", f"compute subnet in {params['zone']}", cidr="/20",
                   when="the zone has none yet")]


def group_add(params: Params) -> list[Change]:
    cluster = _cluster(params)
    return [change("update", "aws", "SageMaker HyperPod cluster", cluster.hyperpod_name or cluster.name,
                   adds_instance_group={key: params.get(key) for key in (
                       "name", "instance_type", "instance_count", "capacity_type", "training_plan_arn",
                       "interface_mode", "zone", "deep_health_checks")})]


def group_objects(params: Params) -> list[Change]:
    return [change("create", "kubernetes", "HyperpodNodeClass / NodePool", params["name"],
                   when="managed autoscaling is on")]


def group_update(params: Params) -> list[Change]:
    return [change("update", "aws", "SageMaker HyperPod instance group", params["name"],
                   changes=params.get("changed") or {})]


def group_delete(params: Params) -> list[Change]:
    return [change("delete", "aws", "SageMaker HyperPod instance group", params["name"])]


def group_objects_delete(params: Params) -> list[Change]:
    return [change("delete", "kubernetes", "HyperpodNodeClass / NodePool", params["name"],
                   when="managed autoscaling made them")]


def node_batch(action: str, call: str) -> Callable[[Params], list[Change]]:
    """The plan of ``node.<action>``: one ``sagemaker:<call>`` naming every node it acts on."""

    def plan(params: Params) -> list[Change]:
        return [change("delete" if action == "delete" else "update", "aws", "SageMaker HyperPod node", node_id,
                       call=f"sagemaker:{call}", cluster=params["hyperpod_name"]) for node_id in params["node_ids"]]

    return plan


CREATE = {"network": network, "eks": eks, "system-nodes": system_nodes, "activate": activate,
          "dependencies": dependency_install, "hyperpod": hyperpod, "storage": storage}
DELETE = {"storage": storage_delete, "hyperpod": hyperpod_delete, "dependencies": dependency_removal,
          "system-nodes": system_nodes_delete, "eks": eks_delete, "network": network_delete}
GROUP_ADD = {"placement": group_placement, "hyperpod": group_add, "autoscaling": group_objects}
GROUP_UPDATE = {"hyperpod": group_update}
GROUP_DELETE = {"autoscaling": group_objects_delete, "hyperpod": group_delete}
