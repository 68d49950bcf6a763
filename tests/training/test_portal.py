"""The training pages of the portal: jobs list, submit form, job page, Cancel and Resubmit, the bucket browser.

One sandbox cluster with the training operator serves the tests that submit (seconds to make); the others use
job rows written directly, since they only read.
"""

from __future__ import annotations

import re

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from cloud import aws
from clusters.models import Cluster
from clusters.shared_bucket import shared_bucket_name, team_prefix
from operations.models import Operation
from tests import factories
from tests.training.sandbox import training_cluster
from training.models import JobState, TrainingJob


def signed_in(user) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


def page_of(response) -> str:
    return response.content.decode()


def job_row(cluster: Cluster, name: str = "llama", state: str = JobState.RUNNING, **fields) -> TrainingJob:
    """A LLaMA-Factory job with the placement and recovery budget the pages show."""
    return factories.training_job(cluster, name, **{
        "state": state, "recipe": "llama-factory", "replicas": 2, "processes_per_node": 4, "instance_group": "workers",
        "instance_type": "ml.g5.12xlarge", "restarts_used": 1, "restarts_total": 3, **fields})


def test_pages_render_for_members_and_are_404_for_other_teams(cast):
    cluster = factories.cluster(cast.team, "trainers")
    job = job_row(cluster, ranks=[{"rank": 0, "pod": "llama-worker-0", "node": "hyperpod-i-1", "phase": "Running",
                                   "throughput": 310.5, "straggler": False},
                                  {"rank": 1, "pod": "llama-worker-1", "node": "hyperpod-i-2", "phase": "Running",
                                   "throughput": 80.0, "straggler": True}],
                  recoveries=[{"at": "2026-01-02T03:04:05Z", "reason": "JobHanging", "type": "JLR",
                               "pods": ["llama-worker-1"], "restart": 1, "restarts": 1, "message": "no progress"}],
                  hangs=[{"at": "2026-01-02T03:00:00Z", "reason": "JobHanging", "message": "no progress",
                          "pods": ["llama-worker-1"]}],
                  stragglers=[{"rank": 1, "pod": "llama-worker-1", "throughput": 80.0, "median": 310.0}],
                  metrics={"step": 42, "throughput": 310.5, "loss": 1.25})
    viewer = signed_in(cast.viewer)
    listing = page_of(viewer.get(reverse("training-jobs")))
    assert f'href="{reverse("training-job", args=[job.pk])}"' in listing
    assert "1/3" in listing and "310.5" in listing and "badge-job-running" in listing

    detail = viewer.get(reverse("training-job", args=[job.pk]))
    page = page_of(detail)
    assert detail.status_code == 200
    assert 'data-testid="job-hangs"' in page and 'data-testid="straggler-1"' in page
    assert "JobHanging" in page and "JLR" in page and "2 of 3 restarts left" in page
    assert f'data-socket="/ws/training-jobs/{job.pk}/logs/"' in page and 'data-testid="log-download"' in page
    assert '<option value="1">Rank 1</option>' in page
    assert 'data-testid="job-cancel"' not in page and 'data-testid="job-resubmit"' not in page
    assert 'data-testid="job-new"' not in listing

    assert viewer.get(reverse("training-job", args=[job.pk]), {"partial": "1"}).status_code == 200
    assert signed_in(cast.outsider).get(reverse("training-job", args=[job.pk])).status_code == 404
    assert f'href="{reverse("training-job", args=[job.pk])}"' not in \
        page_of(signed_in(cast.outsider).get(reverse("training-jobs")))


def test_operators_see_cancel_on_active_jobs_and_resubmit_on_finished_ones(cast):
    cluster = factories.cluster(cast.team, "trainers")
    running = job_row(cluster)
    finished = job_row(cluster, name="done", state=JobState.SUCCEEDED)
    operator = signed_in(cast.operator)
    running_page = page_of(operator.get(reverse("training-job", args=[running.pk])))
    assert 'data-testid="job-cancel"' in running_page and 'data-testid="job-resubmit"' not in running_page
    finished_page = page_of(operator.get(reverse("training-job", args=[finished.pk])))
    assert 'data-testid="job-resubmit"' in finished_page and 'data-testid="job-cancel"' not in finished_page
    assert 'data-testid="job-new"' in page_of(operator.get(reverse("training-jobs")))

    refused = operator.post(reverse("training-job-cancel", args=[finished.pk]), follow=True)
    assert 'data-error-code="training_job_finished"' in page_of(refused)
    assert signed_in(cast.viewer).post(reverse("training-job-cancel", args=[running.pk])).status_code == 403


