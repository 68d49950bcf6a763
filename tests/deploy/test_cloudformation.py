"""The management environment's CloudFormation template: cfn-lint clean, and created in the sandbox's CloudFormation
(moto's) with the resources and outputs docs/deploy.md promises — its host role holding exactly the policy built from
the code's AWS calls (tests/deploy/test_policy.py simulates that policy)."""

from __future__ import annotations

import boto3
import yaml
from cfnlint.api import lint_file

from deploy import inventory, policy
from deploy.policy import TEMPLATE_FILE

IMAGE = "123456789012.dkr.ecr.us-west-2.amazonaws.com/instantstart:0.1.0"


class _CloudFormationLoader(yaml.SafeLoader):
    """Reads the template's short-form intrinsic functions (``!Ref``, ``!Sub``…) as plain data."""


def _intrinsic(loader: yaml.SafeLoader, suffix: str, node: yaml.Node):
    name = "Ref" if suffix == "Ref" else f"Fn::{suffix}"
    if isinstance(node, yaml.ScalarNode):
        return {name: loader.construct_scalar(node)}
    if isinstance(node, yaml.SequenceNode):
        return {name: loader.construct_sequence(node, deep=True)}
    return {name: loader.construct_mapping(node, deep=True)}


_CloudFormationLoader.add_multi_constructor("!", _intrinsic)


def template() -> dict:
    return yaml.load(TEMPLATE_FILE.read_text(), Loader=_CloudFormationLoader)


def test_cfn_lint_is_clean():
    matches = lint_file(TEMPLATE_FILE)
    assert [f"{match.rule.id} line {match.linenumber}: {match.message}" for match in matches] == []


def test_the_host_takes_no_inbound_traffic_and_stores_encrypted():
    resources = template()["Resources"]
    host_group = resources["HostSecurityGroup"]["Properties"]
    assert "SecurityGroupIngress" not in host_group
    assert not [name for name, resource in resources.items() if resource["Type"] == "AWS::EC2::SecurityGroupIngress"]
    host = resources["ManagementHost"]["Properties"]
    assert all(mapping["Ebs"]["Encrypted"] for mapping in host["BlockDeviceMappings"])
    bucket = resources["SharedBucket"]["Properties"]
    assert all(bucket["PublicAccessBlockConfiguration"].values())
    assert bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert any(rule.get("Prefix") == "logs/" and rule.get("ExpirationInDays")
               for rule in bucket["LifecycleConfiguration"]["Rules"])
    assert "INSTANTSTART_SHARED_BUCKET=${SharedBucket}" in str(host["UserData"])


def test_the_stack_creates_in_the_sandbox(sandbox):
    cloudformation = boto3.client("cloudformation", region_name="us-west-2")
    cloudformation.create_stack(StackName="instantstart", TemplateBody=TEMPLATE_FILE.read_text(),
                                Parameters=[{"ParameterKey": "ContainerImage", "ParameterValue": IMAGE}],
                                Capabilities=["CAPABILITY_NAMED_IAM"])
    stack = cloudformation.describe_stacks(StackName="instantstart")["Stacks"][0]
    assert stack["StackStatus"] == "CREATE_COMPLETE", stack.get("StackStatusReason")
    outputs = {output["OutputKey"]: output["OutputValue"] for output in stack["Outputs"]}
    created = {resource["LogicalResourceId"]: resource["PhysicalResourceId"] for resource in
               cloudformation.list_stack_resources(StackName="instantstart")["StackResourceSummaries"]}

    assert outputs["InstanceId"] == created["ManagementHost"]
    assert outputs["PortForwardCommand"] == (
        f"aws ssm start-session --region us-west-2 --target {outputs['InstanceId']} "
        "--document-name AWS-StartPortForwardingSession --parameters portNumber=3099,localPortNumber=3099")
    account = boto3.client("sts", region_name="us-west-2").get_caller_identity()["Account"]
    assert outputs["SharedBucketName"] == f"instantstart-shared-{account}-us-west-2"
    assert "Database" not in created and "Redis" not in created

    ec2 = boto3.client("ec2", region_name="us-west-2")
    instance = ec2.describe_instances(InstanceIds=[outputs["InstanceId"]])["Reservations"][0]["Instances"][0]
    assert instance["SubnetId"] in (created["PrivateSubnetA"], created["PrivateSubnetB"])
    group = ec2.describe_security_groups(GroupIds=[created["HostSecurityGroup"]])["SecurityGroups"][0]
    assert group["IpPermissions"] == []
    endpoints = {endpoint["ServiceName"].rsplit(".", 1)[1] for endpoint in ec2.describe_vpc_endpoints(
        Filters=[{"Name": "vpc-id", "Values": [created["Vpc"]]}])["VpcEndpoints"]}
    assert endpoints == {"s3", "ssm", "ssmmessages", "ec2messages"}

    s3 = boto3.client("s3", region_name="us-west-2")
    bucket = outputs["SharedBucketName"]
    assert all(s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"].values())
    assert s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]["Rules"]
    assert "aws:SecureTransport" in s3.get_bucket_policy(Bucket=bucket)["Policy"]
    logs = [rule for rule in s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]
            if rule.get("Filter", {}).get("Prefix") == "logs/"]
    assert logs[0]["Expiration"]["Days"] == 90

    iam = boto3.client("iam", region_name="us-west-2")
    role = outputs["HostRoleArn"].rsplit("/", 1)[1]
    attached = {policy["PolicyName"] for policy in iam.list_attached_role_policies(RoleName=role)["AttachedPolicies"]}
    assert attached == {"AmazonSSMManagedInstanceCore", "AmazonEC2ContainerRegistryReadOnly"}
    assert iam.list_role_policies(RoleName=role)["PolicyNames"] == ["instantstart"]
    granted = iam.get_role_policy(RoleName=role, PolicyName="instantstart")["PolicyDocument"]
    assert granted == policy.policy(inventory.read_inventory().calls, partition="aws", account=account)
