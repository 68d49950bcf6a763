"""Reaching a virtual API server: clusters, tokens, TLS, discovery."""

from __future__ import annotations

import json
import time

import pytest
from kubernetes import client as k8s

from sandbox.kube import world
from tests.sandbox.kube.conftest import CLUSTER, REGION, eks_token, raw, with_query


def status_of(error: k8s.ApiException) -> dict:
    return json.loads(error.body)


def test_version_and_namespaces_over_https(api):
    assert k8s.VersionApi(api).get_code().git_version.startswith("v1.32")
    names = [ns.metadata.name for ns in k8s.CoreV1Api(api).list_namespace().items]
    assert names == ["default", "kube-node-lease", "kube-public", "kube-system"]


def test_default_service_and_service_accounts_exist(core):
    assert core.read_namespaced_service("kubernetes", "default").spec.cluster_ip == "10.100.0.1"
    assert core.read_namespaced_service_account("default", "kube-system").metadata.uid


@pytest.mark.parametrize("token", [None, "not-a-token", "k8s-aws-v1.!!!",
                                   "k8s-aws-v1.aHR0cHM6Ly9leGFtcGxlLmNvbS8"])
def test_requests_without_a_get_token_token_are_unauthorized(make_api, token):
    with pytest.raises(k8s.ApiException) as raised:
        k8s.CoreV1Api(make_api(token=token)).list_namespace()
    assert raised.value.status == 401
    assert status_of(raised.value)["reason"] == "Unauthorized"


def test_stale_forged_and_other_clusters_tokens_are_refused(make_api):
    stale = with_query(eks_token(CLUSTER), **{"X-Amz-Date": time.strftime("%Y%m%dT%H%M%SZ",
                                                                           time.gmtime(time.time() - 16 * 60))})
    unsigned_header = with_query(eks_token(CLUSTER), **{"X-Amz-SignedHeaders": "host"})
    forged = with_query(eks_token(CLUSTER), **{"X-Amz-Signature": "0" * 64})
    extended = with_query(eks_token(CLUSTER), **{"X-Amz-Expires": "900"})
    for token in (stale, unsigned_header, forged, extended, eks_token("another-cluster")):
        with pytest.raises(k8s.ApiException) as raised:
            k8s.CoreV1Api(make_api(token=token)).list_namespace()
        assert raised.value.status == 401


def test_unknown_cluster_is_not_found_and_a_creating_one_unavailable(make_api, clusters):
    with pytest.raises(k8s.ApiException) as raised:
        k8s.CoreV1Api(make_api("nowhere")).list_namespace()
    assert raised.value.status == 404
    clusters.append(world.ClusterRef("young", REGION, "CREATING"))
    with pytest.raises(k8s.ApiException) as raised:
        k8s.CoreV1Api(make_api("young")).list_namespace()
    assert raised.value.status == 503
    assert world.existing_store(REGION, "young") is None


def test_dynamic_client_resolves_builtins_subresources_and_the_add_on_crd(dynamic):
    pods = dynamic.resources.get(api_version="v1", kind="Pod")
    assert pods.namespaced and set(pods.subresources) == {"status", "log"}
    deployments = dynamic.resources.get(api_version="apps/v1", kind="Deployment")
    assert set(deployments.subresources) == {"status", "scale"}
    assert "deploy" in deployments.short_names
    assert not dynamic.resources.get(api_version="v1", kind="Node").namespaced
    assert dynamic.resources.get(api_version="autoscaling/v2", kind="HorizontalPodAutoscaler").namespaced
    jobs = dynamic.resources.get(api_version="sagemaker.amazonaws.com/v1", kind="HyperPodPyTorchJob")
    assert jobs.name == "hyperpodpytorchjobs"


@pytest.mark.parametrize(("method", "path", "code"), [
    ("GET", "/apis/nothing.example.com/v1", 404), ("GET", "/api/v1/widgets", 404),
    ("GET", "/api/v1/namespaces/default/nodes", 404), ("GET", "/api/v1/pods/orphan", 404),
    ("PUT", "/api/v1/namespaces/default/pods", 405), ("POST", "/api/v1/pods", 405),
])
def test_unknown_paths_and_methods_answer_with_status_objects(api, method, path, code):
    status, body = raw(api, method, path, {})
    assert (status, body["kind"], body["code"]) == (code, "Status", code)


def test_discovery_lists_groups_with_preferred_versions(api):
    _, body = raw(api, "GET", "/apis")
    groups = {group["name"]: group for group in body["groups"]}
    assert {"apps", "batch", "rbac.authorization.k8s.io", "storage.k8s.io", "apiextensions.k8s.io", "policy",
            "autoscaling", "coordination.k8s.io", "sagemaker.amazonaws.com"} <= set(groups)
    assert groups["autoscaling"]["preferredVersion"]["version"] == "v2"


def test_add_on_crds_follow_the_add_on_set(clusters, dynamic):
    clusters[:] = [world.ClusterRef(CLUSTER, REGION, "ACTIVE", frozenset({"amazon-sagemaker-hyperpod-inference"}))]
    endpoints = dynamic.resources.get(api_version="inference.sagemaker.aws.amazon.com/v1",
                                      kind="InferenceEndpointConfig")
    assert endpoints.namespaced
    store = world.existing_store(REGION, CLUSTER)
    assert store.find("customresourcedefinitions", "hyperpodpytorchjobs.sagemaker.amazonaws.com") is None
    assert store.find("customresourcedefinitions", "jumpstartmodels.inference.sagemaker.aws.amazon.com")
