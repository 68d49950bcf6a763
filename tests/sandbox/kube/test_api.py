"""CRUD semantics of built-in kinds through the official client: metadata, defaults, errors, selectors,
patches, optimistic concurrency, subresources, deletion."""

from __future__ import annotations

import json

import pytest
from kubernetes import client as k8s

from tests.sandbox.kube.conftest import deployment, pod, raw


def status_of(error: k8s.ApiException) -> dict:
    return json.loads(error.body)


def test_create_populates_server_metadata_and_defaults(core, apps):
    created = core.create_namespaced_pod("default", pod("alpha"))
    assert created.metadata.uid and created.metadata.creation_timestamp and created.metadata.generation == 1
    assert int(created.metadata.resource_version) > 0
    assert created.status.phase == "Pending" and created.status.qos_class == "BestEffort"
    assert created.spec.restart_policy == "Always" and created.spec.service_account_name == "default"
    web = apps.create_namespaced_deployment("default", deployment("web"))
    assert web.spec.strategy.type == "RollingUpdate" and web.spec.strategy.rolling_update.max_surge == "25%"
    assert web.spec.template.spec.containers[0].image_pull_policy == "IfNotPresent"
    service = core.create_namespaced_service("default", {"metadata": {"name": "web"}, "spec": {
        "type": "LoadBalancer", "selector": {"app": "web"}, "ports": [{"port": 80}]}})
    assert service.spec.cluster_ip.startswith("10.100.") and service.spec.ports[0].target_port == 80
    assert 30000 <= service.spec.ports[0].node_port <= 32767


