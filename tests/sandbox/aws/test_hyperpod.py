"""SageMaker HyperPod through boto3: stored fields, lifecycle, updates, nodes, batch actions, errors."""

from __future__ import annotations

import botocore.session
import pytest
import requests
from botocore.exceptions import ClientError

from sandbox import clock
from tests.sandbox.aws.helpers import (
    ROLE,
    Network,
    group,
    instantly,
    make_eks_cluster,
    make_hyperpod,
    sandbox_network,
    wait_for,
)


def all_fields_group(network: Network) -> dict:
    """A group setting every member, its ``OverrideVpcConfig`` in ``network`` (zone b)."""
    return group(
        "gpu", "ml.p5.48xlarge", 2, MinInstanceCount=1, ThreadsPerCore=1,
        LifeCycleConfig={"SourceS3Uri": "s3://customer-bucket/lifecycle/", "OnCreate": "on_create.sh"},
        InstanceStorageConfigs=[{"EbsVolumeConfig": {"VolumeSizeInGB": 500}}],
        OnStartDeepHealthChecks=["InstanceStress", "InstanceConnectivity"],
        OverrideVpcConfig={"SecurityGroupIds": [network.security_group_id], "Subnets": network.subnet_ids[1:]},
        ScheduledUpdateConfig={"ScheduleExpression": "cron(0 3 ? * SUN *)"},
        NetworkInterface={"InterfaceType": "efa"}, CapacityRequirements={"OnDemand": {}},
        KubernetesConfig={"Labels": {"team": "vision"}, "Taints": [{"Key": "gpu", "Value": "true",
                                                                     "Effect": "NoSchedule"}]},
        ImageId="default",
    )


def _error(excinfo: pytest.ExceptionInfo[ClientError]) -> tuple[str, str, int]:
    error = excinfo.value.response
    return error["Error"]["Code"], error["Error"]["Message"], error["ResponseMetadata"]["HTTPStatusCode"]


def test_describe_returns_every_field_the_caller_set(client):
    network = sandbox_network(client, cidr="10.5.0.0/16")
    all_fields = all_fields_group(network)
    described = make_hyperpod(
        client, groups=[all_fields, group("cpu", "ml.m5.xlarge", 1)], NodeRecovery="None",
        VpcConfig={"SecurityGroupIds": [network.security_group_id], "Subnets": network.subnet_ids},
        TieredStorageConfig={"Mode": "Enable", "InstanceMemoryAllocationPercentage": 20},
        NodeProvisioningMode="Continuous", ClusterRole=ROLE,
        AutoScaling={"Mode": "Enable", "AutoScalerType": "Karpenter"}, Tags=[{"Key": "team", "Value": "vision"}])
    assert described["NodeRecovery"] == "None"
    assert described["TieredStorageConfig"] == {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 20}
    assert described["NodeProvisioningMode"] == "Continuous"
    assert described["ClusterRole"] == ROLE
    assert described["AutoScaling"] == {"Mode": "Enable", "AutoScalerType": "Karpenter", "Status": "InService"}
    assert described["Orchestrator"]["Eks"]["ClusterArn"].endswith(":cluster/hp-eks")
    assert described["VpcConfig"]["Subnets"] == network.subnet_ids
    assert described["ClusterArn"].split("/")[-1].isalnum() and len(described["ClusterArn"].split("/")[-1]) == 12
    gpu = described["InstanceGroups"][0]
    for key in ("InstanceGroupName", "InstanceType", "ThreadsPerCore", "LifeCycleConfig", "ExecutionRole",
                "InstanceStorageConfigs", "OnStartDeepHealthChecks", "OverrideVpcConfig", "ScheduledUpdateConfig",
                "NetworkInterface", "CapacityRequirements"):
        assert gpu[key] == all_fields[key], key
    assert (gpu["TargetCount"], gpu["CurrentCount"], gpu["MinCount"]) == (2, 2, 1)
    assert gpu["KubernetesConfig"]["CurrentLabels"] == gpu["KubernetesConfig"]["DesiredLabels"] == {"team": "vision"}
    assert gpu["KubernetesConfig"]["DesiredTaints"][0]["Effect"] == "NoSchedule"
    assert gpu["CurrentImageId"] == gpu["DesiredImageId"] == "default"
    assert gpu["Status"] == "InService"
    tags = client("sagemaker").list_tags(ResourceArn=described["ClusterArn"])["Tags"]
    assert tags == [{"Key": "team", "Value": "vision"}]


