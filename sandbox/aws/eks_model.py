"""EKS clusters and what hangs off them (add-ons, access entries, pod identity associations, updates).

Nominal durations: a cluster is CREATING for ``CLUSTER_CREATE_SECONDS``, UPDATING for
``CLUSTER_UPDATE_SECONDS`` and DELETING for ``CLUSTER_DELETE_SECONDS``; an add-on is CREATING, UPDATING or
DELETING for ``ADDON_SECONDS``; a managed node group is CREATING for ``NODEGROUP_CREATE_SECONDS`` (its instances
launch as it turns ACTIVE), UPDATING for ``NODEGROUP_UPDATE_SECONDS`` (its instances follow the new desired size
as the update completes) and DELETING for ``NODEGROUP_DELETE_SECONDS``. Transitions are applied by ``refresh()``;
call everything here under ``core.transaction()``.

The cluster security group EKS makes (``security_group_id``) exists in moto's EC2 until the cluster is gone.

Each cluster also exists in moto's EKS backend (same name, kept in the same status) so that moto's Fargate
profiles work against it; that shadow is removed when the cluster is gone. Managed node groups are the sandbox's
own (``sandbox.aws.eks_nodegroups``).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

from moto.eks.models import eks_backends

from sandbox import clock, control, endpoints, tls
from sandbox.aws import core, eventbridge
from sandbox.aws.network import delete_security_group, private_address, subnet_facts

CLUSTER_CREATE_SECONDS = 600.0
CLUSTER_UPDATE_SECONDS = 300.0
CLUSTER_DELETE_SECONDS = 300.0
ADDON_SECONDS = 60.0
NODEGROUP_CREATE_SECONDS = 240.0
NODEGROUP_UPDATE_SECONDS = 120.0
NODEGROUP_DELETE_SECONDS = 240.0
NODEGROUP_ORDINAL_BASE = 1000
"""Node group instances take private addresses from this ordinal on, clear of HyperPod's in a shared subnet."""
ACCESS_MODES_WITH_ENTRIES = ("API", "API_AND_CONFIG_MAP")


@dataclass
class Update:
    id: str
    type: str
    params: list[dict[str, str]]
    created_at: float
    addon: str | None = None
    nodegroup: str | None = None

    @property
    def status(self) -> str:
        seconds = (ADDON_SECONDS if self.addon else NODEGROUP_UPDATE_SECONDS if self.nodegroup
                   else CLUSTER_UPDATE_SECONDS)
        return "Successful" if clock.due(self.created_at, seconds) else "InProgress"


@dataclass
class Addon:
    name: str
    arn: str
    version: str
    created_at: float
    spec: dict[str, Any]
    tags: dict[str, str]
    status: str = "CREATING"
    since: float = 0.0
    modified_at: float = 0.0
    outcome: tuple[str, str] | None = None
    """("fail" | "degrade", message) applied when creation completes."""
    issues: list[dict[str, Any]] = field(default_factory=list)
    pod_identity_arns: list[str] = field(default_factory=list)


@dataclass
class AccessEntry:
    principal_arn: str
    arn: str
    type: str
    username: str
    groups: list[str]
    tags: dict[str, str]
    created_at: float
    modified_at: float
    policies: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class PodIdentity:
    id: str
    arn: str
    namespace: str
    service_account: str
    role_arn: str
    created_at: float
    modified_at: float
    tags: dict[str, str]
    target_role_arn: str | None = None
    disable_session_tags: bool = False
    policy: str | None = None
    owner_arn: str | None = None


@dataclass
class NodegroupInstance:
    instance_id: str
    subnet_id: str
    availability_zone: str
    availability_zone_id: str
    private_ip: str
    private_dns: str
    launched_at: float


