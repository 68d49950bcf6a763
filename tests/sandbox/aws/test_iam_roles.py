"""Roles passed to CreateCluster must exist, trust the service and have propagated — as EKS and SageMaker answer."""

from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError

from sandbox import clock
from sandbox.aws import iam_roles
from tests.sandbox.aws.helpers import ACCOUNT, default_subnets, group, make_eks_cluster


def _trusting(iam, name: str, service: str) -> str:
    return iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}]}))["Role"]["Arn"]


def _refusal(call) -> tuple[str, str]:
    with pytest.raises(ClientError) as refused:
        call()
    return refused.value.response["Error"]["Code"], refused.value.response["Error"]["Message"]


def test_eks_refuses_a_missing_role_a_role_for_another_service_and_one_not_yet_propagated(client):
    iam, eks = client("iam"), client("eks")
    subnets = {"subnetIds": default_subnets(client)}
    missing = f"arn:aws:iam::{ACCOUNT}:role/nobody"
    wrong = _trusting(iam, "for-sagemaker", "sagemaker.amazonaws.com")
    for role in (missing, wrong):
        code, message = _refusal(lambda role=role: eks.create_cluster(name="c", roleArn=role,
                                                                      resourcesVpcConfig=subnets))
        assert code == "InvalidParameterException"
        assert message == (f"Role with arn: {role}, could not be assumed because it does not exist or the trusted "
                           "entity is not correct")

    iam_roles.set_propagation_seconds(60)
    clock.set_scale(10)  # IAM has not propagated the new role until the test lets time run
    fresh = _trusting(iam, "fresh", "eks.amazonaws.com")
    assert _refusal(lambda: eks.create_cluster(name="c", roleArn=fresh, resourcesVpcConfig=subnets))[0] == \
        "InvalidParameterException"
    clock.set_scale(0)
    assert eks.create_cluster(name="c", roleArn=fresh, resourcesVpcConfig=subnets)["cluster"]["roleArn"] == fresh


def test_hyperpod_refuses_an_execution_role_sagemaker_cannot_assume(client):
    eks = make_eks_cluster(client, accessConfig={"authenticationMode": "API"})
    eks_only = _trusting(client("iam"), "for-eks", "eks.amazonaws.com")
    code, message = _refusal(lambda: client("sagemaker").create_cluster(
        ClusterName="hp", Orchestrator={"Eks": {"ClusterArn": eks["arn"]}},
        InstanceGroups=[{**group(), "ExecutionRole": eks_only}]))
    assert code == "ValidationException"
    assert message == (f"Could not assume role {eks_only}. Please ensure that the role exists and allows principal "
                       "'sagemaker.amazonaws.com' to assume the role.")
