"""Training jobs end to end on the sandbox: submit through REST, the operation creates the object and follows it to
a terminal state; the recovery budget, cancel, resubmit, and bad input that leaves nothing behind."""

from __future__ import annotations

import pytest
from kubernetes import client as k8s

from accounts.models import AuditEvent
from cloud import kube
from mcp_server.testing import call_tool
from operations.models import Operation
from tests import factories
from tests.clusters.sandbox import tracked_hyperpod_cluster
from tests.training.running import running
from tests.training.sandbox import training_cluster
from training.models import TrainingJob

JOBS = "/api/v1/training-jobs"
QUICK = {"sandbox.instantstart.dev/steps": "12"}


def _jobs_on(cluster) -> list[str]:
    custom = k8s.CustomObjectsApi(kube.api_client(cluster.eks_name, region=cluster.region))
    found = custom.list_namespaced_custom_object("sagemaker.amazonaws.com", "v1", f"team-{cluster.team.slug}",
                                                 "hyperpodpytorchjobs")
    return [item["metadata"]["name"] for item in found["items"]]


@pytest.fixture
def cluster(cast, sandbox):
    return training_cluster(cast.team, ray=False)


def submit(api, actor, cluster, **config) -> dict:
    response = api(actor).post(JOBS, {"cluster": cluster.pk, "recipe": "pytorch", "name": config.pop("name", "quick"),
                                      "config": {"script": "train.py", "annotations": QUICK, **config}})
    assert response.status_code == 202, response.content
    return response.json()


@pytest.mark.django_db(transaction=True)
def test_a_pytorch_job_runs_to_success_and_reports_its_ranks(api, cast, cluster, drive):
    body = submit(api, cast.operator, cluster, replicas=2)
    assert body["job"]["state"] == "pending" and body["job"]["restarts_total"] == 3
    operation = drive(Operation.objects.get(pk=body["operation"]["id"]), timeout=60)
    assert operation.state == "succeeded", operation.error_message
    job = TrainingJob.objects.get(pk=body["job"]["id"])
    assert job.state == "succeeded" and job.finished_at is not None and job.started_at is not None
    assert [rank["rank"] for rank in job.ranks] == [0, 1]
    assert {rank["pod"] for rank in job.ranks} == {"quick-pods-0", "quick-pods-1"}
    assert job.restarts_used == 0 and job.recoveries == []
    assert AuditEvent.objects.filter(action="training_job.submit", target_id=str(job.pk)).exists()
    detail = api(cast.viewer).get(f"{JOBS}/{job.pk}").json()
    assert detail["state"] == "succeeded" and detail["restarts_remaining"] == 3


@pytest.mark.django_db(transaction=True)
def test_a_hang_consumes_the_recovery_budget_until_the_job_fails(api, cast, cluster, drive):
    body = submit(api, cast.operator, cluster, name="hangs", max_retries=2, restarts_before_full_job_restart=5,
                  progress_timeout_seconds=30, annotations={"sandbox.instantstart.dev/steps": "30",
                                                            "sandbox.instantstart.dev/outcome": "hang"})
    operation = drive(Operation.objects.get(pk=body["operation"]["id"]), timeout=90)
    job = TrainingJob.objects.get(pk=body["job"]["id"])
    assert operation.state == "failed" and operation.error_code == "training_job_failed"
    assert job.state == "failed" and "no retries left" in job.status_reason
    assert job.restarts_used == 2 and job.restarts_remaining == 0
    assert {entry["reason"] for entry in job.recoveries} == {"JobHanging"}
    assert sum(entry["restarts"] for entry in job.recoveries) == 2
    assert job.hangs and job.hangs[-1]["restart"] == 2
    assert any("Recovery 2/2" in line.message for line in operation.logs.all())


@pytest.mark.django_db(transaction=True)
def test_cancel_stops_a_running_job_and_resubmit_clones_it(api, cast, cluster, drive):
    body = submit(api, cast.operator, cluster, name="long",
                  annotations={"sandbox.instantstart.dev/steps": "100000"})
    operation = Operation.objects.get(pk=body["operation"]["id"])
    drive(operation, until=lambda op: TrainingJob.objects.get(pk=body["job"]["id"]).state == "running")
    assert _jobs_on(cluster) == ["long"]
    refused = api(cast.viewer).post(f"{JOBS}/{body['job']['id']}/cancel")
    assert refused.status_code == 403
    cancelled = api(cast.operator).post(f"{JOBS}/{body['job']['id']}/cancel")
    assert cancelled.status_code == 202 and cancelled.json()["job"]["state"] == "stopping"
    operation = drive(operation)
    assert operation.state == "cancelled"
    job = TrainingJob.objects.get(pk=body["job"]["id"])
    assert job.state == "stopped" and _jobs_on(cluster) == []
    again = api(cast.operator).post(f"{JOBS}/{job.pk}/cancel")
    assert again.status_code == 409 and again.json()["code"] == "training_job_finished"

    resubmitted = api(cast.operator).post(f"{JOBS}/{job.pk}/resubmit", {})
    assert resubmitted.status_code == 202, resubmitted.content
    clone = resubmitted.json()["job"]
    assert clone["name"] == "long-r2" and clone["config"] == job.config
    assert TrainingJob.objects.get(pk=clone["id"]).resubmitted_from_id == job.pk


