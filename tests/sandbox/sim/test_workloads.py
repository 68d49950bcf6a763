"""Built-in workloads: Deployments, StatefulSets, Jobs, LoadBalancer Services, scheduling and volume binding."""

from __future__ import annotations

import json

from kubernetes import client as k8s

from sandbox.sim.objects import DURATION, OUTCOME
from tests.sandbox.sim.harness import REGION, make_cluster, pod_template, wait_for


def test_deployment_gets_ready_pods_and_follows_scale_changes():
    api = make_cluster()
    apps, core = k8s.AppsV1Api(api), k8s.CoreV1Api(api)
    apps.create_namespaced_deployment("default", {
        "metadata": {"name": "web"}, "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                                              "template": pod_template("web")}})
    ready = wait_for(lambda: apps.read_namespaced_deployment("web", "default"),
                     lambda d: d.status.ready_replicas == 2 and d.status.available_replicas == 2)
    assert {c.type: c.status for c in ready.status.conditions} == {"Available": "True", "Progressing": "True"}
    assert ready.status.observed_generation == ready.metadata.generation
    (replica_set,) = apps.list_namespaced_replica_set("default").items
    assert replica_set.metadata.owner_references[0].name == "web"
    pods = core.list_namespaced_pod("default", label_selector="app=web").items
    assert {p.status.phase for p in pods} == {"Running"} and all(p.spec.node_name and p.status.pod_ip for p in pods)
    assert all(p.metadata.owner_references[0].name == replica_set.metadata.name for p in pods)
    apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 3}})
    wait_for(lambda: apps.read_namespaced_deployment("web", "default").status.ready_replicas, lambda n: n == 3)
    apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 1}})
    wait_for(lambda: len(core.list_namespaced_pod("default", label_selector="app=web").items), lambda n: n == 1)
    apps.delete_namespaced_deployment("web", "default")
    wait_for(lambda: core.list_namespaced_pod("default", label_selector="app=web").items, lambda pods: not pods)


def test_statefulset_pods_come_up_in_order_with_their_claims():
    api = make_cluster()
    apps, core = k8s.AppsV1Api(api), k8s.CoreV1Api(api)
    k8s.StorageV1Api(api).create_storage_class({"metadata": {"name": "gp3"}, "provisioner": "ebs.csi.aws.com"})
    apps.create_namespaced_stateful_set("default", {
        "metadata": {"name": "db"},
        "spec": {"replicas": 2, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                 "template": pod_template("db"),
                 "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                     "storageClassName": "gp3", "accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "10Gi"}}}}]}})
    done = wait_for(lambda: apps.read_namespaced_stateful_set("db", "default"), lambda s: s.status.ready_replicas == 2)
    assert done.status.current_revision == done.status.update_revision
    assert sorted(p.metadata.name for p in core.list_namespaced_pod("default").items) == ["db-0", "db-1"]
    claims = {c.metadata.name: c.status.phase for c in core.list_namespaced_persistent_volume_claim("default").items}
    assert claims == {"data-db-0": "Bound", "data-db-1": "Bound"}


def test_job_runs_a_pod_to_completion_and_a_failing_one_to_its_backoff_limit():
    batch = k8s.BatchV1Api(make_cluster())
    batch.create_namespaced_job("default", {"metadata": {"name": "etl", "annotations": {DURATION: "5"}},
                                            "spec": {"template": pod_template("etl", restart_policy="Never")}})
    batch.create_namespaced_job("default", {"metadata": {"name": "broken", "annotations": {OUTCOME: "fail"}},
                                            "spec": {"backoffLimit": 1,
                                                     "template": pod_template("broken", restart_policy="Never")}})
    complete = wait_for(lambda: batch.read_namespaced_job("etl", "default"),
                        lambda j: any(c.type == "Complete" and c.status == "True" for c in j.status.conditions or []))
    assert complete.status.succeeded == 1 and complete.status.completion_time and not complete.status.active
    failed = wait_for(lambda: batch.read_namespaced_job("broken", "default"),
                      lambda j: any(c.type == "Failed" and c.status == "True" for c in j.status.conditions or []))
    assert failed.status.failed == 2
    assert next(c for c in failed.status.conditions if c.type == "Failed").reason == "BackoffLimitExceeded"


def test_load_balancer_service_gets_a_hostname_and_endpoints_list_ready_pods():
    api = make_cluster()
    core, apps = k8s.CoreV1Api(api), k8s.AppsV1Api(api)
    apps.create_namespaced_deployment("default", {
        "metadata": {"name": "api"}, "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "api"}},
                                              "template": pod_template("api")}})
    core.create_namespaced_service("default", {"metadata": {"name": "api"}, "spec": {
        "type": "LoadBalancer", "selector": {"app": "api"}, "ports": [{"port": 80, "targetPort": 8080}]}})
    service = wait_for(lambda: core.read_namespaced_service("api", "default"),
                       lambda s: s.status.load_balancer.ingress)
    assert service.status.load_balancer.ingress[0].hostname.endswith(f".elb.{REGION}.amazonaws.com")
    endpoints = wait_for(lambda: core.read_namespaced_endpoints("api", "default"),
                         lambda e: e.subsets and len(e.subsets[0].addresses or []) == 2)
    assert endpoints.subsets[0].ports[0].port == 8080


