"""The components a cluster needs, how to see what a cluster has, and how to install or remove what we own.

The catalog (:data:`CATALOG`, in install order; a component is installed once everything it ``requires`` is
active):

================================  ========  ==================  =================================================
component                         kind      requires            identity (EKS Pod Identity, role ``iam_name``)
================================  ========  ==================  =================================================
eks-pod-identity-agent            add-on    —                   —
cert-manager                      add-on    —                   —
aws-mountpoint-s3-csi-driver      add-on    pod identity agent  ``s3-csi-driver-sa``: list, read and write the
                                                                team's prefix of the shared bucket, nothing else
aws-fsx-csi-driver                add-on    pod identity agent  ``fsx-csi-controller-sa``: describe FSx and the
                                                                network; create, change and delete only file
                                                                systems tagged with the cluster's id
amazon-cloudwatch-observability   add-on    pod identity agent  ``cloudwatch-agent``: CloudWatchAgentServerPolicy
kuberay-operator                  manifest  —                   — (``clusters.kuberay``, pinned)
================================  ========  ==================  =================================================

Health and observability. Of what EKS offers as add-ons (``DescribeAddonVersions``), a fresh cluster gets
``amazon-cloudwatch-observability``: Container Insights with accelerated-compute (GPU, EFA, Neuron) metrics and
container logs, needing nothing but its role. ``amazon-sagemaker-hyperpod-observability`` is *not* installed on
create: it writes to an Amazon Managed Service for Prometheus workspace (and dashboards need Managed Grafana),
resources with their own cost that a user opts into as a managed feature (F-MF-1); the HyperPod training
operator, inference operator and task governance add-ons are such features too. They are in the catalog with
``on_create=False`` so :func:`observe` reports them (import, refresh) but nothing here installs them. HyperPod's
health-monitoring agent and deep health checks are not EKS add-ons; the deep health checks are requested on the
instance group by the *hyperpod* phase.

Add-ons are created with the version EKS defaults to for the cluster's Kubernetes version and never upgraded
here; every one we create carries :func:`clusters.ownership.aws_tags` — which is how :func:`observe` tells ours
(``managed``) from ones installed outside InstantStart, and what :func:`remove` keys on. Pod identity roles are
IAM roles named :func:`clusters.ownership.iam_name` (adopted on a re-run), tagged, trusting only
``pods.eks.amazonaws.com`` (from this account and, once known, this EKS cluster), passed through CreateAddon's
``podIdentityAssociations``. The inline policies name every action (no wildcard actions) and scope what
changes things to the team's objects or the cluster's tagged file systems; the CloudWatch agent gets AWS's
managed CloudWatchAgentServerPolicy.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from botocore.exceptions import ClientError
from django.utils import timezone
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from cloud import aws, kube
from clusters import kuberay
from clusters.models import Cluster, ClusterDependency, DependencyKind, DependencyState
from clusters.ownership import CLUSTER_ID_TAG, as_tag_list, aws_tags, iam_name, owned_by
from clusters.shared_bucket import shared_bucket_name, team_prefix
from config.errors import ApplicationError, Conflict

#: EKS add-on status → our dependency state.
ADDON_STATES = {
    "CREATING": DependencyState.INSTALLING,
    "UPDATING": DependencyState.INSTALLING,
    "ACTIVE": DependencyState.ACTIVE,
    "DEGRADED": DependencyState.DEGRADED,
    "CREATE_FAILED": DependencyState.FAILED,
    "UPDATE_FAILED": DependencyState.FAILED,
    "DELETE_FAILED": DependencyState.FAILED,
    "DELETING": DependencyState.REMOVING,
}
#: States that need a person (or a retry) rather than waiting.
PROBLEM_STATES = frozenset({DependencyState.DEGRADED, DependencyState.FAILED})


# catalog ---------------------------------------------------------------------------------------------------------


def shared_bucket_policy(cluster: Cluster) -> dict[str, Any]:
    """Mountpoint for S3: list, read, write and delete under the cluster's team's prefix of the shared bucket
    (the prefix its pods mount), nothing else."""
    bucket = f"arn:{aws.partition(cluster.region)}:s3:::{shared_bucket_name(cluster.region)}"
    prefix = team_prefix(cluster.team.slug)
    return {"Version": "2012-10-17", "Statement": [
        {"Sid": "ListTeamPrefix", "Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": [bucket],
         "Condition": {"StringLike": {"s3:prefix": [f"{prefix}*"]}}},
        {"Sid": "ReadWriteTeamObjects", "Effect": "Allow",
         "Action": ["s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload", "s3:DeleteObject"],
         "Resource": [f"{bucket}/{prefix}*"]},
    ]}


def fsx_policy(cluster: Cluster) -> dict[str, Any]:
    """FSx for Lustre CSI controller: describe file systems and the network they go in; create file systems only
    tagged with the cluster's id, and change or delete only those."""
    partition, region = aws.partition(cluster.region), cluster.region
    account = aws.account_id(region=region)
    cluster_id = str(cluster.pk)
    return {"Version": "2012-10-17", "Statement": [
        {"Sid": "Describe", "Effect": "Allow", "Resource": "*",
         "Action": ["fsx:DescribeFileSystems", "ec2:DescribeSubnets", "ec2:DescribeSecurityGroups",
                    "ec2:DescribeVpcs", "ec2:DescribeNetworkInterfaces"]},
        {"Sid": "CreateClusterFileSystems", "Effect": "Allow", "Resource": "*",
         "Action": ["fsx:CreateFileSystem", "fsx:TagResource"],
         "Condition": {"StringEquals": {f"aws:RequestTag/{CLUSTER_ID_TAG}": cluster_id}}},
        {"Sid": "ChangeClusterFileSystems", "Effect": "Allow",
         "Resource": f"arn:{partition}:fsx:{region}:{account}:file-system/*",
         "Action": ["fsx:UpdateFileSystem", "fsx:DeleteFileSystem"],
         "Condition": {"StringEquals": {f"aws:ResourceTag/{CLUSTER_ID_TAG}": cluster_id}}},
        {"Sid": "FsxServiceLinkedRoles", "Effect": "Allow", "Resource": "*", "Action": ["iam:CreateServiceLinkedRole"],
         "Condition": {"StringEquals": {"iam:AWSServiceName": ["fsx.amazonaws.com",
                                                               "s3.data-source.lustre.fsx.amazonaws.com"]}}},
    ]}


