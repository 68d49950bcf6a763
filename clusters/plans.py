"""What the clusters pipelines would do, for a dry run's plan (``Phase.plan``): each function takes the operation's
params and answers ``config.plans.change`` items. The create, delete, instance group and node plans read rows only
(the phases themselves decide the details — CIDRs, ids — when they run).

``cluster.create`` plans the network, the EKS control plane, the system node group, the active-cluster choice, the
dependencies, the HyperPod cluster and the storage from the cluster's spec; ``cluster.delete`` plans the removal of
what the cluster's rows say exists (an imported cluster's AWS clusters only when they were asked to go);
``instance_group.add`` the compute subnet, the group and its autoscaling objects; an instance group's update and
delete, and a node batch (reboot, replace, delete) the instance group or nodes they act on.

The later plans are object-level: rendered by the builders the steps send from (``clusters.storage``,
``clusters.cluster_settings``, ``clusters.importing``, ``clusters.instance_groups.update_cluster``), with the
exact AWS request parameters (``config.plans.aws_call``) and Kubernetes manifests (``config.plans.kubernetes_object``)
— ``storage.create``/``storage.delete``, ``cluster.settings``, ``cluster.software`` and ``cluster.import`` (whose
plan reads EKS, as its *access* phase does, to leave out an access entry or policy that is there already). The
feature plans are ``clusters.features.plans``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from django.conf import settings
from kubernetes import client as k8s

from cloud import aws
from clusters import cluster_settings, dependencies, importing
from clusters import storage as volumes
from clusters.instance_groups.update_cluster import update_request
from clusters.models import Cluster, InstanceGroup, NetworkPlan, StorageKind, StorageState, StorageVolume
from clusters.ownership import iam_name, team_namespace
from config.plans import Change, aws_call, change, kubernetes_object

Params = Mapping[str, Any]
PhasePlans = dict[str, Callable[[Params], list[Change]]]
#: What stands for a client request token the real run makes and persists before it sends it.
TOKEN = "<the operation's persisted token>"
_SERIALIZER = k8s.ApiClient()


def manifest(model: Any) -> dict[str, Any]:
    """A Kubernetes client model as the JSON the client sends."""
    return dict(_SERIALIZER.sanitize_for_serialization(model))


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


CREATE: PhasePlans = {"network": network, "eks": eks, "system-nodes": system_nodes, "activate": activate,
          "dependencies": dependency_install, "hyperpod": hyperpod, "storage": storage}
DELETE: PhasePlans = {"storage": storage_delete, "hyperpod": hyperpod_delete, "dependencies": dependency_removal,
          "system-nodes": system_nodes_delete, "eks": eks_delete, "network": network_delete}
GROUP_ADD: PhasePlans = {"placement": group_placement, "hyperpod": group_add, "autoscaling": group_objects}
GROUP_UPDATE: PhasePlans = {"hyperpod": group_update}
GROUP_DELETE: PhasePlans = {"autoscaling": group_objects_delete, "hyperpod": group_delete}


def settings_update(params: Params) -> list[Change]:
    """``cluster.settings``: the ``UpdateCluster`` with the changed members."""
    cluster = _cluster(params)
    return [aws_call("update", "SageMaker HyperPod cluster", cluster.hyperpod_name, call="sagemaker:UpdateCluster",
                     request=update_request(cluster, dict(params["members"])))]


def software_update(params: Params) -> list[Change]:
    """``cluster.software``: the ``UpdateClusterSoftware`` of the groups asked for (every group when none)."""
    cluster = _cluster(params)
    return [aws_call("update", "SageMaker HyperPod cluster", cluster.hyperpod_name,
                     call="sagemaker:UpdateClusterSoftware",
                     request=cluster_settings.software_request(cluster, list(params["groups"])))]


def _volume(params: Params) -> StorageVolume:
    return StorageVolume.objects.select_related("cluster__team", "cluster__network").get(
        pk=params["volume_id"], cluster_id=params["cluster_id"])


def volume_create(params: Params) -> list[Change]:
    """``storage.create``: for a new FSx file system its ``CreateFileSystem``, then the volume's PV and PVC
    (for FSx, with the file system's id, DNS and mount names as placeholders until it is AVAILABLE)."""
    volume = _volume(params)
    changes = []
    if volume.kind == StorageKind.FSX and not volume.file_system_id:
        changes.append(aws_call("create", "FSx for Lustre file system", f"{volume.cluster.name}-{volume.name}",
                                call="fsx:CreateFileSystem", request=volumes.file_system_request(volume, TOKEN)))
        volume = copy.copy(volume)
        volume.file_system_id, volume.dns_name, volume.mount_name = "<FileSystemId>", "<DNSName>", "<MountName>"
    when = {"when": "the file system is AVAILABLE"} if changes else {}
    return [*changes, kubernetes_object("create", manifest(volumes.persistent_volume(volume)), **when),
            kubernetes_object("create", manifest(volumes.persistent_volume_claim(volume)), **when)]


def volume_delete(params: Params) -> list[Change]:
    """``storage.delete``: the volume's PVC and PV (those labelled as its own), and its file system when
    InstantStart made it."""
    volume = _volume(params)
    changes = [change("delete", "kubernetes", "PersistentVolumeClaim", f"{volume.namespace}/{volume.pvc_name}",
                      when="labelled as this volume's"),
               change("delete", "kubernetes", "PersistentVolume", volume.pv_name, when="labelled as this volume's")]
    if volume.kind == StorageKind.FSX and volume.managed and volume.file_system_id:
        changes.append(aws_call("delete", "FSx for Lustre file system", volume.file_system_id,
                                call="fsx:DeleteFileSystem", request=volumes.file_system_delete_request(volume),
                                when="tagged as the cluster's"))
    return changes


def import_access(params: Params) -> list[Change]:
    """``cluster.import`` *access*: the access entry and the admin policy association of the control plane's
    principal — each only when it is not there already (read now, as the phase will)."""
    region, name = params["region"], params["eks_name"]
    principal = aws.principal_arn(region=region)
    client = aws.client("eks", region=region)
    changes = []
    if importing.access_entry(client, name, principal) is None:
        changes.append(aws_call("create", "EKS access entry", principal, call="eks:CreateAccessEntry",
                                request=importing.access_entry_request(name, principal, TOKEN)))
    if changes or not importing.has_cluster_admin(client, name, principal, region):
        changes.append(aws_call("create", "EKS access policy association", principal,
                                call="eks:AssociateAccessPolicy",
                                request=importing.admin_policy_request(name, principal, region)))
    return changes


def import_discover(params: Params) -> list[Change]:
    """``cluster.import`` *discover*: reads only; records what it finds."""
    return [change("update", "instantstart", "cluster records", params["eks_name"],
                   records=["EKS and HyperPod facts", "network", "dependencies (unmanaged)",
                            "storage volumes (unmanaged)"])]


SETTINGS: PhasePlans = {"hyperpod": settings_update}
SOFTWARE: PhasePlans = {"hyperpod": software_update}
VOLUME_CREATE: PhasePlans = {"volume": volume_create}
VOLUME_DELETE: PhasePlans = {"volume": volume_delete}
IMPORT: PhasePlans = {"access": import_access, "discover": import_discover}
