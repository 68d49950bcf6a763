"""The AWS gateway against the sandbox over HTTP: client cache, retries, and error translation."""

from __future__ import annotations

import boto3
import httpx
import pytest
from botocore.config import Config

from cloud import aws
from config.errors import CloudError, Conflict, NotFound, PermissionDenied, Throttled, ValidationFailed

REGION = "us-west-2"


def fault(sandbox, **rule) -> None:
    httpx.post(f"{sandbox.aws_url}/_sandbox/faults", json=rule).raise_for_status()


def test_clients_are_cached_per_service_region_and_credentials(sandbox):
    first = aws.client("eks", region=REGION)
    assert aws.client("eks", region=REGION) is first
    assert aws.client("eks", region="eu-west-1") is not first
    other = aws.Credentials(access_key_id="AKIDOTHER", secret_access_key="secret")
    assert aws.client("eks", region=REGION, credentials=other) is not first
    assert "secret" not in repr(other)


def test_clients_reach_the_endpoint_from_the_environment_with_adaptive_retries(sandbox):
    eks = aws.client("eks", region=REGION)
    assert eks.meta.endpoint_url == sandbox.aws_url
    assert eks.meta.config.retries["mode"] == "adaptive"
    assert eks.list_clusters()["clusters"] == []


def test_not_found_keeps_the_providers_words(sandbox):
    with pytest.raises(NotFound) as error, aws.translated("eks", "DescribeCluster"):
        aws.client("eks", region=REGION).describe_cluster(name="missing")
    assert error.value.code == "cloud_not_found"
    assert error.value.provider["code"] == "ResourceNotFoundException"
    assert "missing" in error.value.message
    assert error.value.provider["retryable"] is False


def test_validation_errors_are_field_free_validation_failures(sandbox):
    sagemaker = aws.client("sagemaker", region=REGION)
    with pytest.raises(ValidationFailed) as error, aws.translated("sagemaker", "CreateCluster"):
        sagemaker.create_cluster(ClusterName="bad", InstanceGroups=[{
            "InstanceGroupName": "g", "InstanceType": "ml.g5.8xlarge", "InstanceCount": 1,
            "LifeCycleConfig": {"SourceS3Uri": "s3://bucket/scripts", "OnCreate": "on_create.sh"},
            "ExecutionRole": "arn:aws:iam::123456789012:role/r",
        }, {
            "InstanceGroupName": "g", "InstanceType": "ml.g5.8xlarge", "InstanceCount": 1,
            "LifeCycleConfig": {"SourceS3Uri": "s3://bucket/scripts", "OnCreate": "on_create.sh"},
            "ExecutionRole": "arn:aws:iam::123456789012:role/r",
        }])
    assert error.value.code == "cloud_validation"
    assert error.value.provider["code"] == "ValidationException"


def test_access_denied_and_conflict(sandbox):
    eks = aws.client("eks", region=REGION)
    fault(sandbox, target="eks:ListClusters", kind="error", code="AccessDeniedException",
          message="User is not authorized", status=403)
    with pytest.raises(PermissionDenied) as denied, aws.translated("eks"):
        eks.list_clusters()
    assert (denied.value.code, denied.value.provider["operation"]) == ("cloud_access_denied", "ListClusters")
    fault(sandbox, target="eks:ListClusters", kind="error", code="ResourceInUseException",
          message="in use", status=409)
    with pytest.raises(Conflict), aws.translated("eks"):
        eks.list_clusters()


def test_throttling_is_retried_and_then_reported_as_retryable(sandbox, monkeypatch):
    monkeypatch.setattr(aws, "RETRY_ATTEMPTS", 3)
    eks = aws.client("eks", region=REGION)
    fault(sandbox, target="eks:ListClusters", kind="throttle", count=2)
    assert eks.list_clusters()["clusters"] == []
    fault(sandbox, target="eks:ListClusters", kind="throttle", count=3)
    with pytest.raises(Throttled) as error, aws.translated("eks"):
        eks.list_clusters()
    assert error.value.code == "cloud_throttled"
    assert error.value.provider["retryable"] is True


def test_an_unreachable_endpoint_is_a_retryable_cloud_error():
    eks = boto3.client("eks", region_name=REGION, endpoint_url="http://127.0.0.1:9", aws_access_key_id="x",
                       aws_secret_access_key="x", config=Config(retries={"mode": "standard", "max_attempts": 1}))
    with pytest.raises(CloudError) as error, aws.translated("eks", "ListClusters"):
        eks.list_clusters()
    assert error.value.code == "cloud_unreachable"
    assert error.value.provider["retryable"] is True