BAD = [
    ({"recipe": "tensorflow"}, "unknown_recipe", "recipe"),
    ({"recipe": "llama-factory", "config": {"project": "proj", "config": "model_name_or_path: [x"}}, "invalid_yaml",
     "config"),
    ({"recipe": "ms-swift", "config": {"command_type": "dpo", "config": "model: x"}}, "unknown_command_type",
     "command_type"),
    ({"config": {"script": "../../etc/passwd"}}, "path_outside_shared_bucket", "script"),
    ({"config": {"script": "s3://someone-elses-bucket/train.py"}}, "path_outside_shared_bucket", "script"),
    ({"config": {"script": "train.py", "gpus_per_node": 9}}, "too_many_gpus", "gpus_per_node"),
    ({"config": {"script": "train.py", "annotations": {"not a key": "x"}}}, "invalid_annotation", "annotations"),
]


@pytest.mark.django_db
def test_bad_submissions_leave_nothing_behind(api, cast, cluster, make_team):
    for changes, code, field in BAD:
        body = {"cluster": cluster.pk, "recipe": "pytorch", "name": "bad", "config": {"script": "train.py"}, **changes}
        response = api(cast.operator).post(JOBS, body)
        assert response.status_code == 400, (changes, response.content)
        payload = response.json()
        assert code in {error["code"] for error in payload["fields"].get(field, [])}, (changes, payload)
    elsewhere = tracked_hyperpod_cluster(make_team("Other"), cloud=False)
    response = api(cast.operator).post(JOBS, {"cluster": elsewhere.pk, "recipe": "pytorch",
                                              "config": {"script": "train.py"}})
    assert response.status_code == 404 and "cluster" in response.json()["fields"]
    assert not TrainingJob.objects.exists() and not Operation.objects.filter(kind="training_job.submit").exists()
    assert _jobs_on(cluster) == []


@pytest.mark.django_db(transaction=True)
def test_a_verl_job_runs_as_a_rayjob_to_success(api, cast, sandbox, drive):
    cluster = training_cluster(cast.team, operator=False)
    response = api(cast.operator).post(JOBS, {"cluster": cluster.pk, "recipe": "verl", "name": "rl", "config": {
        "config_path": "verl/ppo.yaml", "replicas": 2, "annotations": QUICK}})
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["job"]["path"] == "kuberay" and body["job"]["restarts_total"] == 0
    operation = drive(Operation.objects.get(pk=body["operation"]["id"]), timeout=60)
    assert operation.state == "succeeded", operation.error_message
    job = TrainingJob.objects.get(pk=body["job"]["id"])
    assert job.state == "succeeded" and job.object_kind == "RayJob"
    assert job.ranks and job.ranks[0]["pod"].startswith("rl-raycluster-")


@pytest.mark.django_db(transaction=True)
def test_a_straggling_rank_is_flagged_from_its_reported_throughput(api, cast, cluster):
    body = submit(api, cast.operator, cluster, name="slow", replicas=2, hang_detection=False,
                  annotations={"sandbox.instantstart.dev/steps": "20", "sandbox.instantstart.dev/outcome": "straggle"})
    with running(body["job"]["id"], body["operation"]["id"]) as stop:
        # The job's summary is final once its log follower has read every line (``logs_complete``), which may be
        # after the object reports success.
        while not TrainingJob.objects.filter(pk=body["job"]["id"], state__in=("succeeded", "failed"),
                                             logs_complete=True).exists():
            stop.wait(0.05)
    job = TrainingJob.objects.get(pk=body["job"]["id"])
    assert job.state == "succeeded"
    assert [(rank["rank"], rank["straggler"]) for rank in job.ranks] == [(0, False), (1, True)]
    assert job.ranks[1]["throughput"] < job.ranks[0]["throughput"] / 2
    assert job.metrics["source"] == "logs" and job.metrics["step"] == 20


@pytest.mark.django_db
def test_a_key_another_member_used_answers_with_the_first_job(api, cast, cluster):
    body = {"cluster": cluster.pk, "recipe": "pytorch", "name": "keyed", "config": {"script": "train.py"}}
    first = api(cast.operator).post(JOBS, body, HTTP_IDEMPOTENCY_KEY="submit-1")
    again = api(cast.admin).post(JOBS, {**body, "name": "other"}, HTTP_IDEMPOTENCY_KEY="submit-1")
    assert first.status_code == again.status_code == 202, again.content
    assert "Idempotent-Replayed" not in again  # not the first user's stored response: the team's first operation
    assert (again.json()["job"]["id"], again.json()["operation"]["id"]) == (first.json()["job"]["id"],
                                                                            first.json()["operation"]["id"])
    assert TrainingJob.objects.count() == 1 and _jobs_on(cluster) == []


def test_a_job_is_a_summary_unless_its_manifest_is_asked_for(cast, api, token_for):
    job = factories.training_job(factories.cluster(cast.team, "c"), manifest={"kind": "HyperPodPyTorchJob"})
    client = api(cast.viewer)
    summary = client.get(f"/api/v1/training-jobs/{job.pk}")
    assert summary.status_code == 200 and "manifest" not in summary.json() and "ranks" in summary.json()
    full = client.get(f"/api/v1/training-jobs/{job.pk}", manifest="true")
    assert full.json()["manifest"] == {"kind": "HyperPodPyTorchJob"}
    refused = client.get(f"/api/v1/training-jobs/{job.pk}", manifest="yes please")
    assert refused.status_code == 400 and refused.json()["fields"]["manifest"][0]["code"] == "invalid"
    is_error, body = call_tool(token_for(cast.viewer), "get_training_job", {"job_id": job.pk})
    assert not is_error and "manifest" not in body
    is_error, body = call_tool(token_for(cast.viewer), "get_training_job", {"job_id": job.pk, "manifest": True})
    assert not is_error and body["manifest"] == {"kind": "HyperPodPyTorchJob"}