@dataclass
class Nodegroup:
    """A managed node group: ``spec`` is its create request (less name and tags), ``scaling``/``labels``/``taints``
    its configuration (an UpdateNodegroupConfig sets them at once; the instances follow when it completes)."""

    name: str
    arn: str
    created_at: float
    spec: dict[str, Any]
    tags: dict[str, str]
    scaling: dict[str, int]
    labels: dict[str, str]
    taints: list[dict[str, str]]
    status: str = "CREATING"
    since: float = 0.0
    modified_at: float = 0.0
    instances: list[NodegroupInstance] = field(default_factory=list)
    pending_failure: str | None = None
    """The health issue's message when creation is to end CREATE_FAILED (``sandbox.aws.outcomes``)."""
    issues: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class EksCluster:
    name: str
    region: str
    arn: str
    id: str
    created_at: float
    spec: dict[str, Any]
    tags: dict[str, str]
    version: str
    authentication_mode: str
    bootstrap_admin: bool
    creator_arn: str
    oidc_id: str
    security_group_id: str
    vpc_id: str
    status: str = "CREATING"
    since: float = 0.0
    pending_failure: str | None = None
    pending_version: str | None = None
    addons: dict[str, Addon] = field(default_factory=dict)
    access_entries: dict[str, AccessEntry] = field(default_factory=dict)
    pod_identities: dict[str, PodIdentity] = field(default_factory=dict)
    updates: dict[str, Update] = field(default_factory=dict)
    nodegroups: dict[str, Nodegroup] = field(default_factory=dict)
    launched: int = 0
    """Node group instances launched so far (their address ordinals)."""

    @property
    def endpoint(self) -> str:
        return endpoints.eks_endpoint(self.region, self.name)

    @property
    def oidc_issuer(self) -> str:
        return f"https://oidc.eks.{self.region}.amazonaws.com/id/{self.oidc_id}"

    @property
    def certificate_data(self) -> str:
        return base64.b64encode(tls.authority().ca_pem).decode()


_clusters: dict[tuple[str, str], EksCluster] = {}


@control.on_reset
def _reset() -> None:
    with core.transaction():
        _clusters.clear()


def clusters() -> list[EksCluster]:
    return list(_clusters.values())


def add(cluster: EksCluster) -> None:
    _clusters[(cluster.region, cluster.name)] = cluster
    backend = eks_backends[core.ACCOUNT_ID][cluster.region]
    vpc = cluster.spec.get("resourcesVpcConfig") or {}
    try:
        backend.create_cluster(name=cluster.name, role_arn=cluster.spec["roleArn"], resources_vpc_config=vpc,
                               version=cluster.version, tags=dict(cluster.tags))
    except Exception:  # the shadow only serves moto's node groups; our cluster stands without it
        return
    _sync_shadow(cluster)


def find(region: str, name: str) -> EksCluster | None:
    return _clusters.get((region, name))


def find_by_arn(arn: str) -> EksCluster | None:
    return next((cluster for cluster in _clusters.values() if cluster.arn == arn), None)


def _sync_shadow(cluster: EksCluster) -> None:
    shadow = eks_backends[core.ACCOUNT_ID][cluster.region].clusters.get(cluster.name)
    if shadow is not None:
        shadow.status = cluster.status
        shadow.endpoint = cluster.endpoint
        shadow.certificate_authority = {"data": cluster.certificate_data}
        shadow.identity = {"oidc": {"issuer": cluster.oidc_issuer}}


def set_status(cluster: EksCluster, status: str) -> None:
    cluster.status, cluster.since = status, clock.now()
    _sync_shadow(cluster)


def bootstrap_creator_entry(cluster: EksCluster) -> None:
    """The cluster creator's admin access entry, as EKS makes it when access entries are on."""
    if not cluster.bootstrap_admin or cluster.authentication_mode not in ACCESS_MODES_WITH_ENTRIES:
        return
    if cluster.creator_arn in cluster.access_entries:
        return
    now = clock.now()
    entry = AccessEntry(principal_arn=cluster.creator_arn, arn=access_entry_arn(cluster, cluster.creator_arn),
                        type="STANDARD", username=default_username(cluster.creator_arn, "STANDARD"), groups=[],
                        tags={}, created_at=now, modified_at=now)
    entry.policies["arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"] = {
        "accessScope": {"type": "cluster", "namespaces": []}, "associatedAt": now, "modifiedAt": now}
    cluster.access_entries[cluster.creator_arn] = entry


def ensure_node_entry(cluster: EksCluster, role_arn: str, entry_type: str = "HYPERPOD_LINUX") -> None:
    """The access entry a node role needs to join ``cluster`` (HyperPod makes one per execution role)."""
    if role_arn in cluster.access_entries or cluster.authentication_mode not in ACCESS_MODES_WITH_ENTRIES:
        return
    now = clock.now()
    cluster.access_entries[role_arn] = AccessEntry(
        principal_arn=role_arn, arn=access_entry_arn(cluster, role_arn), type=entry_type,
        username=default_username(role_arn, entry_type), groups=["system:nodes"], tags={}, created_at=now,
        modified_at=now)


def access_entry_arn(cluster: EksCluster, principal_arn: str) -> str:
    kind, _, name = principal_arn.split(":", 5)[-1].partition("/")
    return core.arn("eks", cluster.region,
                    f"access-entry/{cluster.name}/{kind}/{core.ACCOUNT_ID}/{name}/{core.new_uuid()}")