def test_missing_optional_fields_and_every_instance_type_are_accepted(client):
    instance_types = botocore.session.get_session().get_service_model("sagemaker").shape_for(
        "ClusterInstanceType").enum
    make_eks_cluster(client, "types-eks", accessConfig={"authenticationMode": "API"})
    sagemaker = client("sagemaker")
    eks_arn = client("eks").describe_cluster(name="types-eks")["cluster"]["arn"]
    for index in range(0, len(instance_types), 100):
        chunk = instance_types[index:index + 100]
        sagemaker.create_cluster(
            ClusterName=f"types-{index}", Orchestrator={"Eks": {"ClusterArn": eks_arn}},
            InstanceGroups=[{"InstanceGroupName": f"g{i}", "InstanceType": t, "InstanceCount": 0,
                             "ExecutionRole": ROLE} for i, t in enumerate(chunk)])
        described = sagemaker.describe_cluster(ClusterName=f"types-{index}")
        assert [g["InstanceType"] for g in described["InstanceGroups"]] == chunk
        assert "ThreadsPerCore" not in described["InstanceGroups"][0]


def test_status_moves_creating_in_service_updating_deleting_gone(client):
    clock.set_scale(0.0005)
    sagemaker = client("sagemaker")
    described = make_hyperpod(client, wait=False)
    assert described["ClusterStatus"] == "Creating"
    assert described["InstanceGroups"][0]["Status"] == "Creating"
    nodes = sagemaker.list_cluster_nodes(ClusterName="hp")["ClusterNodeSummaries"]
    assert {node["InstanceStatus"]["Status"] for node in nodes} == {"Pending"}
    wait_for(lambda: sagemaker.describe_cluster(ClusterName="hp")["ClusterStatus"], lambda s: s == "InService")
    sagemaker.update_cluster(ClusterName="hp", InstanceGroups=[group(count=3)])
    assert sagemaker.describe_cluster(ClusterName="hp")["ClusterStatus"] == "Updating"
    wait_for(lambda: sagemaker.describe_cluster(ClusterName="hp")["ClusterStatus"], lambda s: s == "InService")
    sagemaker.delete_cluster(ClusterName="hp")
    assert sagemaker.describe_cluster(ClusterName="hp")["ClusterStatus"] == "Deleting"
    wait_for(lambda: sagemaker.list_clusters()["ClusterSummaries"], lambda s: s == [])
    with pytest.raises(ClientError) as excinfo:
        sagemaker.describe_cluster(ClusterName="hp")
    assert _error(excinfo)[0] == "ResourceNotFound"


def test_failed_on_request_by_tag(client):
    sagemaker = client("sagemaker")
    with instantly():
        make_hyperpod(client, wait=False, Tags=[{"Key": "sandbox:fail", "Value": "Capacity is gone"}])
        described = wait_for(lambda: sagemaker.describe_cluster(ClusterName="hp"),
                             lambda c: c["ClusterStatus"] != "Creating")
    assert (described["ClusterStatus"], described["FailureMessage"]) == ("Failed", "Capacity is gone")
    assert sagemaker.list_cluster_nodes(ClusterName="hp")["ClusterNodeSummaries"] == []