@dataclass(frozen=True)
class PodIdentity:
    """The IAM role an add-on's service account assumes through EKS Pod Identity: ``policy`` (inline, named
    ``purpose``) and/or AWS managed policies by name."""

    service_account: str
    purpose: str
    policy: Callable[[Cluster], dict[str, Any]] | None = None
    managed_policies: tuple[str, ...] = ()


@dataclass(frozen=True)
class Component:
    """One dependency. ``on_create``: installed by the create pipeline (else only observed)."""

    name: str
    kind: str
    requires: tuple[str, ...] = ()
    identity: PodIdentity | None = None
    on_create: bool = True


POD_IDENTITY_AGENT = "eks-pod-identity-agent"
CATALOG: tuple[Component, ...] = (
    Component(POD_IDENTITY_AGENT, DependencyKind.ADDON),
    Component("cert-manager", DependencyKind.ADDON),
    Component("aws-mountpoint-s3-csi-driver", DependencyKind.ADDON, requires=(POD_IDENTITY_AGENT,),
              identity=PodIdentity("s3-csi-driver-sa", "s3-csi", policy=shared_bucket_policy)),
    Component("aws-fsx-csi-driver", DependencyKind.ADDON, requires=(POD_IDENTITY_AGENT,),
              identity=PodIdentity("fsx-csi-controller-sa", "fsx-csi", policy=fsx_policy)),
    Component("amazon-cloudwatch-observability", DependencyKind.ADDON, requires=(POD_IDENTITY_AGENT,),
              identity=PodIdentity("cloudwatch-agent", "cloudwatch",
                                   managed_policies=("CloudWatchAgentServerPolicy",))),
    Component(kuberay.NAME, DependencyKind.MANIFEST),
    Component("amazon-sagemaker-hyperpod-observability", DependencyKind.ADDON, requires=(POD_IDENTITY_AGENT,),
              on_create=False),
    Component("amazon-sagemaker-hyperpod-training-operator", DependencyKind.ADDON,
              requires=(POD_IDENTITY_AGENT, "cert-manager"), on_create=False),
    Component("amazon-sagemaker-hyperpod-inference", DependencyKind.ADDON,
              requires=(POD_IDENTITY_AGENT, "cert-manager"), on_create=False),
    Component("amazon-sagemaker-hyperpod-taskgovernance", DependencyKind.ADDON, on_create=False),
)
COMPONENTS = {component.name: component for component in CATALOG}
ON_CREATE = tuple(component for component in CATALOG if component.on_create)


