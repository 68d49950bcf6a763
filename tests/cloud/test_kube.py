"""The Kubernetes gateway: EKS token, ApiClient per cluster over verified TLS, and error translation."""

from __future__ import annotations

import base64
import time
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from cloud import aws, kube
from config.errors import CloudError, Conflict, NotFound, ValidationFailed
from tests.clusters.sandbox import role_for
from tests.sandbox.aws.helpers import default_subnets

REGION = "us-west-2"


def aws_client(service: str, region: str = REGION):
    return aws.client(service, region=region)


def active_cluster(name: str = "demo") -> str:
    eks = aws.client("eks", region=REGION)
    eks.create_cluster(name=name, roleArn=role_for("eks-cluster"),
                       resourcesVpcConfig={"subnetIds": default_subnets(aws_client)})
    deadline = time.monotonic() + 10
    while eks.describe_cluster(name=name)["cluster"]["status"] != "ACTIVE":
        assert time.monotonic() < deadline, "cluster did not become ACTIVE"
        time.sleep(0.05)
    return name


def test_token_is_what_aws_eks_get_token_builds(sandbox):
    token = kube.eks_token("demo", region=REGION).value
    assert token.startswith("k8s-aws-v1.")
    encoded = token.removeprefix("k8s-aws-v1.")
    url = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    query = parse_qs(urlsplit(url).query)
    assert query["Action"] == ["GetCallerIdentity"]
    assert "x-k8s-aws-id" in query["X-Amz-SignedHeaders"][0].split(";")
    assert query["X-Amz-Expires"] == [str(kube.PRESIGN_EXPIRES)]


def test_api_client_reaches_the_cluster_over_verified_tls(sandbox):
    name = active_cluster()
    api = kube.api_client(name, region=REGION)
    assert kube.api_client(name, region=REGION) is api
    assert api.configuration.host.startswith("https://")
    namespaces = {ns.metadata.name for ns in k8s.CoreV1Api(api).list_namespace().items}
    assert {"default", "kube-system"} <= namespaces


def test_the_token_is_refreshed_when_it_gets_old(sandbox, monkeypatch):
    api = kube.api_client(active_cluster(), region=REGION)
    core = k8s.CoreV1Api(api)
    core.list_namespace()
    issued = []
    original = kube.eks_token
    monkeypatch.setattr(kube, "eks_token", lambda *a, **kw: issued.append(1) or original(*a, **kw))
    core.list_namespace()
    assert issued == []
    monkeypatch.setattr(kube, "TOKEN_REUSE", 0)
    core.list_namespace()
    assert issued == [1]


def test_a_cluster_without_an_endpoint_yet_is_not_ready(sandbox):
    httpx.put(f"{sandbox.aws_url}/_sandbox/clock", json={"scale": 1}).raise_for_status()
    aws.client("eks", region=REGION).create_cluster(
        name="slow", roleArn=role_for("eks-cluster"), resourcesVpcConfig={"subnetIds": default_subnets(aws_client)})
    with pytest.raises(CloudError) as error:
        kube.api_client("slow", region=REGION)
    assert error.value.code == "cluster_not_ready"
    assert "CREATING" in error.value.message


def test_kubernetes_errors_keep_the_status_and_causes(sandbox):
    core = k8s.CoreV1Api(kube.api_client(active_cluster(), region=REGION))
    with pytest.raises(ApiException) as missing:
        core.read_namespace("nope")
    assert isinstance(kube.translate(missing.value), NotFound)
    body = k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name="team-a"))
    core.create_namespace(body)
    with pytest.raises(ApiException) as duplicate:
        core.create_namespace(body)
    conflict = kube.translate(duplicate.value, operation="create namespace")
    assert isinstance(conflict, Conflict) and conflict.provider["code"] == "AlreadyExists"
    with pytest.raises(ApiException) as invalid:
        core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name="Not_Valid")))
    error = kube.translate(invalid.value)
    assert isinstance(error, ValidationFailed) and error.code == "kube_invalid"
    assert "metadata.name" in error.fields