def test_pod_that_fits_no_node_stays_pending_with_the_schedulers_reason():
    api = make_cluster()
    core = k8s.CoreV1Api(api)
    core.create_namespaced_pod("default", {"metadata": {"name": "greedy"},
                                           "spec": pod_template("greedy", resources={"nvidia.com/gpu": "8"})["spec"]})
    pending = wait_for(lambda: core.read_namespaced_pod("greedy", "default"),
                       lambda p: any(c.type == "PodScheduled" for c in p.status.conditions or []))
    (scheduled,) = [c for c in pending.status.conditions if c.type == "PodScheduled"]
    assert (pending.status.phase, scheduled.status, scheduled.reason) == ("Pending", "False", "Unschedulable")
    assert scheduled.message == "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."
    events = core.list_namespaced_event("default", field_selector="involvedObject.name=greedy").items
    assert [e.reason for e in events] == ["FailedScheduling"]


def test_the_scheduler_binds_a_pod_in_place_so_it_is_never_absent():
    """Binding sets ``spec.nodeName`` on the stored pod (the binding subresource): same uid, no DELETED event."""
    core = k8s.CoreV1Api(make_cluster())
    created = core.create_namespaced_pod("default", {"metadata": {"name": "solo"}, "spec": pod_template()["spec"]})
    assert created.spec.node_name is None
    running = wait_for(lambda: core.read_namespaced_pod("solo", "default"), lambda p: p.status.phase == "Running")
    assert running.spec.node_name and running.metadata.uid == created.metadata.uid
    history = core.list_namespaced_pod("default", watch=True, resource_version=created.metadata.resource_version,
                                       timeout_seconds=1, _preload_content=False)
    kinds = {json.loads(line)["type"] for line in history.read().decode().splitlines() if line}
    assert kinds == {"MODIFIED"}


def test_claims_bind_to_s3_and_fsx_volumes_or_get_one_provisioned():
    api = make_cluster()
    core, storage = k8s.CoreV1Api(api), k8s.StorageV1Api(api)
    core.create_persistent_volume({"metadata": {"name": "s3-pv"}, "spec": {
        "capacity": {"storage": "1200Gi"}, "accessModes": ["ReadWriteMany"], "storageClassName": "",
        "mountOptions": ["allow-delete", "region us-west-2"],
        "csi": {"driver": "s3.csi.aws.com", "volumeHandle": "s3-csi-driver-volume",
                "volumeAttributes": {"bucketName": "training-data"}}}})
    core.create_namespaced_persistent_volume_claim("default", {"metadata": {"name": "s3-claim"}, "spec": {
        "accessModes": ["ReadWriteMany"], "storageClassName": "", "volumeName": "s3-pv",
        "resources": {"requests": {"storage": "1200Gi"}}}})
    storage.create_storage_class({"metadata": {"name": "fsx-sc"}, "provisioner": "fsx.csi.aws.com",
                                  "parameters": {"subnetId": "subnet-a1", "deploymentType": "PERSISTENT_2"},
                                  "volumeBindingMode": "WaitForFirstConsumer"})
    core.create_namespaced_persistent_volume_claim("default", {"metadata": {"name": "fsx-claim"}, "spec": {
        "accessModes": ["ReadWriteMany"], "storageClassName": "fsx-sc",
        "resources": {"requests": {"storage": "1200Gi"}}}})
    s3 = wait_for(lambda: core.read_namespaced_persistent_volume_claim("s3-claim", "default"),
                  lambda c: c.status.phase == "Bound")
    assert s3.spec.volume_name == "s3-pv" and core.read_persistent_volume("s3-pv").status.phase == "Bound"
    assert core.read_namespaced_persistent_volume_claim("fsx-claim", "default").status.phase == "Pending"
    pod = pod_template("reader")["spec"]
    pod["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "fsx-claim"}}]
    core.create_namespaced_pod("default", {"metadata": {"name": "reader"}, "spec": pod})
    fsx = wait_for(lambda: core.read_namespaced_persistent_volume_claim("fsx-claim", "default"),
                   lambda c: c.status.phase == "Bound")
    volume = core.read_persistent_volume(fsx.spec.volume_name)
    assert volume.spec.csi.driver == "fsx.csi.aws.com" and volume.spec.claim_ref.name == "fsx-claim"
    assert volume.spec.csi.volume_attributes["deploymentType"] == "PERSISTENT_2"
    wait_for(lambda: core.read_namespaced_pod("reader", "default").status.phase, lambda p: p == "Running")