# observation -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Observation:
    """One component's actual state. ``status`` is the provider's word (EKS add-on status, or the operator's
    ready/total pods); ``message`` its health issues or why the state is what it is; ``managed`` that it
    carries our tags/labels; ``missing`` the objects of a manifest component that do not exist;
    ``waiting_for_nodes`` that its pods cannot run before the cluster has a node; ``arn`` the add-on's ARN."""

    component: str
    kind: str
    state: str
    version: str = ""
    managed: bool = False
    status: str = ""
    message: str = ""
    arn: str = ""
    missing: tuple[str, ...] = field(default=())
    waiting_for_nodes: bool = False

    @property
    def found(self) -> bool:
        return self.state not in (DependencyState.ABSENT, DependencyState.UNKNOWN)

    @property
    def needs_install(self) -> bool:
        """Absent, or one of our manifest components with objects missing."""
        return self.state == DependencyState.ABSENT or (self.managed and bool(self.missing))

    @property
    def settled(self) -> bool:
        """Nothing more to wait for: active, or applied and waiting only for a node to run on."""
        return self.state == DependencyState.ACTIVE or (
            self.waiting_for_nodes and not self.missing and self.state == DependencyState.INSTALLING)


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def _issues(addon: dict[str, Any]) -> str:
    return "; ".join(f"{issue.get('code', '')}: {issue.get('message', '')}".strip(": ")
                     for issue in addon.get("health", {}).get("issues") or [])


def addon_observation(cluster: Cluster, addon: dict[str, Any]) -> Observation:
    """An :class:`Observation` from a DescribeAddon/CreateAddon ``addon``."""
    return Observation(
        component=addon["addonName"], kind=DependencyKind.ADDON,
        state=ADDON_STATES.get(addon.get("status", ""), DependencyState.UNKNOWN),
        version=addon.get("addonVersion", ""), managed=owned_by(addon.get("tags"), cluster),
        status=addon.get("status", ""), message=_issues(addon), arn=addon.get("addonArn", ""))


def _absent(component: Component, message: str = "") -> Observation:
    return Observation(component=component.name, kind=component.kind, state=DependencyState.ABSENT, message=message)


def _eks(cluster: Cluster):
    return aws.client("eks", region=cluster.region)


def _installed_addons(cluster: Cluster) -> set[str] | None:
    """The add-ons on the cluster's EKS cluster; ``None`` when there is no EKS cluster (yet, or any more)."""
    if not cluster.eks_name:
        return None
    eks = _eks(cluster)
    names: set[str] = set()
    try:
        for page in eks.get_paginator("list_addons").paginate(clusterName=cluster.eks_name):
            names.update(page.get("addons", []))
    except ClientError as error:
        if _code(error) == "ResourceNotFoundException":
            return None
        raise
    return names


def describe_addon(cluster: Cluster, name: str) -> dict[str, Any] | None:
    """DescribeAddon's ``addon``, or ``None`` when it (or the EKS cluster) does not exist."""
    try:
        return _eks(cluster).describe_addon(clusterName=cluster.eks_name, addonName=name)["addon"]
    except ClientError as error:
        if _code(error) == "ResourceNotFoundException":
            return None
        raise


