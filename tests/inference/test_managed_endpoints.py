"""Managed endpoints end to end on the sandbox's HyperPod inference operator: deploy from the team's bucket with an
L1+L2 KV cache and prefix-aware routing, follow the operator to DeploymentComplete, observe the SageMaker
registration and TLS certificate, call the model through the routing Service, update with the explicit diff, delete;
bad input refused on its fields before anything exists (REST and MCP alike), the API server's CRD check, a cluster
without the operator, and the operator's own failures."""

from __future__ import annotations

import time

import pytest
from kubernetes import client as k8s

from accounts.models import AuditEvent
from cloud import aws
from clusters.shared_bucket import ensure_shared_bucket, team_prefix
from inference.endpoints import managed
from inference.models import Endpoint
from mcp_server.testing import call_tool
from operations.models import Operation
from tests import factories
from tests.inference.conftest import OPERATOR_GROUP as GROUP
from tests.inference.conftest import OPERATOR_VERSION as VERSION
from tests.inference.conftest import kube_api as _api

MANAGED = "/api/v1/managed-endpoints"
CONFIG_LABEL = "inference.sagemaker.aws.amazon.com/endpoint-config"


@pytest.fixture
def cluster(managed_cluster):
    return managed_cluster


def _config(cluster, name: str) -> dict | None:
    try:
        return k8s.CustomObjectsApi(_api(cluster)).get_namespaced_custom_object(
            GROUP, VERSION, f"team-{cluster.team.slug}", "inferenceendpointconfigs", name)
    except k8s.ApiException as error:
        if error.status == 404:
            return None
        raise


def _body(cluster, **fields) -> dict:
    return {"cluster": cluster.pk, "name": "llama", "model": "models/llama", **fields}


