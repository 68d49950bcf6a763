"""Done when: with only the sandbox running, plain boto3 builds an EKS + HyperPod cluster and the kubernetes client
(through ``cloud.kube``) sees its nodes and follows a HyperPodPyTorchJob's logs until it succeeds."""

from __future__ import annotations

import string
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from kubernetes import client as k8s

from cloud import kube
from sandbox.kube import crds
from sandbox.sim.objects import STEPS
from tests.sandbox.aws.helpers import lifecycle_scripts, sandbox_role
from tests.sandbox.sim import harness

EXAMPLE = Path(crds.crds_dir()) / "sagemaker.amazonaws.com" / "examples" / "llama3_1_8b-fsdp-hpto.yaml"
ROLE = "arn:aws:iam::123456789012:role/hyperpod"


@pytest.fixture(autouse=True)
def _empty_sandbox(sandbox) -> Iterator[None]:
    """The shared sandbox (tests/conftest.py), emptied before the test and again after it."""
    yield
    sandbox.control("POST", "reset")


def wait(read: Any, until: Any, timeout: float = 30.0) -> Any:
    """Poll like a script would (giving up after ``timeout`` seconds with the last value)."""
    deadline = time.monotonic() + timeout
    while not until(value := read()):
        assert time.monotonic() < deadline, f"timed out; last value: {value!r}"
        time.sleep(0.05)
    return value


def example_job(steps: int) -> dict[str, Any]:
    """The awsome-distributed-training FSDP example, filled in for two ml.g5.8xlarge nodes (one A10G each).

    Its node affinity compares ``sagemaker.amazonaws.com/compute-type`` with ``$INSTANCE_TYPE``; HyperPod nodes
    carry ``compute-type: hyperpod``. Its log-monitoring pattern looks for ``Loss:``; the sandbox's trainer
    logs ``loss=``. Pods are kept after the job (``cleanPodPolicy: None``) so their logs can be re-read."""
    text = string.Template(EXAMPLE.read_text()).substitute(
        GPU_PER_NODE=1, NUM_NODES=2, EFA_PER_NODE=1, INSTANCE_TYPE="hyperpod", HF_TOKEN="unused",
        IMAGE_URI="123456789012.dkr.ecr.us-west-2.amazonaws.com/llama3-fsdp:latest")
    job = yaml.safe_load(text)
    job["metadata"]["annotations"] = {STEPS: str(steps)}
    run_policy = job["spec"]["runPolicy"]
    run_policy["cleanPodPolicy"] = "None"
    for rule in run_policy["logMonitoringConfiguration"]:
        rule["logPattern"] = ".*loss=.*"
    return job


def log_since(api: k8s.ApiClient, pod: str, since_time: str) -> list[str]:
    """``GET pods/<pod>/log?sinceTime=…&timestamps=true`` (the generated client has no ``since_time``)."""
    request = api.param_serialize("GET", "/api/v1/namespaces/{namespace}/pods/{name}/log",
                                  path_params={"namespace": "default", "name": pod},
                                  query_params=[("sinceTime", since_time), ("timestamps", "true")],
                                  auth_settings=["BearerToken"])
    return api.call_api(*request).read().decode().splitlines()


