"""Fault injection, the request log of mutating calls, and the control API."""

from __future__ import annotations

import time

import pytest
import requests
from botocore.exceptions import ClientError

from tests.sandbox.aws.helpers import (
    default_subnets,
    group,
    instantly,
    make_eks_cluster,
    make_hyperpod,
    sandbox_role,
    wait_for,
)


@pytest.fixture
def control(aws_sandbox):
    """``control(method, path, json=None)``: the control API's status and JSON answer."""

    def call(method: str, path: str, json=None, **params):
        response = requests.request(method, f"{aws_sandbox.url}/_sandbox{path}", json=json, params=params, timeout=5)
        return response.status_code, response.json()

    return call


def test_throttling_then_standard_retries_succeed(client, control):
    status, body = control("POST", "/faults", {"target": "sagemaker:ListClusters", "kind": "throttle", "count": 2})
    assert status == 201 and body["fault"]["id"]
    answer = client("sagemaker", retries={"mode": "standard", "total_max_attempts": 3}).list_clusters()
    assert answer["ResponseMetadata"]["RetryAttempts"] == 2
    control("POST", "/faults", {"target": "sagemaker:ListClusters", "kind": "throttle"})
    with pytest.raises(ClientError) as excinfo:
        client("sagemaker").list_clusters()
    error = excinfo.value.response
    assert (error["Error"]["Code"], error["Error"]["Message"]) == ("ThrottlingException", "Rate exceeded")
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 400


def test_throttling_shapes_for_query_and_ec2_protocols(client, control):
    control("POST", "/faults", {"target": "sts:GetCallerIdentity", "kind": "throttle"})
    control("POST", "/faults", {"target": "ec2:DescribeVpcs", "kind": "throttle"})
    with pytest.raises(ClientError) as excinfo:
        client("sts").get_caller_identity()
    assert excinfo.value.response["Error"]["Code"] == "Throttling"
    with pytest.raises(ClientError) as excinfo:
        client("ec2").describe_vpcs()
    assert excinfo.value.response["Error"]["Code"] == "RequestLimitExceeded"
    assert excinfo.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503


def test_probabilistic_throttling_is_absorbed_by_retries(client, control):
    control("POST", "/faults", {"target": "sagemaker:*", "kind": "throttle", "rate": 0.5, "seed": 7})
    sagemaker = client("sagemaker", retries={"mode": "standard", "total_max_attempts": 10})
    attempts = [sagemaker.list_clusters()["ResponseMetadata"]["RetryAttempts"] for _ in range(6)]
    assert sum(attempts) > 0
    _, body = control("GET", "/faults")
    assert body["faults"][0]["applied"] == sum(attempts)


def test_fail_next_n_calls_with_a_given_error(client, control):
    make_eks_cluster(client)
    control("POST", "/faults", {"target": "eks:CreateAddon", "kind": "error", "code": "ServerException",
                                "message": "Injected outage", "status": 500, "count": 2})
    eks = client("eks")
    for _ in range(2):
        with pytest.raises(ClientError) as excinfo:
            eks.create_addon(clusterName="demo", addonName="cert-manager")
        error = excinfo.value.response
        assert (error["Error"]["Code"], error["Error"]["Message"]) == ("ServerException", "Injected outage")
        assert error["ResponseMetadata"]["HTTPStatusCode"] == 500
    assert eks.create_addon(clusterName="demo", addonName="cert-manager")["addon"]["status"] == "CREATING"
    _, body = control("GET", "/faults")
    assert body["faults"][0]["applied"] == 2


def test_added_latency(client, control):
    control("POST", "/faults", {"target": "eks:ListClusters", "kind": "latency", "latency_ms": 150})
    started = time.monotonic()
    client("eks").list_clusters()
    assert time.monotonic() - started >= 0.15