@pytest.mark.django_db(transaction=True)
def test_deploy_observe_call_update_and_delete_a_managed_endpoint(api, cast, cluster, drive):
    bucket = ensure_shared_bucket(aws.client("s3", region=cluster.region), cluster.region)
    tls = f"s3://{bucket}/{team_prefix(cast.team.slug)}tls"
    created = api(cast.operator).post(MANAGED, _body(
        cluster, kv_cache={"l1": True, "l1_size_gib": 20, "l2_backend": "redis",
                           "l2_url": "redis://redis.team-vision.svc.cluster.local:6379"},
        routing={"strategy": "prefixaware"}, tls_output_uri=tls))
    assert created.status_code == 202, created.content
    endpoint = created.json()["endpoint"]
    assert endpoint["kind"] == "managed" and endpoint["operator_kind"] == "InferenceEndpointConfig"
    assert _config(cluster, "llama") is None  # the operation creates it
    operation = drive(Operation.objects.get(pk=created.json()["operation"]["id"]), timeout=60)
    assert operation.state == "succeeded", operation.error_message
    sent = _config(cluster, "llama")
    assert sent["spec"]["kvCacheSpec"] == {"enableL1Cache": True, "enableL2Cache": True, "l2CacheSpec": {
        "l2CacheBackend": "redis", "l2CacheLocalUrl": "redis://redis.team-vision.svc.cluster.local:6379"}}
    assert sent["spec"]["intelligentRoutingSpec"] == {"enabled": True, "routingStrategy": "prefixaware"}
    assert sent["spec"]["modelSourceConfig"]["modelLocation"] == f"{team_prefix(cast.team.slug)}models/llama"
    assert {"name": "LMCACHE_MAX_LOCAL_CPU_SIZE", "value": "20"} in sent["spec"]["worker"]["environmentVariables"]
    url = f"{MANAGED}/{endpoint['id']}"
    detail = api(cast.viewer).get(url).json()
    assert detail["state"] == "ready" and detail["ready_replicas"] == 1
    observed = detail["observed"]
    assert observed["state"] == "DeploymentComplete"
    assert "KV cache L1 + L2 (redis); intelligent routing prefixaware" in next(
        entry["message"] for entry in observed["conditions"] if entry["type"] == "DeploymentComplete")
    assert observed["sagemaker"]["state"] == "CreationCompleted"
    assert observed["sagemaker"]["arn"].endswith(":endpoint/llama")
    assert observed["tls"]["tlsCertificateOutputS3Bucket"] == bucket
    assert detail["invocation_url"] == f"http://llama-routing.team-{cast.team.slug}.svc.cluster.local/" \
                                       "v1/chat/completions"
    listed = api(cast.viewer).get("/api/v1/endpoints").json()["results"]
    assert [(row["name"], row["kind"]) for row in listed] == [("llama", "managed")]

    from django.test import Client
    from django.urls import reverse

    browser = Client()
    browser.force_login(cast.viewer)
    for page in ("inference-endpoint", "inference-playground"):
        shown = browser.get(reverse(page, args=[endpoint["id"]]))
        assert shown.status_code == 200 and "llama" in shown.content.decode()
    operator_view = browser.get(reverse("inference-endpoint", args=[endpoint["id"]])).content.decode()
    assert 'data-testid="operator-state">DeploymentComplete<' in operator_view
    assert "CreationCompleted" in operator_view and "L2 redis" in operator_view

    chat = {"messages": [{"role": "user", "content": "Hello there"}], "max_tokens": 4}
    answer = api(cast.viewer).post(f"/api/v1/endpoints/{endpoint['id']}/chat", chat)
    assert answer.status_code == 200, answer.content
    assert len(answer.json()["choices"][0]["message"]["content"].split()) == 4

    scaled = api(cast.operator).patch(url, {"replicas": 2, "kv_cache": detail["kv_cache"]})
    assert scaled.status_code == 202, scaled.content
    operation = Operation.objects.get(pk=scaled.json()["operation"]["id"])
    assert operation.params["patch"] == {"spec": {"replicas": 2}}
    assert drive(operation, timeout=60).state == "succeeded"
    assert api(cast.viewer).get(url).json()["ready_replicas"] == 2
    same = api(cast.operator).patch(url, {"replicas": 2})
    assert same.status_code == 400 and same.json()["fields"]["non_field_errors"][0]["code"] == "no_changes"
    routing = api(cast.operator).patch(url, {"routing": {"strategy": "roundrobin"}})
    assert routing.status_code == 400 and routing.json()["fields"]["routing"][0]["code"] == "routing_immutable"

    deleted = api(cast.operator).post(f"{url}/delete")
    assert deleted.status_code == 202, deleted.content
    assert drive(Operation.objects.get(pk=deleted.json()["operation"]["id"]), timeout=60).state == "succeeded"
    assert api(cast.viewer).get(url).json()["state"] == "deleted"
    assert _config(cluster, "llama") is None
    events = AuditEvent.objects.filter(target_type="endpoint", target_id=str(endpoint["id"]))
    assert {event.action for event in events} == {"endpoint.deploy", "endpoint.update", "endpoint.delete"}


