"""Instance group specifications: UpdateCluster replaces them, some members are immutable, and creation checks
EFA, Spot and training-plan placement; the cluster's TieredStorageConfig is validated and stored."""

from __future__ import annotations

from typing import Any

import botocore.session
import pytest
import requests
from botocore.exceptions import ClientError

from tests.sandbox.aws.helpers import Network, group, make_hyperpod, sandbox_network, wait_for

DETAILS_MEMBERS = set(botocore.session.get_session().get_service_model("sagemaker")
                      .shape_for("ClusterInstanceGroupDetails").members)


def _error(excinfo: pytest.ExceptionInfo[ClientError]) -> tuple[str, str]:
    return excinfo.value.response["Error"]["Code"], excinfo.value.response["Error"]["Message"]


def _seed_plan(url: str, name: str, zone: str = "us-west-2a") -> str:
    answer = requests.post(f"{url}/_sandbox/training-plans", timeout=5, json={
        "region": "us-west-2", "name": name, "instance_type": "ml.p5.48xlarge", "instance_count": 2,
        "duration_hours": 48, "availability_zone": zone})
    answer.raise_for_status()
    return answer.json()["training_plans"][0]["arn"]


@pytest.fixture
def network(client) -> Network:
    return sandbox_network(client, cidr="10.7.0.0/16")


def _vpc(network: Network, *subnets: str) -> dict[str, list[str]]:
    """A ``VpcConfig`` of ``network``'s security group and ``subnets`` (default: its subnet in zone a)."""
    return {"SecurityGroupIds": [network.security_group_id], "Subnets": list(subnets or network.subnet_ids[:1])}


def _groups(client: Any) -> dict[str, dict[str, Any]]:
    described = client("sagemaker").describe_cluster(ClusterName="hp")
    return {item["InstanceGroupName"]: item for item in described["InstanceGroups"]}


def test_describe_returns_every_stored_member_in_details_form(client, aws_sandbox, network):
    plan = _seed_plan(aws_sandbox.url, "details")
    spec = group("gpu", "ml.p5.48xlarge", 1, MinInstanceCount=1, ThreadsPerCore=2, TrainingPlanArn=plan,
                 LifeCycleConfig={"SourceS3Uri": "s3://bucket/lifecycle", "OnCreate": "on_create.sh"},
                 InstanceStorageConfigs=[{"EbsVolumeConfig": {"VolumeSizeInGB": 500}}],
                 OnStartDeepHealthChecks=["InstanceStress"], CapacityRequirements={"OnDemand": {}},
                 OverrideVpcConfig=_vpc(network),
                 ScheduledUpdateConfig={"ScheduleExpression": "cron(0 3 ? * SUN *)"},
                 NetworkInterface={"InterfaceType": "efa-only"})
    make_hyperpod(client, groups=[spec])
    details = _groups(client)["gpu"]
    assert set(details) <= DETAILS_MEMBERS
    for member in ("ExecutionRole", "LifeCycleConfig", "ThreadsPerCore", "InstanceStorageConfigs",
                   "OnStartDeepHealthChecks", "TrainingPlanArn", "OverrideVpcConfig", "ScheduledUpdateConfig",
                   "CapacityRequirements", "NetworkInterface"):
        assert details[member] == spec[member], member
    assert (details["MinCount"], details["TargetCount"], details["TrainingPlanStatus"]) == (1, 1, "Active")


def test_update_replaces_each_listed_group_and_leaves_the_others(client):
    rich = group("gpu", count=1, MinInstanceCount=1, ImageId="default",
                 ScheduledUpdateConfig={"ScheduleExpression": "cron(0 3 ? * SUN *)"},
                 KubernetesConfig={"Labels": {"team": "vision"},
                                   "Taints": [{"Key": "gpu", "Value": "true", "Effect": "NoSchedule"}]})
    other = group("cpu", "ml.m5.xlarge", 1, KubernetesConfig={"Labels": {"team": "ops"}})
    make_hyperpod(client, groups=[rich, other])
    sagemaker = client("sagemaker")
    sagemaker.update_cluster(ClusterName="hp", InstanceGroups=[group("gpu", count=2)])
    groups = _groups(client)
    assert groups["gpu"]["TargetCount"] == 2
    for dropped in ("MinCount", "CurrentImageId", "ScheduledUpdateConfig", "KubernetesConfig"):
        assert dropped not in groups["gpu"], dropped
    assert groups["cpu"]["KubernetesConfig"]["CurrentLabels"] == {"team": "ops"}
    wait_for(lambda: sagemaker.describe_cluster(ClusterName="hp")["ClusterStatus"], lambda s: s == "InService")
    sagemaker.update_cluster(ClusterName="hp", InstanceGroups=[{**rich, "InstanceCount": 2}])
    restored = _groups(client)["gpu"]
    assert restored["ScheduledUpdateConfig"] == rich["ScheduledUpdateConfig"]
    assert restored["KubernetesConfig"]["DesiredTaints"] == rich["KubernetesConfig"]["Taints"]
    assert (restored["MinCount"], restored["DesiredImageId"]) == (1, "default")


