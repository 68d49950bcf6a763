"""The log follower end to end against the sandbox: a HyperPodPyTorchJob made directly with the kubernetes client,
every rank's pod log read by ``follow_job`` into the store — every line exactly once, in each pod's order — through
dropped streams, log rotation, job-level restarts and a follower that is stopped and replaced mid-stream.

The helpers here (``running_job``, ``Following``, ``stored``) are shared by the other ``test_logs_*`` modules."""

from __future__ import annotations

import contextlib
import threading
import time
from collections import defaultdict

import pytest
from kubernetes import client as k8s

from cloud import kube
from sandbox.sim.training import CRASH
from tests import factories
from tests.training.sandbox import training_cluster
from training.logs import lease, store
from training.logs.follower import follow_job
from training.models import TrainingJob, TrainingLogLine, TrainingMetric

pytestmark = pytest.mark.django_db(transaction=True)

ANNOTATIONS = "sandbox.instantstart.dev/"


def pytorch_job(name: str, *, replicas: int, steps: int, step_seconds: float | None = None,
                lines_per_step: int | None = None, outcome: str | None = None, retries: int = 0) -> dict:
    annotations = {ANNOTATIONS + "steps": str(steps)}
    if step_seconds is not None:
        annotations[ANNOTATIONS + "step-seconds"] = str(step_seconds)
    if lines_per_step is not None:
        annotations[ANNOTATIONS + "lines-per-step"] = str(lines_per_step)
    if outcome:
        annotations[ANNOTATIONS + "outcome"] = outcome
    run_policy = {"cleanPodPolicy": "None", "jobMaxRetryCount": retries}
    if outcome == "restart-once":
        run_policy["restartPolicy"] = {"numRestartBeforeFullJobRestart": 0, "maxFullJobRestarts": 2,
                                     "evalPeriodSeconds": 3600}
    return {
        "apiVersion": "sagemaker.amazonaws.com/v1", "kind": "HyperPodPyTorchJob",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"nprocPerNode": "1", "runPolicy": run_policy,
                 "replicaSpecs": [{"name": "pods", "replicas": replicas, "template": {"spec": {"containers": [{
                     "name": "pytorch", "image": "pytorch/pytorch:latest", "command": ["hyperpodrun", "train.py"],
                     "resources": {"limits": {"nvidia.com/gpu": 1}, "requests": {"nvidia.com/gpu": 1}}}]}}}]}}


def running_job(team, *, name: str = "llama", cluster=None, **spec) -> TrainingJob:
    """A HyperPodPyTorchJob created on a training cluster of ``team`` and its TrainingJob row (state running)."""
    cluster = cluster or training_cluster(team)
    namespace = f"team-{team.slug}"
    api = kube.api_client(cluster.eks_name, region=cluster.region)
    k8s.CustomObjectsApi(api).create_namespaced_custom_object("sagemaker.amazonaws.com", "v1", namespace,
                                                              "hyperpodpytorchjobs", pytorch_job(name, **spec))
    return factories.training_job(cluster, name, object_kind="HyperPodPyTorchJob", replicas=spec["replicas"])


def job_object(job: TrainingJob) -> dict:
    api = kube.api_client(job.cluster.eks_name, region=job.cluster.region)
    return k8s.CustomObjectsApi(api).get_namespaced_custom_object("sagemaker.amazonaws.com", "v1", job.namespace,
                                                                  "hyperpodpytorchjobs", job.name)


def object_state(job: TrainingJob) -> str:
    conditions = (job_object(job).get("status") or {}).get("conditions") or []
    return next((c["type"] for c in reversed(conditions) if c.get("status") == "True"), "")


def pod_log(job: TrainingJob, pod: str, *, previous: bool = False) -> list[str]:
    core = k8s.CoreV1Api(kube.api_client(job.cluster.eks_name, region=job.cluster.region))
    return core.read_namespaced_pod_log(pod, job.namespace, previous=previous).splitlines()


