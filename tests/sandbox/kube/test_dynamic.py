"""The product's generic path: ``DynamicClient`` on built-ins and custom resources."""

from __future__ import annotations

import pytest
from kubernetes.dynamic.exceptions import ConflictError, UnprocessibleEntityError

from tests.sandbox.kube.conftest import deployment


def test_dynamic_crud_and_server_side_apply(dynamic):
    deployments = dynamic.resources.get(api_version="apps/v1", kind="Deployment")
    applied = deployments.server_side_apply(body={"apiVersion": "apps/v1", "kind": "Deployment", **deployment("web")},
                                            namespace="default", field_manager="instantstart")
    assert applied.spec.replicas == 1 and applied.metadata.uid
    again = deployments.server_side_apply(body={"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {
        "name": "web"}, "spec": {"replicas": 3}}, namespace="default", field_manager="instantstart")
    assert again.spec.replicas == 3 and again.metadata.generation == 2
    listed = deployments.get(namespace="default", label_selector="app=web")
    assert [item.metadata.name for item in listed.items] == ["web"]
    stale = applied.to_dict()
    with pytest.raises(ConflictError):
        deployments.replace(body=stale, namespace="default")
    assert deployments.delete(name="web", namespace="default").status == "Success"


def test_dynamic_custom_resources(dynamic):
    jobs = dynamic.resources.get(api_version="sagemaker.amazonaws.com/v1", kind="HyperPodPyTorchJob")
    body = {"apiVersion": "sagemaker.amazonaws.com/v1", "kind": "HyperPodPyTorchJob", "metadata": {"name": "j"},
            "spec": {"nprocPerNode": "8", "replicaSpecs": [{"name": "pods", "replicas": 2, "template": {"spec": {
                "containers": [{"name": "pytorch", "image": "train:1", "resources": {"limits": {
                    "nvidia.com/gpu": 8}}}]}}}]}}
    created = jobs.create(body=body, namespace="default")
    assert created.spec.replicaSpecs[0].replicas == 2
    patched = jobs.patch(name="j", namespace="default", body={"metadata": {"labels": {"team": "a"}}},
                         content_type="application/merge-patch+json")
    assert patched.metadata.labels.team == "a"
    with pytest.raises(UnprocessibleEntityError):
        jobs.patch(name="j", namespace="default", body={"spec": {"replicaSpecs": [{"replicas": 1}]}},
                   content_type="application/merge-patch+json")
    jobs.status.patch(name="j", namespace="default", body={"status": {"conditions": [
        {"type": "Running", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}},
        content_type="application/merge-patch+json")
    assert jobs.get(name="j", namespace="default").status.conditions[0].type == "Running"
