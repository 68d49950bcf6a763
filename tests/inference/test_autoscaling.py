"""Scaling self-managed endpoints on the sandbox (one GPU cluster for the module).

KEDA autoscaling: turning it on installs KEDA and a ScaledObject on the engine's own metric; load scales the endpoint
out and, once it ends, back in; scale-to-zero without a metric that outlives the replicas is refused; turning it off
returns the endpoint to its own replicas and removes the KEDA nothing needs any more. The SGLang router: a 2-replica
SGLang endpoint is served through it with the knobs given at deploy (cache-aware: a repeated prompt goes to the same
worker), its per-worker load is shown, its policy changes; scaling from 1 replica to 2 adds it and back to 1 removes
it; an endpoint with the router scales to zero and wakes when requests reach the router; deleting the last autoscaled
endpoint removes KEDA. Bad settings are refused on their field before anything changes."""

from __future__ import annotations

import threading

import pytest
from django.test import Client
from django.urls import reverse
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from accounts.models import AuditEvent
from cloud import kube, kube_manifests
from clusters.features import keda
from inference.models import Endpoint
from mcp_server.testing import call_tool
from operations.models import Operation
from sandbox.sim.serving import TOKEN_SECONDS_ANNOTATION
from tests.sandbox.sim.harness import wait_for

ENDPOINTS = "/api/v1/endpoints"


def _kube(cluster) -> k8s.ApiClient:
    return kube.api_client(cluster.eks_name, region=cluster.region)


def _deploy(api, actor, cluster, drive, name: str) -> tuple[str, str]:
    """A vLLM endpoint running one request at a time, each streamed token taking 20 simulated seconds."""
    command = ["vllm", "serve", "/mnt/shared/models/qwen", "--served-model-name", name, "--port", "8000",
               "--max-num-seqs", "1"]
    body = api(actor).post(ENDPOINTS, {"cluster": cluster.pk, "name": name, "model": "models/qwen", "gpus": 1,
                                       "command": command}).json()
    assert drive(Operation.objects.get(pk=body["operation"]["id"]), timeout=60).state == "succeeded"
    namespace = body["endpoint"]["namespace"]
    apps = k8s.AppsV1Api(_kube(cluster))
    apps.patch_namespaced_deployment(name, namespace, {"spec": {"template": {"metadata": {"annotations": {
        TOKEN_SECONDS_ANNOTATION: "20"}}}}})
    wait_for(lambda: apps.read_namespaced_deployment(name, namespace).status,
             lambda status: status.updated_replicas == 1 and status.ready_replicas == 1 and not
             (status.unavailable_replicas or 0) and status.replicas == 1, timeout=30)
    return f"{ENDPOINTS}/{body['endpoint']['id']}", namespace


def _load(cluster, namespace: str, name: str, requests: int) -> list[threading.Thread]:
    body = {"model": name, "messages": [{"role": "user", "content": "load"}], "max_tokens": 16, "stream": True}
    url = f"/api/v1/namespaces/{namespace}/services/{name}:80/proxy/v1/chat/completions"
    threads = [threading.Thread(target=kube_manifests.send, args=(_kube(cluster), "POST", url), kwargs={"body": body})
               for _ in range(requests)]
    for thread in threads:
        thread.start()
    return threads


def _replicas(cluster, namespace: str, name: str) -> int:
    return int(k8s.AppsV1Api(_kube(cluster)).read_namespaced_deployment_scale(name, namespace).spec.replicas or 0)