def wait_for(check, what: str, timeout: float = 30.0, every: float = 0.02):
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout} s"
        time.sleep(every)
    return value


def finish_when_done(job: TrainingJob, state: str = "succeeded") -> None:
    """Play the job operation's part: mark the row terminal once the object is."""
    wait_for(lambda: object_state(job) in ("Succeeded", "Failed"), "the job to end")
    TrainingJob.objects.filter(pk=job.pk).update(state=state)


class Following:
    """``follow_job`` in a thread, as the runner runs it."""

    def __init__(self, job: TrainingJob, **options):
        self.stop = threading.Event()
        self.result: list = []
        options = {"drain_seconds": 10.0, "discover_seconds": 0.1, **options}
        self.thread = threading.Thread(target=self._run, args=(job.pk, options), daemon=True)
        self.thread.start()

    def _run(self, job_id: int, options: dict) -> None:
        from django.db import connection

        try:
            self.result.append(follow_job(job_id, stop=self.stop, **options))
        except BaseException as error:  # the test reports it
            self.result.append(error)
        finally:
            connection.close()

    def finish(self, timeout: float = 30.0):
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the follower did not finish"
        return self.result[0]

    def halt(self) -> None:
        self.stop.set()
        self.finish()


def stored(job: TrainingJob) -> dict[str, list[str]]:
    by_pod: dict[str, list[str]] = defaultdict(list)
    for pod, text in TrainingLogLine.objects.filter(job=job).order_by("seq").values_list("pod", "text"):
        by_pod[pod].append(text)
    return dict(by_pod)


def assert_exactly_once(job: TrainingJob) -> None:
    """Every line of every pod's log (previous instance, then current) stored once, in order; seqs 1…N."""
    lines = stored(job)
    for pod, texts in lines.items():
        written = []
        with contextlib.suppress(k8s.ApiException):
            written = pod_log(job, pod, previous=True)
        written += pod_log(job, pod)
        assert texts == written, pod
    seqs = list(TrainingLogLine.objects.filter(job=job).order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1))
    job.refresh_from_db()
    assert job.last_seq == len(seqs)


def test_every_rank_is_stored_once_in_order_with_metrics(cast, sandbox):
    job = running_job(cast.team, replicas=3, steps=20, step_seconds=30)
    following = Following(job)
    finish_when_done(job)
    assert following.finish() is True

    job.refresh_from_db()
    assert job.logs_complete
    lines = stored(job)
    assert sorted(lines) == ["llama-pods-0", "llama-pods-1", "llama-pods-2"]
    assert all(len(texts) == 21 for texts in lines.values())  # the start line, then one per step
    assert_exactly_once(job)
    ranks = dict(TrainingLogLine.objects.filter(job=job).values_list("pod", "rank").distinct())
    assert ranks == {"llama-pods-0": 0, "llama-pods-1": 1, "llama-pods-2": 2}
    metrics = TrainingMetric.objects.filter(job=job, source="logs")
    assert metrics.filter(name="loss").count() == 20
    assert metrics.filter(name="throughput").count() == 20
    assert metrics.filter(name="throughput/rank2").count() == 20
    first = metrics.get(name="loss", step=1)
    assert f"loss={first.value:.4f}" in lines["llama-pods-0"][1]


def test_dropped_and_rotated_streams_resume_without_gaps_or_duplicates(cast, sandbox):
    job = running_job(cast.team, replicas=2, steps=40, step_seconds=150, lines_per_step=3)
    following = Following(job)
    target = {"region": job.cluster.region, "cluster": job.cluster.eks_name, "namespace": job.namespace}
    wait_for(lambda: TrainingLogLine.objects.filter(job=job).count() >= 20, "the first lines")
    ended = 0
    for pod in ("llama-pods-0", None, "llama-pods-1", None):
        ended += sandbox.control("POST", "pod-logs/drop", {**target, **({"pod": pod} if pod else {})})["streams_ended"]
        time.sleep(0.05)
    assert ended >= 4
    finish_when_done(job)
    assert following.finish() is True
    assert_exactly_once(job)
    assert all(len(texts) == 1 + 40 * 3 for texts in stored(job).values())


