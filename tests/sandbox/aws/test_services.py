"""Service Quotas, MLflow tracking servers, FSx for Lustre and IAM managed policies through boto3."""

from __future__ import annotations

import pytest
import requests
from botocore.exceptions import ClientError

from sandbox import clock
from tests.sandbox.aws.helpers import ROLE, Network, instantly, sandbox_network, wait_for


@pytest.fixture
def network(client) -> Network:
    return sandbox_network(client)


def _code(excinfo: pytest.ExceptionInfo[ClientError]) -> str:
    return excinfo.value.response["Error"]["Code"]


def test_service_quotas_for_sagemaker_and_ec2_with_settable_values(client, aws_sandbox):
    quotas = client("service-quotas")
    pages = quotas.get_paginator("list_service_quotas").paginate(ServiceCode="sagemaker")
    sagemaker = {quota["QuotaName"]: quota for page in pages for quota in page["Quotas"]}
    p5 = sagemaker["ml.p5.48xlarge for cluster usage"]
    assert p5["QuotaCode"].startswith("L-") and p5["Value"] == 4.0 and p5["ServiceName"] == "Amazon SageMaker"
    assert p5["QuotaArn"] == f"arn:aws:servicequotas:us-west-2:123456789012:sagemaker/{p5['QuotaCode']}"
    response = requests.put(f"{aws_sandbox.url}/_sandbox/quotas",
                            json=[{"service_code": "sagemaker", "quota_code": p5["QuotaCode"], "value": 16},
                                  {"service_code": "ec2", "quota_code": "L-417A185B", "value": 768,
                                   "region": "us-east-1"}], timeout=5)
    assert response.status_code == 200
    assert quotas.get_service_quota(ServiceCode="sagemaker", QuotaCode=p5["QuotaCode"])["Quota"]["Value"] == 16
    default = quotas.get_aws_default_service_quota(ServiceCode="sagemaker", QuotaCode=p5["QuotaCode"])
    assert default["Quota"]["Value"] == 4
    east = client("service-quotas", "us-east-1").get_service_quota(ServiceCode="ec2", QuotaCode="L-417A185B")
    assert east["Quota"]["QuotaName"] == "Running On-Demand P instances" and east["Quota"]["Value"] == 768
    assert quotas.get_service_quota(ServiceCode="ec2", QuotaCode="L-417A185B")["Quota"]["Value"] == 384
    ec2 = quotas.list_service_quotas(ServiceCode="ec2")["Quotas"]
    assert "L-1216C47A" in {quota["QuotaCode"] for quota in ec2}
    with pytest.raises(ClientError) as excinfo:
        quotas.get_service_quota(ServiceCode="sagemaker", QuotaCode="L-00000000")
    assert _code(excinfo) == "NoSuchResourceException"
    assert quotas.list_service_quotas(ServiceCode="vpc")["Quotas"], "moto's VPC quotas are served too"
    with pytest.raises(ClientError) as excinfo:
        quotas.list_service_quotas(ServiceCode="lambda")
    assert _code(excinfo) == "NoSuchResourceException"
    bad = requests.put(f"{aws_sandbox.url}/_sandbox/quotas", json={"service_code": "sagemaker", "value": 1},
                       timeout=5)
    assert bad.status_code == 400