@pytest.mark.parametrize(("member", "value"), [
    ("InstanceType", "ml.p4d.24xlarge"),
    ("CapacityRequirements", {"Spot": {}}),
    ("NetworkInterface", {"InterfaceType": "efa"}),
    ("TrainingPlanArn", "arn:aws:sagemaker:us-west-2:123456789012:training-plan/other"),
    ("OverrideVpcConfig", {"SecurityGroupIds": ["sg-0123456789abcdef1"], "Subnets": ["subnet-other"]}),
    ("ExecutionRole", "arn:aws:iam::123456789012:role/another-execution-role"),
])
def test_immutable_members_of_an_existing_group_cannot_change(client, network, member, value):
    spec = group("gpu", "ml.p5.48xlarge", 1, CapacityRequirements={"OnDemand": {}},
                 NetworkInterface={"InterfaceType": "efa-only"}, OverrideVpcConfig=_vpc(network))
    make_hyperpod(client, groups=[spec])
    sagemaker = client("sagemaker")
    with pytest.raises(ClientError) as excinfo:
        sagemaker.update_cluster(ClusterName="hp", InstanceGroups=[{**spec, member: value}])
    code, message = _error(excinfo)
    assert code == "ValidationException" and member in message and "gpu" in message
    assert sagemaker.describe_cluster(ClusterName="hp")["ClusterStatus"] == "InService"
    sagemaker.update_cluster(ClusterName="hp", InstanceGroups=[{**spec, "InstanceCount": 2}])
    assert _groups(client)["gpu"]["TargetCount"] == 2


def test_efa_only_spot_with_plan_and_plan_zone_are_checked(client, aws_sandbox, network):
    in_a, in_b = network.subnet_ids
    plan = _seed_plan(aws_sandbox.url, "zone-a")
    make_hyperpod(client, groups=[group("cpu", "ml.m5.xlarge", 1)], VpcConfig=_vpc(network, in_b))
    sagemaker = client("sagemaker")
    cpu = group("cpu", "ml.m5.xlarge", 1)

    def refused(new_group: dict[str, Any]) -> str:
        with pytest.raises(ClientError) as excinfo:
            sagemaker.update_cluster(ClusterName="hp", InstanceGroups=[cpu, new_group])
        code, message = _error(excinfo)
        assert code == "ValidationException"
        return message

    assert "does not support EFA" in refused(group("new", "ml.m5.xlarge", 1,
                                                   NetworkInterface={"InterfaceType": "efa-only"}))
    assert "Spot" in refused(group("new", "ml.p5.48xlarge", 1, TrainingPlanArn=plan,
                                   CapacityRequirements={"Spot": {}}))
    message = refused(group("new", "ml.p5.48xlarge", 1, TrainingPlanArn=plan))
    assert "us-west-2b" in message and "us-west-2a" in message
    with pytest.raises(ClientError) as excinfo:
        sagemaker.create_cluster(ClusterName="efa", InstanceGroups=[group(
            "g", "ml.c5.large", 1, NetworkInterface={"InterfaceType": "efa-only"})],
            Orchestrator=sagemaker.describe_cluster(ClusterName="hp")["Orchestrator"])
    assert "does not support EFA" in _error(excinfo)[1]

    sagemaker.update_cluster(ClusterName="hp", InstanceGroups=[cpu, group(
        "new", "ml.p5.48xlarge", 1, TrainingPlanArn=plan, OverrideVpcConfig=_vpc(network, in_a),
        NetworkInterface={"InterfaceType": "efa-only"})])
    assert _groups(client)["new"]["TrainingPlanArn"] == plan


