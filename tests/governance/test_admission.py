"""Two teams share a governed sandbox cluster (two ``ml.g5.12xlarge`` nodes), each with a compute quota of one node:
a team's job waits with Kueue's reason while the other team's job (submitted through InstantStart by that team, on
a cluster it does not own) uses the capacity its quota would borrow, runs once that team cancels its job, and a
high-priority job preempts a low-priority one — whose watch raises ``training_job.preempted`` once — and its team
cancels it while it waits; the job page and REST show the admission."""

from __future__ import annotations

import time

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape
from kubernetes import client as k8s

from accounts.models import Membership, Role
from cloud import aws, kube
from clusters.shared_bucket import ensure_shared_bucket, team_prefix
from notifications.models import Delivery
from operations import engine
from operations.models import Operation
from tests import factories
from tests.governance.test_governance import run
from tests.notifications.receiver import drain
from tests.training.sandbox import training_cluster
from training.models import TrainingJob

JOBS = "/api/v1/training-jobs"
LONG = {"sandbox.instantstart.dev/steps": "100000"}


def submit(api, actor, cluster, drive, name: str, priority: str) -> TrainingJob:
    """Submit a one-node job of 4 GPUs as ``actor`` and advance its operation until the object is on the cluster (its
    *run* phase follows it)."""
    response = api(actor).post(JOBS, {"cluster": cluster.pk, "recipe": "pytorch", "name": name, "priority": priority,
                                      "config": {"script": "train.py", "gpus_per_node": 4, "annotations": LONG}})
    assert response.status_code == 202, response.content
    job = TrainingJob.objects.get(pk=response.json()["job"]["id"])
    drive(Operation.objects.get(pk=response.json()["operation"]["id"]),
          until=lambda operation: operation.phase == "run")
    return job


def admission(api, actor, job: TrainingJob, state: str, timeout: float = 20.0) -> dict:
    """The job's ``admission`` once its Workload is ``state`` (REST), polled with a deadline."""
    deadline = time.monotonic() + timeout
    while True:
        found = api(actor).get(f"{JOBS}/{job.pk}").json()["admission"]
        if found and found["state"] == state and found["workload"]:
            return found
        assert time.monotonic() < deadline, f"{job.name}: {found}"
        time.sleep(0.05)


def cancel(api, actor, job: TrainingJob, drive) -> None:
    """Cancel ``job`` through REST as ``actor``; its operation finishes cancelled once the object is gone."""
    response = api(actor).post(f"{JOBS}/{job.pk}/cancel")
    assert response.status_code == 202, response.content
    assert drive(Operation.objects.get(pk=job.operation_id), timeout=30).state == "cancelled"
    job.refresh_from_db()
    assert job.state == "stopped", job.status_reason


@pytest.mark.django_db(transaction=True)
def test_a_job_waits_for_borrowed_capacity_and_a_high_priority_job_preempts_a_low_one(api, cast, make_team, make_user,
                                                                                     sandbox, drive, receiver,
                                                                                     fast_delivery):
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

    theirs_operator = make_user()
    Membership.objects.create(team=other, user=theirs_operator, role=Role.OPERATOR)
    s3 = aws.client("s3", region=cluster.region)
    s3.put_object(Bucket=ensure_shared_bucket(s3, cluster.region), Key=f"{team_prefix(other.slug)}train.py",
                  Body=b"print('training')\n")
    theirs = submit(api, theirs_operator, cluster, drive, "theirs", "")
    assert (theirs.team, theirs.namespace) == (other, f"hyperpod-ns-{other.slug}")
    admission(api, theirs_operator, theirs, "admitted")
    assert api(cast.viewer).get(f"{JOBS}/{theirs.pk}").status_code == 404  # the other team's job, not ours

    second = submit(api, cast.operator, cluster, drive, "second", "low")
    waiting = admission(api, cast.viewer, second, "pending")
    assert waiting["reason"] and waiting["queue"] == f"hyperpod-ns-{cast.team.slug}-localqueue"
    browser = Client()
    browser.force_login(cast.viewer)
    page = browser.get(reverse("training-job", args=[second.pk])).content.decode()
    assert 'data-testid="job-admission-state">pending' in page and escape(waiting["reason"]) in page

    cancel(api, theirs_operator, theirs, drive)  # an admitted job: its Workload goes with it, the capacity frees
    admission(api, cast.viewer, second, "admitted")

    factories.subscription(cast.team, url=receiver.url, event_types=["training_job.preempted"])
    urgent = submit(api, cast.operator, cluster, drive, "urgent", "high")
    admission(api, cast.viewer, urgent, "admitted")
    preempted = [job for job in (first, second) if api(cast.viewer).get(
        f"{JOBS}/{job.pk}").json()["admission"]["state"] == "preempted"]
    assert len(preempted) == 1, [job.name for job in preempted]
    # the preempted job's watch notices it once, however often it polls
    operation = Operation.objects.get(pk=preempted[0].operation_id)
    drive(operation, timeout=20, until=lambda _: Delivery.objects.exists())
    for _ in range(2):  # two more polls while it stays preempted
        operation.refresh_from_db()
        time.sleep(max(0.0, (operation.next_poll_at - timezone.now()).total_seconds()))
        engine.advance(operation.pk, due=operation.next_poll_at)
    drain()
    [event] = [item.event for item in receiver.of_type("training_job.preempted")]
    assert event["subject"]["id"] == preempted[0].pk and event["details"]["priority"] == "low-priority"
    assert "Preempted to accommodate a workload" in event["details"]["reason"]
    cancel(api, cast.operator, preempted[0], drive)  # a queued job
    custom = k8s.CustomObjectsApi(kube.api_client(cluster.eks_name, region=cluster.region))
    assert not any(workload["metadata"]["ownerReferences"][0]["name"] == preempted[0].name for workload in
                   custom.list_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", first.namespace,
                                                        "workloads")["items"])
