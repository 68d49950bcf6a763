"""Portal pages as a browser shows them (issue 24): relative times that stay true on a page left open, the cluster
page's sections as tabs, the metric charts drawn by the vendored uPlot (runs compared, hover values, zoom), and a
folder uploaded from the Browse panel straight to S3."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from cloud import aws
from clusters.shared_bucket import ensure_shared_bucket, team_prefix
from tests import factories
from tests.e2e.browser import BROWSER_MARKS
from tests.e2e.test_clusters import sign_in
from tests.e2e.test_operations import portal_url  # noqa: F401  (shared fixture)
from tests.operations.helpers import start
from training import shared_files
from training.models import JobState, MetricSource, TrainingMetric

pytestmark = [*BROWSER_MARKS, pytest.mark.django_db(transaction=True)]


def test_relative_times_move_on_while_the_page_stays_open(cast, portal_url, page: Page):  # noqa: F811
    operation = start(cast)
    sign_in(page, portal_url, "ada")
    page.clock.install(time=timezone.now() + timedelta(hours=3, minutes=5))
    page.goto(f"{portal_url}/operations/{operation.pk}/")
    started = page.locator(".subtitle time[data-ago]")
    expect(started).to_have_text("3\u00a0hours ago")
    page.clock.fast_forward("01:00:00")
    expect(started).to_have_text("4\u00a0hours ago")


def test_the_cluster_page_shows_one_section_at_a_time_and_remembers_it(cast, sandbox, portal_url, page):  # noqa: F811
    cluster = factories.cluster(cast.team, hyperpod_name="alpha", node_count=2)
    sign_in(page, portal_url, "ada")
    page.goto(f"{portal_url}/clusters/{cluster.pk}/")
    expect(page.locator("#cluster-overview")).to_be_visible()
    expect(page.locator("#groups")).to_be_hidden()
    page.locator("[data-section-tabs]").get_by_role("link", name="Instance groups").click()
    expect(page.locator("#groups")).to_be_visible()
    expect(page.locator("#cluster-overview")).to_be_hidden()
    assert page.url.endswith("#tab-groups")
    page.goto(f"{portal_url}/clusters/{cluster.pk}/")  # as a form's redirect comes back: the tab last chosen
    expect(page.locator("#groups")).to_be_visible()
    page.goto(f"{portal_url}/clusters/{cluster.pk}/#storage")  # an anchor inside a tab opens that tab
    expect(page.locator("#storage")).to_be_visible()
    expect(page.locator("#groups")).to_be_hidden()
    assert page.evaluate("document.documentElement.scrollHeight") < 2000


def test_the_metric_chart_compares_runs_shows_values_on_hover_and_zooms(cast, portal_url, page):  # noqa: F811
    cluster = factories.cluster(cast.team, "trainers")
    first = factories.training_job(cluster, "llama", state=JobState.FAILED, finished_at=timezone.now())
    again = factories.training_job(cluster, "llama-r1", state=JobState.SUCCEEDED, resubmitted_from=first,
                                   finished_at=timezone.now())
    for job, offset in ((first, 0.3), (again, 0.0)):
        TrainingMetric.objects.bulk_create(
            TrainingMetric(job=job, name="loss", step=step, value=2 - step * 0.1 + offset, source=MetricSource.LOGS,
                           at=timezone.now()) for step in range(7))
    sign_in(page, portal_url, "ada")
    page.goto(f"{portal_url}/training/jobs/{again.pk}/")
    plot = page.get_by_test_id("metric-plot-loss")
    expect(plot).to_be_visible()
    expect(plot.locator(".u-legend")).to_contain_text("llama-r1 (this run)")
    expect(plot.locator(".u-legend")).to_contain_text("llama")
    expect(page.locator("figure[data-metric=loss] svg")).to_be_hidden()

    over = plot.locator(".u-over")
    box = over.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    expect(plot.locator(".u-legend .u-series").nth(1).locator(".u-value")).not_to_have_text("--")
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + box["height"] / 2)
    page.mouse.move(box["x"] + box["width"] * 0.9, box["y"] + box["height"] / 2)
    page.mouse.up()
    low = page.evaluate("document.querySelector('figure[data-metric=loss]').uplot.scales.x.min")
    assert low > 0.5, "dragging across zooms in"


def test_a_folder_uploads_from_the_browse_panel_with_progress(cast, sandbox, portal_url, page, tmp_path,  # noqa: F811
                                                              monkeypatch):
    """Small files by presigned POST, one larger than a part in signed parts — through the CORS rule the product
    gives the bucket for the portal's origin (the sandbox, as S3, refuses a browser without one)."""
    monkeypatch.setattr(shared_files, "PART_BYTES", shared_files.MIN_PART_BYTES)
    cluster = factories.cluster(cast.team, "trainers")
    bucket = ensure_shared_bucket(aws.client("s3", region=cluster.region), cluster.region)
    folder = tmp_path / "proj"
    (folder / "src").mkdir(parents=True)
    (folder / "train.py").write_text("print('train')\n")
    (folder / "src" / "model.py").write_text("MODEL = 1\n")
    weights = bytes(range(256)) * (shared_files.MIN_PART_BYTES // 256 + 1)
    (folder / "weights.bin").write_bytes(weights)
    sign_in(page, portal_url, "otto")
    page.goto(f"{portal_url}/training/jobs/new/?recipe=pytorch&cluster={cluster.pk}")
    page.get_by_test_id("browse-script").click()
    expect(page.get_by_test_id("shared-browser")).to_be_visible()
    page.get_by_test_id("browser-upload-folder").set_input_files(folder)
    expect(page.get_by_test_id("upload-status")).to_have_text("3 files uploaded.", timeout=30_000)
    expect(page.get_by_test_id("browser-folder-proj")).to_be_visible()
    s3 = aws.client("s3", region=cluster.region)
    listed = s3.list_objects_v2(Bucket=bucket, Prefix=team_prefix(cast.team.slug))
    assert sorted(item["Key"].removeprefix(team_prefix(cast.team.slug)) for item in listed["Contents"]) == \
        ["proj/src/model.py", "proj/train.py", "proj/weights.bin"]
    stored = s3.get_object(Bucket=bucket, Key=f"{team_prefix(cast.team.slug)}proj/weights.bin")["Body"].read()
    assert stored == weights
    assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