@pytest.mark.django_db(transaction=True)
def test_bad_input_is_refused_on_its_fields_before_anything_exists_on_rest_and_mcp(api, cast, cluster, token_for):
    bad = _body(cluster, instance_type="ml.p5.48xlarge", kv_cache={"l2_backend": "redis", "l2_url": "http://x:1"},
                routing={"strategy": "fastest"}, autoscaling={"min_replicas": 0, "max_replicas": 2})
    rest = api(cast.operator).post(MANAGED, bad)
    assert rest.status_code == 400, rest.content
    fields = {name: errors[0]["code"] for name, errors in rest.json()["fields"].items()}
    assert fields == {"instance_type": "unknown_instance_type", "kv_cache.l2_url": "invalid_redis_url",
                      "routing.strategy": "unsupported_routing_strategy",
                      "autoscaling.min_replicas": "scale_to_zero_not_allowed"}
    is_error, body = call_tool(token_for(cast.operator), "create_managed_endpoint", bad)
    assert is_error and body == rest.json()

    too_big = api(cast.operator).post(MANAGED, _body(cluster, memory_gib=100, kv_cache={"l1_size_gib": 100}))
    assert too_big.json()["fields"]["kv_cache.l1_size_gib"][0]["code"] == "kv_cache_too_large"
    bounds = api(cast.operator).post(MANAGED, _body(cluster, autoscaling={"min_replicas": 3, "max_replicas": 2}))
    assert bounds.json()["fields"]["autoscaling.min_replicas"][0]["code"] == "min_replicas_above_max"
    crd = api(cast.operator).post(MANAGED, _body(cluster, sagemaker_endpoint="not_a_valid_name"))
    assert crd.status_code == 400 and crd.json()["fields"]["sagemaker_endpoint"][0]["code"] == "crd_invalid"
    assert not Endpoint.objects.exists() and not AuditEvent.objects.filter(action="endpoint.deploy").exists()
    assert _config(cluster, "llama") is None

    bare = factories.cluster(cast.team, "bare")
    factories.instance_group(bare)
    refused = api(cast.operator).post(MANAGED, _body(bare))
    assert refused.status_code == 409 and refused.json()["code"] == "inference_operator_missing"
    assert "inference_operator" in refused.json()["message"]


@pytest.mark.django_db(transaction=True)
def test_the_operator_fails_for_a_missing_model_and_a_missing_tls_bucket(api, cast, cluster, drive, token_for):
    is_error, body = call_tool(token_for(cast.operator), "create_managed_endpoint",
                               _body(cluster, name="ghost", model="models/absent"))
    assert not is_error, body
    operation = drive(Operation.objects.get(pk=body["operation"]["id"]), timeout=60)
    assert operation.state == "failed" and operation.error_code == "managed_endpoint_failed"
    assert "ModelSourceNotFound" in operation.error_message
    is_error, seen = call_tool(token_for(cast.viewer), "get_managed_endpoint", {"endpoint_id": body["endpoint"]["id"]})
    assert seen["state"] == "failed" and seen["observed"]["state"] == "DeploymentFailed"
    assert any(event["reason"] == "ModelSourceNotFound" for event in seen["observed"]["events"])

    tls = api(cast.operator).post(MANAGED, _body(cluster, name="notls", tls_output_uri="s3://no-such-bucket/certs"))
    operation = drive(Operation.objects.get(pk=tls.json()["operation"]["id"]), timeout=60)
    assert operation.state == "failed" and "TLSCertificateBucketNotFound" in operation.error_message