def test_vpc_configs_name_subnets_and_security_groups_of_one_vpc_that_ec2_knows(client, network):
    other = sandbox_network(client, cidr="10.8.0.0/16")
    (in_a, in_b), group_id = network.subnet_ids, network.security_group_id
    make_hyperpod(client, groups=[group("cpu", "ml.m5.xlarge", 1)], VpcConfig=_vpc(network, in_a, in_b))
    sagemaker = client("sagemaker")
    orchestrator = sagemaker.describe_cluster(ClusterName="hp")["Orchestrator"]
    cpu = group("cpu", "ml.m5.xlarge", 1)

    def refused(call) -> str:
        with pytest.raises(ClientError) as excinfo:
            call()
        code, message = _error(excinfo)
        assert code == "ValidationException", message
        return message

    def create(vpc: dict[str, list[str]], **spec: Any):
        return lambda: sagemaker.create_cluster(ClusterName="refused", Orchestrator=orchestrator, VpcConfig=vpc,
                                                InstanceGroups=[group("cpu", "ml.m5.xlarge", 1, **spec)])

    def add(override: dict[str, list[str]]):
        return lambda: sagemaker.update_cluster(ClusterName="hp", InstanceGroups=[
            cpu, group("new", "ml.m5.xlarge", 1, OverrideVpcConfig=override)])

    ghost_subnet, ghost_group = "subnet-0123456789abcdef0", "sg-0123456789abcdef0"
    assert refused(create({"SecurityGroupIds": [group_id], "Subnets": [in_a, ghost_subnet]})) == (
        f"Invalid VpcConfig of the cluster: the subnet ID '{ghost_subnet}' does not exist.")
    assert refused(create({"SecurityGroupIds": [ghost_group], "Subnets": [in_a]})) == (
        f"Invalid VpcConfig of the cluster: the security group '{ghost_group}' does not exist.")
    assert refused(create({"SecurityGroupIds": [group_id], "Subnets": [in_a, other.subnet_ids[1]]})) == (
        "Invalid VpcConfig of the cluster: the subnets must belong to one VPC; they are in "
        f"{', '.join(sorted((network.vpc_id, other.vpc_id)))}.")
    assert refused(create({"SecurityGroupIds": [other.security_group_id], "Subnets": [in_a]})) == (
        f"Invalid VpcConfig of the cluster: security group {other.security_group_id} is in {other.vpc_id}, not in the "
        f"VPC of the subnets ({network.vpc_id}).")
    assert refused(create(_vpc(network), OverrideVpcConfig={"SecurityGroupIds": [group_id],
                                                            "Subnets": [ghost_subnet]})) == (
        f"Invalid VpcConfig of instance group cpu: the subnet ID '{ghost_subnet}' does not exist.")
    assert refused(create(_vpc(network), OverrideVpcConfig=_vpc(other))) == (
        f"Instance group cpu overrides the VPC configuration with subnets in {other.vpc_id}; they must be in the "
        f"cluster's VPC {network.vpc_id}.")
    assert [summary["ClusterName"] for summary in sagemaker.list_clusters()["ClusterSummaries"]] == ["hp"]
    assert refused(add({"SecurityGroupIds": [ghost_group], "Subnets": [in_b]})) == (
        f"Invalid VpcConfig of instance group new: the security group '{ghost_group}' does not exist.")
    assert "must be in the cluster's VPC" in refused(add(_vpc(other)))
    sagemaker.update_cluster(ClusterName="hp", InstanceGroups=[cpu, group("new", "ml.m5.xlarge", 1,
                                                                          OverrideVpcConfig=_vpc(network, in_b))])
    assert _groups(client)["new"]["OverrideVpcConfig"] == _vpc(network, in_b)


def test_tiered_storage_config_is_validated_stored_and_disabled(client):
    make_hyperpod(client, TieredStorageConfig={"Mode": "Enable", "InstanceMemoryAllocationPercentage": 20})
    sagemaker, unchecked = client("sagemaker"), client("sagemaker", validate=False)
    described = sagemaker.describe_cluster(ClusterName="hp")
    assert described["TieredStorageConfig"] == {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 20}
    for bad, constraint in (({"Mode": "Enable", "InstanceMemoryAllocationPercentage": 101}, "less than or equal"),
                            ({"InstanceMemoryAllocationPercentage": 30}, "must not be null"),
                            ({"Mode": "On"}, "enum value set")):
        with pytest.raises(ClientError) as excinfo:
            unchecked.update_cluster(ClusterName="hp", TieredStorageConfig=bad)
        code, message = _error(excinfo)
        assert code == "ValidationException" and "tieredStorageConfig" in message and constraint in message
    sagemaker.update_cluster(ClusterName="hp", TieredStorageConfig={"Mode": "Disable",
                                                                    "InstanceMemoryAllocationPercentage": 20})
    assert sagemaker.describe_cluster(ClusterName="hp")["TieredStorageConfig"] == {"Mode": "Disable"}
