"""DaemonSets, device plugins and the health-monitoring agent: a node advertises GPUs, EFA and Neuron devices only
while their plugin's pod runs on it, so a pod asking for a GPU on a cluster without the NVIDIA plugin stays Pending;
a hardware fault changes a node's health label only where the agent runs; a device fault empties allocatable."""

from __future__ import annotations

import httpx
import yaml
from kubernetes import client as k8s

from sandbox.sim.nodes import HEALTH
from tests.sandbox.sim.harness import (
    REGION,
    VENDORED_CHART,
    device_plugin_daemon_sets,
    group,
    install_device_plugins,
    make_cluster,
    pod_template,
    wait_for,
)

EXTENDED = ("nvidia.com/gpu", "vpc.amazonaws.com/efa", "aws.amazon.com/neuron", "aws.amazon.com/neuroncore")


def _by_group(core: k8s.CoreV1Api) -> dict[str, k8s.V1Node]:
    return {node.metadata.labels["sagemaker.amazonaws.com/instance-group-name"]: node
            for node in core.list_node().items}


def _extended(node: k8s.V1Node) -> dict[str, str]:
    return {key: node.status.allocatable[key] for key in EXTENDED if key in node.status.allocatable}


def _pod(core: k8s.CoreV1Api, name: str, resources: dict[str, str] | None = None) -> k8s.V1Pod:
    template = pod_template(name, resources=resources)
    return core.create_namespaced_pod("default", {"metadata": {"name": name, **template["metadata"]},
                                                  "spec": template["spec"]})


def test_without_device_plugins_no_node_advertises_accelerators_and_a_gpu_pod_stays_pending():
    api = make_cluster(groups=[group("gpu", "ml.g5.8xlarge", 1)], addons=(), device_plugins=False)
    core = k8s.CoreV1Api(api)
    (node,) = core.list_node().items
    assert _extended(node) == {} and "nvidia.com/gpu" not in node.status.capacity
    _pod(core, "trainer", {"nvidia.com/gpu": "1"})
    pending = wait_for(lambda: core.read_namespaced_pod("trainer", "default"),
                       lambda pod: any(c.type == "PodScheduled" and c.status == "False"
                                       for c in pod.status.conditions or []))
    assert pending.status.phase == "Pending" and not pending.spec.node_name
    assert "Insufficient nvidia.com/gpu" in next(c.message for c in pending.status.conditions
                                                 if c.type == "PodScheduled")

    install_device_plugins(api)
    node = core.read_node(node.metadata.name)
    assert _extended(node) == {"nvidia.com/gpu": "1", "vpc.amazonaws.com/efa": "1"}
    running = wait_for(lambda: core.read_namespaced_pod("trainer", "default"),
                       lambda pod: pod.status.phase == "Running")
    assert running.spec.node_name == node.metadata.name


def test_each_plugin_runs_on_the_types_it_serves_and_its_resources_leave_with_it():
    api = make_cluster(groups=[group("gpu", "ml.g5.8xlarge", 1), group("trn", "ml.trn1.32xlarge", 1),
                               group("cpu", "ml.m5.xlarge", 1)], addons=())
    core, apps = k8s.CoreV1Api(api), k8s.AppsV1Api(api)
    nodes = _by_group(core)
    assert _extended(nodes["gpu"]) == {"nvidia.com/gpu": "1", "vpc.amazonaws.com/efa": "1"}
    assert _extended(nodes["trn"]) == {"vpc.amazonaws.com/efa": "8", "aws.amazon.com/neuron": "16",
                                       "aws.amazon.com/neuroncore": "32"}
    assert _extended(nodes["cpu"]) == {}
    placed = {(pod.metadata.owner_references[0].name, pod.spec.node_name)
              for pod in core.list_namespaced_pod("kube-system").items}
    assert placed == {("hyperpod-dependencies-nvidia-device-plugin", nodes["gpu"].metadata.name),
                      ("hyperpod-dependencies-aws-efa-k8s-device-plugin", nodes["gpu"].metadata.name),
                      ("hyperpod-dependencies-aws-efa-k8s-device-plugin", nodes["trn"].metadata.name),
                      ("neuron-device-plugin-daemonset", nodes["trn"].metadata.name)}
    efa = apps.read_namespaced_daemon_set("hyperpod-dependencies-aws-efa-k8s-device-plugin", "kube-system").status
    assert (efa.desired_number_scheduled, efa.current_number_scheduled, efa.number_ready, efa.observed_generation) \
        == (2, 2, 2, 1)

    nvidia = next(ds for ds in device_plugin_daemon_sets() if "nvidia" in ds["metadata"]["name"])
    apps.delete_namespaced_daemon_set(nvidia["metadata"]["name"], "kube-system")
    gpu = wait_for(lambda: core.read_node(nodes["gpu"].metadata.name),
                   lambda node: "nvidia.com/gpu" not in node.status.allocatable)
    assert _extended(gpu) == {"vpc.amazonaws.com/efa": "1"} and "nvidia.com/gpu" not in gpu.status.capacity


