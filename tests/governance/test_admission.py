"""Kueue admission of jobs on a governed sandbox cluster (two ``ml.g5.12xlarge`` nodes): a team's job waits with
Kueue's reason while another team uses the capacity its quota would borrow, runs once that capacity frees, and a
high-priority job preempts a low-priority one. The other team's workload is made with kubectl's API (as that team
would), the cluster team's through InstantStart; the job page and REST show the admission."""

from __future__ import annotations

import copy
import time

import pytest
from django.test import Client
from django.urls import reverse
from django.utils.html import escape
from kubernetes import client as k8s

from cloud import kube
from operations.models import Operation
from tests.governance.test_governance import run
from tests.training.sandbox import training_cluster
from training.models import TrainingJob

JOBS = "/api/v1/training-jobs"
LONG = {"sandbox.instantstart.dev/steps": "100000"}
GROUP, VERSION, PLURAL = "sagemaker.amazonaws.com", "v1", "hyperpodpytorchjobs"


def submit(api, actor, cluster, drive, name: str, priority: str) -> TrainingJob:
    """Submit a one-node job of 4 GPUs and advance its operation until the object is on the cluster."""
    response = api(actor).post(JOBS, {"cluster": cluster.pk, "recipe": "pytorch", "name": name, "priority": priority,
                                      "config": {"script": "train.py", "gpus_per_node": 4, "annotations": LONG}})
    assert response.status_code == 202, response.content
    job = TrainingJob.objects.get(pk=response.json()["job"]["id"])
    drive(Operation.objects.get(pk=response.json()["operation"]["id"]),
          until=lambda _: TrainingJob.objects.get(pk=job.pk).object_uid != "")
    return job


def admission(api, actor, job: TrainingJob, state: str, timeout: float = 20.0) -> dict:
    """The job's ``admission`` once it is ``state`` (REST), polled with a deadline."""
    deadline = time.monotonic() + timeout
    while True:
        found = api(actor).get(f"{JOBS}/{job.pk}").json()["admission"]
        if found and found["state"] == state:
            return found
        assert time.monotonic() < deadline, f"{job.name}: {found}"
        time.sleep(0.05)


def outside_job(cluster, template: TrainingJob, namespace: str, queue: str) -> str:
    """Another team's job, made with the Kubernetes API in its namespace from ``template``'s manifest (without the
    cluster team's shared claim); its name."""
    body = copy.deepcopy(template.manifest)
    body["metadata"] = {"name": "theirs", "namespace": namespace, "labels": {"kueue.x-k8s.io/queue-name": queue}}
    for replica in body["spec"]["replicaSpecs"]:
        pod = replica["template"]["spec"]
        claims = {item["name"] for item in pod.get("volumes", []) if "persistentVolumeClaim" in item}
        pod["volumes"] = [item for item in pod.get("volumes", []) if item["name"] not in claims]
        for container in pod["containers"]:
            container["volumeMounts"] = [item for item in container.get("volumeMounts", [])
                                         if item["name"] not in claims]
    custom = k8s.CustomObjectsApi(kube.api_client(cluster.eks_name, region=cluster.region))
    custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)
    return "theirs"


@pytest.mark.django_db(transaction=True)
def test_a_job_waits_for_borrowed_capacity_and_a_high_priority_job_preempts_a_low_one(api, cast, make_team, sandbox,
                                                                                     drive):
    cluster = training_cluster(cast.team, instance_type="ml.g5.12xlarge", count=2, ray=False)
    admin = api(cast.admin)
    run(drive, admin.patch(f"/api/v1/clusters/{cluster.pk}/features", {"task_governance": {"enabled": True}}))
    run(drive, admin.request("PUT", f"/api/v1/clusters/{cluster.pk}/scheduler-config", {
        "priority_classes": [{"name": "high", "weight": 100}, {"name": "low", "weight": 10}], "fair_share": True}))
    other = make_team("Robotics")
    lends_and_borrows, lends = {"strategy": "LendAndBorrow", "borrow_limit": 100}, {"strategy": "Lend"}
    for team, sharing in ((cast.team, lends_and_borrows), (other, lends)):
        run(drive, admin.post("/api/v1/compute-quotas", {
            "cluster": cluster.pk, "team": team.pk, **sharing,
            "resources": [{"instance_type": "ml.g5.12xlarge", "count": 1}]}))

    first = submit(api, cast.operator, cluster, drive, "first", "low")
    assert first.namespace == f"hyperpod-ns-{cast.team.slug}"
    assert admission(api, cast.viewer, first, "admitted")["priority"] == "low-priority"
    custom = k8s.CustomObjectsApi(kube.api_client(cluster.eks_name, region=cluster.region))
    theirs = outside_job(cluster, first, f"hyperpod-ns-{other.slug}", f"hyperpod-ns-{other.slug}-localqueue")

    second = submit(api, cast.operator, cluster, drive, "second", "low")
    waiting = admission(api, cast.viewer, second, "pending")
    assert waiting["reason"] and waiting["queue"] == f"hyperpod-ns-{cast.team.slug}-localqueue"
    browser = Client()
    browser.force_login(cast.viewer)
    page = browser.get(reverse("training-job", args=[second.pk])).content.decode()
    assert 'data-testid="job-admission-state">pending' in page and escape(waiting["reason"]) in page

    custom.delete_namespaced_custom_object(GROUP, VERSION, f"hyperpod-ns-{other.slug}", PLURAL, theirs)
    admission(api, cast.viewer, second, "admitted")

    urgent = submit(api, cast.operator, cluster, drive, "urgent", "high")
    admission(api, cast.viewer, urgent, "admitted")
    preempted = [job.name for job in (first, second) if api(cast.viewer).get(
        f"{JOBS}/{job.pk}").json()["admission"]["state"] == "preempted"]
    assert len(preempted) == 1, preempted