def test_update_cluster_adds_scales_and_deletes_groups_and_settings(client):
    sagemaker = client("sagemaker")
    make_hyperpod(client, groups=[group("a", count=2), group("b", "ml.m5.xlarge", 1)])
    sagemaker.update_cluster(ClusterName="hp", InstanceGroups=[group("a", count=1), group("c", "ml.c5.xlarge", 2)],
                             InstanceGroupsToDelete=["b"], NodeRecovery="None",
                             TieredStorageConfig={"Mode": "Enable"}, ClusterRole=ROLE)
    during = sagemaker.describe_cluster(ClusterName="hp")
    assert {g["InstanceGroupName"]: g["Status"] for g in during["InstanceGroups"]}["b"] == "Deleting"
    described = wait_for(lambda: sagemaker.describe_cluster(ClusterName="hp"),
                         lambda c: c["ClusterStatus"] == "InService")
    groups = {g["InstanceGroupName"]: g for g in described["InstanceGroups"]}
    assert sorted(groups) == ["a", "c"]
    assert (groups["a"]["TargetCount"], groups["a"]["CurrentCount"]) == (1, 1)
    assert (groups["c"]["TargetCount"], groups["c"]["CurrentCount"]) == (2, 2)
    assert described["NodeRecovery"] == "None" and described["TieredStorageConfig"] == {"Mode": "Enable"}
    nodes = sagemaker.list_cluster_nodes(ClusterName="hp")["ClusterNodeSummaries"]
    assert sorted(node["InstanceGroupName"] for node in nodes) == ["a", "c", "c"]


def test_update_cluster_software(client):
    sagemaker = client("sagemaker")
    make_hyperpod(client)
    sagemaker.update_cluster_software(ClusterName="hp", InstanceGroups=[{"InstanceGroupName": "workers",
                                                                          "ImageReleaseVersion": "2026.1.5"}])
    workers = sagemaker.describe_cluster(ClusterName="hp")["InstanceGroups"][0]
    assert (workers["SoftwareUpdateStatus"], workers["DesiredImageReleaseVersion"]) == ("InProgress", "2026.1.5")
    described = wait_for(lambda: sagemaker.describe_cluster(ClusterName="hp"),
                         lambda c: c["ClusterStatus"] == "InService")
    assert described["InstanceGroups"][0]["CurrentImageReleaseVersion"] == "2026.1.5"
    node = sagemaker.list_cluster_nodes(ClusterName="hp")["ClusterNodeSummaries"][0]
    assert "LastSoftwareUpdateTime" in node


def test_list_cluster_nodes_paginates_and_filters(client):
    sagemaker = client("sagemaker")
    make_hyperpod(client, groups=[group("alpha", count=3), group("beta", "ml.m5.large", 2)])
    first = sagemaker.list_cluster_nodes(ClusterName="hp", MaxResults=2, IncludeNodeLogicalIds=True)
    assert len(first["ClusterNodeSummaries"]) == 2 and first["NextToken"]
    assert all(node["NodeLogicalId"] for node in first["ClusterNodeSummaries"])
    pages = sagemaker.get_paginator("list_cluster_nodes").paginate(ClusterName="hp", PaginationConfig={"PageSize": 2})
    assert sum(len(page["ClusterNodeSummaries"]) for page in pages) == 5
    beta = sagemaker.list_cluster_nodes(ClusterName="hp", InstanceGroupNameContains="bet")["ClusterNodeSummaries"]
    assert [node["InstanceType"] for node in beta] == ["ml.m5.large", "ml.m5.large"]
    node_id = beta[0]["InstanceId"]
    details = sagemaker.describe_cluster_node(ClusterName="hp", NodeId=node_id)["NodeDetails"]
    assert details["InstanceStatus"] == {"Status": "Running"}
    assert details["Placement"]["AvailabilityZone"].startswith("us-west-2")
    dashed = details["PrivatePrimaryIp"].replace(".", "-")
    assert details["PrivateDnsHostname"] == f"ip-{dashed}.us-west-2.compute.internal"
    assert details["InstanceGroupName"] == "beta"