def test_the_list_filters_by_state_and_cluster(cast):
    first, second = factories.cluster(cast.team, "trainers"), factories.cluster(cast.team, "other")
    job_row(first, name="alpha")
    job_row(second, name="beta", state=JobState.FAILED)
    viewer = signed_in(cast.viewer)
    failed = page_of(viewer.get(reverse("training-jobs"), {"state": "failed"}))
    assert ">beta<" in failed and ">alpha<" not in failed
    on_first = page_of(viewer.get(reverse("training-jobs"), {"cluster": first.pk, "partial": "1"}))
    assert ">alpha<" in on_first and ">beta<" not in on_first and "<html" not in on_first


def test_submit_shows_field_errors_then_submits_and_the_browser_lists_the_bucket(cast, sandbox):
    cluster = training_cluster(cast.team, count=1, ray=False)
    url = reverse("training-job-submit")
    operator = signed_in(cast.operator)
    form = page_of(operator.get(url, {"recipe": "llama-factory", "cluster": cluster.pk}))
    assert 'name="cfg-project"' in form and 'name="cfg-config"' in form and 'data-testid="browse-project"' in form
    assert '<option value="workers"' in form and "ml.g5.12xlarge" in form

    bad = operator.post(url, {"recipe": "llama-factory", "cluster": cluster.pk, "name": "Bad Name",
                              "cfg-project": "/etc/lf", "cfg-config": "stage: sft\n", "cfg-replicas": "0",
                              "cfg-hang_detection": "on"})
    page = page_of(bad)
    assert bad.status_code == 400
    for code in ("invalid_job_name", "path_outside_shared_bucket", "min_value"):
        assert f'data-error-code="{code}"' in page
    assert 'value="/etc/lf"' in page and "stage: sft" in page
    assert not TrainingJob.objects.exists() and not Operation.objects.exists()

    s3 = aws.client("s3", region=cluster.region)
    s3.put_object(Bucket=shared_bucket_name(cluster.region), Key=f"{team_prefix(cast.team.slug)}lf/sft.yaml", Body=b"x")
    browser = page_of(operator.get(reverse("training-shared-files", args=[cluster.pk]),
                                   {"target": "cfg-project", "path": ""}))
    assert 'data-testid="browser-folder-lf"' in browser
    inside = page_of(operator.get(reverse("training-shared-files", args=[cluster.pk]),
                                  {"target": "cfg-config_path", "path": "/mnt/shared/lf"}))
    assert 'data-fill="/mnt/shared/lf/sft.yaml"' in inside
    assert signed_in(cast.outsider).get(reverse("training-shared-files", args=[cluster.pk])).status_code == 404

    good = operator.post(url, {"recipe": "llama-factory", "cluster": cluster.pk, "name": "sft-one",
                               "cfg-project": "lf", "cfg-config_path": "lf/sft.yaml", "cfg-replicas": "1",
                               "cfg-instance_group": "workers", "cfg-hang_detection": "on",
                               "cfg-env": "EPOCHS=1", "cfg-annotations": "example.com/queue=research"})
    job = TrainingJob.objects.get()
    assert good.status_code == 302 and good["Location"] == reverse("training-job", args=[job.pk])
    assert (job.name, job.recipe, job.instance_group, job.config["env"]) == ("sft-one", "llama-factory", "workers",
                                                                           {"EPOCHS": "1"})
    assert job.operation.source == "portal" and job.config["hang_detection"] is True
    assert job.manifest["metadata"]["annotations"]["example.com/queue"] == "research"


def test_viewers_cannot_submit(cast):
    factories.cluster(cast.team, "trainers")
    viewer = signed_in(cast.viewer)
    assert "No cluster to run on" in page_of(viewer.get(reverse("training-job-submit")))
    cluster = Cluster.objects.get()
    refused = viewer.post(reverse("training-job-submit"), {"recipe": "pytorch", "cluster": cluster.pk,
                                                           "cfg-script": "train.py"})
    assert refused.status_code == 403 and not TrainingJob.objects.exists()


def test_the_training_link_opens_the_jobs_list(cast):
    page = page_of(signed_in(cast.viewer).get(reverse("dashboard")))
    assert re.search(rf'href="{reverse("training-jobs")}"', page)
    assert signed_in(cast.viewer).get("/training/")["Location"] == reverse("training-jobs")


def test_the_list_reads_a_fixed_number_of_queries(cast, django_assert_max_num_queries):
    cluster = factories.cluster(cast.team, "trainers")
    viewer = signed_in(cast.viewer)
    job_row(cluster, name="one", created_by=cast.admin)
    with CaptureQueriesContext(connection) as one:
        viewer.get(reverse("training-jobs"))
    for name in ("two", "three", "four"):
        job_row(factories.cluster(cast.team, name), name=name, created_by=cast.operator)
    with django_assert_max_num_queries(len(one)):
        viewer.get(reverse("training-jobs"))
