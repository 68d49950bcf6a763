"""FSx file systems (replacing moto's, which lacks ``Lifecycle`` and Lustre's ``MountName``).

A file system is CREATING for ``CREATE_SECONDS`` then AVAILABLE, DELETING for ``DELETE_SECONDS`` then gone.
Lustre file systems get a ``MountName`` (``fsx`` for SCRATCH_1, else 8 random lower-case characters, as FSx
does) and are checked as FSx checks them: subnets and security groups that exist in EC2, in one VPC
(``InvalidNetworkSettings`` naming the id), one subnet, a storage capacity of 1200, 2400 or a multiple of 2400
GiB (3600 for SCRATCH_1), and a per-unit throughput valid for a persistent deployment type (a ``StorageCapacity``
outside the model's range is refused by the app's model check, as ``BadRequest``). Lustre file systems of an account
and region hold at most ``LUSTRE_STORAGE_QUOTA_GIB`` together (FSx's default quota); a file system that would pass
it is refused with ``ServiceLimitExceeded`` before it exists. FSx backups are left to moto, which does not know
these file systems.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sandbox import clock, control
from sandbox.aws import core, tags
from sandbox.aws.core import ApiError, Call, operation
from sandbox.aws.network import security_group_vpc, subnet_facts, unknown_subnets

CREATE_SECONDS = 480.0
DELETE_SECONDS = 120.0
#: FSx's default quota of Lustre storage per account and region, in GiB.
LUSTRE_STORAGE_QUOTA_GIB = 100_800
THROUGHPUTS = {"PERSISTENT_1": (50, 100, 200), "PERSISTENT_2": (125, 250, 500, 1000)}


@dataclass
class FileSystem:
    id: str
    arn: str
    region: str
    created_at: float
    spec: dict[str, Any]
    tags: dict[str, str]
    vpc_id: str
    mount_name: str | None
    lifecycle: str = "CREATING"
    since: float = 0.0
    network_interface: str = field(default_factory=lambda: "eni-" + core.hex_id(17))


_file_systems: dict[str, FileSystem] = {}


@control.on_reset
def _reset() -> None:
    with core.transaction():
        _file_systems.clear()


def refresh() -> None:
    for fs in list(_file_systems.values()):
        if fs.lifecycle == "CREATING" and clock.due(fs.since, CREATE_SECONDS):
            fs.lifecycle, fs.since = "AVAILABLE", clock.now()
        elif fs.lifecycle == "DELETING" and clock.due(fs.since, DELETE_SECONDS):
            del _file_systems[fs.id]


def _bad(message: str) -> ApiError:
    return ApiError("BadRequest", message)


def _check_lustre(call: Call) -> None:
    lustre = call.get("LustreConfiguration", {})
    deployment = lustre.get("DeploymentType", "SCRATCH_1")
    capacity = call.get("StorageCapacity")
    if capacity is None:
        raise _bad("StorageCapacity is required for Lustre file systems.")
    step = 3600 if deployment == "SCRATCH_1" else 2400
    if capacity not in (1200, 2400) and capacity % step:
        raise _bad(f"Storage capacity must be 1200, 2400, or a multiple of {step} GiB for {deployment}.")
    if len(call.params["SubnetIds"]) != 1:
        raise _bad("Lustre file systems support exactly one subnet.")
    if deployment in THROUGHPUTS and lustre.get("PerUnitStorageThroughput") not in THROUGHPUTS[deployment]:
        allowed = ", ".join(str(value) for value in THROUGHPUTS[deployment])
        raise _bad(f"PerUnitStorageThroughput must be one of {allowed} for {deployment}.")
    used = sum(fs.spec.get("StorageCapacity", 0) for fs in _file_systems.values()
               if fs.region == call.region and fs.spec["FileSystemType"] == "LUSTRE")
    if used + capacity > LUSTRE_STORAGE_QUOTA_GIB:
        raise ApiError("ServiceLimitExceeded", f"Account {core.ACCOUNT_ID} can not create a file system of {capacity} "
                       f"GiB: the total Lustre storage capacity would exceed its limit of {LUSTRE_STORAGE_QUOTA_GIB} "
                       "GiB.")


def render(fs: FileSystem) -> dict[str, Any]:
    spec = fs.spec
    result = {key: value for key, value in spec.items() if key not in ("ClientRequestToken", "Tags")}
    result.update(OwnerId=core.ACCOUNT_ID, CreationTime=core.utc(fs.created_at), FileSystemId=fs.id,
                  Lifecycle=fs.lifecycle, VpcId=fs.vpc_id, StorageType=spec.get("StorageType", "SSD"),
                  NetworkInterfaceIds=[fs.network_interface], DNSName=f"{fs.id}.fsx.{fs.region}.amazonaws.com",
                  ResourceARN=fs.arn, Tags=[{"Key": k, "Value": v} for k, v in fs.tags.items()] or None)
    if spec["FileSystemType"] == "LUSTRE":
        lustre = spec.get("LustreConfiguration", {})
        result["LustreConfiguration"] = {
            "WeeklyMaintenanceStartTime": "1:05:00", "DeploymentType": "SCRATCH_1", "DataCompressionType": "NONE",
            **lustre, "MountName": fs.mount_name}
        result["FileSystemTypeVersion"] = spec.get("FileSystemTypeVersion", "2.15")
    return result


def _check_network(call: Call) -> str | None:
    """The VPC of the subnets. ``InvalidNetworkSettings`` (naming the id) unless every subnet and security group
    exists in EC2, in one VPC."""
    subnets = call.params["SubnetIds"]
    missing = unknown_subnets(call.region, subnets)
    if missing:
        raise ApiError("InvalidNetworkSettings", f"The subnet ID '{missing[0]}' does not exist",
                       InvalidSubnetId=missing[0])
    vpcs = [subnet_facts(call.region, subnet).vpc_id for subnet in subnets]
    for subnet, vpc in zip(subnets, vpcs, strict=True):
        if vpc != vpcs[0]:
            raise ApiError("InvalidNetworkSettings", f"Subnet {subnet} is not part of the VPC {vpcs[0]} of the other "
                           "subnets.", InvalidSubnetId=subnet)
    for group_id in call.get("SecurityGroupIds", []):
        group_vpc = security_group_vpc(call.region, group_id)
        if group_vpc is None:
            raise ApiError("InvalidNetworkSettings", f"The security group '{group_id}' does not exist",
                           InvalidSecurityGroupId=group_id)
        if vpcs and group_vpc != vpcs[0]:
            raise ApiError("InvalidNetworkSettings", f"Security group {group_id} is not part of the VPC {vpcs[0]} "
                           "of the subnets.", InvalidSecurityGroupId=group_id)
    return vpcs[0] if vpcs else None


@operation("fsx", "CreateFileSystem")
def create_file_system(call: Call) -> dict[str, Any]:
    if call.params["FileSystemType"] == "LUSTRE":
        _check_lustre(call)
    vpc_id = _check_network(call)
    deployment = call.get("LustreConfiguration", {}).get("DeploymentType", "SCRATCH_1")
    mount_name = None
    if call.params["FileSystemType"] == "LUSTRE":
        mount_name = "fsx" if deployment == "SCRATCH_1" else core.lower_alnum(8)
    fs_id = "fs-" + core.hex_id(17)
    now = clock.now()
    fs = FileSystem(id=fs_id, arn=core.arn("fsx", call.region, f"file-system/{fs_id}"), region=call.region,
                    created_at=now, since=now, spec=dict(call.params), tags=core.tag_list(call.get("Tags")),
                    vpc_id=vpc_id or "vpc-" + core.hex_id(17), mount_name=mount_name)
    _file_systems[fs_id] = fs
    return {"FileSystem": render(fs)}


@operation("fsx", "DescribeFileSystems")
def describe_file_systems(call: Call) -> dict[str, Any]:
    wanted = call.get("FileSystemIds")
    selected = [fs for fs in _file_systems.values() if fs.region == call.region]
    if wanted:
        missing = [fs_id for fs_id in wanted if fs_id not in {fs.id for fs in selected}]
        if missing:
            raise ApiError("FileSystemNotFound", f"File system '{missing[0]}' does not exist.")
        selected = [fs for fs in selected if fs.id in wanted]
    page, token = core.paginate(selected, call.get("NextToken"), call.get("MaxResults"), default_max=2147483647)
    return {"FileSystems": [render(fs) for fs in page], "NextToken": token}


def _lookup(call: Call) -> FileSystem:
    fs = _file_systems.get(call.params["FileSystemId"])
    if fs is None or fs.region != call.region:
        raise ApiError("FileSystemNotFound", f"File system '{call.params['FileSystemId']}' does not exist.")
    return fs


@operation("fsx", "UpdateFileSystem")
def update_file_system(call: Call) -> dict[str, Any]:
    fs = _lookup(call)
    if fs.lifecycle != "AVAILABLE":
        raise _bad(f"File system {fs.id} is {fs.lifecycle}; it can be updated only when AVAILABLE.")
    capacity = call.get("StorageCapacity")
    if capacity is not None and capacity <= fs.spec.get("StorageCapacity", 0):
        raise _bad("The new storage capacity must be larger than the current one.")
    if capacity is not None:
        fs.spec["StorageCapacity"] = capacity
    if "LustreConfiguration" in call.params:
        fs.spec["LustreConfiguration"] = {**fs.spec.get("LustreConfiguration", {}),
                                          **call.params["LustreConfiguration"]}
    return {"FileSystem": render(fs)}


@operation("fsx", "DeleteFileSystem")
def delete_file_system(call: Call) -> dict[str, Any]:
    fs = _lookup(call)
    if fs.lifecycle == "CREATING":
        raise _bad(f"File system {fs.id} is still being created.")
    if fs.lifecycle != "DELETING":
        fs.lifecycle, fs.since = "DELETING", clock.now()
    return {"FileSystemId": fs.id, "Lifecycle": fs.lifecycle}


def _fs_tags(arn: str) -> dict[str, str] | None:
    fs = next((fs for fs in _file_systems.values() if fs.arn == arn), None)
    return fs.tags if fs is not None else None


tags.register("fsx", ("file-system",), _fs_tags)