def test_every_builtin_kind_round_trips_through_its_model(api):
    batch, rbac, storage = k8s.BatchV1Api(api), k8s.RbacAuthorizationV1Api(api), k8s.StorageV1Api(api)
    core = k8s.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": "team-a"}})
    core.create_namespaced_config_map("team-a", {"metadata": {"name": "cfg"}, "data": {"k": "v"}})
    secret = core.create_namespaced_secret("team-a", {"metadata": {"name": "s"}, "stringData": {"token": "abc"}})
    assert secret.data == {"token": "YWJj"} and secret.type == "Opaque"
    core.create_node({"metadata": {"name": "hyperpod-i-0abc", "labels": {"node.kubernetes.io/instance-type":
                                                                          "ml.p5.48xlarge"}},
                      "status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "8"}}})
    assert core.read_node("hyperpod-i-0abc").status.capacity == {"nvidia.com/gpu": "8"}
    core.create_persistent_volume({"metadata": {"name": "fsx"}, "spec": {
        "capacity": {"storage": "1200Gi"}, "accessModes": ["ReadWriteMany"],
        "csi": {"driver": "fsx.csi.aws.com", "volumeHandle": "fs-1"}}})
    claim = core.create_namespaced_persistent_volume_claim("team-a", {"metadata": {"name": "data"}, "spec": {
        "accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1200Gi"}}}})
    assert claim.status.phase == "Pending"
    core.create_namespaced_event("team-a", {"metadata": {"name": "e1"}, "involvedObject": {"kind": "Pod", "name": "p"},
                                            "reason": "Scheduled", "message": "ok", "type": "Normal"})
    assert core.list_namespaced_event("team-a", field_selector="involvedObject.name=p").items[0].reason == "Scheduled"
    job = batch.create_namespaced_job("team-a", {"metadata": {"name": "j"}, "spec": {"template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}})
    assert job.spec.selector.match_labels["batch.kubernetes.io/controller-uid"] == job.metadata.uid
    job_template = {"spec": job.spec.to_dict(serialize=True)}
    batch.create_namespaced_cron_job("team-a", {"metadata": {"name": "cj"},
                                                "spec": {"schedule": "*/5 * * * *", "jobTemplate": job_template}})
    k8s.AppsV1Api(api).create_namespaced_daemon_set("team-a", {
        "metadata": {"name": "agent"}, "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
            "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
    assert k8s.AppsV1Api(api).read_namespaced_daemon_set_status("agent", "team-a").status.number_ready == 0
    rbac.create_cluster_role({"metadata": {"name": "reader"}, "rules": [{"apiGroups": [""], "resources": ["pods"],
                                                                         "verbs": ["get"]}]})
    rbac.create_namespaced_role_binding("team-a", {"metadata": {"name": "rb"}, "roleRef": {
        "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "reader"},
        "subjects": [{"kind": "Group", "name": "team-a"}]})
    storage.create_storage_class({"metadata": {"name": "fsx-sc"}, "provisioner": "fsx.csi.aws.com"})
    assert storage.create_csi_driver({"metadata": {"name": "s3.csi.aws.com"}, "spec": {}}).spec.attach_required
    k8s.PolicyV1Api(api).create_namespaced_pod_disruption_budget("team-a", {"metadata": {"name": "pdb"}, "spec": {
        "minAvailable": 1, "selector": {"matchLabels": {"a": "b"}}}})
    autoscaling = k8s.AutoscalingV2Api(api)
    autoscaling.create_namespaced_horizontal_pod_autoscaler("team-a", {"metadata": {"name": "h"}, "spec": {
        "maxReplicas": 3, "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}})
    k8s.CoordinationV1Api(api).create_namespaced_lease("team-a", {"metadata": {"name": "leader"}, "spec": {}})
    assert [item.metadata.name for item in core.list_config_map_for_all_namespaces(
        field_selector="metadata.name!=kube-root-ca.crt").items] == ["cfg"]


def test_invalid_objects_get_422_with_causes(core, apps):
    with pytest.raises(k8s.ApiException) as raised:
        core.create_namespaced_pod("default", {"metadata": {"name": "Bad_Name"}, "spec": {"containers": [
            {"name": "main"}]}})
    status = status_of(raised.value)
    assert (raised.value.status, status["reason"]) == (422, "Invalid")
    assert {(c["field"], c["reason"]) for c in status["details"]["causes"]} == {
        ("metadata.name", "FieldValueInvalid"), ("spec.containers[0].image", "FieldValueRequired")}
    broken = deployment("web")
    broken["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    with pytest.raises(k8s.ApiException) as raised:
        apps.create_namespaced_deployment("default", broken)
    assert status_of(raised.value)["details"]["causes"][0]["field"] == "spec.template.metadata.labels"
    with pytest.raises(k8s.ApiException) as raised:
        core.create_namespaced_pod("default", {"metadata": {}, "spec": {"containers": [{"name": "c", "image": "x"}]}})
    assert status_of(raised.value)["message"] == 'Pod "" is invalid: metadata.name: Required value: name or ' \
                                                 "generateName is required"


def test_missing_namespace_and_duplicates(core):
    with pytest.raises(k8s.ApiException) as raised:
        core.create_namespaced_pod("missing", pod("p"))
    assert raised.value.status == 404 and status_of(raised.value)["message"] == 'namespaces "missing" not found'
    core.create_namespaced_pod("default", pod("p"))
    with pytest.raises(k8s.ApiException) as raised:
        core.create_namespaced_pod("default", pod("p"))
    assert (raised.value.status, status_of(raised.value)["reason"]) == (409, "AlreadyExists")
    generated = core.create_namespaced_pod("default", {"metadata": {"generateName": "worker-"},
                                                       "spec": pod("x")["spec"]})
    assert generated.metadata.name.startswith("worker-") and len(generated.metadata.name) == len("worker-") + 5


def test_unknown_fields_are_pruned_with_a_warning_or_rejected_when_strict(api, core):
    status, body = raw(api, "POST", "/api/v1/namespaces/default/configmaps",
                       {"metadata": {"name": "c"}, "data": {"a": "b"}, "colour": "blue"})
    assert status == 201 and "colour" not in body
    status, body = raw(api, "POST", "/api/v1/namespaces/default/configmaps?fieldValidation=Strict",
                       {"metadata": {"name": "d"}, "colour": "blue"})
    assert (status, body["reason"]) == (400, "BadRequest") and 'unknown field "colour"' in body["message"]


def test_label_and_field_selectors(core):
    for name, labels in (("a", {"tier": "web", "env": "prod"}), ("b", {"tier": "db", "env": "prod"}),
                         ("c", {"tier": "web"})):
        core.create_namespaced_pod("default", pod(name, labels=labels))
    def names(**kwargs):
        return [p.metadata.name for p in core.list_namespaced_pod("default", **kwargs).items]
    assert names(label_selector="tier=web") == ["a", "c"]
    assert names(label_selector="tier==web,env") == ["a"]
    assert names(label_selector="tier!=web") == ["b"]
    assert names(label_selector="tier in (db, cache)") == ["b"]
    assert names(label_selector="tier notin (db),!env") == ["c"]
    assert names(field_selector="metadata.name=b") == ["b"]
    assert names(field_selector="status.phase=Pending,metadata.name!=a") == ["b", "c"]
    assert names(field_selector="spec.nodeName=") == ["a", "b", "c"]
    with pytest.raises(k8s.ApiException) as raised:
        core.list_namespaced_pod("default", field_selector="spec.image=x")
    assert raised.value.status == 400


def test_list_pages_with_limit_and_continue(core):
    for index in range(5):
        core.create_namespaced_config_map("default", {"metadata": {"name": f"cm-{index}"}})
    mine = "metadata.name!=kube-root-ca.crt"  # every namespace holds that one
    first = core.list_namespaced_config_map("default", limit=2, field_selector=mine)
    assert [c.metadata.name for c in first.items] == ["cm-0", "cm-1"] and first.metadata.remaining_item_count == 3
    second = core.list_namespaced_config_map("default", limit=2, field_selector=mine,
                                            _continue=first.metadata._continue)
    third = core.list_namespaced_config_map("default", limit=2, field_selector=mine,
                                           _continue=second.metadata._continue)
    assert [c.metadata.name for c in second.items + third.items] == ["cm-2", "cm-3", "cm-4"]
    assert third.metadata._continue is None


def test_patches_merge_json_and_strategic(core, apps):
    apps.create_namespaced_deployment("default", deployment("web"))
    strategic = apps.patch_namespaced_deployment("web", "default", {"spec": {"template": {"spec": {"containers": [
        {"name": "sidecar", "image": "envoy:1"}, {"name": "web", "image": "nginx:1.28"}]}}}})
    assert [(c.name, c.image) for c in strategic.spec.template.spec.containers] == [
        ("web", "nginx:1.28"), ("sidecar", "envoy:1")]
    merged = apps.patch_namespaced_deployment("web", "default", {"metadata": {"labels": {"team": "a"}}},
                                              _content_type="application/merge-patch+json")
    assert merged.metadata.labels == {"app": "web", "team": "a"}
    patched = apps.patch_namespaced_deployment("web", "default", [
        {"op": "replace", "path": "/spec/replicas", "value": 4},
        {"op": "add", "path": "/metadata/annotations", "value": {"note": "json-patch"}}])
    assert patched.spec.replicas == 4 and patched.metadata.generation == 3
    with pytest.raises(k8s.ApiException) as raised:
        apps.patch_namespaced_deployment("web", "default", [{"op": "test", "path": "/spec/replicas", "value": 1}])
    assert raised.value.status == 422


def test_update_with_a_stale_resource_version_conflicts(core):
    created = core.create_namespaced_config_map("default", {"metadata": {"name": "cfg"}, "data": {"v": "1"}})
    created.data = {"v": "2"}
    updated = core.replace_namespaced_config_map("cfg", "default", created)
    assert int(updated.metadata.resource_version) > int(created.metadata.resource_version)
    created.data = {"v": "3"}
    with pytest.raises(k8s.ApiException) as raised:
        core.replace_namespaced_config_map("cfg", "default", created)
    assert (raised.value.status, status_of(raised.value)["reason"]) == (409, "Conflict")
    same = core.replace_namespaced_config_map("cfg", "default", updated)
    assert same.metadata.resource_version == updated.metadata.resource_version


def test_status_subresource_separates_spec_and_status(apps):
    apps.create_namespaced_deployment("default", deployment("web"))
    current = apps.read_namespaced_deployment("web", "default").to_dict(serialize=True)
    current["status"] = {"replicas": 9, "readyReplicas": 9}
    current["spec"]["replicas"] = 5
    main = apps.replace_namespaced_deployment("web", "default", current)
    assert main.spec.replicas == 5 and main.status.replicas is None and main.metadata.generation == 2
    current = main.to_dict(serialize=True)
    current["status"] = {"replicas": 5, "readyReplicas": 5, "observedGeneration": 2}
    current["spec"]["replicas"] = 1
    status = apps.replace_namespaced_deployment_status("web", "default", current)
    assert status.spec.replicas == 5 and status.status.ready_replicas == 5 and status.metadata.generation == 2
    patched = apps.patch_namespaced_deployment_status("web", "default", {"status": {"availableReplicas": 5}})
    assert patched.status.available_replicas == 5 and patched.status.ready_replicas == 5


def test_scale_subresource(apps):
    apps.create_namespaced_deployment("default", deployment("web", replicas=2))
    scale = apps.read_namespaced_deployment_scale("web", "default")
    assert (scale.spec.replicas, scale.status.selector) == (2, "app=web")
    apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 6}})
    assert apps.read_namespaced_deployment("web", "default").spec.replicas == 6
    with pytest.raises(k8s.ApiException) as raised:
        apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": -1}})
    assert raised.value.status == 422


def test_deleting_an_owner_deletes_its_dependents(core, apps, store):
    web = apps.create_namespaced_deployment("default", deployment("web"))
    owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": web.metadata.uid, "controller": True}
    replica_set = store.create("replicasets", {**deployment("web-5d8f"), "metadata": {
        "name": "web-5d8f", "labels": {"app": "web"}, "ownerReferences": [owner]}}, "default")
    rs_owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f",
                "uid": replica_set["metadata"]["uid"], "controller": True}
    store.create("pods", {**pod("web-5d8f-x", labels={"app": "web"}),
                          "metadata": {"name": "web-5d8f-x", "ownerReferences": [rs_owner]}}, "default")
    status = apps.delete_namespaced_deployment("web", "default")
    assert (status["kind"], status["status"], status["details"]["uid"]) == ("Status", "Success", web.metadata.uid)
    assert store.list("replicasets", "default") == [] and store.list("pods", "default") == []


def test_finalizers_hold_deletion_until_removed(core):
    core.create_namespaced_config_map("default", {"metadata": {"name": "held", "finalizers": ["example.com/keep"]}})
    core.delete_namespaced_config_map("held", "default")
    held = core.read_namespaced_config_map("held", "default")
    assert held.metadata.deletion_timestamp is not None
    core.patch_namespaced_config_map("held", "default", {"metadata": {"finalizers": None}},
                                     _content_type="application/merge-patch+json")
    with pytest.raises(k8s.ApiException) as raised:
        core.read_namespaced_config_map("held", "default")
    assert raised.value.status == 404


def test_deleting_a_namespace_deletes_its_contents_and_protected_ones_stay(core):
    core.create_namespace({"metadata": {"name": "scratch"}})
    core.create_namespaced_pod("scratch", pod("p"))
    gone = core.delete_namespace("scratch")
    assert (gone["kind"], gone["status"]["phase"]) == ("Namespace", "Terminating")
    assert core.list_pod_for_all_namespaces().items == []
    with pytest.raises(k8s.ApiException) as raised:
        core.delete_namespace("default")
    assert raised.value.status == 403


def test_delete_collection_by_label(core):
    for name, tier in (("a", "web"), ("b", "web"), ("c", "db")):
        core.create_namespaced_pod("default", pod(name, labels={"tier": tier}))
    core.delete_collection_namespaced_pod("default", label_selector="tier=web")
    assert [p.metadata.name for p in core.list_namespaced_pod("default").items] == ["c"]
