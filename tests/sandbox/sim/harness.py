"""Helpers shared by the simulator tests and ``tests/sandbox/test_world.py``.

The sandbox itself comes from the session fixture ``sandbox_world`` in ``tests/conftest.py`` (one world per
process: the emulator's clusters and the simulator are process-wide); its ``sandbox`` fixture empties it,
sets time to 1/1000 and points boto3 at it before each test.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import yaml
from kubernetes import client as k8s

from cloud import kube
from sandbox import clock
from sandbox.sim import devices, instances
from tests.sandbox.aws.helpers import default_subnets, lifecycle_scripts, sandbox_role

REGION = "us-west-2"
ROLE = "arn:aws:iam::123456789012:role/sandbox"
TRAINING_OPERATOR = "amazon-sagemaker-hyperpod-training-operator"
#: What the HyperPod operators need installed first (the sandbox fails them otherwise).
OPERATOR_PREREQUISITES = ("eks-pod-identity-agent", "cert-manager")
#: HyperPod's chart, rendered: where the device-plugin DaemonSets come from.
VENDORED_CHART = Path(__file__).resolve().parents[3] / "clusters" / "vendor" / "hyperpod"
DEVICE_PLUGINS = ("nvidia-device-plugin", "aws-efa-k8s-device-plugin", "neuron-device-plugin")


@contextlib.contextmanager
def instantly() -> Iterator[None]:
    """Time scale 0 for the block (every AWS transition and simulated delay is due at once)."""
    previous = clock.scale()
    clock.set_scale(0)
    try:
        yield
    finally:
        clock.set_scale(previous)


def wait_for(read: Callable[[], Any], done: Callable[[Any], bool] = bool, timeout: float = 10.0) -> Any:
    """Poll ``read()`` until ``done(value)``; returns the value, or fails with the last one after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if done(value):
            return value
        assert time.monotonic() < deadline, f"timed out waiting; last value: {value!r}"
        time.sleep(0.02)


_session = boto3.session.Session()


def client(service: str, region: str = REGION) -> Any:
    """A plain boto3 client (endpoint and credentials from the environment)."""
    return _session.client(service, region_name=region)


def group(name: str = "gpu", instance_type: str = "ml.g5.8xlarge", count: int = 2, **extra: Any) -> dict[str, Any]:
    """An instance group specification for ``create_cluster``."""
    return {"InstanceGroupName": name, "InstanceType": instance_type, "InstanceCount": count, "ExecutionRole": ROLE,
            "LifeCycleConfig": {"SourceS3Uri": "s3://sandbox-lifecycle/scripts", "OnCreate": "on_create.sh"},
            **extra}


def device_plugin_objects(kind: str) -> list[dict[str, Any]]:
    """The NVIDIA, EFA and Neuron device plugins' objects of ``kind`` as HyperPod's chart renders them (the files the
    product vendors), read as plain YAML."""
    found = []
    for plugin in DEVICE_PLUGINS:
        with open(VENDORED_CHART / f"{plugin}.yaml", encoding="utf-8") as stream:
            found.extend(doc for doc in yaml.safe_load_all(stream) if doc and doc["kind"] == kind)
    return found


def device_plugin_daemon_sets() -> list[dict[str, Any]]:
    return device_plugin_objects("DaemonSet")


def _advertising(api_client: k8s.ApiClient) -> bool:
    """Does every device-plugin DaemonSet run Ready everywhere it should, and every node with a plugin's pod
    advertise that plugin's resources?"""
    apps, core = k8s.AppsV1Api(api_client), k8s.CoreV1Api(api_client)
    for daemon_set in device_plugin_daemon_sets():
        status = apps.read_namespaced_daemon_set(daemon_set["metadata"]["name"],
                                                 daemon_set["metadata"]["namespace"]).status
        if not status.observed_generation or status.number_ready != status.desired_number_scheduled:
            return False
    pods = [api_client.sanitize_for_serialization(pod) for pod in core.list_pod_for_all_namespaces().items]
    by_node = devices.advertised(pods)
    for node in core.list_node().items:
        full = instances.facts(node.metadata.labels.get("node.kubernetes.io/instance-type", "")).allocatable()
        if any(key in full and node.status.allocatable.get(key) != full[key]
               for key in by_node.get(node.metadata.name, ())):
            return False
    return True