@pytest.mark.django_db(transaction=True)
def test_autoscaling_scales_out_under_load_back_in_to_zero_and_off(api, cast, shared_cluster, drive):
    cluster = shared_cluster
    url, namespace = _deploy(api, cast.operator, cluster, drive, "auto")
    settings = {"metric": "waiting_requests", "target": 1, "min_replicas": 1, "max_replicas": 3,
                "cooldown_seconds": 60, "polling_seconds": 5}
    turned_on = api(cast.operator).request("PUT", f"{url}/autoscaling", settings)
    assert turned_on.status_code == 202, turned_on.content
    assert turned_on.json()["endpoint"]["autoscaling"]["metric_name"] == "vllm:num_requests_waiting"
    operation = drive(Operation.objects.get(pk=turned_on.json()["operation"]["id"]), timeout=90)
    assert operation.state == "succeeded", operation.error_message
    assert k8s.AppsV1Api(_kube(cluster)).read_namespaced_deployment("keda-operator", "keda").status.ready_replicas
    scaled = k8s.CustomObjectsApi(_kube(cluster)).get_namespaced_custom_object(
        "keda.sh", "v1alpha1", namespace, "scaledobjects", "auto")
    trigger = scaled["spec"]["triggers"][0]
    assert trigger["type"] == "metrics-api" and trigger["metadata"]["url"] == \
        f"http://auto.{namespace}.svc.cluster.local:8000/metrics"
    assert (scaled["spec"]["minReplicaCount"], scaled["spec"]["maxReplicaCount"]) == (1, 3)

    threads = _load(cluster, namespace, "auto", 5)
    # The scaling history shows the scale-out (the replicas may already be back at 1: at the tests' time scale the
    # load is over within about a second).
    shown = wait_for(lambda: api(cast.viewer).get(url).json(),
                     lambda detail: any(event["reason"] == "SuccessfulRescale" and event["message"].startswith(
                         "New size: 3;") for event in (detail["observed"].get("autoscaling") or {}).get("history", [])))
    seen = shown["observed"]["autoscaling"]
    assert seen["ready"] and seen["metric_name"] == "vllm:num_requests_waiting" and seen["target"] == 1.0
    browser = Client()
    browser.force_login(cast.viewer)
    page = browser.get(reverse("inference-endpoint", args=[int(url.rsplit("/", 1)[-1])])).content.decode()
    assert "vllm:num_requests_waiting" in page and "SuccessfulRescale" in page
    refused = api(cast.operator).patch(url, {"replicas": 2})
    assert refused.status_code == 400 and refused.json()["fields"]["replicas"][0]["code"] == "autoscaling_enabled"
    for thread in threads:
        thread.join()
    wait_for(lambda: _replicas(cluster, namespace, "auto"), lambda n: n == 1, timeout=20)

    # Nothing would wake a vLLM endpoint at zero: its metric comes from its replicas.
    to_zero = {"min_replicas": 0, "scale_to_zero": True, "prometheus_url": "http://prometheus.monitoring:9090"}
    refused = api(cast.operator).request("PUT", f"{url}/autoscaling", to_zero)
    assert refused.status_code == 400
    assert refused.json()["fields"]["scale_to_zero"][0]["code"] == "scale_to_zero_needs_metric_source"

    off = api(cast.operator).post(f"{url}/autoscaling/disable")
    assert drive(Operation.objects.get(pk=off.json()["operation"]["id"]), timeout=60).state == "succeeded"
    assert _replicas(cluster, namespace, "auto") == 1
    assert api(cast.viewer).get(url).json()["autoscaling"] == {}
    assert _keda_gone(cluster)  # its CRDs too: no endpoint of the cluster autoscales any more
    audits = AuditEvent.objects.filter(action="endpoint.update", target_id=url.rsplit("/", 1)[-1])
    assert [event.after["autoscaling"].get("min_replicas") for event in audits.order_by("pk")] == [1, None]


def _keda_gone(cluster) -> bool:
    """Neither KEDA's operator nor its ScaledObject CRD is on the cluster."""
    found = []
    for read in (lambda: k8s.AppsV1Api(_kube(cluster)).read_namespaced_deployment("keda-operator", "keda"),
                 lambda: k8s.ApiextensionsV1Api(_kube(cluster)).read_custom_resource_definition(
                     "scaledobjects.keda.sh")):
        try:
            found.append(read())
        except ApiException as error:
            assert error.status == 404
    return not found