def test_batch_actions_answer_with_successful_and_failed_lists(client):
    sagemaker = client("sagemaker")
    make_hyperpod(client, groups=[group(count=3)])
    ids = [node["InstanceId"] for node in sagemaker.list_cluster_nodes(ClusterName="hp")["ClusterNodeSummaries"]]
    unknown = "i-0123456789abcdef0"
    reboot = sagemaker.batch_reboot_cluster_nodes(ClusterName="hp", NodeIds=[ids[0], unknown])
    assert reboot["Successful"] == [ids[0]]
    assert reboot["Failed"][0]["NodeId"] == unknown and reboot["Failed"][0]["ErrorCode"] == "InstanceIdNotFound"
    again = sagemaker.batch_reboot_cluster_nodes(ClusterName="hp", NodeIds=[ids[0]])
    assert again["Failed"][0]["ErrorCode"] == "InvalidInstanceStatus"
    replace = sagemaker.batch_replace_cluster_nodes(ClusterName="hp", NodeIds=[ids[1]])
    assert replace["Successful"] == [ids[1]]
    delete = sagemaker.batch_delete_cluster_nodes(ClusterName="hp", NodeIds=[ids[2], unknown])
    assert delete["Successful"] == [ids[2]]
    assert delete["Failed"] == [{"Code": "NodeIdNotFound", "Message": delete["Failed"][0]["Message"],
                                 "NodeId": unknown}]

    def settled(nodes):
        return len(nodes) == 2 and all(node["InstanceStatus"]["Status"] == "Running" for node in nodes)

    nodes = wait_for(lambda: sagemaker.list_cluster_nodes(ClusterName="hp")["ClusterNodeSummaries"], settled)
    current = {node["InstanceId"] for node in nodes}
    assert ids[0] in current and ids[1] not in current and ids[2] not in current
    assert sagemaker.describe_cluster(ClusterName="hp")["InstanceGroups"][0]["TargetCount"] == 2


def test_bad_requests_get_validation_errors_and_store_nothing(client):
    config_map = make_eks_cluster(client, "config-map-eks")["arn"]
    make_eks_cluster(client, "v-eks", accessConfig={"authenticationMode": "API"})
    eks_arn = client("eks").describe_cluster(name="v-eks")["cluster"]["arn"]
    sagemaker = client("sagemaker", validate=False)

    def create(**params):
        with pytest.raises(ClientError) as excinfo:
            sagemaker.create_cluster(ClusterName="bad", Orchestrator={"Eks": {"ClusterArn": eks_arn}}, **params)
        return _error(excinfo)

    code, message, status = create(InstanceGroups=[group(instance_type="ml.bogus.1xlarge")])
    assert (code, status) == ("ValidationException", 400)
    assert message.startswith("1 validation error detected: Value 'ml.bogus.1xlarge' at "
                              "'instanceGroups.1.member.instanceType' failed to satisfy constraint: "
                              "Member must satisfy enum value set: [ml.p4d.24xlarge, ")
    assert create(InstanceGroups=[group(), group()])[0] == "ValidationException"
    code, message, _ = create(InstanceGroups=[group(count=-1)])
    assert "Member must have value greater than or equal to 0" in message
    with pytest.raises(ClientError) as excinfo:
        sagemaker.create_cluster(ClusterName="bad", Orchestrator={"Eks": {"ClusterArn": eks_arn + "-gone"}},
                    InstanceGroups=[group()])
    assert "does not exist" in _error(excinfo)[1]
    assert create(InstanceGroups=[group()], AutoScaling={"Mode": "Enable"})[0] == "ValidationException"
    with pytest.raises(ClientError) as excinfo:
        sagemaker.create_cluster(ClusterName="bad", Orchestrator={"Eks": {"ClusterArn": config_map}},
                                 InstanceGroups=[group()])
    assert "authentication mode" in _error(excinfo)[1]
    assert sagemaker.list_clusters()["ClusterSummaries"] == []
    for call in (lambda: sagemaker.describe_cluster(ClusterName="nope"),
                 lambda: sagemaker.update_cluster(ClusterName="nope", NodeRecovery="None"),
                 lambda: sagemaker.list_cluster_nodes(ClusterName="nope")):
        with pytest.raises(ClientError) as excinfo:
            call()
        assert _error(excinfo)[0] == "ResourceNotFound"