def install_device_plugins(api_client: k8s.ApiClient) -> None:
    """Create the device-plugin DaemonSets (and the ServiceAccounts their pods run as) and wait until they run and
    the nodes advertise what they found."""
    apps, core = k8s.AppsV1Api(api_client), k8s.CoreV1Api(api_client)
    for account in device_plugin_objects("ServiceAccount"):
        core.create_namespaced_service_account(account["metadata"]["namespace"], account)
    for daemon_set in device_plugin_daemon_sets():
        apps.create_namespaced_daemon_set(daemon_set["metadata"]["namespace"], daemon_set)
    with instantly():
        wait_for(lambda: _advertising(api_client))


def make_cluster(name: str = "demo", groups: list[dict[str, Any]] | None = None,
                 addons: tuple[str, ...] = (*OPERATOR_PREREQUISITES, TRAINING_OPERATOR),
                 device_plugins: bool = True, **settings: Any) -> k8s.ApiClient:
    """An ACTIVE EKS cluster orchestrating an InService HyperPod cluster ``<name>-hp`` (default: two
    ml.g5.8xlarge; ``settings`` are further ``create_cluster`` members), with ``addons`` ACTIVE (installed in
    that order), every node Ready and — with ``device_plugins`` — advertising its GPUs, EFA and Neuron devices
    (:func:`install_device_plugins`); returns its ``ApiClient``. Made at time scale 0, so it costs no simulated
    time."""
    groups = [group()] if groups is None else groups
    sandbox_role(client, ROLE)
    lifecycle_scripts(client("s3"), groups)
    eks, sagemaker = client("eks"), client("sagemaker")
    subnets = default_subnets(client)
    with instantly():
        arn = eks.create_cluster(name=name, roleArn=ROLE, resourcesVpcConfig={"subnetIds": subnets},
                                 accessConfig={"authenticationMode": "API_AND_CONFIG_MAP"})["cluster"]["arn"]
        wait_for(lambda: eks.describe_cluster(name=name)["cluster"]["status"], lambda s: s == "ACTIVE")
        sagemaker.create_cluster(ClusterName=f"{name}-hp", Orchestrator={"Eks": {"ClusterArn": arn}},
                                 InstanceGroups=groups, **settings)
        wait_for(lambda: sagemaker.describe_cluster(ClusterName=f"{name}-hp")["ClusterStatus"],
                 lambda s: s == "InService")
        for addon in addons:
            eks.create_addon(clusterName=name, addonName=addon)
            wait_for(lambda a=addon: eks.describe_addon(clusterName=name, addonName=a)["addon"]["status"],
                     lambda s: s == "ACTIVE")
        api_client = kube.api_client(name, region=REGION)
        core = k8s.CoreV1Api(api_client)
        expected = sum(g["InstanceCount"] for g in groups)
        wait_for(lambda: [n for n in core.list_node().items
                          if any(c.type == "Ready" and c.status == "True" for c in n.status.conditions)],
                 lambda ready: len(ready) == expected)
    if device_plugins:
        install_device_plugins(api_client)
    return api_client


def pod_template(name: str = "app", image: str = "nginx:1.27", resources: dict[str, Any] | None = None,
                 restart_policy: str | None = None) -> dict[str, Any]:
    """A pod template labelled ``app: <name>`` with one container (``resources`` as requests and limits)."""
    container: dict[str, Any] = {"name": name, "image": image}
    if resources:
        container["resources"] = {"requests": resources, "limits": resources}
    spec: dict[str, Any] = {"containers": [container]}
    if restart_policy:
        spec["restartPolicy"] = restart_policy
    return {"metadata": {"labels": {"app": name}}, "spec": spec}