@pytest.mark.django_db(transaction=True)
def test_bad_autoscaling_settings_are_refused_on_their_field(api, cast, token_for, shared_sandbox):
    from tests.clusters.sandbox import tracked_hyperpod_cluster

    cluster = tracked_hyperpod_cluster(cast.team, cloud=False)
    endpoint = Endpoint.objects.create(team=cast.team, cluster=cluster, name="bad", namespace="team-x", engine="vllm",
                                       image="vllm/vllm-openai:v0.10.1", model_source="shared", model="/mnt/shared/m",
                                       served_model_name="bad", instance_group="workers",
                                       instance_type="ml.g5.8xlarge", gpus=1, port=8000, state="ready")
    custom = Endpoint.objects.create(team=cast.team, cluster=cluster, name="own", namespace="team-x",
                                     engine="custom", image="me/server:1", model_source="shared",
                                     model="/mnt/shared/m", served_model_name="own", instance_group="workers",
                                     instance_type="ml.g5.8xlarge", gpus=1, port=8000, state="ready")
    single = Endpoint.objects.create(team=cast.team, cluster=cluster, name="one", namespace="team-x",
                                     engine="sglang", image="lmsysorg/sglang:v0.5.1", model_source="shared",
                                     model="/mnt/shared/m", served_model_name="one", instance_group="workers",
                                     instance_type="ml.g5.8xlarge", gpus=1, port=8000, state="ready")
    secret = token_for(cast.operator)
    for target, code in ((endpoint, "router_needs_sglang"), (single, "router_needs_replicas")):
        response = api(cast.operator).request("PUT", f"{ENDPOINTS}/{target.pk}/router", {"policy": "round_robin"})
        assert response.status_code == 400 and response.json()["fields"]["router"][0]["code"] == code
        is_error, body = call_tool(secret, "set_endpoint_router", {"endpoint_id": target.pk, "policy": "round_robin"})
        assert is_error and body == response.json()
    deploy = {"cluster": cluster.pk, "model": "models/qwen", "gpus": 1}
    for body, code in (({**deploy, "name": "v", "replicas": 2, "router": {"policy": "round_robin"}},
                        "router_needs_sglang"),
                       ({**deploy, "name": "s", "engine": "sglang", "router": {"cache_threshold": 0.7}},
                        "router_needs_replicas")):
        response = api(cast.operator).post(ENDPOINTS, body)
        assert response.status_code == 400 and response.json()["fields"]["router"][0]["code"] == code, \
            response.content
        is_error, answered = call_tool(secret, "deploy_endpoint", body)
        assert is_error and answered == response.json()
    base = {"metric": "waiting_requests", "target": 2}
    cases = [
        (endpoint, {**base, "min_replicas": 4, "max_replicas": 2}, "min_replicas", "min_replicas_above_max"),
        (endpoint, {**base, "metric": "sglang:num_queue_reqs"}, "metric", "metric_not_exported"),
        (custom, base, "metric", "metric_not_exported"),
        (endpoint, {**base, "min_replicas": 0}, "min_replicas", "scale_to_zero_not_allowed"),
        (endpoint, {**base, "min_replicas": 0, "scale_to_zero": True, "prometheus_url": "http://prometheus.monitoring:9090"},
         "scale_to_zero", "scale_to_zero_needs_metric_source"),
        (endpoint, {**base, "metric": "tokens_per_second"}, "prometheus_url", "prometheus_url_required"),
        (endpoint, {**base, "cooldown_seconds": 4000}, "cooldown_seconds", "out_of_range"),
    ]
    operator = api(cast.operator)
    operations, audits = Operation.objects.count(), AuditEvent.objects.count()
    for target, body, field, code in cases:
        response = operator.request("PUT", f"{ENDPOINTS}/{target.pk}/autoscaling", body)
        assert response.status_code == 400, (body, response.content)
        assert response.json()["fields"][field][0]["code"] == code, (body, response.json())
    assert Operation.objects.count() == operations and AuditEvent.objects.count() == audits
    endpoint.refresh_from_db()
    assert endpoint.autoscaling == {} and endpoint.state == "ready"
    not_on = operator.post(f"{ENDPOINTS}/{endpoint.pk}/autoscaling/disable")
    assert not_on.status_code == 400 and not_on.json()["fields"]["non_field_errors"][0]["code"] == "no_changes"
    viewer = api(cast.viewer).request("PUT", f"{ENDPOINTS}/{endpoint.pk}/autoscaling", base)
    assert viewer.status_code == 403


