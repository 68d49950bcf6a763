"""The *hyperpod* phase (create and delete) against the sandbox, run alone through test-only pipelines.

The VPC and the ACTIVE EKS cluster are built directly with boto3 (``build_network``, ``build_eks``), standing in
for the network and eks phases; their outputs are seeded on the operation as those phases would leave them.
"""

from __future__ import annotations

import json
import time

import pytest

from cloud import aws
from clusters import lifecycle
from clusters.diagnostics import creation
from clusters.models import Cluster
from clusters.ownership import as_tag_list, aws_tags, iam_name
from clusters.phases import hyperpod
from clusters.shared_bucket import shared_bucket_name
from operations import services
from operations.models import Operation, OperationState
from operations.pipeline import Pipeline, register
from tests.clusters.diagnosis_checks import assert_suggestions_are_catalog_calls, by_code, mutations
from tests.clusters.sandbox import role_for
from tests.clusters.test_capacity import REGION, build_network

CREATE_KIND = "test.clusters.hyperpod"
DELETE_KIND = "test.clusters.hyperpod-delete"
register(Pipeline(kind=CREATE_KIND, phases=(hyperpod.CREATE,)))
register(Pipeline(kind=DELETE_KIND, phases=(hyperpod.DELETE,)))
EKS_TRUST = {"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "eks.amazonaws.com"}, "Action": "sts:AssumeRole"}]}


def build_eks(cluster, network: dict) -> dict:
    """An ACTIVE EKS cluster (access-entry authentication) on the network, recorded as the eks phase records it;
    returns the eks phase's outputs."""
    iam = aws.client("iam", region=REGION)
    role = iam.create_role(RoleName=iam_name(cluster, "eks"), AssumeRolePolicyDocument=json.dumps(EKS_TRUST),
                           Tags=as_tag_list(aws_tags(cluster, "eks")))["Role"]["Arn"]
    eks = aws.client("eks", region=REGION)
    eks.create_cluster(name=cluster.name, roleArn=role, accessConfig={"authenticationMode": "API"},
                       resourcesVpcConfig={"subnetIds": network["private_subnet_ids"],
                                           "securityGroupIds": [network["security_group_id"]]},
                       tags=aws_tags(cluster, "eks"))
    deadline = time.monotonic() + 20
    while (described := eks.describe_cluster(name=cluster.name)["cluster"])["status"] != "ACTIVE":
        assert time.monotonic() < deadline, "the EKS cluster did not become ACTIVE"
        time.sleep(0.05)
    issuer = described.get("identity", {}).get("oidc", {}).get("issuer", "")
    Cluster.objects.filter(pk=cluster.pk).update(
        eks_name=cluster.name, eks_arn=described["arn"], eks_status="ACTIVE", eks_endpoint=described["endpoint"],
        oidc_issuer=issuer, kubernetes_version=described["version"])
    cluster.refresh_from_db()
    return {"eks_name": cluster.name, "eks_arn": described["arn"], "cluster_role_arn": role, "oidc_issuer": issuer,
            "oidc_provider_arn": ""}


@pytest.fixture
def eks_ready(sandbox, make_cluster):
    """``make(**spec)`` → a cluster row with its network and ACTIVE EKS cluster, and the outputs of those phases."""

    def make(name: str = "alpha", **spec) -> tuple[Cluster, dict]:
        cluster = make_cluster(name, **spec)
        network = build_network(cluster)
        return cluster, {**network, **build_eks(cluster, network)}

    return make


def start(cast, cluster: Cluster, kind: str, outputs: dict) -> Operation:
    """Start a test pipeline for ``cluster`` with the create operation's params and the earlier phases' outputs."""
    operation, _ = services.operation_start(actor=cast.admin, team=cast.team, kind=kind, title=f"{kind} {cluster}",
                                            params={"cluster_id": cluster.pk, **cluster.spec}, source="system")
    Operation.objects.filter(pk=operation.pk).update(outputs=outputs)
    return operation


def p5_training_plan(sandbox) -> str:
    """Seed the sandbox's stock plans; the ARN of the active one (4 × ml.p5.48xlarge)."""
    plans = sandbox.control("POST", "training-plans", {"region": REGION})["training_plans"]
    return next(plan["arn"] for plan in plans if "-p5-" in plan["name"])


def sandbox_requests(sandbox, target: str) -> list[dict]:
    """The mutating calls of ``service:Operation`` that took effect, from the sandbox's request log."""
    service, operation = target.split(":")
    return sandbox.control("GET", f"requests?service={service}&operation={operation}&effective=1")["requests"]


def test_the_phase_builds_an_in_service_hyperpod_cluster_with_automatic_recovery(sandbox, cast, eks_ready, drive):
    cluster, outputs = eks_ready(instance_count=2, deep_health_checks=True)

    operation = drive(start(cast, cluster, CREATE_KIND, outputs))

    assert operation.state == OperationState.SUCCEEDED, operation.error_message
    cluster.refresh_from_db()
    assert (cluster.hyperpod_name, cluster.hyperpod_status, cluster.node_recovery) == ("alpha", "InService",
                                                                                      "Automatic")
    assert cluster.node_count == 2 and cluster.gpu_count == 2  # one A10G per g5.8xlarge, from EC2's facts
    described = aws.client("sagemaker", region=REGION).describe_cluster(ClusterName="alpha")
    assert described["ClusterArn"] == cluster.hyperpod_arn == operation.outputs["hyperpod_arn"]
    assert described["NodeRecovery"] == "Automatic"
    assert described["Orchestrator"] == {"Eks": {"ClusterArn": outputs["eks_arn"]}}
    compute = operation.outputs["compute_subnet_id"]
    assert described["VpcConfig"] == {"SecurityGroupIds": [outputs["security_group_id"]], "Subnets": [compute]}
    assert compute not in outputs["private_subnet_ids"]
    [group] = described["InstanceGroups"]
    assert (group["InstanceType"], group["TargetCount"]) == ("ml.g5.8xlarge", 2)
    assert group["OnStartDeepHealthChecks"] == ["InstanceStress", "InstanceConnectivity"]
    assert group["ExecutionRole"] == operation.outputs["execution_role_arn"]
    bucket = shared_bucket_name(REGION)
    assert group["LifeCycleConfig"] == {"SourceS3Uri": f"s3://{bucket}/clusters/{cluster.pk}/lifecycle/",
                                        "OnCreate": "on_create.sh"}
    script = aws.client("s3", region=REGION).get_object(Bucket=bucket, Key=f"clusters/{cluster.pk}/lifecycle/"
                                                        "on_create.sh")["Body"].read()
    assert script == lifecycle.scripts()["on_create.sh"] and script.startswith(b"#!/bin/bash")
    tags = aws.client("sagemaker", region=REGION).list_tags(ResourceArn=cluster.hyperpod_arn)["Tags"]
    assert {"Key": "instantstart:cluster-id", "Value": str(cluster.pk)} in tags


def test_the_execution_role_is_least_privilege(sandbox, cast, eks_ready, drive):
    cluster, outputs = eks_ready()
    operation = drive(start(cast, cluster, CREATE_KIND, outputs))
    assert operation.state == OperationState.SUCCEEDED, operation.error_message
    iam = aws.client("iam", region=REGION)
    name = iam_name(cluster, "hyperpod-exec")

    trust = iam.get_role(RoleName=name)["Role"]["AssumeRolePolicyDocument"]
    attached = [policy["PolicyArn"] for policy in iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]]
    [inline_name] = iam.list_role_policies(RoleName=name)["PolicyNames"]
    inline = iam.get_role_policy(RoleName=name, PolicyName=inline_name)["PolicyDocument"]

    assert trust["Statement"][0]["Principal"] == {"Service": "sagemaker.amazonaws.com"}
    assert attached == ["arn:aws:iam::aws:policy/AmazonSageMakerClusterInstanceRolePolicy"]
    for statement in inline["Statement"]:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        assert not any("*" in action for action in actions), statement
        assert "*" not in resources or all(action.split(":")[1].startswith(("Describe", "GetAuthorizationToken"))
                                           for action in actions), statement
    reads = [s for s in inline["Statement"] if "s3:GetObject" in s["Action"]]
    bucket = shared_bucket_name(REGION)
    assert [s["Resource"] for s in reads] == [[f"arn:aws:s3:::{bucket}/clusters/{cluster.pk}/lifecycle/*"]]
    creates = next(s for s in inline["Statement"] if "ec2:CreateNetworkInterface" in s["Action"])
    assert any(resource.endswith(f":subnet/{operation.outputs['compute_subnet_id']}")
               for resource in creates["Resource"])


