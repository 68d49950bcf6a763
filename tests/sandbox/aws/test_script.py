"""Done-when: a plain boto3 script creates an EKS cluster and a HyperPod cluster and watches both get ready."""

from __future__ import annotations

import base64
import time

import boto3

from sandbox import endpoints, tls
from tests.sandbox.aws.helpers import lifecycle_scripts, sandbox_network, sandbox_role


def test_plain_boto3_script_sees_eks_active_and_hyperpod_in_service(aws_sandbox, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", aws_sandbox.url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    eks, sagemaker = boto3.client("eks"), boto3.client("sagemaker")
    for role in ("eks-cluster", "hyperpod"):
        sandbox_role(boto3.client, f"arn:aws:iam::123456789012:role/{role}")

    subnets = sandbox_network(boto3.client, "eu-west-1").subnet_ids
    created = eks.create_cluster(name="training", roleArn="arn:aws:iam::123456789012:role/eks-cluster",
                                 resourcesVpcConfig={"subnetIds": subnets},
                                 accessConfig={"authenticationMode": "API_AND_CONFIG_MAP"})["cluster"]
    assert created["status"] == "CREATING"
    seen = {created["status"]}
    while (cluster := eks.describe_cluster(name="training")["cluster"])["status"] != "ACTIVE":
        seen.add(cluster["status"])
        time.sleep(0.05)
    assert seen == {"CREATING"}
    assert cluster["endpoint"] == endpoints.eks_endpoint("eu-west-1", "training")
    assert base64.b64decode(cluster["certificateAuthority"]["data"]) == tls.authority().ca_pem
    assert cluster["identity"]["oidc"]["issuer"].startswith("https://oidc.eks.eu-west-1.amazonaws.com/id/")

    lifecycle_scripts(boto3.client("s3"), [{"LifeCycleConfig": {"SourceS3Uri": "s3://any-bucket/lifecycle",
                                                                "OnCreate": "on_create.sh"}}])
    arn = sagemaker.create_cluster(
        ClusterName="training-hp", Orchestrator={"Eks": {"ClusterArn": cluster["arn"]}},
        InstanceGroups=[{"InstanceGroupName": "gpu", "InstanceType": "ml.p5.48xlarge", "InstanceCount": 2,
                         "ExecutionRole": "arn:aws:iam::123456789012:role/hyperpod",
                         "LifeCycleConfig": {"SourceS3Uri": "s3://any-bucket/lifecycle", "OnCreate": "on_create.sh"}}],
    )["ClusterArn"]
    statuses = []
    while (status := sagemaker.describe_cluster(ClusterName="training-hp")["ClusterStatus"]) != "InService":
        statuses.append(status)
        time.sleep(0.05)
    assert set(statuses) == {"Creating"}
    nodes = sagemaker.list_cluster_nodes(ClusterName=arn)["ClusterNodeSummaries"]
    assert [node["InstanceStatus"]["Status"] for node in nodes] == ["Running", "Running"]
    assert all(node["InstanceId"].startswith("i-") and len(node["InstanceId"]) == 19 for node in nodes)
    entries = eks.list_access_entries(clusterName="training")["accessEntries"]
    assert "arn:aws:iam::123456789012:role/hyperpod" in entries
    node_entry = eks.describe_access_entry(clusterName="training",
                                           principalArn="arn:aws:iam::123456789012:role/hyperpod")["accessEntry"]
    assert node_entry["type"] == "HYPERPOD_LINUX"
