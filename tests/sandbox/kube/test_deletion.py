"""Deletion as the apiserver, its garbage collector, the namespace controller and the kubelet do it: grace periods,
Terminating namespaces, Foreground/Background/Orphan propagation — and what every namespace holds."""

from __future__ import annotations

import json

import pytest
from kubernetes import client as k8s

from sandbox import clock, tls
from sandbox.sim import pods as kubelet
from sandbox.sim.context import Context
from tests.sandbox.kube.conftest import deployment, pod, raw


def bound(name: str, grace: int | None = None) -> dict:
    body = pod(name)
    body["spec"]["nodeName"] = "node-a"
    if grace is not None:
        body["spec"]["terminationGracePeriodSeconds"] = grace
    return body


def owned_by(owner, name: str, *, block: bool = True) -> dict:
    body = {"metadata": {"name": name, "ownerReferences": [{
        "apiVersion": "apps/v1", "kind": "Deployment", "name": owner.metadata.name, "uid": owner.metadata.uid,
        "blockOwnerDeletion": block}]}}
    return body


@pytest.fixture
def scale():
    previous = clock.scale()
    yield clock.set_scale
    clock.set_scale(previous)


def test_a_pod_on_a_node_is_deleted_gracefully_on_the_sandbox_clock(core, store, scale):
    store.create("nodes", {"metadata": {"name": "node-a"}, "status": {"conditions": [
        {"type": "Ready", "status": "True"}]}})
    core.create_namespaced_pod("default", bound("web", grace=45))
    before = clock.now()
    marked = core.delete_namespaced_pod("web", "default")
    assert marked.metadata.deletion_grace_period_seconds == 45
    assert marked.metadata.deletion_timestamp.timestamp() >= int(before) + 45
    assert core.read_namespaced_pod("web", "default").metadata.deletion_timestamp is not None

    ctx = Context(store, {})
    scale(1.0)  # 45 real seconds: the kubelet keeps the pod
    kubelet.reconcile(ctx)
    assert store.find("pods", "web", "default") is not None
    scale(0)  # the grace period has passed
    kubelet.reconcile(ctx)
    assert store.find("pods", "web", "default") is None

    core.create_namespaced_pod("default", bound("forced"))
    core.create_namespaced_pod("default", pod("unbound"))
    assert core.delete_namespaced_pod("forced", "default", grace_period_seconds=0).metadata.name == "forced"
    core.delete_namespaced_pod("unbound", "default")  # not on a node: nothing to stop, gone at once
    assert [p.metadata.name for p in core.list_namespaced_pod("default").items] == []


def test_a_second_delete_can_shorten_the_grace_period(core, store):
    core.create_namespaced_pod("default", bound("web"))
    assert core.delete_namespaced_pod("web", "default").metadata.deletion_grace_period_seconds == 30
    assert core.delete_namespaced_pod("web", "default", grace_period_seconds=5) \
        .metadata.deletion_grace_period_seconds == 5
    core.delete_namespaced_pod("web", "default", body=k8s.V1DeleteOptions(grace_period_seconds=0))
    assert store.find("pods", "web", "default") is None


def test_a_namespace_terminates_until_its_contents_are_gone_and_refuses_new_content(api, core, store):
    core.create_namespace({"metadata": {"name": "team-a"}})
    core.create_namespaced_config_map("team-a", {"metadata": {"name": "settings"}})
    core.create_namespaced_pod("team-a", bound("trainer"))
    terminating = core.delete_namespace("team-a")
    assert terminating["status"]["phase"] == "Terminating" and terminating["metadata"]["deletionTimestamp"]
    assert core.read_namespace("team-a").status.phase == "Terminating"
    assert [c.metadata.name for c in core.list_namespaced_config_map("team-a").items] == []
    assert core.read_namespaced_pod("trainer", "team-a").metadata.deletion_timestamp is not None

    status, refused = raw(api, "POST", "/api/v1/namespaces/team-a/configmaps", {"metadata": {"name": "late"}})
    assert status == 403 and refused["reason"] == "Forbidden"
    assert refused["message"] == ('configmaps "late" is forbidden: unable to create new content in namespace team-a '
                                  "because it is being terminated")
    assert refused["details"]["causes"] == [{"reason": "NamespaceTerminating", "field": "metadata.namespace",
                                             "message": "namespace team-a is being terminated"}]

    core.delete_namespaced_pod("trainer", "team-a", grace_period_seconds=0)  # the kubelet stopped it
    with pytest.raises(k8s.ApiException) as gone:
        core.read_namespace("team-a")
    assert gone.value.status == 404