def test_a_rotated_log_resumes_with_the_lines_written_after_it(cast, sandbox):
    """Rotation takes away what was written before it; the follower, caught up, continues with what follows — once."""
    job = running_job(cast.team, replicas=2, steps=6, step_seconds=400)
    following = Following(job, batch_seconds=0.02)
    wait_for(lambda: all(len(texts) >= 3 for texts in stored(job).values()) and len(stored(job)) == 2,
             "two steps of both ranks stored", every=0.005)
    rotated = sandbox.control("POST", "pod-logs/rotate", {"region": job.cluster.region, "cluster": job.cluster.eks_name,
                                                          "namespace": job.namespace})
    assert rotated["streams_ended"] >= 1
    finish_when_done(job)
    assert following.finish() is True
    for pod, texts in stored(job).items():
        assert texts[1:] == [line for line in texts[1:] if line.startswith("step=")], pod
        steps = [int(text.split(",")[0].removeprefix("step=")) for text in texts[1:]]
        assert steps == list(range(1, 7)), pod
        assert texts[-len(pod_log(job, pod)):] == pod_log(job, pod)


def test_a_job_level_restart_reads_the_previous_and_the_new_container(cast, sandbox):
    job = running_job(cast.team, replicas=2, steps=12, step_seconds=30, outcome="restart-once", retries=2)
    following = Following(job)
    finish_when_done(job)
    assert following.finish() is True
    assert_exactly_once(job)
    assert pod_log(job, "llama-pods-1", previous=True)[-2:] == list(CRASH)
    assert stored(job)["llama-pods-1"].count(pod_log(job, "llama-pods-1")[0]) >= 1


def test_a_replaced_follower_resumes_where_the_stored_lines_end(cast, sandbox):
    job = running_job(cast.team, replicas=2, steps=60, step_seconds=60, lines_per_step=2)
    first = Following(job)
    wait_for(lambda: TrainingLogLine.objects.filter(job=job).count() >= 30, "some lines")
    first.halt()
    assert first.result == [False]
    second = Following(job)
    finish_when_done(job)
    assert second.finish() is True
    assert_exactly_once(job)


def test_a_job_whose_pods_are_gone_completes_with_what_was_stored(cast, sandbox):
    job = running_job(cast.team, replicas=1, steps=3, step_seconds=1)
    finish_when_done(job, "failed")
    core = k8s.CoreV1Api(kube.api_client(job.cluster.eks_name, region=job.cluster.region))
    core.delete_namespaced_pod("llama-pods-0", job.namespace)
    assert Following(job).finish() is True
    job.refresh_from_db()
    assert (job.logs_complete, job.last_seq) == (True, 0)


def test_the_lease_admits_one_holder_at_a_time(settings):
    first, second = lease.Lease(424242, seconds=5), lease.Lease(424242, seconds=5)
    try:
        assert first.claim()
        assert not second.claim()
        assert first.renew() and not second.renew()
        first.release()
        assert second.claim()
        assert not first.renew()
    finally:
        first.release()
        second.release()


def test_purge_deletes_the_lines_of_long_finished_jobs_only(cast, settings):
    from datetime import timedelta

    from django.db.models import Count
    from django.utils import timezone

    from training.logs.kubelet import PodLine, to_micros

    cluster = factories.cluster(cast.team, "c")
    now = to_micros(timezone.now())
    jobs = {}
    for name, state, age in (("old", "succeeded", 40), ("recent", "failed", 5), ("live", "running", None)):
        jobs[name] = factories.training_job(cluster, name, state=state,
                                            finished_at=timezone.now() - timedelta(days=age) if age else None)
        store.append(jobs[name].pk, [PodLine("p", 0, now + i, f"line {i}") for i in range(7)])
    settings.INSTANTSTART_TRAINING_LOG_RETENTION_DAYS = 30
    assert store.purge(chunk=3) == 7
    remaining = dict(TrainingLogLine.objects.values_list("job__name").annotate(n=Count("id")))
    assert remaining == {"recent": 7, "live": 7}