def default_username(principal_arn: str, entry_type: str) -> str:
    if entry_type.startswith(("EC2", "HYPERPOD")):
        return "system:node:{{EC2PrivateDNSName}}"
    resource = principal_arn.split(":", 5)[-1]
    if resource.startswith("role/"):
        role = resource.rsplit("/", 1)[-1]
        return f"arn:aws:sts::{core.ACCOUNT_ID}:assumed-role/{role}/{{{{SessionName}}}}"
    return principal_arn


def _refresh_addons(cluster: EksCluster) -> None:
    for name, addon in list(cluster.addons.items()):
        if addon.status not in ("CREATING", "UPDATING", "DELETING") or not clock.due(addon.since, ADDON_SECONDS):
            continue
        was = addon.status
        if was == "DELETING":
            for association in [a for a in cluster.pod_identities.values() if a.owner_arn == addon.arn]:
                del cluster.pod_identities[association.id]
            del cluster.addons[name]
            eventbridge.addon_changed(region=cluster.region, cluster_name=cluster.name, addon_name=name,
                                      addon_arn=addon.arn, was=was, status=None)
            continue
        status, addon.issues = "ACTIVE", []
        if addon.status == "CREATING" and addon.outcome is not None:
            kind, message = addon.outcome
            status = "CREATE_FAILED" if kind == "fail" else "DEGRADED"
            code = "ConfigurationConflict" if kind == "fail" else "InsufficientNumberOfReplicas"
            addon.issues = [{"code": code, "message": message, "resourceIds": []}]
        addon.status, addon.since, addon.modified_at = status, clock.now(), clock.now()
        eventbridge.addon_changed(region=cluster.region, cluster_name=cluster.name, addon_name=name,
                                  addon_arn=addon.arn, was=was, status=status)


def _resize(cluster: EksCluster, nodegroup: Nodegroup) -> None:
    """Launch or terminate instances until the node group has its desired size, spread over its subnets."""
    desired = nodegroup.scaling["desiredSize"]
    del nodegroup.instances[desired:]
    subnets = nodegroup.spec["subnets"]
    while len(nodegroup.instances) < desired:
        facts = subnet_facts(cluster.region, subnets[len(nodegroup.instances) % len(subnets)])
        ip, dns = private_address(facts, NODEGROUP_ORDINAL_BASE + cluster.launched, cluster.region)
        cluster.launched += 1
        nodegroup.instances.append(NodegroupInstance(
            instance_id="i-" + core.hex_id(17), subnet_id=facts.subnet_id, availability_zone=facts.availability_zone,
            availability_zone_id=facts.availability_zone_id, private_ip=ip, private_dns=dns,
            launched_at=clock.now()))


_NODEGROUP_SECONDS = {"CREATING": NODEGROUP_CREATE_SECONDS, "UPDATING": NODEGROUP_UPDATE_SECONDS}


def _refresh_nodegroups(cluster: EksCluster) -> None:
    for name, nodegroup in list(cluster.nodegroups.items()):
        seconds = _NODEGROUP_SECONDS.get(nodegroup.status)
        if seconds is not None and clock.due(nodegroup.since, seconds):
            failed = nodegroup.status == "CREATING" and nodegroup.pending_failure is not None
            status = "CREATE_FAILED" if failed else "ACTIVE"
            nodegroup.status, nodegroup.since, nodegroup.modified_at = status, clock.now(), clock.now()
            if failed:
                nodegroup.issues = [{"code": "NodeCreationFailure", "message": nodegroup.pending_failure,
                                     "resourceIds": []}]
            else:
                _resize(cluster, nodegroup)
        elif nodegroup.status == "DELETING" and clock.due(nodegroup.since, NODEGROUP_DELETE_SECONDS):
            del cluster.nodegroups[name]


def _refresh(cluster: EksCluster) -> None:
    if cluster.status == "CREATING" and clock.due(cluster.since, CLUSTER_CREATE_SECONDS):
        set_status(cluster, "FAILED" if cluster.pending_failure is not None else "ACTIVE")
    elif cluster.status == "UPDATING" and clock.due(cluster.since, CLUSTER_UPDATE_SECONDS):
        if cluster.pending_version:
            cluster.version, cluster.pending_version = cluster.pending_version, None
        set_status(cluster, "ACTIVE")
    elif cluster.status == "DELETING" and clock.due(cluster.since, CLUSTER_DELETE_SECONDS):
        del _clusters[(cluster.region, cluster.name)]
        eks_backends[core.ACCOUNT_ID][cluster.region].clusters.pop(cluster.name, None)
        delete_security_group(cluster.region, cluster.security_group_id)
        return
    _refresh_addons(cluster)
    _refresh_nodegroups(cluster)


def refresh() -> None:
    """Apply every transition that is due."""
    for cluster in list(_clusters.values()):
        _refresh(cluster)