def test_boto3_builds_a_hyperpod_cluster_whose_nodes_run_a_training_job_with_streamed_logs():
    ec2, eks, sagemaker = boto3.client("ec2"), boto3.client("eks"), boto3.client("sagemaker")
    vpc = ec2.create_vpc(CidrBlock="10.1.0.0/16")["Vpc"]["VpcId"]
    subnets = [ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.1.{index}.0/24",
                                 AvailabilityZone=f"{harness.REGION}{zone}")["Subnet"]["SubnetId"]
               for index, zone in enumerate("ab")]
    security_group = ec2.create_security_group(GroupName="hyperpod", Description="HyperPod nodes", VpcId=vpc)["GroupId"]

    sandbox_role(boto3.client, ROLE)
    cluster = eks.create_cluster(name="training", roleArn=ROLE, version="1.32",
                                 resourcesVpcConfig={"subnetIds": subnets, "securityGroupIds": [security_group]},
                                 accessConfig={"authenticationMode": "API_AND_CONFIG_MAP"})["cluster"]
    assert cluster["status"] == "CREATING"
    wait(lambda: eks.describe_cluster(name="training")["cluster"]["status"], lambda status: status == "ACTIVE")

    lifecycle_scripts(boto3.client("s3"), [{"LifeCycleConfig": {"SourceS3Uri": "s3://training-lifecycle/scripts",
                                                                "OnCreate": "on_create.sh"}}])
    sagemaker.create_cluster(
        ClusterName="training-hp", Orchestrator={"Eks": {"ClusterArn": cluster["arn"]}},
        VpcConfig={"SecurityGroupIds": [security_group], "Subnets": subnets},
        InstanceGroups=[{"InstanceGroupName": "gpu", "InstanceType": "ml.g5.8xlarge", "InstanceCount": 2,
                         "ExecutionRole": ROLE,
                         "LifeCycleConfig": {"SourceS3Uri": "s3://training-lifecycle/scripts",
                                             "OnCreate": "on_create.sh"}}])
    assert sagemaker.describe_cluster(ClusterName="training-hp")["ClusterStatus"] == "Creating"
    wait(lambda: sagemaker.describe_cluster(ClusterName="training-hp")["ClusterStatus"],
         lambda status: status == "InService")

    for addon in (*harness.OPERATOR_PREREQUISITES, harness.TRAINING_OPERATOR):
        eks.create_addon(clusterName="training", addonName=addon)
        wait(lambda a=addon: eks.describe_addon(clusterName="training", addonName=a)["addon"]["status"],
             lambda status: status == "ACTIVE")

    api = kube.api_client("training", region=harness.REGION)
    core = k8s.CoreV1Api(api)
    wait(lambda: core.list_node(label_selector="sagemaker.amazonaws.com/compute-type=hyperpod").items,
         lambda found: len(found) == 2)
    harness.install_device_plugins(api)  # HyperPod's chart: a node advertises its GPU once the NVIDIA plugin runs
    nodes = core.list_node(label_selector="sagemaker.amazonaws.com/compute-type=hyperpod").items
    zones = {subnet["AvailabilityZone"] for subnet in ec2.describe_subnets(SubnetIds=subnets)["Subnets"]}
    for node in nodes:
        labels = node.metadata.labels
        assert labels["node.kubernetes.io/instance-type"] == "ml.g5.8xlarge"
        assert labels["sagemaker.amazonaws.com/node-health-status"] == "Schedulable"
        assert labels["sagemaker.amazonaws.com/instance-group-name"] == "gpu"
        assert labels["topology.kubernetes.io/zone"] in zones
        assert node.status.capacity["nvidia.com/gpu"] == "1"

    custom = k8s.CustomObjectsApi(api)
    custom.create_namespaced_custom_object("sagemaker.amazonaws.com", "v1", "default", "hyperpodpytorchjobs",
                                           example_job(steps=50))
    pods = wait(lambda: core.list_namespaced_pod("default", label_selector="job-name=llama3-1-8b-fsdp-hpto").items,
                lambda found: len(found) == 2 and all(pod.status.phase == "Running" for pod in found))
    assert {pod.spec.node_name for pod in pods} == {node.metadata.name for node in nodes}

    stream = core.read_namespaced_pod_log("llama3-1-8b-fsdp-hpto-pods-0", "default", follow=True, timestamps=True,
                                          _preload_content=False)
    lines = [raw.decode().rstrip("\n") for raw in stream]
    true_conditions = wait(
        lambda: [c["type"] for c in custom.get_namespaced_custom_object(
            "sagemaker.amazonaws.com", "v1", "default", "hyperpodpytorchjobs", "llama3-1-8b-fsdp-hpto",
        )["status"]["conditions"] if c["status"] == "True"],
        lambda types: "Running" not in types)
    assert true_conditions == ["Created", "Succeeded"]
    messages = [line.split(" ", 1)[1] for line in lines]
    assert messages[0].startswith("hyperpodrun: started 1 worker processes")
    assert [message.split(",")[0] for message in messages[1:]] == [f"step={step}" for step in range(1, 51)]

    resume_from = lines[30].split(" ", 1)[0]
    assert log_since(api, "llama3-1-8b-fsdp-hpto-pods-0", resume_from) == lines[30:]
