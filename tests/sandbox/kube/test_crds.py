"""CustomResourceDefinitions: registration through the API, validation against the real schemas, pruning."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s

from sandbox.kube import crds, world
from tests.sandbox.kube.conftest import CLUSTER, REGION

WIDGETS = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"kind": "Widget", "plural": "widgets", "shortNames": ["wd"]},
             "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                               "spec": {"type": "object", "required": ["size"], "properties": {
                                   "size": {"type": "integer", "minimum": 1, "maximum": 10},
                                   "colour": {"type": "string", "enum": ["red", "blue"], "default": "red"},
                                   "port": {"x-kubernetes-int-or-string": True,
                                            "anyOf": [{"type": "integer"}, {"type": "string"}]},
                                   "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}},
                               "status": {"type": "object", "properties": {"phase": {"type": "string"}}}}}}}]},
}


def causes(error: k8s.ApiException) -> dict[str, str]:
    return {cause["field"]: cause["message"] for cause in json.loads(error.body)["details"]["causes"]}


def example(name: str) -> dict:
    return yaml.safe_load((crds.crds_dir() / name).read_text())


def hyperpod_job(*, substituted: bool) -> dict:
    job = example("sagemaker.amazonaws.com/examples/llama3_1_8b-fsdp-hpto.yaml")
    if substituted:
        text = json.dumps(job)
        for placeholder, value in (("${IMAGE_URI}", "123456789012.dkr.ecr.us-west-2.amazonaws.com/fsdp:latest"),
                                   ("${HF_TOKEN}", "hf_x"), ("${INSTANCE_TYPE}", "ml.p5.48xlarge"),
                                   ("$GPU_PER_NODE", "8"), ("$EFA_PER_NODE", "32")):
            text = text.replace(placeholder, value)
        job = json.loads(text.replace('"$NUM_NODES"', "2"))
    return job


def test_a_posted_crd_is_served_validated_defaulted_and_pruned(api, dynamic):
    extensions = k8s.ApiextensionsV1Api(api)
    created = extensions.create_custom_resource_definition(WIDGETS)
    assert {c.type: c.status for c in created.status.conditions} == {"NamesAccepted": "True", "Established": "True"}
    custom = k8s.CustomObjectsApi(api)
    widget = custom.create_namespaced_custom_object("example.com", "v1", "default", "widgets", {
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"size": 3, "port": "http", "unknown": 1, "extra": {"anything": [1]}}, "status": {"phase": "X"}})
    assert widget["spec"] == {"size": 3, "port": "http", "colour": "red", "extra": {"anything": [1]}}
    assert "status" not in widget and widget["metadata"]["generation"] == 1
    with pytest.raises(k8s.ApiException) as raised:
        custom.create_namespaced_custom_object("example.com", "v1", "default", "widgets", {
            "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "bad"},
            "spec": {"size": 11, "colour": "green", "port": True}})
    assert raised.value.status == 422
    assert causes(raised.value) == {
        "spec.size": "Invalid value: 11: spec.size in body should be less than or equal to 10",
        "spec.colour": 'Unsupported value: "green": supported values: "red", "blue"',
        "spec.port": 'Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"',
    }
    with pytest.raises(k8s.ApiException) as raised:
        custom.create_namespaced_custom_object("example.com", "v1", "default", "widgets", {
            "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "empty"}, "spec": {}})
    assert causes(raised.value) == {"spec.size": "Required value"}
    widgets = dynamic.resources.get(api_version="example.com/v1", kind="Widget")
    assert widgets.short_names == ["wd"]
    status = custom.patch_namespaced_custom_object_status("example.com", "v1", "default", "widgets", "w",
                                                          {"status": {"phase": "Ready"}, "spec": {"size": 9}})
    assert status["status"] == {"phase": "Ready"} and status["spec"]["size"] == 3
    extensions.delete_custom_resource_definition("widgets.example.com")
    with pytest.raises(k8s.ApiException) as raised:
        custom.list_namespaced_custom_object("example.com", "v1", "default", "widgets")
    assert raised.value.status == 404


def test_hyperpod_pytorch_job_from_the_training_operator_add_on(api):
    custom = k8s.CustomObjectsApi(api)
    with pytest.raises(k8s.ApiException) as raised:
        custom.create_namespaced_custom_object("sagemaker.amazonaws.com", "v1", "default", "hyperpodpytorchjobs",
                                               hyperpod_job(substituted=False))
    status = json.loads(raised.value.body)
    assert (raised.value.status, status["reason"]) == (422, "Invalid")
    assert status["message"].startswith('HyperPodPyTorchJob.sagemaker.amazonaws.com "llama3-1-8b-fsdp-hpto" is '
                                        "invalid: ")
    assert causes(raised.value)["spec.replicaSpecs[0].replicas"] == (
        'Invalid value: "string": spec.replicaSpecs[0].replicas in body must be of type integer: "string"')
    created = custom.create_namespaced_custom_object("sagemaker.amazonaws.com", "v1", "default",
                                                     "hyperpodpytorchjobs", hyperpod_job(substituted=True))
    assert created["spec"]["replicaSpecs"][0]["replicas"] == 2
    assert created["spec"]["runPolicy"]["restartPolicy"]["evalPeriodSeconds"] == 21600
    patched = custom.patch_namespaced_custom_object("sagemaker.amazonaws.com", "v1", "default", "hyperpodpytorchjobs",
                                                    "llama3-1-8b-fsdp-hpto", {"spec": {"nprocPerNode": "4"}})
    assert patched["metadata"]["generation"] == 2
    with pytest.raises(k8s.ApiException) as raised:
        custom.patch_namespaced_custom_object("sagemaker.amazonaws.com", "v1", "default", "hyperpodpytorchjobs",
                                              "llama3-1-8b-fsdp-hpto", {"spec": {}},
                                              _content_type="application/strategic-merge-patch+json")
    assert raised.value.status == 415


def test_ray_jobs_are_validated_against_the_kuberay_crd(api, store):
    world.register_crd(store, crds.load("ray.io/rayjobs.yaml"))
    custom = k8s.CustomObjectsApi(api)
    job = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "rl"}, "spec": {
        "entrypoint": "python train.py", "shutdownAfterJobFinishes": True,
        "rayClusterSpec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
            {"name": "ray-head", "image": "rayproject/ray:2.46.0"}]}}}}}}
    created = custom.create_namespaced_custom_object("ray.io", "v1", "default", "rayjobs", job)
    assert created["spec"]["entrypoint"] == "python train.py"
    broken = copy.deepcopy(job)
    broken["metadata"]["name"] = "broken"
    broken["spec"]["shutdownAfterJobFinishes"] = "yes"
    del broken["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["name"]
    with pytest.raises(k8s.ApiException) as raised:
        custom.create_namespaced_custom_object("ray.io", "v1", "default", "rayjobs", broken)
    assert set(causes(raised.value)) == {"spec.shutdownAfterJobFinishes",
                                         "spec.rayClusterSpec.headGroupSpec.template.spec.containers[0].name",
                                         "<nil>"}  # a wrong type: the CRD's CEL rules were not checked
    assert causes(raised.value)["<nil>"].startswith('Invalid value: "null": some validation rules were not checked')


def test_inference_samples_against_the_inference_add_on(api, clusters):
    clusters[:] = [world.ClusterRef(CLUSTER, REGION, "ACTIVE", frozenset({"amazon-sagemaker-hyperpod-inference"}))]
    custom = k8s.CustomObjectsApi(api)
    samples = Path("inference.sagemaker.aws.amazon.com/samples")
    endpoint = example(str(samples / "v1_s3_deepseek15b.yaml"))
    endpoint["metadata"]["namespace"] = "default"
    created = custom.create_namespaced_custom_object("inference.sagemaker.aws.amazon.com", "v1", "default",
                                                     "inferenceendpointconfigs", endpoint)
    assert created["spec"]["modelSourceConfig"]["modelSourceType"] == "s3"
    jumpstart = example(str(samples / "v1_deepseek_model15b.yaml"))
    jumpstart["metadata"]["namespace"] = "default"
    created = custom.create_namespaced_custom_object("inference.sagemaker.aws.amazon.com", "v1", "default",
                                                     "jumpstartmodels", copy.deepcopy(jumpstart))
    assert created["spec"]["model"]["acceptEula"] is False  # the schema's default, applied as the apiserver does
    del jumpstart["spec"]["model"]["modelId"]
    jumpstart["metadata"]["name"] = "no-model-id"
    with pytest.raises(k8s.ApiException) as raised:
        custom.create_namespaced_custom_object("inference.sagemaker.aws.amazon.com", "v1", "default",
                                               "jumpstartmodels", jumpstart)
    assert causes(raised.value) == {"spec.model.modelId": "Required value"}