def test_a_replay_frame_written_by_the_database_holds_exactly_the_stored_lines(cast):
    """``store.lines_frame_after`` (JSON written by PostgreSQL) parses to ``payloads_after``'s lines — quotes,
    backslashes, control characters and non-ASCII text included — page by page, with a rank filter, and empty."""
    import json

    from django.utils import timezone

    from training.logs.kubelet import PodLine, to_micros

    job = factories.training_job(factories.cluster(cast.team, "c"), "frames", state="running")
    now = to_micros(timezone.now())
    texts = ['plain', 'a "quoted" \\ path\\to', 'tab\there \x01\x1f bell', 'ünïcødé ✓ 日本', '{"json": [1, 2]}', '']
    store.append(job.pk, [PodLine(f"frames-pods-{i % 3}", i % 3, now + i * 7, texts[i % len(texts)])
                          for i in range(25)])
    for rank in (None, 1):
        seq, pages = 0, []
        while True:
            frame, last_seq, count = store.lines_frame_after(job.pk, seq, rank=rank, limit=4)
            parsed = json.loads(frame)
            assert parsed["type"] == "lines" and len(parsed["lines"]) == count
            assert parsed["lines"] == store.payloads_after(job.pk, seq, rank=rank, limit=4)
            pages.append(count)
            if count < 4:
                break
            assert last_seq == parsed["lines"][-1]["seq"]
            seq = last_seq
        assert sum(pages) == (25 if rank is None else 8)
    assert store.lines_frame_after(job.pk, 25) == ('{"type": "lines", "lines": []}', 0, 0)


def test_the_followers_summary_is_what_the_stored_points_give_at_four_statements_a_batch(cast):
    """The follower keeps the job's metrics summary in memory (``metrics.Summary``) and writes it with the batch's
    counter update: four statements a batch (there were eight), and the summary ``summarize_logs`` computes from the
    stored points — a step logged again after a restart takes the newer value, other ranks' lines do not count."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from training.logs import metrics
    from training.logs.kubelet import PodLine, to_micros
    from training.metrics import summarize_logs

    job = factories.training_job(factories.cluster(cast.team, "c"), "summary", state="running")
    summary, now = metrics.Summary(job), to_micros(timezone.now())

    def line(step: int, loss: float, rank: int = 0) -> PodLine:
        return PodLine(f"summary-pods-{rank}", rank, now + step * 10 + rank, f"step={step}, loss={loss}, "
                                                                             f"throughput={100 + step} samples/s")

    batches = [[line(1, 9.0), line(1, 9.5, rank=1), line(2, 8.0)], [line(3, 7.0), line(3, 1.0, rank=1)],
               [line(2, 8.5)], [line(3, 6.5), PodLine("summary-pods-0", 0, now + 99, "no numbers here")]]
    for batch in batches:
        with CaptureQueriesContext(connection) as queries:
            store.append(job.pk, batch, summary=summary)
        statements = [query["sql"] for query in queries.captured_queries
                      if not query["sql"].startswith(("BEGIN", "COMMIT", "SAVEPOINT", "RELEASE"))]
        assert len(statements) == 4, statements  # the row lock, the COPY, the points, the counter and summary
    stored = TrainingJob.objects.get(pk=job.pk)
    assert stored.metrics == {"throughput": 103.0, "loss": 6.5, "step": 3, "source": "logs"}
    recomputed = TrainingJob.objects.get(pk=job.pk)
    recomputed.metrics = {}
    summarize_logs(recomputed)
    assert recomputed.metrics == stored.metrics
