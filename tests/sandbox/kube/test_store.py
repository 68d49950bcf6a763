"""The in-process API the simulator drives: stores per cluster, events, logs, add-on sync, reset."""

from __future__ import annotations

import pytest

from sandbox import control
from sandbox.kube import crds, patch, world
from sandbox.kube.errors import ApiError
from tests.sandbox.kube.conftest import CLUSTER, REGION, deployment, pod


def test_listeners_see_events_in_order_even_when_they_write(store):
    seen: list[tuple[str, str]] = []

    def controller(event):
        seen.append((event.type, event.object["metadata"]["name"]))
        if event.type == "ADDED" and event.resource.plural == "deployments":
            store.create("pods", pod(event.object["metadata"]["name"] + "-0"), "default")

    store.watch(controller)
    store.create("deployments", deployment("web"), "default")
    store.create("configmaps", {"metadata": {"name": "after"}}, "default")
    assert seen == [("ADDED", "web"), ("ADDED", "web-0"), ("ADDED", "after")]


def test_resource_references_and_quantities(store):
    store.create("Node", {"metadata": {"name": "n1"}, "status": {"capacity": {"nvidia.com/gpu": 8, "cpu": 192}}})
    assert store.get("nodes", "n1")["status"]["capacity"] == {"nvidia.com/gpu": "8", "cpu": "192"}
    assert store.resolve("deployments.apps") is store.resolve("apps/v1/Deployment") is store.resolve("deploy")
    assert store.find("pods", "missing", "default") is None
    with pytest.raises(ApiError) as raised:
        store.get("pods", "missing", "default")
    assert raised.value.code == 404
    with pytest.raises(ApiError):
        store.resolve("Gizmo")


def test_dry_run_and_apply_patch(store):
    store.create("configmaps", {"metadata": {"name": "dry"}}, "default", dry_run=True)
    assert store.find("configmaps", "dry", "default") is None
    applied = store.patch("configmaps", "applied", {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"}},
                          "default", patch_type=patch.APPLY)
    assert applied["data"] == {"a": "1"}
    store.patch("configmaps", "applied", {"data": {"b": "2"}}, "default", patch_type=patch.APPLY)
    assert store.get("configmaps", "applied", "default")["data"] == {"a": "1", "b": "2"}


def test_deleting_a_job_orphans_its_pods_by_default(store):
    job = store.create("jobs", {"metadata": {"name": "j"}, "spec": {"template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}}}, "default")
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": job["metadata"]["uid"]}
    store.create("pods", {**pod("j-1"), "metadata": {"name": "j-1", "ownerReferences": [owner]}}, "default")
    store.delete("jobs", "j", "default")
    assert "ownerReferences" not in store.get("pods", "j-1", "default")["metadata"]


def test_logs_are_kept_per_container_and_dropped_with_the_pod(store):
    store.create("pods", pod("p"), "default")
    store.append_log("default", "p", "main", "one", timestamp=1.0)
    assert store.logs.lines("default", "p", "main") == [(1_000_000, "one")]
    store.delete("pods", "p", "default")
    assert store.logs.lines("default", "p", "main") is None


def test_add_on_sync_installs_and_removes_crds(store):
    name = "hyperpodpytorchjobs.sagemaker.amazonaws.com"
    assert store.find("customresourcedefinitions", name)
    store.create("HyperPodPyTorchJob", {"metadata": {"name": "j"}, "spec": {"replicaSpecs": [{"name": "pods"}]}},
                 "default")
    world.sync_addons(store, set())
    assert store.find("customresourcedefinitions", name) is None
    with pytest.raises(ApiError):
        store.resolve("HyperPodPyTorchJob")
    world.sync_addons(store, {"amazon-sagemaker-hyperpod-training-operator"})
    assert store.list("hyperpodpytorchjobs") == []


def test_clusters_that_disappear_are_forgotten_and_reset_empties_everything(store):
    other = world.sync_cluster(world.ClusterRef("other", REGION))
    other.create("configmaps", {"metadata": {"name": "x"}}, "default")
    world.sync_clusters([world.ClusterRef(CLUSTER, REGION)])
    assert world.existing_store(REGION, "other") is None
    store.create("configmaps", {"metadata": {"name": "y"}}, "default")
    control.reset()
    assert world.stores() == [] and store.find("configmaps", "y", "default") is None


def test_operator_bundles_and_the_derived_crd_are_well_formed():
    assert set(crds.files_for({"keda", "karpenter"})) == {
        *crds.OPERATOR_CRDS["keda"], *crds.OPERATOR_CRDS["karpenter"]}
    scaled_jobs = crds.load("keda.sh/scaledjobs.yaml")
    template = scaled_jobs["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "jobTargetRef"]["properties"]["template"]["properties"]["metadata"]
    assert template["x-kubernetes-preserve-unknown-fields"] is True
    derived = crds.hyperpod_pytorch_job_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert "$ref" not in str(derived) and "anyOf" not in str(derived["properties"]["spec"]["properties"]["runPolicy"])
