"""HyperPod runs each group's OnCreate script from SourceS3Uri: without it the instances fail to provision and the
cluster ends Failed with SageMaker's message; with it the cluster comes InService."""

from __future__ import annotations

from tests.sandbox.aws.helpers import group, instantly, lifecycle_scripts, make_eks_cluster, wait_for

LIFECYCLE = {"SourceS3Uri": "s3://lifecycle-bucket/scripts", "OnCreate": "on_create.sh"}


def _create(client, name: str) -> dict:
    eks = make_eks_cluster(client, name=f"{name}-eks", accessConfig={"authenticationMode": "API"})
    sagemaker = client("sagemaker")
    with instantly():
        sagemaker.create_cluster(ClusterName=name, Orchestrator={"Eks": {"ClusterArn": eks["arn"]}},
                                 InstanceGroups=[group(LifeCycleConfig=LIFECYCLE)])
        return wait_for(lambda: sagemaker.describe_cluster(ClusterName=name),
                        lambda found: found["ClusterStatus"] != "Creating")


def test_a_missing_on_create_script_fails_the_instances_as_on_aws(client):
    s3 = client("s3")
    s3.create_bucket(Bucket="lifecycle-bucket", CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    s3.put_object(Bucket="lifecycle-bucket", Key="scripts/other.sh", Body=b"#!/bin/bash\n")
    failed = _create(client, "missing")
    assert failed["ClusterStatus"] == "Failed"
    assert "failed to provision with the following error: \"Lifecycle scripts did not run successfully. Ensure " \
           "the scripts exist in provided S3 path" in failed["FailureMessage"]

    lifecycle_scripts(s3, [{"LifeCycleConfig": LIFECYCLE}])
    assert _create(client, "present")["ClusterStatus"] == "InService"