def test_mlflow_tracking_server_lifecycle(client):
    sagemaker = client("sagemaker")
    clock.set_scale(0.0005)
    arn = sagemaker.create_mlflow_tracking_server(TrackingServerName="tracking", ArtifactStoreUri="s3://bucket/mlflow",
                                                  RoleArn=ROLE, Tags=[{"Key": "team", "Value": "vision"}])
    described = sagemaker.describe_mlflow_tracking_server(TrackingServerName="tracking")
    assert (described["TrackingServerStatus"], described["IsActive"]) == ("Creating", "Inactive")
    assert described["TrackingServerUrl"].endswith(".us-west-2.experiments.sagemaker.aws")
    assert described["TrackingServerArn"] == arn["TrackingServerArn"]
    created = wait_for(lambda: sagemaker.describe_mlflow_tracking_server(TrackingServerName="tracking"),
                       lambda d: d["TrackingServerStatus"] != "Creating")
    assert (created["TrackingServerStatus"], created["IsActive"]) == ("Created", "Active")
    assert created["TrackingServerSize"] == "Small"
    with instantly():
        sagemaker.update_mlflow_tracking_server(TrackingServerName="tracking", TrackingServerSize="Medium")
        updated = wait_for(lambda: sagemaker.describe_mlflow_tracking_server(TrackingServerName="tracking"),
                           lambda d: d["TrackingServerStatus"] == "Updated")
        assert updated["TrackingServerSize"] == "Medium"
        sagemaker.stop_mlflow_tracking_server(TrackingServerName="tracking")
        wait_for(lambda: sagemaker.describe_mlflow_tracking_server(TrackingServerName="tracking"),
                 lambda d: d["TrackingServerStatus"] == "Stopped")
    summaries = sagemaker.list_mlflow_tracking_servers()["TrackingServerSummaries"]
    assert [(s["TrackingServerName"], s["IsActive"]) for s in summaries] == [("tracking", "Inactive")]
    url = sagemaker.create_presigned_mlflow_tracking_server_url(TrackingServerName="tracking")["AuthorizedUrl"]
    assert url.startswith(described["TrackingServerUrl"])
    assert sagemaker.list_tags(ResourceArn=arn["TrackingServerArn"])["Tags"] == [{"Key": "team", "Value": "vision"}]
    with instantly():
        sagemaker.delete_mlflow_tracking_server(TrackingServerName="tracking")
        wait_for(lambda: sagemaker.list_mlflow_tracking_servers()["TrackingServerSummaries"], lambda s: s == [])
    with pytest.raises(ClientError) as excinfo:
        sagemaker.describe_mlflow_tracking_server(TrackingServerName="tracking")
    assert _code(excinfo) == "ResourceNotFound"


def test_fsx_lustre_mount_name_and_lifecycle(client, network):
    fsx, subnet = client("fsx"), network.subnet_ids[0]
    created = fsx.create_file_system(
        FileSystemType="LUSTRE", StorageCapacity=1200, SubnetIds=[subnet], SecurityGroupIds=[network.security_group_id],
        LustreConfiguration={"DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": 250},
        Tags=[{"Key": "Name", "Value": "shared"}])["FileSystem"]
    assert created["Lifecycle"] == "CREATING"
    assert len(created["LustreConfiguration"]["MountName"]) == 8
    assert created["DNSName"] == f"{created['FileSystemId']}.fsx.us-west-2.amazonaws.com"
    available = wait_for(lambda: fsx.describe_file_systems(FileSystemIds=[created["FileSystemId"]])["FileSystems"][0],
                         lambda fs: fs["Lifecycle"] == "AVAILABLE")
    assert available["LustreConfiguration"]["MountName"] == created["LustreConfiguration"]["MountName"]
    assert fsx.list_tags_for_resource(ResourceARN=created["ResourceARN"])["Tags"] == [{"Key": "Name",
                                                                                       "Value": "shared"}]
    scratch = fsx.create_file_system(FileSystemType="LUSTRE", StorageCapacity=1200, SubnetIds=[subnet],
                                     LustreConfiguration={"DeploymentType": "SCRATCH_1"})["FileSystem"]
    assert scratch["LustreConfiguration"]["MountName"] == "fsx"
    two_subnets = network.subnet_ids
    for kwargs in ({"StorageCapacity": 1000}, {"StorageCapacity": 1200, "SubnetIds": two_subnets},
                   {"StorageCapacity": 2400, "LustreConfiguration": {"DeploymentType": "PERSISTENT_2",
                                                                      "PerUnitStorageThroughput": 50}}):
        with pytest.raises(ClientError) as excinfo:
            fsx.create_file_system(**{"FileSystemType": "LUSTRE", "SubnetIds": [subnet], **kwargs})
        assert _code(excinfo) == "BadRequest", kwargs
    clock.set_scale(0)
    assert fsx.delete_file_system(FileSystemId=created["FileSystemId"])["Lifecycle"] == "DELETING"
    remaining = wait_for(lambda: fsx.describe_file_systems()["FileSystems"], lambda items: len(items) == 1)
    assert remaining[0]["FileSystemId"] == scratch["FileSystemId"]
    with pytest.raises(ClientError) as excinfo:
        fsx.describe_file_systems(FileSystemIds=[created["FileSystemId"]])
    assert _code(excinfo) == "FileSystemNotFound"


