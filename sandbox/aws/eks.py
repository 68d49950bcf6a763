"""EKS cluster operations: create/describe/list/delete, configuration and version updates, and their updates.

Clusters report the sandbox's Kubernetes endpoint (``sandbox.endpoints.eks_endpoint``), the sandbox CA as
``certificateAuthority.data`` and an OIDC issuer. ``accessConfig`` behaves as in EKS: the API default
authentication mode is CONFIG_MAP, it only moves forward (CONFIG_MAP → API_AND_CONFIG_MAP → API), and with
``bootstrapClusterCreatorAdminPermissions`` (default true; false is refused in CONFIG_MAP mode, as EKS refuses it)
the caller (``sandbox.aws.callers``: STS's identity for its access key, an assumed role as its role) gets an access
entry with AmazonEKSClusterAdminPolicy as soon as access entries are enabled.
"""

from __future__ import annotations

import json
import re
from typing import Any

from sandbox import clock
from sandbox.aws import callers, core, eks_model, iam_roles, outcomes, tags
from sandbox.aws.core import ApiError, Call, operation
from sandbox.aws.eks_model import EksCluster
from sandbox.aws.network import create_security_group, security_group_vpc, subnet_facts, unknown_subnets

SUPPORTED_VERSIONS = ("1.29", "1.30", "1.31", "1.32", "1.33", "1.34")
DEFAULT_VERSION = "1.33"
PLATFORM_VERSION = "eks.9"
MODE_ORDER = {"CONFIG_MAP": 0, "API_AND_CONFIG_MAP": 1, "API": 2}
_CONFIG_UPDATES = {  # UpdateClusterConfig member → (update type, update param type)
    "resourcesVpcConfig": ("EndpointAccessUpdate", "EndpointPublicAccess"),
    "logging": ("LoggingUpdate", "ClusterLogging"),
    "accessConfig": ("AccessConfigUpdate", "AuthenticationMode"),
    "upgradePolicy": ("UpgradePolicyUpdate", "UpgradePolicy"),
    "zonalShiftConfig": ("ZonalShiftConfigUpdate", "ZonalShiftConfig"),
    "computeConfig": ("AutoModeUpdate", "ComputeConfig"),
    "kubernetesNetworkConfig": ("AutoModeUpdate", "KubernetesNetworkConfig"),
    "storageConfig": ("AutoModeUpdate", "StorageConfig"),
    "remoteNetworkConfig": ("RemoteNetworkConfigUpdate", "RemoteNetworkConfig"),
    "deletionProtection": ("DeletionProtectionUpdate", "DeletionProtection"),
    "controlPlaneScalingConfig": ("ControlPlaneScalingConfigUpdate", "UpdatedTier"),
    "kubeApiServerConfig": ("ControlPlaneComponentConfigUpdate", "KubeApiServerConfig"),
    "kubeSchedulerConfig": ("ControlPlaneComponentConfigUpdate", "KubeSchedulerConfig"),
    "kubeControllerManagerConfig": ("ControlPlaneComponentConfigUpdate", "KubeControllerManagerConfig"),
}
_ROLE_ARN = re.compile(r"arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+")


def invalid(message: str, **fields: Any) -> ApiError:
    return ApiError("InvalidParameterException", message, **fields)


def lookup(call: Call, key: str = "name") -> EksCluster:
    name = call.params[key]
    cluster = eks_model.find(call.region, name)
    if cluster is None:
        raise ApiError("ResourceNotFoundException", f"No cluster found for name: {name}.", clusterName=name)
    return cluster


def require_active(cluster: EksCluster) -> None:
    if cluster.status != "ACTIVE":
        raise ApiError("InvalidRequestException", f"Cluster '{cluster.name}' is not in ACTIVE status",
                       clusterName=cluster.name)


def ec2_not_found(kind: str, resource_id: str, code: str) -> str:
    """EKS's message for a subnet or security group EC2 does not know: EC2's own error, quoted."""
    return (f"The {kind} '{resource_id}' does not exist (Service: AmazonEC2; Status Code: 400; Error Code: {code}; "
            f"Request ID: {core.new_uuid()}; Proxy: null)")