def test_a_fault_on_create_cluster_then_a_retry_creates_exactly_one(sandbox, cast, eks_ready, drive):
    cluster, outputs = eks_ready()
    sandbox.control("POST", "faults", {"target": "sagemaker:CreateCluster", "kind": "error",
                                       "code": "ValidationException", "message": "injected", "count": 1})

    failed = drive(start(cast, cluster, CREATE_KIND, outputs))
    assert failed.state == OperationState.FAILED
    assert "injected" in failed.error_message

    effective = sandbox.control("GET", "requests?effective=1")["requests"]
    services.operation_retry(actor=cast.admin, operation=failed, source="system")
    retried = drive(failed)

    assert retried.state == OperationState.SUCCEEDED, retried.error_message
    assert len(sandbox_requests(sandbox, "sagemaker:CreateCluster")) == 1
    after = sandbox.control("GET", f"requests?effective=1&since={effective[-1]['seq']}")["requests"]
    # Bucket, scripts, compute subnet, route, role and policies were found as the first run left them: only the
    # HyperPod cluster itself was sent again.
    assert [(r["service"], r["operation"]) for r in after] == [("sagemaker", "CreateCluster")]


def test_a_rerun_adopts_our_cluster_and_refuses_another_owners(sandbox, cast, eks_ready, drive, make_cluster,
                                                               make_team):
    cluster, outputs = eks_ready()
    first = drive(start(cast, cluster, CREATE_KIND, outputs))
    assert first.state == OperationState.SUCCEEDED

    again = drive(start(cast, cluster, CREATE_KIND, outputs))
    assert again.state == OperationState.SUCCEEDED
    assert again.outputs["hyperpod_arn"] == first.outputs["hyperpod_arn"]
    assert len(sandbox_requests(sandbox, "sagemaker:CreateCluster")) == 1

    impostor = make_cluster("alpha", team=make_team())  # another team's cluster of the same name
    build_network(impostor)
    refused = drive(start(cast, impostor, CREATE_KIND, outputs))
    assert refused.state == OperationState.FAILED
    assert refused.error_code == "hyperpod_name_taken"