def test_iam_managed_policies_are_loaded(client):
    iam = client("iam")
    policy = iam.get_policy(PolicyArn="arn:aws:iam::aws:policy/AmazonSageMakerFullAccess")["Policy"]
    assert policy["PolicyName"] == "AmazonSageMakerFullAccess"


def test_fsx_refuses_subnets_and_security_groups_ec2_does_not_know_or_another_vpcs(client, network):
    fsx, other = client("fsx"), sandbox_network(client, cidr="10.1.0.0/16")
    lustre = {"DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": 125}
    subnet, group = network.subnet_ids[0], network.security_group_id
    for subnets, groups, member, culprit, message in (
            (["subnet-0123456789abcdef0"], [group], "InvalidSubnetId", "subnet-0123456789abcdef0",
             "The subnet ID 'subnet-0123456789abcdef0' does not exist"),
            ([subnet], ["sg-0123456789abcdef0"], "InvalidSecurityGroupId", "sg-0123456789abcdef0",
             "The security group 'sg-0123456789abcdef0' does not exist"),
            ([subnet], [other.security_group_id], "InvalidSecurityGroupId", other.security_group_id,
             f"Security group {other.security_group_id} is not part of the VPC {network.vpc_id} of the subnets.")):
        with pytest.raises(ClientError) as excinfo:
            fsx.create_file_system(FileSystemType="LUSTRE", StorageCapacity=1200, SubnetIds=subnets,
                                   SecurityGroupIds=groups, LustreConfiguration=lustre)
        error = excinfo.value.response
        assert (error["Error"]["Code"], error["Error"]["Message"], error[member]) == (
            "InvalidNetworkSettings", message, culprit)
    assert fsx.describe_file_systems()["FileSystems"] == []
    created = fsx.create_file_system(FileSystemType="LUSTRE", StorageCapacity=1200, SubnetIds=[subnet],
                                     SecurityGroupIds=[group], LustreConfiguration=lustre)["FileSystem"]
    assert created["VpcId"] == network.vpc_id


def test_fsx_refuses_a_capacity_over_the_api_range_or_the_lustre_quota(client, network):
    fsx, subnet = client("fsx"), network.subnet_ids[0]
    persistent = {"DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": 125}
    for capacity, code in ((2_400_000_000_000, "BadRequest"), (103_200, "ServiceLimitExceeded")):
        with pytest.raises(ClientError) as excinfo:
            fsx.create_file_system(FileSystemType="LUSTRE", StorageCapacity=capacity, SubnetIds=[subnet],
                                   LustreConfiguration=persistent)
        assert _code(excinfo) == code, capacity
    fsx.create_file_system(FileSystemType="LUSTRE", StorageCapacity=98_400, SubnetIds=[subnet],
                           LustreConfiguration=persistent)
    with pytest.raises(ClientError) as excinfo:
        fsx.create_file_system(FileSystemType="LUSTRE", StorageCapacity=4800, SubnetIds=[subnet],
                               LustreConfiguration=persistent)
    assert _code(excinfo) == "ServiceLimitExceeded"
    assert len(fsx.describe_file_systems()["FileSystems"]) == 1