def test_request_log_shows_exactly_once_effects(client, control):
    make_eks_cluster(client)
    control("DELETE", "/requests")
    control("POST", "/faults", {"target": "eks:CreateAddon", "kind": "throttle", "count": 1})
    eks = client("eks", retries={"mode": "standard", "total_max_attempts": 3})
    eks.create_addon(clusterName="demo", addonName="cert-manager", clientRequestToken="token-1")
    eks.create_addon(clusterName="demo", addonName="cert-manager", clientRequestToken="token-1")
    eks.describe_addon(clusterName="demo", addonName="cert-manager")
    _, body = control("GET", "/requests", service="eks")
    entries = body["requests"]
    assert [entry["operation"] for entry in entries] == ["CreateAddon"] * 3
    assert [(e["status"], e["fault"] is not None, e["replayed"]) for e in entries] == [
        (400, True, False), (200, False, False), (200, False, True)]
    assert {entry["client_token"] for entry in entries} == {"token-1"}
    assert entries[1]["params"] == {"clusterName": "demo", "addonName": "cert-manager",
                                    "clientRequestToken": "token-1"}
    _, effective = control("GET", "/requests", operation="CreateAddon", effective="1")
    assert len(effective["requests"]) == 1 and effective["requests"][0]["took_effect"]


def test_request_log_records_moto_calls_and_failures(client, control):
    client("iam").create_role(RoleName="r", AssumeRolePolicyDocument="{}")
    with pytest.raises(ClientError):
        client("iam").create_role(RoleName="r", AssumeRolePolicyDocument="{}")
    make_hyperpod(client, groups=[group()])
    _, body = control("GET", "/requests")
    calls = [(e["service"], e["operation"], e["status"], e["error_code"]) for e in body["requests"]]
    assert calls[:2] == [("iam", "CreateRole", 200, None), ("iam", "CreateRole", 409, "EntityAlreadyExists")]
    assert ("sagemaker", "CreateCluster", 200, None) in calls
    assert not any(operation.startswith("Describe") for _, operation, _, _ in calls)
    since = body["requests"][-1]["seq"]
    client("sagemaker").delete_cluster(ClusterName="hp")
    _, later = control("GET", "/requests", since=str(since))
    assert [e["operation"] for e in later["requests"]] == ["DeleteCluster"]


def test_control_api_endpoints(client, control):
    status, index = control("GET", "")
    assert status == 200 and "sagemaker:CreateCluster" in index["operations"]
    assert "POST /_sandbox/reset" in index["endpoints"]
    assert control("PUT", "/clock", {"scale": 0.002}) == (200, {"scale": 0.002})
    assert control("GET", "/clock")[1]["scale"] == 0.002
    assert control("PUT", "/clock", {"scale": "fast"})[0] == 400
    assert control("POST", "/faults", {"target": "sagemaker:ListClusters", "kind": "explode"})[0] == 400
    _, created = control("POST", "/faults", {"target": "*", "kind": "latency", "latency_ms": 1})
    assert control("DELETE", f"/faults/{created['fault']['id']}") == (200, {"faults": []})
    assert control("DELETE", "/faults/999")[0] == 404
    assert control("GET", "/nope")[0] == 404
    assert control("DELETE", "/clock")[0] == 405
    status, seeded = control("POST", "/training-plans", {"region": "eu-west-1", "name": "mine",
                                                         "instance_type": "ml.p4d.24xlarge", "instance_count": 1})
    assert status == 201 and seeded["training_plans"][0]["status"] == "Active"
    assert control("GET", "/training-plans", region="eu-west-1")[1]["training_plans"][0]["name"] == "mine"
    assert control("POST", "/outcomes", {"resource": "eks-cluster", "outcome": "degrade"})[0] == 400
    make_hyperpod(client)
    _, world = control("GET", "/world")
    assert world["eks_clusters"][0]["name"] == "hp-eks"
    assert len(world["hyperpod_clusters"][0]["nodes"]) == 2
    assert control("POST", "/reset") == (200, {"status": "ok"})
    assert client("sagemaker").list_clusters()["ClusterSummaries"] == []
    assert client("iam").list_roles()["Roles"] == []


def test_outcome_rule_fails_an_untagged_eks_cluster(client, control):
    control("POST", "/outcomes", {"resource": "eks-cluster", "name": "doomed", "count": 1})
    eks = client("eks")
    eks.create_cluster(name="doomed", roleArn=sandbox_role(client),
                       resourcesVpcConfig={"subnetIds": default_subnets(client)})
    with instantly():
        final = wait_for(lambda: eks.describe_cluster(name="doomed")["cluster"]["status"], lambda s: s != "CREATING")
    assert final == "FAILED"
    assert control("GET", "/outcomes")[1]["outcomes"][0]["applied"] == 1