def test_a_daemon_pod_stays_on_a_cordoned_node_and_leaves_one_whose_taint_it_does_not_tolerate():
    api = make_cluster(groups=[group("gpu", "ml.g5.8xlarge", 2)], addons=())
    core, apps = k8s.CoreV1Api(api), k8s.AppsV1Api(api)
    first, second = sorted(node.metadata.name for node in core.list_node().items)
    core.patch_node(first, {"spec": {"unschedulable": True}})
    core.patch_node(second, {"spec": {"taints": [{"key": "dedicated", "value": "x", "effect": "NoExecute"}]}})
    name = "hyperpod-dependencies-nvidia-device-plugin"
    status = wait_for(lambda: apps.read_namespaced_daemon_set(name, "kube-system").status,
                      lambda found: found.desired_number_scheduled == 1 and found.current_number_scheduled == 1)
    assert status.number_ready == 1
    (pod,) = wait_for(lambda: [pod for pod in core.list_namespaced_pod("kube-system").items
                               if pod.metadata.owner_references[0].name == name
                               and pod.metadata.deletion_timestamp is None],  # the tainted node's is leaving
                      lambda pods: len(pods) == 1)
    assert pod.spec.node_name == first
    assert {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"} in \
        [{"key": t.key, "operator": t.operator, "effect": t.effect} for t in pod.spec.tolerations]
    assert pod.metadata.labels["pod-template-generation"] == "1"
    wait_for(lambda: core.read_node(second), lambda node: "nvidia.com/gpu" not in node.status.allocatable)


def _agent_daemon_set() -> dict:
    with open(VENDORED_CHART / "health-monitoring-agent.yaml", encoding="utf-8") as stream:
        return next(doc for doc in yaml.safe_load_all(stream)
                    if doc and doc["kind"] == "DaemonSet" and doc["metadata"]["name"] == "health-monitoring-agent")


def test_a_hardware_fault_reaches_the_health_label_only_where_the_health_monitoring_agent_runs(sandbox):
    api = make_cluster(groups=[group("gpu", "ml.g5.8xlarge", 1)], addons=())
    core, apps = k8s.CoreV1Api(api), k8s.AppsV1Api(api)
    (node,) = core.list_node().items
    name, boot_id = node.metadata.name, node.status.node_info.boot_id
    fault = {"region": REGION, "cluster": "demo", "node": name, "reason": "XidHardwareFailure", "action": "reboot"}
    assert sandbox.control("POST", "node-faults", fault)["fault"] == fault

    # Without the agent nobody notices: passes go by (a pod gets scheduled and started), the label stays.
    _pod(core, "barrier")
    wait_for(lambda: core.read_namespaced_pod("barrier", "default"), lambda pod: pod.status.phase == "Running")
    assert core.read_node(name).metadata.labels[HEALTH] == "Schedulable"

    core.create_namespace({"metadata": {"name": "aws-hyperpod"}})
    core.create_namespaced_service_account("aws-hyperpod", {"metadata": {"name": "health-monitoring-agent"}})
    agent = _agent_daemon_set()
    apps.create_namespaced_daemon_set("aws-hyperpod", agent)
    rebooted = wait_for(lambda: core.read_node(name), lambda found: found.status.node_info.boot_id != boot_id and
                        found.metadata.labels[HEALTH] == "Schedulable", timeout=20)
    assert rebooted.status.node_info.boot_id != boot_id, "HyperPod rebooted the instance the agent marked"
    (event,) = [event for event in core.list_event_for_all_namespaces().items
                if event.reason == "XidHardwareFailure" and event.involved_object.name == name]
    assert event.type == "Warning" and "UnschedulablePendingReboot" in event.message

    # A device fault (POST /_sandbox/device-faults): the plugin reports the node's EFA devices unhealthy.
    efa = "vpc.amazonaws.com/efa"
    fault = {"region": REGION, "cluster": "demo", "node": name, "resource": efa}
    assert sandbox.control("POST", "device-faults", fault)["fault"] == fault
    faulty = wait_for(lambda: core.read_node(name), lambda found: found.status.allocatable.get(efa) == "0")
    assert faulty.status.capacity[efa] == "1" and faulty.status.allocatable["nvidia.com/gpu"] == "1"
    for body, status in (({**fault, "cluster": "nope"}, 404), ({**fault, "node": "nope"}, 404),
                         ({**fault, "resource": "example.com/widget"}, 400), ({"region": REGION}, 400)):
        response = httpx.post(f"{sandbox.aws_url}/_sandbox/device-faults", json=body)
        assert response.status_code == status and response.json()["error"], body