def observe_operator(cluster: Cluster) -> Observation:
    """The KubeRay operator's state (see :func:`observe`)."""
    component = COMPONENTS[kuberay.NAME]
    status = kuberay.observe(cluster, kube.api_client(cluster.eks_name, region=cluster.region))
    if not status.found:
        return _absent(component)
    pods = f"{status.ready_replicas}/{status.replicas} ready"
    if status.missing and status.managed:
        state, message = DependencyState.INSTALLING, "Not applied yet: " + ", ".join(status.missing)
    elif status.replicas == 0:
        state, message = DependencyState.DEGRADED, "The ray.io CRDs are installed but no KubeRay operator runs."
    elif status.ready:
        state, message = DependencyState.ACTIVE, ""
    elif not status.has_ready_node:
        state, message = DependencyState.INSTALLING, "Waiting for a node to run on (HyperPod nodes join later)."
    else:
        state, message = DependencyState.INSTALLING, f"Operator pods {pods}."
    if status.foreign and not status.managed:
        message = " ".join(filter(None, ["Installed outside InstantStart.", message]))
    return Observation(component=component.name, kind=component.kind, state=state, version=status.version,
                       managed=status.managed, status=pods, message=message,
                       missing=status.missing if status.managed else (),
                       waiting_for_nodes=not status.ready and not status.has_ready_node)


def observe_component(cluster: Cluster, component: Component, *, installed: set[str] | None) -> Observation:
    """``component``'s state; ``installed`` is the cluster's add-on names (``None``: no EKS cluster)."""
    if installed is None:
        return _absent(component, "The cluster has no EKS control plane.")
    if component.kind == DependencyKind.MANIFEST:
        return observe_operator(cluster)
    addon = describe_addon(cluster, component.name) if component.name in installed else None
    return _absent(component) if addon is None else addon_observation(cluster, addon)


def observe(cluster: Cluster, *, strict: bool = False) -> list[Observation]:
    """Every catalog component's actual state on ``cluster``, in catalog order, changing nothing.

    Add-ons: ListAddons, then DescribeAddon for the ones there (status, version, health issues; ``managed``
    when it carries our tags). KubeRay: our objects, the operator's Deployment (ours or one found by its
    release label), its image tag and readiness. A cluster without an EKS control plane reports everything
    absent. A Kubernetes API that cannot be read makes the KubeRay observation ``unknown`` with the reason —
    unless ``strict``, where the error is raised (the pipeline wants the engine to judge it)."""
    with aws.translated("eks", "DescribeAddon"):
        installed = _installed_addons(cluster)
        observations = []
        for component in CATALOG:
            try:
                observations.append(observe_component(cluster, component, installed=installed))
            except (ApiException, HTTPError, OSError, ApplicationError) as error:
                if strict:
                    raise
                reason = error.message if isinstance(error, ApplicationError) else kube.translate(error).message
                observations.append(Observation(component=component.name, kind=component.kind,
                                                state=DependencyState.UNKNOWN, message=reason))
    return observations


def record(cluster: Cluster, observations: Iterable[Observation]) -> list[ClusterDependency]:
    """Write what was observed into ``cluster``'s ClusterDependency rows and return them.

    A row is kept for every component the create pipeline installs and for any other component found.
    ``managed`` follows the tags/labels of what was found (``False``: installed outside InstantStart); a
    component not found keeps its row's ``managed`` and ``desired_state`` (new rows: desired ``active``).
    ``last_error`` holds the health issues of a degraded or failed component, or why an ``unknown`` one could
    not be read (which keeps the version it had), and is cleared otherwise."""
    now = timezone.now()
    recorded = set(ClusterDependency.objects.filter(cluster=cluster).values_list("component", flat=True))
    rows = []
    for seen in observations:
        if seen.component not in recorded and not seen.found and not COMPONENTS[seen.component].on_create:
            continue
        values: dict[str, Any] = {
            "kind": seen.kind, "observed_state": seen.state, "observed_at": now,
            "last_error": seen.message if seen.state in PROBLEM_STATES | {DependencyState.UNKNOWN} else ""}
        if seen.found:
            values["managed"] = seen.managed
        if seen.state != DependencyState.UNKNOWN:
            values["version"] = seen.version
        row, _ = ClusterDependency.objects.update_or_create(cluster=cluster, component=seen.component,
                                                            defaults=values)
        rows.append(row)
    return rows


