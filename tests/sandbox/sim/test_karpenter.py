"""HyperPod-managed Karpenter: CRDs installed with autoscaling, node class status, scale from zero within an
instance group, consolidation of empty nodes, and no scaling once autoscaling is off."""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from tests.sandbox.aws.helpers import default_vpc_config
from tests.sandbox.sim.harness import ROLE, client, group, make_cluster, wait_for

NODE_CLASSES = ("karpenter.sagemaker.amazonaws.com", "v1", "hyperpodnodeclasses")
NODE_POOLS = ("karpenter.sh", "v1", "nodepools")
NODE_CLAIMS = ("karpenter.sh", "v1", "nodeclaims")
AUTOSCALING = {"NodeProvisioningMode": "Continuous", "ClusterRole": ROLE,
               "AutoScaling": {"Mode": "Enable", "AutoScalerType": "Karpenter"}}


def _autoscaled_cluster(*groups: dict[str, Any]) -> tuple[k8s.CoreV1Api, k8s.CustomObjectsApi]:
    api = make_cluster(groups=list(groups), addons=(), **AUTOSCALING, VpcConfig=default_vpc_config(client))
    extensions = k8s.ApiextensionsV1Api(api)
    wait_for(lambda: {crd.metadata.name for crd in extensions.list_custom_resource_definition().items},
             lambda names: {"nodepools.karpenter.sh", "nodeclaims.karpenter.sh",
                            "hyperpodnodeclasses.karpenter.sagemaker.amazonaws.com"} <= names)
    return k8s.CoreV1Api(api), k8s.CustomObjectsApi(api)


def _node_class(custom: k8s.CustomObjectsApi, name: str, groups: list[str]) -> None:
    custom.create_cluster_custom_object(*NODE_CLASSES, {
        "apiVersion": "karpenter.sagemaker.amazonaws.com/v1", "kind": "HyperpodNodeClass",
        "metadata": {"name": name}, "spec": {"instanceGroups": groups}})


