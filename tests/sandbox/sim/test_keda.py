"""The KEDA simulation: nothing without KEDA's operator; with it, the simulated servers' metrics drive the HPA out and
back in, and a ScaledObject allowed to reach zero goes to zero when idle and wakes when its metric passes the
activation threshold."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s

from cloud import kube_manifests
from sandbox import clock
from sandbox.sim.serving import TOKEN_SECONDS_ANNOTATION
from tests.sandbox.sim.harness import make_cluster, wait_for
from tests.sandbox.sim.test_operators import install_crds


@pytest.fixture
def api() -> Iterator[k8s.ApiClient]:
    previous = clock.scale()
    api = make_cluster(addons=())
    install_crds(api, "keda.sh/scaledobjects.yaml")
    clock.set_scale(0.001)
    try:
        yield api
    finally:
        clock.set_scale(previous)


def _keda_operator(apps: k8s.AppsV1Api) -> None:
    apps.create_namespaced_deployment("default", {"metadata": {"name": "keda-operator", "labels": {
        "app": "keda-operator"}}, "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "keda-operator"}},
                                            "template": {"metadata": {"labels": {"app": "keda-operator"}}, "spec": {
                                                "containers": [{"name": "keda-operator",
                                                                "image": "ghcr.io/kedacore/keda:2.20.2"}]}}}})


def _server(core: k8s.CoreV1Api, apps: k8s.AppsV1Api, name: str, replicas: int, pace: str = "0.02") -> None:
    """A vLLM Deployment (batch size 1, ``pace`` simulated seconds per token) behind Service ``name``."""
    labels = {"app": name}
    apps.create_namespaced_deployment("default", {"metadata": {"name": name}, "spec": {
        "replicas": replicas, "selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels, "annotations": {TOKEN_SECONDS_ANNOTATION: pace}},
            "spec": {"containers": [{"name": "server", "image": "vllm/vllm-openai:v0.10.1",
                                     "command": ["vllm", "serve", "m", "--max-num-seqs", "1"],
                                     "ports": [{"containerPort": 8000}]}]}}}})
    core.create_namespaced_service("default", {"metadata": {"name": name}, "spec": {
        "selector": labels, "ports": [{"port": 80, "targetPort": 8000}]}})


def _scaled_object(name: str, target: str, service: str, *, minimum: int, maximum: int) -> dict[str, Any]:
    return {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": {"name": name},
            "spec": {"scaleTargetRef": {"name": target}, "minReplicaCount": minimum, "maxReplicaCount": maximum,
                     "pollingInterval": 5, "cooldownPeriod": 60,
                     "advanced": {"horizontalPodAutoscalerConfig": {"behavior": {"scaleDown": {
                         "stabilizationWindowSeconds": 60}}}},
                     "triggers": [{"type": "metrics-api", "metadata": {
                         "url": f"http://{service}.default.svc.cluster.local:8000/metrics", "format": "prometheus",
                         "valueLocation": "vllm:num_requests_waiting", "aggregateFromKubeServiceEndpoints": "true",
                         "aggregationType": "sum", "targetValue": "1", "activationTargetValue": "0"}}]}}


def _load(api: k8s.ApiClient, service: str, requests: int) -> list[threading.Thread]:
    """``requests`` concurrent streamed chats to ``service`` (each 16 tokens)."""
    body = {"messages": [{"role": "user", "content": "load"}], "max_tokens": 16, "stream": True}
    url = f"/api/v1/namespaces/default/services/{service}:80/proxy/v1/chat/completions"
    threads = [threading.Thread(target=kube_manifests.send, args=(api, "POST", url), kwargs={"body": body})
               for _ in range(requests)]
    for thread in threads:
        thread.start()
    return threads


def _replicas(apps: k8s.AppsV1Api, name: str) -> int:
    return int(apps.read_namespaced_deployment_scale(name, "default").spec.replicas or 0)


def test_nothing_scales_without_the_keda_operator(api):
    apps, core = k8s.AppsV1Api(api), k8s.CoreV1Api(api)
    custom = k8s.CustomObjectsApi(api)
    _server(core, apps, "idle", 1)
    custom.create_namespaced_custom_object("keda.sh", "v1alpha1", "default", "scaledobjects",
                                           _scaled_object("idle", "idle", "idle", minimum=2, maximum=3))
    wait_for(lambda: apps.read_namespaced_deployment("idle", "default").status.ready_replicas, lambda n: n == 1)
    assert not custom.get_namespaced_custom_object("keda.sh", "v1alpha1", "default", "scaledobjects",
                                                   "idle").get("status")
    assert k8s.AutoscalingV2Api(api).list_namespaced_horizontal_pod_autoscaler("default").items == []
    _keda_operator(apps)
    wait_for(lambda: _replicas(apps, "idle"), lambda n: n == 2)


def test_waiting_requests_scale_out_then_back_in(api):
    apps, core = k8s.AppsV1Api(api), k8s.CoreV1Api(api)
    _keda_operator(apps)
    _server(core, apps, "chat", 1, pace="20")
    k8s.CustomObjectsApi(api).create_namespaced_custom_object(
        "keda.sh", "v1alpha1", "default", "scaledobjects", _scaled_object("chat", "chat", "chat", minimum=1,
                                                                          maximum=3))
    wait_for(lambda: apps.read_namespaced_deployment("chat", "default").status.ready_replicas, lambda n: n == 1)
    threads = _load(api, "chat", 5)
    wait_for(lambda: _replicas(apps, "chat"), lambda n: n == 3)
    hpa = k8s.AutoscalingV2Api(api).read_namespaced_horizontal_pod_autoscaler("keda-hpa-chat", "default")
    assert hpa.status.desired_replicas == 3
    assert hpa.spec.metrics[0].external.metric.name == "s0-metric-api-vllm-num-requests-waiting"
    for thread in threads:
        thread.join()
    wait_for(lambda: _replicas(apps, "chat"), lambda n: n == 1)
    events = k8s.CoreV1Api(api).list_namespaced_event(
        "default", field_selector="involvedObject.name=keda-hpa-chat").items
    assert {event.message for event in events} >= {
        "New size: 3; reason: external metric s0-metric-api-vllm-num-requests-waiting above target",
        "New size: 1; reason: All metrics below target"}


def test_to_zero_when_idle_and_back_when_the_metric_passes_activation(api):
    """The metric comes from a Service whose pods stay (a gateway in front of the workers), so it is there at zero."""
    apps, core = k8s.AppsV1Api(api), k8s.CoreV1Api(api)
    custom = k8s.CustomObjectsApi(api)
    _keda_operator(apps)
    _server(core, apps, "gateway", 1, pace="20")
    _server(core, apps, "workers", 1)
    custom.create_namespaced_custom_object("keda.sh", "v1alpha1", "default", "scaledobjects",
                                           _scaled_object("workers", "workers", "gateway", minimum=0, maximum=2))
    wait_for(lambda: _replicas(apps, "workers"), lambda n: n == 0)
    status = custom.get_namespaced_custom_object("keda.sh", "v1alpha1", "default", "scaledobjects",
                                                 "workers")["status"]
    assert {c["type"]: c["status"] for c in status["conditions"]}["Active"] == "False"
    wait_for(lambda: apps.read_namespaced_deployment("gateway", "default").status.ready_replicas, lambda n: n == 1)
    threads = _load(api, "gateway", 3)
    wait_for(lambda: _replicas(apps, "workers"), lambda n: n >= 1)
    reasons = {event.reason for event in core.list_namespaced_event(
        "default", field_selector="involvedObject.name=workers").items}
    assert {"KEDAScaleTargetActivated", "KEDAScaleTargetDeactivated"} <= reasons
    for thread in threads:
        thread.join()


def test_the_api_server_validates_scaled_objects_against_kedas_crd(api):
    """The release CRD (with its kustomize patch): the scale-down stabilization window is at most 3600 s."""
    bad = _scaled_object("bad", "chat", "chat", minimum=1, maximum=2)
    bad["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"][
        "stabilizationWindowSeconds"] = 4000
    with pytest.raises(k8s.ApiException) as refused:
        k8s.CustomObjectsApi(api).create_namespaced_custom_object("keda.sh", "v1alpha1", "default", "scaledobjects",
                                                                  bad)
    assert refused.value.status == 422 and "stabilizationWindowSeconds" in refused.value.body