def settle(cluster: Cluster) -> list[Observation]:
    """Observe and record every component again; return those the create pipeline installs that are not active
    yet. The last phase of ``cluster.create`` waits on this: the operator's pods can only start once HyperPod's
    nodes have joined, after the dependencies phase ended."""
    observations = observe(cluster, strict=True)
    record(cluster, observations)
    return [seen for seen in observations
            if COMPONENTS[seen.component].on_create and seen.state != DependencyState.ACTIVE]


# installation ----------------------------------------------------------------------------------------------------


def pod_identity_trust(cluster: Cluster) -> dict[str, Any]:
    """Trust EKS Pod Identity, for this account and (once the EKS cluster exists) only this cluster."""
    condition: dict[str, Any] = {"StringEquals": {"aws:SourceAccount": aws.account_id(region=cluster.region)}}
    if cluster.eks_arn:
        condition["ArnEquals"] = {"aws:SourceArn": cluster.eks_arn}
    return {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "pods.eks.amazonaws.com"},
        "Action": ["sts:AssumeRole", "sts:TagSession"], "Condition": condition}]}


def _role(iam, name: str) -> dict[str, Any] | None:
    try:
        return iam.get_role(RoleName=name)["Role"]
    except ClientError as error:
        if _code(error) == "NoSuchEntity":
            return None
        raise


def ensure_role(cluster: Cluster, identity: PodIdentity) -> str:
    """The ARN of ``identity``'s role, created (or adopted: same deterministic name, our tags) with its policies;
    only what differs from the desired state is sent. ``iam_role_conflict`` when a role of that name exists
    without our tags."""
    iam = aws.client("iam", region=cluster.region)
    name = iam_name(cluster, identity.purpose)
    with aws.translated("iam", "CreateRole"):
        role = _role(iam, name)
        if role is None:
            try:
                role = iam.create_role(
                    RoleName=name, AssumeRolePolicyDocument=json.dumps(pod_identity_trust(cluster)),
                    Description=f"InstantStart: {identity.service_account} on cluster {cluster.name}",
                    Tags=as_tag_list(aws_tags(cluster, identity.purpose)))["Role"]
            except ClientError as error:
                if _code(error) != "EntityAlreadyExists":
                    raise
                role = _role(iam, name)
        if not owned_by(role.get("Tags") or iam.list_role_tags(RoleName=name)["Tags"], cluster):
            raise Conflict(f"The IAM role {name} exists but InstantStart did not create it for this cluster.",
                           code="iam_role_conflict")
        trust = pod_identity_trust(cluster)
        if _document(role["AssumeRolePolicyDocument"]) != trust:
            iam.update_assume_role_policy(RoleName=name, PolicyDocument=json.dumps(trust))
        if identity.policy is not None:
            _ensure_inline_policy(iam, name, identity.purpose, identity.policy(cluster))
        attached = {policy["PolicyArn"]
                    for policy in iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]}
        for policy_name in identity.managed_policies:
            arn = f"arn:{aws.partition(cluster.region)}:iam::aws:policy/{policy_name}"
            if arn not in attached:
                iam.attach_role_policy(RoleName=name, PolicyArn=arn)
    return role["Arn"]


def _document(policy: str | dict[str, Any]) -> dict[str, Any]:
    """A policy document as IAM returns it (boto3 decodes it to a dict; a raw answer is URL-encoded JSON)."""
    return json.loads(unquote(policy)) if isinstance(policy, str) else policy


def _ensure_inline_policy(iam, role: str, policy_name: str, document: dict[str, Any]) -> None:
    try:
        current = iam.get_role_policy(RoleName=role, PolicyName=policy_name)["PolicyDocument"]
    except ClientError as error:
        if _code(error) != "NoSuchEntity":
            raise
        current = None
    if current is None or _document(current) != document:
        iam.put_role_policy(RoleName=role, PolicyName=policy_name, PolicyDocument=json.dumps(document))