@pytest.mark.django_db(transaction=True)
def test_a_two_replica_sglang_endpoint_is_served_through_the_router(api, cast, shared_cluster, drive):
    body = api(cast.operator).post(ENDPOINTS, {"cluster": shared_cluster.pk, "name": "routed", "engine": "sglang",
                                               "model": "models/qwen", "gpus": 1, "replicas": 2,
                                               "router": {"cache_threshold": 0.6}}).json()
    assert body["endpoint"]["router"]["policy"] == "cache_aware"
    assert body["endpoint"]["router"]["cache_threshold"] == 0.6
    assert drive(Operation.objects.get(pk=body["operation"]["id"]), timeout=90).state == "succeeded"
    namespace, url = body["endpoint"]["namespace"], f"{ENDPOINTS}/{body['endpoint']['id']}"
    core, apps = k8s.CoreV1Api(_kube(shared_cluster)), k8s.AppsV1Api(_kube(shared_cluster))
    assert core.read_namespaced_service("routed", namespace).spec.selector == {"instantstart.io/router": "routed"}
    command = apps.read_namespaced_deployment("routed-router", namespace).spec.template.spec.containers[0].command
    assert command[:3] == ["python3", "-m", "sglang_router.launch_router"]
    assert "--service-discovery" in command and "instantstart.io/endpoint=routed" in command
    assert command[command.index("--cache-threshold") + 1] == "0.6"

    chat = {"messages": [{"role": "user", "content": "The same long question, asked again"}], "max_tokens": 4}
    answers = {api(cast.viewer).post(f"{url}/chat", chat).json()["choices"][0]["message"]["content"]
               for _ in range(4)}
    assert len(answers) == 1
    seen = api(cast.viewer).get(url).json()["observed"]["router"]
    assert len(seen["workers"]) == 2 and seen["active_workers"] == 2
    assert sorted(worker["processed"] for worker in seen["workers"]) == [0, 4]
    assert all(worker["pod"].startswith("routed-") for worker in seen["workers"])
    assert (seen["cache_hits"], seen["cache_misses"]) == (3, 1)

    changed = api(cast.operator).request("PUT", f"{url}/router", {"policy": "round_robin"})
    assert changed.status_code == 202, changed.content
    assert drive(Operation.objects.get(pk=changed.json()["operation"]["id"]), timeout=60).state == "succeeded"
    command = apps.read_namespaced_deployment("routed-router", namespace).spec.template.spec.containers[0].command
    assert command[command.index("--policy") + 1] == "round_robin"


def _selector(cluster, namespace: str, name: str) -> dict[str, str]:
    return k8s.CoreV1Api(_kube(cluster)).read_namespaced_service(name, namespace).spec.selector


def _patched(api, actor, drive, url: str, body: dict) -> dict:
    response = api(actor).patch(url, body)
    assert response.status_code == 202, response.content
    operation = drive(Operation.objects.get(pk=response.json()["operation"]["id"]), timeout=90)
    assert operation.state == "succeeded", operation.error_message
    return response.json()["endpoint"]