def test_a_quota_refusal_fails_the_phase_with_a_clear_code_and_is_diagnosed(api, sandbox, cast, eks_ready, drive):
    cluster, outputs = eks_ready(instance_count=9)  # the sandbox's default quota for G types is 8

    operation = drive(start(cast, cluster, CREATE_KIND, outputs))

    assert operation.state == OperationState.FAILED
    assert operation.error_code == "hyperpod_quota_exceeded"
    assert "ml.g5.8xlarge for cluster usage" in operation.error_message
    assert sandbox_requests(sandbox, "sagemaker:CreateCluster") == []

    # The creation diagnosis (read-only) names the phase, AWS's answer and request id, the quota and what was left.
    before = mutations(sandbox)

    body = creation.diagnose(cluster, operation).as_dict()
    found = by_code(body)
    (failed,) = found["creation_failed"]
    assert failed["subject"] == "hyperpod" and any("ResourceLimitExceeded" in line for line in failed["evidence"])
    provider = body["facts"]["provider"]
    assert provider["code"] == "ResourceLimitExceeded" and f"request id {provider['request_id']}" in failed["evidence"]
    (quota,) = found["quota_exceeded"]
    assert quota["evidence"][0].startswith("quota ml.g5.8xlarge for cluster usage") and \
        quota["evidence"][0].endswith("is 8")
    assert "9 requested by this cluster" in quota["evidence"]
    (left,) = body["facts"]["resources_left"]
    assert left["phase"] == "hyperpod" and left["resources"]["execution_role_arn"].startswith("arn:aws:iam::")
    assert body["facts"]["outputs"]["vpc_id"].startswith("vpc-") and body["facts"]["outputs"]["eks_arn"]
    assert_suggestions_are_catalog_calls(body)
    assert [(s["step"], s["tool"]) for s in body["suggestions"]] == [
        ("investigate", "list_operation_logs"), ("investigate", "list_cluster_quotas"),
        ("retry", "retry_operation"), ("replace", "delete_cluster")]
    assert body["suggestions"][2]["arguments"] == {"operation_id": operation.pk}
    assert mutations(sandbox) == before

    # Through REST, only the cluster's own create or import operation is diagnosed.
    answer = api(cast.viewer).get(f"/api/v1/clusters/{cluster.pk}/diagnostics/creation")
    assert answer.status_code == 200 and by_code(answer.json()).keys() == {"no_creation_record"}
    refused = api(cast.viewer).get(f"/api/v1/clusters/{cluster.pk}/diagnostics/creation", operation_id=operation.pk)
    assert (refused.status_code, refused.json()["fields"]["operation_id"][0]["code"]) == (400, "not_a_creation")


