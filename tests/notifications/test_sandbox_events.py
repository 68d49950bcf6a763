"""Events raised where they happen, against the sandbox: a cluster create that finishes and a training job that hangs
and then fails reach a webhook receiver on loopback — signed, retried after a 500 — and an e-mail subscriber."""

from __future__ import annotations

from django.core import mail

from notifications.models import Delivery, DeliveryState, Subscription
from operations.models import Operation, OperationState
from tests import factories
from tests.notifications.receiver import drain
from tests.training.sandbox import training_cluster
from training.models import TrainingJob

SECRET = "whsec_sandbox"


def test_a_finished_cluster_create_is_delivered_signed_after_a_500(api, cast, sandbox, drive, receiver,
                                                                   fast_delivery,
                                                                   django_capture_on_commit_callbacks):
    hook = factories.subscription(cast.team, url=receiver.url, secret=SECRET, event_types=["operation.succeeded"])
    Subscription.objects.create(team=cast.team, name="oncall", channel="email", email="oncall@example.com",
                                event_types=["operation.succeeded"])
    receiver.answer_first(500)
    response = api(cast.admin).post("/api/v1/clusters", {"name": "alpha", "region": "us-west-2",
                                                         "zone": "us-west-2a", "instance_type": "ml.g5.8xlarge",
                                                         "instance_count": 1})
    assert response.status_code == 202, response.content
    with django_capture_on_commit_callbacks(execute=True):  # the engine's transactions commit
        operation = drive(Operation.objects.get(pk=response.json()["operation"]["id"]), timeout=120)
    assert operation.state == OperationState.SUCCEEDED, (operation.phase, operation.error_message)
    drain()

    first, second = receiver.requests
    assert first.body == second.body and first.signed_with(SECRET) and second.signed_with(SECRET)
    event = second.event
    assert event["type"] == "operation.succeeded" and event["team"]["id"] == cast.team.pk
    assert event["subject"] == {"kind": "operation", "id": operation.pk, "name": operation.title,
                                "url": f"https://instantstart.example.com/operations/{operation.pk}/"}
    assert event["details"]["kind"] == "cluster.create" and event["details"]["state"] == "succeeded"
    assert event["details"]["target"] == {"type": "cluster", "id": str(operation.params["cluster_id"])}
    delivery = hook.deliveries.get()
    assert delivery.state == DeliveryState.SUCCEEDED
    assert [attempt.status_code for attempt in delivery.attempt_log.all()] == [500, 200]
    [message] = mail.outbox
    assert message.to == ["oncall@example.com"] and operation.title in message.subject


def test_a_hung_then_failed_training_job_is_delivered(api, cast, sandbox, drive, receiver, fast_delivery,
                                                      django_capture_on_commit_callbacks):
    cluster = training_cluster(cast.team, ray=False)
    factories.subscription(cast.team, url=receiver.url, secret=SECRET,
                           event_types=["training_job.failed", "training_job.hung", "training_job.succeeded"])
    receiver.answer_first(500, 503)
    response = api(cast.operator).post("/api/v1/training-jobs", {
        "cluster": cluster.pk, "recipe": "pytorch", "name": "hangs",
        "config": {"script": "train.py", "max_retries": 1, "restarts_before_full_job_restart": 5,
                   "progress_timeout_seconds": 30, "annotations": {"sandbox.instantstart.dev/steps": "30",
                                                                   "sandbox.instantstart.dev/outcome": "hang"}}})
    assert response.status_code == 202, response.content
    with django_capture_on_commit_callbacks(execute=True):
        operation = drive(Operation.objects.get(pk=response.json()["operation"]["id"]), timeout=90)
    assert operation.state == OperationState.FAILED and operation.error_code == "training_job_failed"
    drain()

    job = TrainingJob.objects.get(pk=response.json()["job"]["id"])
    assert all(item.signed_with(SECRET) for item in receiver.requests)
    hung, failed = receiver.of_type("training_job.hung"), receiver.of_type("training_job.failed")
    assert len(hung) + len(failed) == 4  # two answered 5xx first: the same event is sent again
    assert len({item.body for item in hung}) == 1 and len({item.body for item in failed}) == 1
    hung = hung[0]
    assert hung.event["subject"]["id"] == job.pk and hung.event["details"]["restart"] == 1
    assert failed[0].event["subject"] == {"kind": "training_job", "id": job.pk, "name": "hangs",
                                          "url": f"https://instantstart.example.com/training/jobs/{job.pk}/"}
    assert failed[0].event["details"]["state"] == "failed" and failed[0].event["details"]["operation_id"] == \
        operation.pk
    assert not receiver.of_type("training_job.succeeded")
    assert set(Delivery.objects.values_list("state", flat=True)) == {DeliveryState.SUCCEEDED}