def _check_network(region: str, name: str, vpc: dict[str, Any]) -> str:
    """The VPC of the cluster's subnets. As EKS: every subnet and security group exists in EC2, the subnets are in
    one VPC and two zones, and the security groups are in that VPC."""
    subnet_ids = vpc.get("subnetIds", [])
    if not subnet_ids:
        raise invalid("Subnets are required.", clusterName=name)
    missing = unknown_subnets(region, subnet_ids)
    if missing:
        raise invalid(ec2_not_found("subnet ID", missing[0], "InvalidSubnetID.NotFound"), clusterName=name)
    facts = [subnet_facts(region, subnet_id) for subnet_id in subnet_ids]
    if len({fact.vpc_id for fact in facts}) > 1:
        raise invalid("Subnets specified must belong to the same VPC.", clusterName=name)
    if len({fact.availability_zone for fact in facts}) < 2:
        raise invalid("Subnets specified must be in at least two different AZs.", clusterName=name)
    vpc_id = facts[0].vpc_id
    for group_id in vpc.get("securityGroupIds", []):
        group_vpc = security_group_vpc(region, group_id)
        if group_vpc is None:
            raise invalid(ec2_not_found("security group", group_id, "InvalidGroup.NotFound"), clusterName=name)
        if group_vpc != vpc_id:
            raise invalid(f"A security group is not in the same VPC as the subnets. The security group {group_id} is "
                          f"in the following VPC: {group_vpc}. The subnets are in the following VPC: {vpc_id}",
                          clusterName=name)
    return vpc_id


def _cluster_security_group(region: str, name: str, vpc_id: str) -> str:
    """The cluster security group EKS makes in the cluster's VPC (``clusterSecurityGroupId``)."""
    group_name = f"eks-cluster-sg-{name}-{int(core.hex_id(8), 16) % 10**10}"
    return create_security_group(
        region, group_name, "EKS created security group applied to ENI that is attached to EKS Control Plane master "
        "nodes, as well as any managed workloads.", vpc_id,
        {"Name": group_name, "aws:eks:cluster-name": name, f"kubernetes.io/cluster/{name}": "owned"})


@operation("eks", "CreateCluster")
def create_cluster(call: Call) -> dict[str, Any]:
    name = call.params["name"]
    if eks_model.find(call.region, name) is not None:
        raise ApiError("ResourceInUseException", f"Cluster already exists with name: {name}", clusterName=name)
    if not _ROLE_ARN.fullmatch(call.params["roleArn"]):
        raise invalid(f"The role with name {call.params['roleArn']} cannot be found.", clusterName=name)
    if not iam_roles.assumable_by(call.params["roleArn"], "eks.amazonaws.com"):
        raise invalid(f"Role with arn: {call.params['roleArn']}, could not be assumed because it does not exist or "
                      "the trusted entity is not correct", clusterName=name)
    version = call.get("version", DEFAULT_VERSION)
    if version not in SUPPORTED_VERSIONS:
        raise invalid(f"unsupported Kubernetes version {version}", clusterName=name)
    vpc_id = _check_network(call.region, name, call.params["resourcesVpcConfig"])
    access = call.get("accessConfig", {})
    if access.get("authenticationMode", "CONFIG_MAP") == "CONFIG_MAP" \
            and not access.get("bootstrapClusterCreatorAdminPermissions", True):
        raise invalid("bootstrapClusterCreatorAdminPermissions must be true if cluster authentication mode is set to "
                      "CONFIG_MAP", clusterName=name)
    cluster_tags = dict(call.get("tags", {}))
    outcome = outcomes.take("eks-cluster", name, cluster_tags)
    now = clock.now()
    spec = {key: value for key, value in call.params.items() if key not in ("name", "tags", "version")}
    cluster = EksCluster(
        name=name, region=call.region, arn=core.arn("eks", call.region, f"cluster/{name}"), id=core.new_uuid(),
        created_at=now, since=now, spec=spec, tags=cluster_tags, version=version,
        authentication_mode=access.get("authenticationMode", "CONFIG_MAP"),
        bootstrap_admin=access.get("bootstrapClusterCreatorAdminPermissions", True),
        creator_arn=callers.credential(call.access_key).principal_arn,
        oidc_id=core.hex_id(32).upper(), security_group_id=_cluster_security_group(call.region, name, vpc_id),
        vpc_id=vpc_id,
        pending_failure=outcome[1] if outcome else None)
    eks_model.add(cluster)
    eks_model.bootstrap_creator_entry(cluster)
    return {"cluster": render(cluster)}