def _wait(check, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"sandbox: {what} did not happen within {timeout} s"
        time.sleep(0.1)


def _hits(cluster, name: str) -> tuple[float, float]:
    """Prefix-cache hits and queries summed over the pods of config ``name`` (each pod's /metrics)."""
    core = k8s.CoreV1Api(_api(cluster))
    namespace = f"team-{cluster.team.slug}"
    hits = queries = 0.0
    for pod in core.list_namespaced_pod(namespace, label_selector=f"{CONFIG_LABEL}={name}").items:
        text = core.connect_get_namespaced_pod_proxy_with_path(pod.metadata.name, namespace, "metrics")
        for line in text.splitlines():
            if line.startswith("vllm:prefix_cache_hits_total"):
                hits += float(line.rsplit(" ", 1)[1])
            elif line.startswith("vllm:prefix_cache_queries_total"):
                queries += float(line.rsplit(" ", 1)[1])
    return hits, queries


@pytest.mark.django_db(transaction=True)
def test_sandbox_operator_routes_by_prefix_checks_the_crd_and_refuses_unsupported_types(cast, cluster):
    custom = k8s.CustomObjectsApi(_api(cluster))
    namespace = f"team-{cluster.team.slug}"
    bucket = ensure_shared_bucket(aws.client("s3", region=cluster.region), cluster.region)

    def config(name: str, strategy: str, **spec) -> dict:
        return {"apiVersion": f"{GROUP}/v1", "kind": "InferenceEndpointConfig", "metadata": {"name": name},
                "spec": {"modelName": name, "instanceType": "ml.g5.12xlarge", "replicas": 2,
                         "kvCacheSpec": {"enableL1Cache": True},
                         "intelligentRoutingSpec": {"enabled": True, "routingStrategy": strategy},
                         "modelSourceConfig": {"modelSourceType": "s3", "modelLocation":
                                               f"{team_prefix(cluster.team.slug)}models/llama",
                                               "s3Storage": {"bucketName": bucket, "region": cluster.region}},
                         "worker": {"image": "lmcache/vllm-openai:v0.3.7",
                                    "args": ["/opt/ml/model", "--served-model-name", name],
                                    "resources": {"limits": {"nvidia.com/gpu": "1"},
                                                  "requests": {"nvidia.com/gpu": "1"}},
                                    "modelInvocationPort": {"containerPort": 8000},
                                    "modelVolumeMount": {"name": "model-weights"}}, **spec}}

    with pytest.raises(k8s.ApiException) as refused:
        custom.create_namespaced_custom_object(GROUP, VERSION, namespace, "inferenceendpointconfigs",
                                               config("bad", "fastest"))
    assert refused.value.status == 422 and "routingStrategy" in refused.value.body

    for name, strategy in (("prefix", "prefixaware"), ("turns", "roundrobin")):
        custom.create_namespaced_custom_object(GROUP, VERSION, namespace, "inferenceendpointconfigs",
                                               config(name, strategy))
    cpu = config("cpu", "prefixaware", instanceType="ml.m5.xlarge")
    custom.create_namespaced_custom_object(GROUP, VERSION, namespace, "inferenceendpointconfigs", cpu)
    for name in ("prefix", "turns"):
        _wait(lambda name=name: (_config(cluster, name).get("status") or {}).get("state") == "DeploymentComplete",
              f"{name} DeploymentComplete")
    failed = _wait(lambda: (_config(cluster, "cpu").get("status") or {}).get("state") == "DeploymentFailed"
                   and _config(cluster, "cpu"), "cpu DeploymentFailed")
    assert next(entry["reason"] for entry in failed["status"]["conditions"]
                if entry["type"] == "DeploymentComplete") == "UnsupportedInstanceType"
    routing = k8s.CoreV1Api(_api(cluster)).read_namespaced_service("prefix-routing", namespace)
    assert routing.spec.ports[0].port == 80

    api = _api(cluster)
    chat = {"messages": [{"role": "user", "content": "A long shared system prompt, then a question."}]}
    for name in ("prefix", "turns"):
        for _ in range(4):
            path = f"/api/v1/namespaces/{namespace}/services/{name}-routing:80/proxy/v1/chat/completions"
            method, url, headers, body, _ = api.param_serialize("POST", path, body=chat, auth_settings=["BearerToken"],
                                                                header_params={"Content-Type": "application/json"})
            assert api.call_api(method, url, header_params=headers, body=body).status == 200
    prefix_hits, prefix_queries = _hits(cluster, "prefix")
    turn_hits, turn_queries = _hits(cluster, "turns")
    assert prefix_queries == turn_queries > 0
    assert prefix_hits > turn_hits > 0


@pytest.mark.django_db
def test_portal_form_explains_the_trade_offs_and_shows_refusals_on_their_inputs(cast, shared_sandbox):
    from django.test import Client
    from django.urls import reverse

    cluster = factories.cluster(cast.team, "rows")
    factories.instance_group(cluster)
    browser = Client()
    browser.force_login(cast.operator)
    page = browser.get(reverse("inference-managed-endpoint-create"))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-testid="kv-cache-tradeoff"' in html and 'data-testid="routing-tradeoff"' in html
    for strategy in managed.STRATEGIES:
        assert f'<option value="{strategy}"' in html
    refused = browser.post(reverse("inference-managed-endpoint-create"), {
        "cluster": cluster.pk, "name": "llama", "model": "models/llama", "kv_l2_backend": "redis",
        "kv_l2_url": "memcached://cache", "routing_strategy": "fastest"})
    assert refused.status_code == 400
    body = refused.content.decode()
    assert 'data-error-code="invalid_redis_url"' in body and 'data-error-code="unsupported_routing_strategy"' in body
    assert not Endpoint.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_jumpstart_model_is_deployed_and_called_and_an_unknown_id_fails(api, cast, cluster, drive):
    created = api(cast.operator).post(MANAGED, {"cluster": cluster.pk, "name": "deepseek", "model_source": "jumpstart",
                                                "model": "deepseek-llm-r1-distill-qwen-1-5b"})
    assert created.status_code == 202, created.content
    assert created.json()["endpoint"]["operator_kind"] == "JumpStartModel"
    operation = drive(Operation.objects.get(pk=created.json()["operation"]["id"]), timeout=60)
    assert operation.state == "succeeded", operation.error_message
    endpoint_id = created.json()["endpoint"]["id"]
    chat = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 3}
    answer = api(cast.viewer).post(f"/api/v1/endpoints/{endpoint_id}/chat", chat)
    assert answer.status_code == 200, answer.content
    assert answer.json()["model"] == "deepseek-llm-r1-distill-qwen-1-5b"
    image = api(cast.operator).patch(f"{MANAGED}/{endpoint_id}", {"image": "other:1"})
    assert image.status_code == 400 and image.json()["fields"]["image"][0]["code"] == "jumpstart_fixed"

    unknown = api(cast.operator).post(MANAGED, {"cluster": cluster.pk, "name": "nope", "model_source": "jumpstart",
                                                "model": "no-such-model"})
    operation = drive(Operation.objects.get(pk=unknown.json()["operation"]["id"]), timeout=60)
    assert operation.state == "failed" and "ModelNotFound" in operation.error_message