def test_quota_and_conflict_errors(client, aws_sandbox):
    requests.put(f"{aws_sandbox.url}/_sandbox/quotas",
                 json={"service_code": "sagemaker", "quota_name": "ml.p5.48xlarge for cluster usage", "value": 2},
                 timeout=5).raise_for_status()
    make_hyperpod(client, groups=[group("gpu", "ml.p5.48xlarge", 2)])
    sagemaker = client("sagemaker")
    with pytest.raises(ClientError) as excinfo:
        sagemaker.update_cluster(ClusterName="hp", InstanceGroups=[group("gpu", "ml.p5.48xlarge", 3)])
    code, message, _ = _error(excinfo)
    assert code == "ResourceLimitExceeded"
    assert "'ml.p5.48xlarge for cluster usage' is 2 Instances, with current utilization of 2 Instances and a " \
           "request delta of 1 Instances" in message
    sagemaker.update_cluster(ClusterName="hp", InstanceGroups=[group("gpu", "ml.p5.48xlarge", 1)])
    with pytest.raises(ClientError) as excinfo:
        sagemaker.update_cluster(ClusterName="hp", NodeRecovery="None")
    assert _error(excinfo)[0] == "ConflictException"


def test_training_plans_seeded_listed_described_and_used(client, aws_sandbox):
    seeded = requests.post(f"{aws_sandbox.url}/_sandbox/training-plans", json={"region": "us-west-2"}, timeout=5)
    assert seeded.status_code == 201 and len(seeded.json()["training_plans"]) == 2
    sagemaker = client("sagemaker")
    summaries = sagemaker.list_training_plans()["TrainingPlanSummaries"]
    assert {plan["Status"] for plan in summaries} == {"Active", "Scheduled"}
    active = sagemaker.list_training_plans(Filters=[{"Name": "Status", "Value": "Active"}])["TrainingPlanSummaries"]
    plan = sagemaker.describe_training_plan(TrainingPlanName=active[0]["TrainingPlanName"])
    assert plan["ReservedCapacitySummaries"][0]["InstanceType"] == "ml.p5.48xlarge"
    make_hyperpod(client, groups=[group("reserved", "ml.p5.48xlarge", 2, TrainingPlanArn=plan["TrainingPlanArn"])])
    used = sagemaker.describe_training_plan(TrainingPlanName=plan["TrainingPlanArn"])
    assert (used["InUseInstanceCount"], used["AvailableInstanceCount"]) == (2, 2)
    groups = sagemaker.describe_cluster(ClusterName="hp")["InstanceGroups"]
    assert groups[0]["TrainingPlanStatus"] == "Active"
    offerings = sagemaker.search_training_plan_offerings(InstanceType="ml.p5.48xlarge", InstanceCount=1,
                                                         DurationHours=24, TargetResources=["hyperpod-cluster"])
    offering_id = offerings["TrainingPlanOfferings"][0]["TrainingPlanOfferingId"]
    bought = sagemaker.create_training_plan(TrainingPlanName="bought", TrainingPlanOfferingId=offering_id)
    assert sagemaker.describe_training_plan(TrainingPlanName="bought")["TrainingPlanArn"] == bought["TrainingPlanArn"]
    with pytest.raises(ClientError) as excinfo:
        sagemaker.describe_training_plan(TrainingPlanName="missing")
    assert _error(excinfo)[0] == "ResourceNotFound"