def test_every_namespace_holds_the_root_ca_and_gets_it_back(core):
    core.create_namespace({"metadata": {"name": "team-b"}})
    for namespace in ("default", "kube-system", "team-b"):
        config_map = core.read_namespaced_config_map("kube-root-ca.crt", namespace)
        assert config_map.data == {"ca.crt": tls.authority().ca_pem.decode()}
    core.delete_namespaced_config_map("kube-root-ca.crt", "team-b")
    assert core.read_namespaced_config_map("kube-root-ca.crt", "team-b").data["ca.crt"].startswith("-----BEGIN")
    core.delete_namespaced_service_account("default", "team-b")
    assert core.read_namespaced_service_account("default", "team-b").metadata.name == "default"


def test_foreground_deletion_keeps_the_owner_until_blocking_dependents_are_gone(api, apps, core, store):
    owner = apps.create_namespaced_deployment("default", deployment("web"))
    core.create_namespaced_pod("default", {**bound("web-0"), **owned_by(owner, "web-0")})
    core.create_namespaced_config_map("default", owned_by(owner, "web-config", block=False))
    status, answer = raw(api, "DELETE", "/apis/apps/v1/namespaces/default/deployments/web",
                         {"propagationPolicy": "Foreground"})
    assert status == 200 and answer["metadata"]["finalizers"] == ["foregroundDeletion"]
    waiting = apps.read_namespaced_deployment("web", "default")
    assert waiting.metadata.deletion_timestamp is not None and waiting.metadata.finalizers == ["foregroundDeletion"]
    assert store.find("configmaps", "web-config", "default") is None  # deleted, not waited for
    assert core.read_namespaced_pod("web-0", "default").metadata.deletion_timestamp is not None

    events = []
    store.watch(lambda event: events.append((event.type, event.resource.plural, event.object["metadata"]["name"])))
    core.delete_namespaced_pod("web-0", "default", grace_period_seconds=0)
    assert store.find("deployments", "web", "default") is None
    assert events == [("DELETED", "pods", "web-0"), ("DELETED", "deployments", "web")]


def test_a_dependent_made_after_its_owner_s_foreground_deletion_began_is_collected_and_releases_it(apps, core,
                                                                                                     store):
    """A controller that read the owner before its deletion may still make a dependent (the Kueue simulator made a
    Workload for a job being deleted): the garbage collector deletes it at once, and the owner goes with it."""
    owner = apps.create_namespaced_deployment("default", deployment("web"))
    core.create_namespaced_pod("default", {**bound("web-0"), **owned_by(owner, "web-0")})
    apps.delete_namespaced_deployment("web", "default", propagation_policy="Foreground")
    core.create_namespaced_config_map("default", owned_by(owner, "late"))
    assert store.find("configmaps", "late", "default") is None
    core.delete_namespaced_pod("web-0", "default", grace_period_seconds=0)
    assert store.find("deployments", "web", "default") is None


def test_background_and_orphan_propagation(apps, core, store):
    owner = apps.create_namespaced_deployment("default", deployment("web"))
    core.create_namespaced_config_map("default", owned_by(owner, "background"))
    apps.delete_namespaced_deployment("web", "default", propagation_policy="Background")
    assert store.find("deployments", "web", "default") is None
    assert store.find("configmaps", "background", "default") is None

    owner = apps.create_namespaced_deployment("default", deployment("kept"))
    core.create_namespaced_config_map("default", owned_by(owner, "orphan"))
    apps.delete_namespaced_deployment("kept", "default", body=k8s.V1DeleteOptions(propagation_policy="Orphan"))
    orphan = core.read_namespaced_config_map("orphan", "default")
    assert orphan.metadata.owner_references is None


def test_a_negative_grace_period_is_refused(api, core):
    core.create_namespaced_pod("default", bound("web"))
    status, answer = raw(api, "DELETE", "/api/v1/namespaces/default/pods/web", query={"gracePeriodSeconds": "-1"})
    assert status == 422 and json.dumps(answer).count("gracePeriodSeconds") >= 1