def _node_pool(custom: k8s.CustomObjectsApi, name: str, node_class: str, **spec: Any) -> None:
    custom.create_cluster_custom_object(*NODE_POOLS, {
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
        "spec": {"template": {"spec": {
            "nodeClassRef": {"group": "karpenter.sagemaker.amazonaws.com", "kind": "HyperpodNodeClass",
                             "name": node_class},
            "requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                              "values": ["ml.g5.8xlarge"]}]}}, **spec}})


def _gpu_pod(core: k8s.CoreV1Api, name: str, pool: str = "gpu-pool") -> None:
    core.create_namespaced_pod("default", {"metadata": {"name": name}, "spec": {
        "nodeSelector": {"karpenter.sh/nodepool": pool},
        "containers": [{"name": "main", "image": "nginx:1.27",
                        "resources": {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}}]}})


def _counts(group_name: str = "gpu") -> tuple[int, int]:
    described = client("sagemaker").describe_cluster(ClusterName="demo-hp")
    found = next(item for item in described["InstanceGroups"] if item["InstanceGroupName"] == group_name)
    return found["TargetCount"], found["CurrentCount"]


def _conditions(obj: dict[str, Any]) -> dict[str, str]:
    return {entry["type"]: entry["status"] for entry in (obj.get("status") or {}).get("conditions", [])}


def _karpenter_nodes(core: k8s.CoreV1Api) -> list[k8s.V1Node]:
    return core.list_node(label_selector="karpenter.sh/nodepool").items


def test_node_class_status_names_the_groups_it_can_use_and_those_it_cannot():
    _, custom = _autoscaled_cluster(group("gpu", count=0), group("spot", count=0, CapacityRequirements={"Spot": {}}))
    _node_class(custom, "gpu-class", ["gpu"])
    _node_class(custom, "broken", ["gpu", "missing"])
    _node_class(custom, "spot-class", ["spot"])

    def conditions(name: str) -> dict[str, tuple[str, str]]:
        status = custom.get_cluster_custom_object(*NODE_CLASSES, name).get("status") or {}
        return {entry["type"]: (entry["status"], entry.get("message", "")) for entry in status.get("conditions", [])}

    wait_for(lambda: conditions("spot-class"), lambda found: "Ready" in found)
    assert {kind: status for kind, (status, _) in conditions("gpu-class").items()} == {
        "InstanceGroupReady": "True", "SubnetsReady": "True", "Ready": "True"}
    broken = conditions("broken")
    assert broken["InstanceGroupReady"][0] == "False" and "missing" in broken["InstanceGroupReady"][1]
    assert broken["Ready"][0] == "False"
    assert conditions("spot-class")["InstanceGroupReady"][0] == "False"
    status = custom.get_cluster_custom_object(*NODE_CLASSES, "broken")["status"]
    (gpu,) = status["instanceGroups"]
    assert (gpu["name"], gpu["instanceTypes"]) == ("gpu", ["ml.g5.8xlarge"])
    (subnet,) = gpu["subnets"]
    assert subnet["id"] == default_vpc_config(client)["Subnets"][0]
    assert subnet["zone"] == "us-west-2a" and subnet["zoneId"]
    with pytest.raises(ApiException) as excinfo:
        _node_class(custom, "too-many", [f"g{index}" for index in range(11)])
    assert excinfo.value.status == 422


def test_pending_pods_scale_a_group_from_zero_within_limits_and_empty_nodes_scale_in():
    core, custom = _autoscaled_cluster(group("gpu", count=0))
    _node_class(custom, "gpu-class", ["gpu"])
    _node_pool(custom, "gpu-pool", "gpu-class", limits={"nvidia.com/gpu": "1"},
               disruption={"consolidateAfter": "30s"})
    assert _counts() == (0, 0)
    _gpu_pod(core, "first")
    _gpu_pod(core, "second")
    (node,) = wait_for(lambda: _karpenter_nodes(core), lambda found: len(found) == 1)
    labels = node.metadata.labels
    assert (labels["karpenter.sh/nodepool"], labels["sagemaker.amazonaws.com/instance-group-name"],
            labels["node.kubernetes.io/instance-type"]) == ("gpu-pool", "gpu", "ml.g5.8xlarge")
    assert _counts() == (1, 1)
    (claim,) = custom.list_cluster_custom_object(*NODE_CLAIMS)["items"]
    assert claim["metadata"]["name"].startswith("gpu-pool-")
    assert claim["metadata"]["ownerReferences"][0]["name"] == "gpu-pool"
    assert {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["ml.g5.8xlarge"]} in \
        claim["spec"]["requirements"] and claim["spec"]["resources"]["requests"]["nvidia.com/gpu"] == "1"
    claim = wait_for(lambda: custom.get_cluster_custom_object(*NODE_CLAIMS, claim["metadata"]["name"]),
                     lambda found: _conditions(found).get("Ready") == "True")
    assert {kind: status for kind, status in _conditions(claim).items() if kind != "Initialized"} == {
        "Launched": "True", "Registered": "True", "Ready": "True"}  # Initialized waits for every device plugin
    assert claim["status"]["nodeName"] == node.metadata.name and claim["status"]["providerID"]
    pods = wait_for(lambda: {pod.metadata.name: pod for pod in core.list_namespaced_pod("default").items},
                    lambda found: any(pod.status.phase == "Running" for pod in found.values()))
    running = [name for name, pod in pods.items() if pod.status.phase == "Running"]
    assert len(running) == 1 and pods[running[0]].spec.node_name == node.metadata.name
    time.sleep(1.0)  # two nominal launches: the limit of one GPU keeps the second pod waiting
    assert _counts() == (1, 1) and len(_karpenter_nodes(core)) == 1
    pool = custom.get_cluster_custom_object(*NODE_POOLS, "gpu-pool")
    assert pool["status"]["nodes"] == 1
    assert {entry["type"]: entry["status"] for entry in pool["status"]["conditions"]}["Ready"] == "True"

    core.delete_namespaced_pod("first", "default")
    core.delete_namespaced_pod("second", "default")
    wait_for(lambda: _karpenter_nodes(core), lambda found: found == [])
    assert wait_for(_counts, lambda counts: counts == (0, 0))
    assert custom.list_cluster_custom_object(*NODE_CLAIMS)["items"] == []


def test_a_launch_the_cluster_usage_quota_refuses_fails_its_node_claim(sandbox):
    sandbox.control("PUT", "quotas", {"service_code": "sagemaker", "quota_name": "ml.g5.8xlarge for cluster usage",
                                      "value": 0})
    core, custom = _autoscaled_cluster(group("gpu", count=0))
    _node_class(custom, "gpu-class", ["gpu"])
    _node_pool(custom, "gpu-pool", "gpu-class")
    _gpu_pod(core, "first")
    event = wait_for(lambda: core.list_namespaced_event("default", field_selector="reason=LaunchFailed").items,
                     lambda found: len(found) == 1)[0]
    assert (event.involved_object.kind, event.type) == ("NodeClaim", "Warning")
    assert event.message.startswith("ResourceLimitExceeded: The account-level service limit 'ml.g5.8xlarge for "
                                    "cluster usage' is 0 Instances")
    wait_for(lambda: custom.list_cluster_custom_object(*NODE_CLAIMS)["items"], lambda found: found == [])
    assert _counts() == (0, 0) and core.read_namespaced_pod("first", "default").status.phase == "Pending"


def test_turning_autoscaling_off_stops_scaling_and_keeps_the_nodes():
    core, custom = _autoscaled_cluster(group("gpu", count=0))
    _node_class(custom, "gpu-class", ["gpu"])
    _node_pool(custom, "gpu-pool", "gpu-class", disruption={"consolidateAfter": "60s"})
    _gpu_pod(core, "first")
    wait_for(lambda: core.read_namespaced_pod("first", "default").status.phase, lambda phase: phase == "Running")
    sagemaker = client("sagemaker")
    sagemaker.update_cluster(ClusterName="demo-hp", AutoScaling={"Mode": "Disable"})
    _gpu_pod(core, "second")
    time.sleep(1.0)  # two nominal launches
    assert core.read_namespaced_pod("second", "default").status.phase == "Pending"
    assert len(_karpenter_nodes(core)) == 1 and _counts() == (1, 1)
    core.delete_namespaced_pod("first", "default")
    core.delete_namespaced_pod("second", "default")
    time.sleep(1.0)  # sixteen times consolidateAfter
    assert len(_karpenter_nodes(core)) == 1 and _counts() == (1, 1)
    assert sagemaker.describe_cluster(ClusterName="demo-hp")["AutoScaling"]["Mode"] == "Disable"
