"""Custom objects on a cluster's Kubernetes API (``cloud.kube_objects``), against the sandbox's API server: create
exactly once by an owner label, get, list by label, delete with propagation, and errors in the vocabulary."""

from __future__ import annotations

import time

import pytest
from kubernetes import client as k8s

from cloud import kube, kube_objects
from config.errors import CloudError, NotFound, ValidationFailed
from tests.cloud.test_kube import REGION, active_cluster

WIDGET = kube_objects.Kind("example.instantstart.dev", "v1", "widgets")
OWNER = "instantstart.io/owner"
NAMESPACE = "default"

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.instantstart.dev"},
    "spec": {"group": "example.instantstart.dev", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "properties": {"spec": {"type": "object", "properties": {
                     "size": {"type": "integer"}}}}}}}]},
}


@pytest.fixture
def api(sandbox) -> k8s.ApiClient:
    client = kube.api_client(active_cluster(), region=REGION)
    k8s.ApiextensionsV1Api(client).create_custom_resource_definition(CRD)
    return client


def widget(name: str, owner: str, size: int = 1) -> dict:
    return {"apiVersion": "example.instantstart.dev/v1", "kind": "Widget",
            "metadata": {"name": name, "labels": {OWNER: owner}}, "spec": {"size": size}}


def test_create_once_adopts_its_own_object_and_never_someone_elses(api):
    created, mine = kube_objects.create_once(api, WIDGET, NAMESPACE, widget("w", "job-1"), label=OWNER)
    assert mine and created["metadata"]["uid"]
    again, mine = kube_objects.create_once(api, WIDGET, NAMESPACE, widget("w", "job-1", size=2), label=OWNER)
    assert mine and again["metadata"]["uid"] == created["metadata"]["uid"] and again["spec"]["size"] == 1
    theirs, mine = kube_objects.create_once(api, WIDGET, NAMESPACE, widget("w", "job-2"), label=OWNER)
    assert not mine and theirs["metadata"]["labels"][OWNER] == "job-1"
    with pytest.raises(ValueError):
        kube_objects.create_once(api, WIDGET, NAMESPACE, {"metadata": {"name": "unlabelled"}}, label=OWNER)


def test_get_list_by_label_and_delete(api):
    for name, owner in (("a", "job-1"), ("b", "job-1"), ("c", "job-2")):
        kube_objects.create_once(api, WIDGET, NAMESPACE, widget(name, owner), label=OWNER)
    assert kube_objects.get(api, WIDGET, NAMESPACE, "a")["spec"] == {"size": 1}
    assert kube_objects.get(api, WIDGET, NAMESPACE, "nope") is None
    assert sorted(item["metadata"]["name"] for item in kube_objects.list_labelled(
        api, WIDGET, NAMESPACE, OWNER, "job-1")) == ["a", "b"]
    assert kube_objects.list_labelled(api, WIDGET, NAMESPACE, OWNER, "job-3") == []
    assert kube_objects.delete(api, WIDGET, NAMESPACE, "a") is True
    assert kube_objects.get(api, WIDGET, NAMESPACE, "a") is None
    assert kube_objects.delete(api, WIDGET, NAMESPACE, "a") is False


def _dependent(api, owner: dict, name: str) -> None:
    reference = k8s.V1OwnerReference(api_version="example.instantstart.dev/v1", kind="Widget",
                                     name=owner["metadata"]["name"], uid=owner["metadata"]["uid"])
    k8s.CoreV1Api(api).create_namespaced_config_map(NAMESPACE, k8s.V1ConfigMap(
        metadata=k8s.V1ObjectMeta(name=name, owner_references=[reference])))


def _config_maps(api) -> set[str]:
    return {item.metadata.name for item in k8s.CoreV1Api(api).list_namespaced_config_map(NAMESPACE).items}


def test_delete_takes_what_the_object_made_with_it_unless_told_to_orphan(api):
    kept, _ = kube_objects.create_once(api, WIDGET, NAMESPACE, widget("kept", "job-1"), label=OWNER)
    gone, _ = kube_objects.create_once(api, WIDGET, NAMESPACE, widget("gone", "job-1"), label=OWNER)
    _dependent(api, kept, "of-kept")
    _dependent(api, gone, "of-gone")
    kube_objects.delete(api, WIDGET, NAMESPACE, "kept", propagation="Orphan")
    kube_objects.delete(api, WIDGET, NAMESPACE, "gone", grace_seconds=0)
    deadline = time.monotonic() + 10
    while "of-gone" in _config_maps(api):
        assert time.monotonic() < deadline, "the dependent of a deleted object stayed"
        time.sleep(0.05)
    assert "of-kept" in _config_maps(api)


def test_failures_come_back_in_the_vocabulary(api):
    with pytest.raises(ValidationFailed) as invalid:
        kube_objects.create_once(api, WIDGET, NAMESPACE, widget("bad", "job-1", size="big"), label=OWNER)
    assert invalid.value.code == "kube_invalid" and "spec.size" in invalid.value.fields
    assert invalid.value.provider["operation"] == "create widgets.example.instantstart.dev"
    unknown = kube_objects.Kind("example.instantstart.dev", "v1", "gadgets")
    with pytest.raises(NotFound) as missing:
        kube_objects.list_labelled(api, unknown, NAMESPACE, OWNER, "job-1")
    assert missing.value.code == "kube_not_found"
    closed = k8s.ApiClient(k8s.Configuration(host="https://127.0.0.1:9"))
    with pytest.raises(CloudError) as unreachable:
        kube_objects.get(closed, WIDGET, NAMESPACE, "a")
    assert unreachable.value.code == "kube_unreachable" and unreachable.value.provider["retryable"] is True