def test_an_execution_role_of_our_name_that_is_not_ours_is_refused(sandbox, cast, eks_ready, drive):
    cluster, outputs = eks_ready()
    name = iam_name(cluster, "hyperpod-exec")
    aws.client("iam", region=REGION).create_role(RoleName=name, AssumeRolePolicyDocument="{}")

    operation = drive(start(cast, cluster, CREATE_KIND, outputs))

    assert (operation.state, operation.error_code) == (OperationState.FAILED, "role_name_taken")
    assert aws.client("iam", region=REGION).list_attached_role_policies(RoleName=name)["AttachedPolicies"] == []
    assert sandbox_requests(sandbox, "sagemaker:CreateCluster") == []


def test_a_training_plan_refusal_fails_the_phase_with_a_clear_code(sandbox, cast, eks_ready, drive):
    arn = p5_training_plan(sandbox)
    cluster, outputs = eks_ready(capacity_type="training-plan", training_plan_arn=arn)  # plan reserves p5, not g5

    operation = drive(start(cast, cluster, CREATE_KIND, outputs))

    assert operation.state == OperationState.FAILED
    assert operation.error_code == "training_plan_refused"
    assert "ml.p5.48xlarge" in operation.error_message


def test_a_training_plan_group_and_a_spot_group_are_sent_as_such(sandbox, cast, eks_ready, drive):
    arn = p5_training_plan(sandbox)
    planned, outputs = eks_ready(capacity_type="training-plan", training_plan_arn=arn,
                                 instance_type="ml.p5.48xlarge")
    assert drive(start(cast, planned, CREATE_KIND, outputs)).state == OperationState.SUCCEEDED

    spot, spot_outputs = eks_ready("beta", capacity_type="spot")
    assert drive(start(cast, spot, CREATE_KIND, spot_outputs)).state == OperationState.SUCCEEDED

    sagemaker = aws.client("sagemaker", region=REGION)
    [plan_group] = sagemaker.describe_cluster(ClusterName="alpha")["InstanceGroups"]
    [spot_group] = sagemaker.describe_cluster(ClusterName="beta")["InstanceGroups"]
    assert plan_group["TrainingPlanArn"] == arn
    assert spot_group["CapacityRequirements"] == {"Spot": {}}
    planned.refresh_from_db()
    assert planned.gpu_count == 8