@pytest.mark.django_db(transaction=True)
def test_operator_autoscaling_installs_keda_first_and_the_operator_scales_through_keda(api, cast, cluster, drive):
    autoscaling = {"min_replicas": 1, "max_replicas": 3, "polling_interval": 15, "cooldown_period": 120,
                   "query": "sum(vllm:prompt_tokens_total)", "target_value": 1}
    created = api(cast.operator).post(MANAGED, _body(cluster, name="scaled", autoscaling=autoscaling))
    assert created.status_code == 202, created.content
    operation = drive(Operation.objects.get(pk=created.json()["operation"]["id"]), timeout=90)
    assert operation.state == "succeeded", operation.error_message
    assert [phase.slug for phase in operation.phases.order_by("index")] == ["keda", "create", "deploy"]
    stored = _config(cluster, "scaled")["spec"]["autoScalingSpec"]
    assert {key: stored[key] for key in ("minReplicaCount", "maxReplicaCount", "pollingInterval",
                                         "cooldownPeriod")} == {"minReplicaCount": 1, "maxReplicaCount": 3,
                                                                "pollingInterval": 15, "cooldownPeriod": 120}
    assert stored["scaleDownStabilizationTime"] == 300  # the CRD's default, added by the API server
    url = f"{MANAGED}/{created.json()['endpoint']['id']}"
    same = api(cast.operator).patch(url, {"autoscaling": autoscaling})
    assert same.status_code == 400 and same.json()["fields"]["non_field_errors"][0]["code"] == "no_changes"
    keda = k8s.AppsV1Api(_api(cluster)).read_namespaced_deployment("keda-operator", "keda")
    assert keda.status.available_replicas == 1

    # The operator made a ScaledObject of the spec for the endpoint's Deployment; a call's prompt tokens exceed
    # the target, so KEDA scales it to the maximum.
    custom = k8s.CustomObjectsApi(_api(cluster))
    namespace = f"team-{cluster.team.slug}"
    scaled = custom.get_namespaced_custom_object("keda.sh", "v1alpha1", namespace, "scaledobjects",
                                                 "scaled-scaledobject")
    assert scaled["spec"]["scaleTargetRef"]["name"] == "scaled"
    assert (scaled["spec"]["minReplicaCount"], scaled["spec"]["maxReplicaCount"]) == (1, 3)
    assert scaled["spec"]["triggers"][0]["type"] == "prometheus"
    assert scaled["spec"]["triggers"][0]["metadata"]["query"] == "sum(vllm:prompt_tokens_total)"
    custom.create_namespaced_custom_object("keda.sh", "v1alpha1", namespace, "scaledobjects", {
        "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": {"name": "copy"},
        "spec": scaled["spec"]}, dry_run="All")  # what the operator made is what KEDA's CRD accepts
    chat = {"messages": [{"role": "user", "content": "scale me out please"}], "max_tokens": 2}
    assert api(cast.viewer).post(f"/api/v1/endpoints/{created.json()['endpoint']['id']}/chat", chat).status_code == 200
    _wait(lambda: api(cast.viewer).get(url).json()["observed"].get("ready") == 3, "KEDA scaling the endpoint to 3")
    assert api(cast.viewer).get(url).json()["observed"]["desired"] == 3

    # Without the query the trigger goes from the spec (null in the patch) and the ScaledObject with it.
    plain = api(cast.operator).patch(url, {"autoscaling": {key: value for key, value in autoscaling.items()
                                                           if key not in ("query", "target_value")}})
    assert plain.status_code == 202, plain.content
    operation = Operation.objects.get(pk=plain.json()["operation"]["id"])
    assert operation.params["patch"]["spec"]["autoScalingSpec"]["prometheusTrigger"] is None
    assert drive(operation, timeout=60).state == "succeeded"
    assert "prometheusTrigger" not in _config(cluster, "scaled")["spec"]["autoScalingSpec"]
    _wait(lambda: not custom.list_namespaced_custom_object("keda.sh", "v1alpha1", namespace, "scaledobjects")["items"],
          "the ScaledObject deleted")

    # Autoscaling off: the spec goes, and with no endpoint of the cluster autoscaling, the KEDA InstantStart
    # installed goes too; back on, KEDA comes back, and deleting the endpoint removes it again.
    off = api(cast.operator).patch(url, {"autoscaling": {"enabled": False}})
    assert off.status_code == 202, off.content
    operation = Operation.objects.get(pk=off.json()["operation"]["id"])
    assert operation.params["patch"]["spec"]["autoScalingSpec"] is None and operation.params["stops_autoscaling"]
    assert drive(operation, timeout=60).state == "succeeded"
    assert "autoScalingSpec" not in _config(cluster, "scaled")["spec"]
    assert _keda_gone(cluster)
    assert "removed KEDA" in " ".join(operation.logs.values_list("message", flat=True))
    on = api(cast.operator).patch(url, {"autoscaling": autoscaling})
    assert drive(Operation.objects.get(pk=on.json()["operation"]["id"]), timeout=90).state == "succeeded"
    assert not _keda_gone(cluster)
    _wait(lambda: custom.list_namespaced_custom_object("keda.sh", "v1alpha1", namespace, "scaledobjects")["items"],
          "the operator's ScaledObject made again")
    deleted = api(cast.operator).post(f"{url}/delete")
    assert drive(Operation.objects.get(pk=deleted.json()["operation"]["id"]), timeout=60).state == "succeeded"
    assert _keda_gone(cluster)


