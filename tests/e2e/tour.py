"""The screenshot tour (issue 24): every portal page in the sandbox, as a newcomer meets it, written to
``docs/screenshots/<nn>-<page>.png``. Run it with ``make tour`` (it is not part of ``make test``: it takes a few
minutes, mostly building one real sandbox cluster). Each page must answer below 400 with no JavaScript error, and
every dialog it opens must fit its box; the pictures are what the README links.

The world it shows: team Vision with an active cluster built by the whole create pipeline (its instance group,
nodes, storage), a deleted cluster kept as history, training jobs (one running with metrics and a recovery, one
resubmitted), an inference endpoint, operations (one failed), a pending approval request.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone
from playwright.sync_api import Page

from clusters.models import ClusterState
from inference.models import Endpoint
from operations.models import ApprovalRequest, Operation
from tests import factories
from tests.clusters.conftest import live_cluster  # noqa: F401  (shared fixture)
from tests.e2e.browser import BROWSER_MARKS, assert_open_dialogs_fit
from tests.e2e.test_clusters import sign_in
from tests.e2e.test_operations import portal_url  # noqa: F401  (shared fixture)
from tests.operations.conftest import drive, fast_polling  # noqa: F401  (what live_cluster uses)
from tests.operations.helpers import fail_first_phase, start
from training.models import JobState, MetricSource, TrainingMetric

SHOTS = Path(settings.BASE_DIR) / "docs" / "screenshots"
WIDTH, HEIGHT = 1360, 900

pytestmark = [*BROWSER_MARKS, pytest.mark.django_db(transaction=True)]


def world(cast, cluster) -> dict[str, int]:
    """The rows the pages show besides the live cluster; their ids by name."""
    gone = factories.cluster(cast.team, "retired", state=ClusterState.DELETED, deleted_at=timezone.now())
    first = factories.training_job(cluster, "llama-sft", state=JobState.FAILED, status_reason="NCCL timeout",
                                   finished_at=timezone.now(), instance_group="accelerated",
                                   instance_type="ml.g5.8xlarge", replicas=2, restarts_total=3, restarts_used=3)
    running = factories.training_job(
        cluster, "llama-sft-r1", resubmitted_from=first, instance_group="accelerated", instance_type="ml.g5.8xlarge",
        replicas=2, processes_per_node=1, restarts_total=3, restarts_used=1, started_at=timezone.now(),
        metrics={"step": 60, "throughput": 312.4, "loss": 1.41},
        recoveries=[{"at": (timezone.now() - timedelta(minutes=7)).isoformat(), "reason": "JobHanging",
                     "type": "PLR", "pods": ["llama-sft-r1-worker-1"], "message": "no progress for 900 s"}])
    for job, offset in ((first, 0.25), (running, 0.0)):
        TrainingMetric.objects.bulk_create(
            TrainingMetric(job=job, name=name, step=step, value=value, source=MetricSource.LOGS, at=timezone.now())
            for step in range(0, 61, 5)
            for name, value in (("loss", 2.4 - step * 0.016 + offset), ("throughput", 280 + step * 0.5 - offset * 40)))
    Endpoint.objects.create(
        team=cast.team, cluster=cluster, name="qwen-chat", namespace=f"team-{cast.team.slug}", engine="vllm",
        image="vllm/vllm-openai:v0.10.1", model_source="shared", model="/mnt/shared/models/qwen",
        served_model_name="qwen-chat", instance_group="accelerated", instance_type="ml.g5.8xlarge", gpus=1,
        port=8000, state="ready", ready_replicas=1)
    failed = fail_first_phase(start(cast, "lab"))
    ApprovalRequest.objects.create(team=cast.team, requested_by=cast.operator, action="cluster.delete",
                                   method="DELETE", path=f"/api/v1/clusters/{cluster.pk}", target_type="cluster",
                                   target_id=str(cluster.pk), target_repr=cluster.name,
                                   expires_at=timezone.now() + timedelta(hours=4))
    return {"gone": gone.pk, "job": running.pk, "failed": failed.pk,
            "create": Operation.objects.filter(kind="cluster.create").values_list("pk", flat=True).first()}


def pages(cluster_id: int, ids: dict[str, int]) -> list[tuple[str, str]]:
    """``(name, path)`` of every page, in the order a newcomer meets them (``#tab-…`` picks a cluster tab)."""
    cluster = f"/clusters/{cluster_id}/"
    return [
        ("dashboard", "/"), ("clusters", "/clusters/"), ("clusters-deleted", "/clusters/?show=deleted"),
        ("cluster-wizard", "/clusters/new/"), ("cluster-import", "/clusters/import/"),
        ("cluster-overview", cluster + "#tab-overview"), ("cluster-groups", cluster + "#tab-groups"),
        ("cluster-nodes-tab", cluster + "#tab-nodes"), ("cluster-features", cluster + "#tab-features"),
        ("cluster-storage", cluster + "#tab-storage"), ("cluster-operations", cluster + "#tab-operations"),
        ("cluster-add-group", cluster + "groups/new/"), ("cluster-nodes", cluster + "nodes/"),
        ("cluster-delete", cluster + "delete/"), ("cluster-deleted", f"/clusters/{ids['gone']}/"),
        ("training-jobs", "/training/jobs/"), ("training-submit", f"/training/jobs/new/?recipe=pytorch&cluster="
                                                                  f"{cluster_id}"),
        ("training-job", f"/training/jobs/{ids['job']}/"), ("training-mlflow", "/training/mlflow/"),
        ("inference-endpoints", "/inference/endpoints/"), ("inference-models", "/inference/models/"),
        ("inference-pools", "/inference/pools/"),
        ("operations", "/operations/"), ("operation-create", f"/operations/{ids['create']}/"),
        ("operation-failed", f"/operations/{ids['failed']}/"), ("approvals", "/approvals/"),
        ("audit", "/audit/"), ("teams", "/teams/"), ("settings", "/settings/"), ("tokens", "/settings/tokens/"),
        ("api-docs", "/api/docs/"),
    ]


def shoot(page: Page, name: str, number: int) -> None:
    page.wait_for_timeout(600)  # live parts connect, htmx panels load
    page.screenshot(path=str(SHOTS / f"{number:02d}-{name}.png"), full_page=True)


def test_the_tour(cast, sandbox, portal_url, page: Page, live_cluster):  # noqa: F811
    SHOTS.mkdir(parents=True, exist_ok=True)
    cluster = live_cluster()
    ids = world(cast, cluster)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(f"{page.url}: {error}"))
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})

    page.goto(portal_url + "/login/")
    shoot(page, "login", 1)
    sign_in(page, portal_url, "ada")
    for number, (name, path) in enumerate(pages(cluster.pk, ids), start=2):
        response = page.goto(portal_url + path)
        if response is not None:  # None: only the #tab- changed, the same document shows another tab
            assert response.status < 400, (path, response.status)
        shoot(page, name, number)
        if name == "cluster-groups":
            page.locator("[data-group-dialog]").first.click()
            assert_open_dialogs_fit(page)
            shoot(page, "cluster-group-dialog", number)
            page.locator("dialog[open] [data-dialog-close]").click()
    assert not errors, errors