def render(cluster: EksCluster) -> dict[str, Any]:
    """The ``Cluster`` structure. As in EKS, the API endpoint and its CA appear once the control plane is up."""
    spec = cluster.spec
    serving = cluster.status in ("ACTIVE", "UPDATING")
    vpc = spec.get("resourcesVpcConfig", {})
    network = spec.get("kubernetesNetworkConfig", {})
    return {
        **spec,
        "name": cluster.name, "arn": cluster.arn, "createdAt": core.utc(cluster.created_at),
        "version": cluster.version, "status": cluster.status,
        "roleArn": spec["roleArn"], "id": cluster.id, "platformVersion": PLATFORM_VERSION,
        **({"endpoint": cluster.endpoint, "certificateAuthority": {"data": cluster.certificate_data}}
           if serving else {"certificateAuthority": {}}),
        "identity": {"oidc": {"issuer": cluster.oidc_issuer}},
        "resourcesVpcConfig": {
            "subnetIds": vpc.get("subnetIds", []), "securityGroupIds": vpc.get("securityGroupIds", []),
            "clusterSecurityGroupId": cluster.security_group_id, "vpcId": cluster.vpc_id,
            "endpointPublicAccess": vpc.get("endpointPublicAccess", True),
            "endpointPrivateAccess": vpc.get("endpointPrivateAccess", False),
            "publicAccessCidrs": vpc.get("publicAccessCidrs", ["0.0.0.0/0"])},
        "kubernetesNetworkConfig": {"serviceIpv4Cidr": network.get("serviceIpv4Cidr", "10.100.0.0/16"),
                                    "ipFamily": network.get("ipFamily", "ipv4"),
                                    "elasticLoadBalancing": network.get("elasticLoadBalancing",
                                                                        {"enabled": False})},
        "logging": spec.get("logging", {"clusterLogging": [{"types": ["api", "audit", "authenticator",
                                                                      "controllerManager", "scheduler"],
                                                            "enabled": False}]}),
        "accessConfig": {"authenticationMode": cluster.authentication_mode,
                         "bootstrapClusterCreatorAdminPermissions": cluster.bootstrap_admin},
        "upgradePolicy": spec.get("upgradePolicy", {"supportType": "EXTENDED"}),
        "health": {"issues": []}, "tags": cluster.tags or None,
        "deletionProtection": spec.get("deletionProtection", False),
    }


@operation("eks", "DescribeCluster")
def describe_cluster(call: Call) -> dict[str, Any]:
    return {"cluster": render(lookup(call))}


@operation("eks", "ListClusters")
def list_clusters(call: Call) -> dict[str, Any]:
    names = sorted(cluster.name for cluster in eks_model.clusters() if cluster.region == call.region)
    page, token = core.paginate(names, call.get("nextToken"), call.get("maxResults"))
    return {"clusters": page, "nextToken": token}


@operation("eks", "DeleteCluster")
def delete_cluster(call: Call) -> dict[str, Any]:
    cluster = lookup(call)
    if cluster.status == "CREATING":
        raise ApiError("ResourceInUseException", f"Cluster {cluster.name} is currently being created.",
                       clusterName=cluster.name)
    if cluster.nodegroups:
        raise ApiError("ResourceInUseException", "Cluster has nodegroups attached", clusterName=cluster.name)
    if cluster.spec.get("deletionProtection"):
        raise ApiError("InvalidRequestException", f"Cluster {cluster.name} has deletion protection enabled.",
                       clusterName=cluster.name)
    if cluster.status != "DELETING":
        eks_model.set_status(cluster, "DELETING")
    return {"cluster": render(cluster)}


def _start_update(cluster: EksCluster, update_type: str, params: list[dict[str, str]],
                  addon: str | None = None, nodegroup: str | None = None) -> dict[str, Any]:
    update = eks_model.Update(id=core.new_uuid(), type=update_type, params=params, created_at=clock.now(),
                              addon=addon, nodegroup=nodegroup)
    cluster.updates[update.id] = update
    return render_update(update)


def render_update(update: eks_model.Update) -> dict[str, Any]:
    return {"id": update.id, "status": update.status, "type": update.type, "params": update.params,
            "createdAt": core.utc(update.created_at), "errors": []}


def _param_value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _check_access_change(cluster: EksCluster, access: dict[str, Any]) -> None:
    if "bootstrapClusterCreatorAdminPermissions" in access:
        raise invalid("bootstrapClusterCreatorAdminPermissions can only be set when the cluster is created.",
                      clusterName=cluster.name)
    mode = access.get("authenticationMode")
    if mode is not None and MODE_ORDER[mode] <= MODE_ORDER[cluster.authentication_mode]:
        raise invalid(f"Unsupported authentication mode update from {cluster.authentication_mode} to {mode}",
                      clusterName=cluster.name)