def install_addon(cluster: Cluster, component: Component, *, token: str) -> Observation:
    """CreateAddon for ``component`` (tagged as ours, with its pod identity role) under ``token`` — a
    ``clientRequestToken`` the caller persisted before calling. An add-on that exists already is adopted."""
    params: dict[str, Any] = {"clusterName": cluster.eks_name, "addonName": component.name,
                              "clientRequestToken": token, "tags": aws_tags(cluster, component.name)}
    if component.identity is not None:
        params["podIdentityAssociations"] = [{"serviceAccount": component.identity.service_account,
                                              "roleArn": ensure_role(cluster, component.identity)}]
    with aws.translated("eks", "CreateAddon"):
        try:
            addon = _eks(cluster).create_addon(**params)["addon"]
        except ClientError as error:
            addon = describe_addon(cluster, component.name) if _code(error) == "ResourceInUseException" else None
            if addon is None:
                raise
    return addon_observation(cluster, addon)


def replace_addon(cluster: Cluster, name: str) -> None:
    """DeleteAddon (so that it can be created again); nothing when it is gone already."""
    with aws.translated("eks", "DeleteAddon"):
        try:
            _eks(cluster).delete_addon(clusterName=cluster.eks_name, addonName=name)
        except ClientError as error:
            if _code(error) != "ResourceNotFoundException":
                raise


def install_operator(cluster: Cluster) -> list[str]:
    """Create the KubeRay objects that are missing; returns what was created."""
    return kuberay.apply(cluster, kube.api_client(cluster.eks_name, region=cluster.region))


# removal ---------------------------------------------------------------------------------------------------------


def _serving(cluster: Cluster) -> bool:
    if not cluster.eks_name:
        return False
    try:
        status = _eks(cluster).describe_cluster(name=cluster.eks_name)["cluster"]["status"]
    except ClientError as error:
        if _code(error) == "ResourceNotFoundException":
            return False
        raise
    return status in kube.SERVING_STATUSES


def remove(cluster: Cluster) -> list[str]:
    """Start removing what we installed on ``cluster`` — add-ons carrying our tags (DeleteAddon, once each) and
    KubeRay objects carrying our labels — and return what is still there. Level-triggered: call it until it
    returns nothing; add-ons and objects installed by others are never touched."""
    remaining = []
    with aws.translated("eks", "DeleteAddon"):
        for name in sorted(_installed_addons(cluster) or ()):
            addon = describe_addon(cluster, name)
            if addon is None or not owned_by(addon.get("tags"), cluster):
                continue
            if addon["status"] != "DELETING":
                replace_addon(cluster, name)
            remaining.append(name)
        if _serving(cluster) and kuberay.remove(cluster, kube.api_client(cluster.eks_name, region=cluster.region)):
            remaining.append(kuberay.NAME)
    return remaining


def remove_roles(cluster: Cluster) -> list[str]:
    """Delete the pod identity roles we created for ``cluster`` (only those with our tags), with their
    policies; returns the names deleted. Call it once the add-ons using them are gone."""
    iam = aws.client("iam", region=cluster.region)
    deleted = []
    with aws.translated("iam", "DeleteRole"):
        for component in CATALOG:
            if component.identity is None:
                continue
            name = iam_name(cluster, component.identity.purpose)
            if _role(iam, name) is None or not owned_by(iam.list_role_tags(RoleName=name)["Tags"], cluster):
                continue
            for policy in iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]:
                iam.detach_role_policy(RoleName=name, PolicyArn=policy["PolicyArn"])
            for policy_name in iam.list_role_policies(RoleName=name)["PolicyNames"]:
                iam.delete_role_policy(RoleName=name, PolicyName=policy_name)
            try:
                iam.delete_role(RoleName=name)
            except ClientError as error:
                if _code(error) != "NoSuchEntity":
                    raise
            deleted.append(name)
    return deleted