@pytest.mark.django_db(transaction=True)
def test_the_router_follows_the_replicas_and_wakes_an_endpoint_from_zero(api, cast, shared_cluster, drive):
    cluster = shared_cluster
    body = api(cast.operator).post(ENDPOINTS, {"cluster": cluster.pk, "name": "wake", "engine": "sglang",
                                               "model": "models/qwen", "gpus": 1}).json()
    assert body["endpoint"]["router"] == {}
    assert drive(Operation.objects.get(pk=body["operation"]["id"]), timeout=90).state == "succeeded"
    namespace, url = body["endpoint"]["namespace"], f"{ENDPOINTS}/{body['endpoint']['id']}"
    apps = k8s.AppsV1Api(_kube(cluster))

    # 1 → 2 replicas adds the router (with the knobs given), and the Service points at it; 2 → 1 removes it.
    shown = _patched(api, cast.operator, drive, url, {"replicas": 2, "router": {"policy": "round_robin"}})
    assert shown["router"]["policy"] == "round_robin"
    assert _selector(cluster, namespace, "wake") == {"instantstart.io/router": "wake"}
    assert apps.read_namespaced_deployment("wake-router", namespace).status.ready_replicas == 1
    again = api(cast.operator).patch(url, {"replicas": 2})
    assert again.status_code == 400 and again.json()["fields"]["non_field_errors"][0]["code"] == "no_changes"
    assert _patched(api, cast.operator, drive, url, {"replicas": 1})["router"] == {}
    assert _selector(cluster, namespace, "wake") == {"instantstart.io/endpoint": "wake"}
    assert [item.metadata.name for item in apps.list_namespaced_deployment(namespace).items] == ["wake"]
    assert _patched(api, cast.operator, drive, url, {"replicas": 2})["router"]["policy"] == "cache_aware"

    # With the router and a Prometheus server, the endpoint may scale to zero; requests reaching the router wake it.
    settings = {"metric": "waiting_requests", "target": 1, "min_replicas": 0, "max_replicas": 2,
                "scale_to_zero": True, "prometheus_url": "http://prometheus.monitoring:9090", "cooldown_seconds": 3600,
                "polling_seconds": 5}
    turned_on = api(cast.operator).request("PUT", f"{url}/autoscaling", settings)
    assert turned_on.status_code == 202, turned_on.content
    assert drive(Operation.objects.get(pk=turned_on.json()["operation"]["id"]), timeout=90).state == "succeeded"
    scaled = k8s.CustomObjectsApi(_kube(cluster)).get_namespaced_custom_object(
        "keda.sh", "v1alpha1", namespace, "scaledobjects", "wake")
    wake = scaled["spec"]["triggers"][1]
    assert wake["type"] == "prometheus" and "sgl_router_requests_total" in wake["metadata"]["query"]
    wait_for(lambda: _replicas(cluster, namespace, "wake"), lambda n: n == 0, timeout=30)
    wait_for(lambda: k8s.CoreV1Api(_kube(cluster)).list_namespaced_pod(
        namespace, label_selector="instantstart.io/endpoint=wake").items, lambda pods: not pods, timeout=30)
    assert apps.read_namespaced_deployment("wake-router", namespace).status.ready_replicas == 1

    proxied = f"/api/v1/namespaces/{namespace}/services/wake:80/proxy/v1/chat/completions"
    with pytest.raises(ApiException) as refused:
        kube_manifests.send(_kube(cluster), "POST", proxied, body={"model": "wake", "messages": [
            {"role": "user", "content": "wake up"}], "max_tokens": 4})
    assert refused.value.status == 503
    wait_for(lambda: _replicas(cluster, namespace, "wake"), lambda n: n == 1, timeout=30)
    history = wait_for(lambda: api(cast.viewer).get(url).json()["observed"]["autoscaling"]["history"],
                       lambda events: any(event["reason"] == "KEDAScaleTargetActivated" for event in events))
    assert any(event["reason"] == "KEDAScaleTargetDeactivated" for event in history)

    # The last autoscaled endpoint of the cluster goes: so does the KEDA InstantStart installed.
    gone = api(cast.operator).post(f"{url}/delete")
    assert drive(Operation.objects.get(pk=gone.json()["operation"]["id"]), timeout=90).state == "succeeded"
    assert _keda_gone(cluster)


@pytest.mark.django_db(transaction=True)
def test_keda_is_removed_only_when_instantstart_installed_it_and_nothing_uses_it(shared_cluster):
    cluster = shared_cluster
    apps = k8s.AppsV1Api(_kube(cluster))
    assert keda.apply(cluster)
    ours = apps.read_namespaced_deployment("keda-operator", "keda").metadata.labels
    # Installed outside InstantStart (no label of ours): it stays.
    apps.patch_namespaced_deployment("keda-operator", "keda", {"metadata": {"labels": {
        "app.kubernetes.io/managed-by": None}}})
    assert keda.remove(cluster) == [] and not _keda_gone(cluster)
    apps.patch_namespaced_deployment("keda-operator", "keda", {"metadata": {"labels": ours}})
    # A ScaledObject InstantStart did not make still uses it: it stays.
    custom = k8s.CustomObjectsApi(_kube(cluster))
    custom.create_namespaced_custom_object("keda.sh", "v1alpha1", "default", "scaledobjects", {
        "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": {"name": "theirs"},
        "spec": {"scaleTargetRef": {"name": "theirs"}, "triggers": [{"type": "cpu", "metadata": {"value": "50"}}]}})
    assert keda.remove(cluster) == [] and not _keda_gone(cluster)
    custom.delete_namespaced_custom_object("keda.sh", "v1alpha1", "default", "scaledobjects", "theirs")
    wait_for(lambda: custom.list_cluster_custom_object("keda.sh", "v1alpha1", "scaledobjects")["items"],
             lambda items: not items, timeout=10)
    removed = keda.remove(cluster)
    assert "CustomResourceDefinition scaledobjects.keda.sh" in removed and _keda_gone(cluster)