def _keda_gone(cluster) -> bool:
    """Neither KEDA's operator nor its ScaledObject CRD is on the cluster."""
    try:
        k8s.AppsV1Api(_api(cluster)).read_namespaced_deployment("keda-operator", "keda")
        return False
    except k8s.ApiException as error:
        assert error.status == 404
    try:
        k8s.ApiextensionsV1Api(_api(cluster)).read_custom_resource_definition("scaledobjects.keda.sh")
        return False
    except k8s.ApiException as error:
        return error.status == 404


def _queries_by_pod(cluster, name: str) -> dict[str, float]:
    """Each pod of config ``name``: the prompt tokens its prefix cache was asked for (the requests it served)."""
    core = k8s.CoreV1Api(_api(cluster))
    namespace = f"team-{cluster.team.slug}"
    counts = {}
    for pod in core.list_namespaced_pod(namespace, label_selector=f"{CONFIG_LABEL}={name}").items:
        text = core.connect_get_namespaced_pod_proxy_with_path(pod.metadata.name, namespace, "metrics")
        counts[pod.metadata.name] = sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                                        if line.startswith("vllm:prefix_cache_queries_total"))
    return counts


@pytest.mark.django_db(transaction=True)
def test_session_routing_keeps_a_session_on_one_replica_and_l2_off_removes_its_spec(api, cast, cluster, drive):
    created = api(cast.operator).post(MANAGED, _body(
        cluster, name="chatty", replicas=2, routing={"strategy": "session", "session_key": "x-conversation"},
        kv_cache={"l1": True, "l2_backend": "tieredstorage"}))
    assert created.status_code == 202, created.content
    assert drive(Operation.objects.get(pk=created.json()["operation"]["id"]), timeout=60).state == "succeeded"
    sent = _config(cluster, "chatty")
    assert sent["metadata"]["annotations"][managed.SESSION_KEY_ANNOTATION] == "x-conversation"
    endpoint_id = created.json()["endpoint"]["id"]

    def chat(content: str, **extra) -> None:
        answer = api(cast.viewer).post(f"/api/v1/endpoints/{endpoint_id}/chat",
                                       {"messages": [{"role": "user", "content": content}], "max_tokens": 2, **extra})
        assert answer.status_code == 200, answer.content

    for turn in range(4):  # different prompts, one session: one replica
        chat(f"turn {turn} of a conversation", session_id="conversation-1")
    served = [pod for pod, queries in _queries_by_pod(cluster, "chatty").items() if queries]
    assert len(served) == 1
    before = _queries_by_pod(cluster, "chatty")
    for turn in range(4):  # no session_id: the caller's own, derived from the user — again one replica
        chat(f"another question {turn}")
    after = _queries_by_pod(cluster, "chatty")
    assert len([pod for pod in after if after[pod] > before[pod]]) == 1

    # The sandbox's router reads the configured key, not x-session-id: that header alone takes turns.
    raw = _api(cluster)
    namespace = f"team-{cluster.team.slug}"
    path = f"/api/v1/namespaces/{namespace}/services/chatty-routing:80/proxy/v1/chat/completions"
    before = _queries_by_pod(cluster, "chatty")
    for turn in range(4):
        body = {"messages": [{"role": "user", "content": f"round {turn}"}]}
        method, url, headers, payload, _ = raw.param_serialize(
            "POST", path, body=body, auth_settings=["BearerToken"],
            header_params={"Content-Type": "application/json", "x-session-id": "conversation-1"})
        assert raw.call_api(method, url, header_params=headers, body=payload).status == 200
    after = _queries_by_pod(cluster, "chatty")
    assert all(after[pod] > before[pod] for pod in after)

    url = f"{MANAGED}/{endpoint_id}"
    off = api(cast.operator).patch(url, {"kv_cache": {"l1": True}})
    assert off.status_code == 202, off.content
    operation = Operation.objects.get(pk=off.json()["operation"]["id"])
    assert operation.params["patch"] == {"spec": {"kvCacheSpec": {"enableL1Cache": True, "enableL2Cache": False,
                                                                  "l2CacheSpec": None}}}
    assert drive(operation, timeout=60).state == "succeeded"
    kv = _config(cluster, "chatty")["spec"]["kvCacheSpec"]
    assert kv["enableL2Cache"] is False and "l2CacheSpec" not in kv
    again = api(cast.operator).patch(url, {"kv_cache": {"l1": True}})
    assert again.status_code == 400 and again.json()["fields"]["non_field_errors"][0]["code"] == "no_changes"