def test_delete_removes_our_cluster_scripts_and_role_only(sandbox, cast, eks_ready, drive):
    cluster, outputs = eks_ready()
    assert drive(start(cast, cluster, CREATE_KIND, outputs)).state == OperationState.SUCCEEDED
    s3 = aws.client("s3", region=REGION)
    bucket = shared_bucket_name(REGION)
    s3.put_object(Bucket=bucket, Key="teams/vision/keep.txt", Body=b"data")
    iam = aws.client("iam", region=REGION)
    iam.create_role(RoleName=f"instantstart-{cluster.pk}-someone-elses", AssumeRolePolicyDocument="{}")

    deleted = drive(start(cast, cluster, DELETE_KIND, outputs))

    assert deleted.state == OperationState.SUCCEEDED, deleted.error_message
    assert aws.client("sagemaker", region=REGION).list_clusters()["ClusterSummaries"] == []
    assert s3.list_objects_v2(Bucket=bucket, Prefix=f"clusters/{cluster.pk}/").get("KeyCount") == 0
    assert s3.get_object(Bucket=bucket, Key="teams/vision/keep.txt")["Body"].read() == b"data"
    roles = {role["RoleName"] for role in iam.list_roles()["Roles"]}
    assert iam_name(cluster, "hyperpod-exec") not in roles
    assert {iam_name(cluster, "eks"), f"instantstart-{cluster.pk}-someone-elses"} <= roles
    cluster.refresh_from_db()
    assert cluster.hyperpod_status == "Deleted"

    rerun = drive(start(cast, cluster, DELETE_KIND, outputs))
    assert rerun.state == OperationState.SUCCEEDED
    assert len(sandbox_requests(sandbox, "sagemaker:DeleteCluster")) == 1


def test_delete_leaves_a_hyperpod_cluster_that_is_not_ours(sandbox, cast, eks_ready, drive):
    cluster, outputs = eks_ready()
    sagemaker = aws.client("sagemaker", region=REGION)
    sagemaker.create_cluster(ClusterName="alpha", Orchestrator={"Eks": {"ClusterArn": outputs["eks_arn"]}},
                             InstanceGroups=[{"InstanceGroupName": "g", "InstanceType": "ml.t3.medium",
                                              "InstanceCount": 1,
                                              "ExecutionRole": role_for("outside", "sagemaker.amazonaws.com"),
                                              "LifeCycleConfig": {"SourceS3Uri": "s3://x/y", "OnCreate": "a.sh"}}])

    deleted = drive(start(cast, cluster, DELETE_KIND, outputs))

    assert deleted.state == OperationState.SUCCEEDED
    assert [c["ClusterName"] for c in sagemaker.list_clusters()["ClusterSummaries"]] == ["alpha"]
    assert sandbox_requests(sandbox, "sagemaker:DeleteCluster") == []


def test_a_failed_hyperpod_cluster_fails_the_phase_and_a_retry_replaces_it(sandbox, cast, eks_ready, drive):
    cluster, outputs = eks_ready()
    sandbox.control("POST", "outcomes", {"resource": "hyperpod-cluster", "name": "alpha", "outcome": "fail",
                                         "message": "capacity vanished", "count": 1})

    failed = drive(start(cast, cluster, CREATE_KIND, outputs))

    assert failed.state == OperationState.FAILED
    assert failed.error_code == "hyperpod_cluster_failed"
    assert "capacity vanished" in failed.error_message
    cluster.refresh_from_db()
    assert cluster.hyperpod_status == "Failed"

    services.operation_retry(actor=cast.admin, operation=failed, source="system")
    retried = drive(failed)

    assert retried.state == OperationState.SUCCEEDED, retried.error_message
    assert len(sandbox_requests(sandbox, "sagemaker:DeleteCluster")) == 1
    assert len(sandbox_requests(sandbox, "sagemaker:CreateCluster")) == 2
    described = aws.client("sagemaker", region=REGION).describe_cluster(ClusterName="alpha")
    assert described["ClusterStatus"] == "InService"
    cluster.refresh_from_db()
    assert cluster.hyperpod_arn == described["ClusterArn"] == retried.outputs["hyperpod_arn"]