@operation("eks", "UpdateClusterConfig")
def update_cluster_config(call: Call) -> dict[str, Any]:
    cluster = lookup(call)
    changes = {key: call.params[key] for key in _CONFIG_UPDATES if key in call.params}
    if not changes:
        raise invalid("No changes were requested.", clusterName=cluster.name)
    if cluster.status != "ACTIVE":
        raise ApiError("ResourceInUseException", f"Cluster {cluster.name} has an update in progress or is not "
                                                 "ACTIVE.", clusterName=cluster.name)
    if "accessConfig" in changes:
        _check_access_change(cluster, changes["accessConfig"])
    update_type = _CONFIG_UPDATES[next(iter(changes))][0]
    params = [{"type": _CONFIG_UPDATES[key][1], "value": _param_value(value)} for key, value in changes.items()]
    for key, value in changes.items():
        if key == "accessConfig":
            cluster.authentication_mode = value.get("authenticationMode", cluster.authentication_mode)
        elif isinstance(value, dict) and isinstance(cluster.spec.get(key), dict):
            cluster.spec[key] = {**cluster.spec[key], **value}
        else:
            cluster.spec[key] = value
    eks_model.bootstrap_creator_entry(cluster)
    eks_model.set_status(cluster, "UPDATING")
    return {"update": _start_update(cluster, update_type, params)}


@operation("eks", "UpdateClusterVersion")
def update_cluster_version(call: Call) -> dict[str, Any]:
    cluster = lookup(call)
    version = call.params["version"]
    if cluster.status != "ACTIVE":
        raise ApiError("ResourceInUseException", f"Cluster {cluster.name} has an update in progress or is not "
                                                 "ACTIVE.", clusterName=cluster.name)
    current_minor = int(cluster.version.split(".")[1])
    if version not in SUPPORTED_VERSIONS or int(version.split(".")[1]) != current_minor + 1:
        raise invalid(f"Unsupported Kubernetes minor version update from {cluster.version} to {version}",
                      clusterName=cluster.name)
    cluster.pending_version = version
    eks_model.set_status(cluster, "UPDATING")
    params = [{"type": "Version", "value": version}, {"type": "PlatformVersion", "value": PLATFORM_VERSION}]
    return {"update": _start_update(cluster, "VersionUpdate", params)}


def start_addon_update(cluster: EksCluster, addon: str, params: list[dict[str, str]]) -> dict[str, Any]:
    return _start_update(cluster, "AddonUpdate", params, addon=addon)


def start_nodegroup_update(cluster: EksCluster, nodegroup: str, params: list[dict[str, str]]) -> dict[str, Any]:
    return _start_update(cluster, "ConfigUpdate", params, nodegroup=nodegroup)


@operation("eks", "DescribeUpdate")
def describe_update(call: Call) -> Any:
    cluster = lookup(call)
    update = cluster.updates.get(call.params["updateId"])
    if update is None or update.addon != call.get("addonName") or update.nodegroup != call.get("nodegroupName"):
        raise ApiError("ResourceNotFoundException", f"No update found for ID: {call.params['updateId']}",
                       clusterName=cluster.name)
    return {"update": render_update(update)}


@operation("eks", "ListUpdates")
def list_updates(call: Call) -> Any:
    cluster = lookup(call)
    ids = [update.id for update in cluster.updates.values()
           if update.addon == call.get("addonName") and update.nodegroup == call.get("nodegroupName")]
    page, token = core.paginate(ids, call.get("nextToken"), call.get("maxResults"))
    return {"updateIds": page, "nextToken": token}


def _eks_tags(arn: str) -> dict[str, str] | None:
    for cluster in eks_model.clusters():
        if cluster.arn == arn:
            return cluster.tags
        for addon in cluster.addons.values():
            if addon.arn == arn:
                return addon.tags
        for entry in cluster.access_entries.values():
            if entry.arn == arn:
                return entry.tags
        for association in cluster.pod_identities.values():
            if association.arn == arn:
                return association.tags
        for nodegroup in cluster.nodegroups.values():
            if nodegroup.arn == arn:
                return nodegroup.tags
    return None


tags.register("eks", ("cluster", "addon", "access-entry", "podidentityassociation", "nodegroup"), _eks_tags)
