"""A training job from the portal in a real browser, against the sandbox: the user picks LLaMA-Factory, browses the
shared bucket for the project folder, passes the sandbox's run annotations (40 short steps) in the annotations
field and submits. The job's operation (driven in a thread, as the Celery task would) runs it; the log follower
(``follow_job`` in a thread, as ``manage.py follow_training_logs`` would) stores its lines, which stream into the
page over the WebSocket. A reload mid-stream resumes from the last seq the page kept: at the end the page shows
every stored seq once, consecutively, and "Ended · succeeded"."""

from __future__ import annotations

import re
import threading

import pytest
from django.db import connection
from playwright.sync_api import Page, expect

from cloud import aws
from clusters.shared_bucket import shared_bucket_name, team_prefix
from tests.e2e.browser import BROWSER_MARKS
from tests.e2e.test_clusters import sign_in
from tests.e2e.test_operations import driver, portal_url  # noqa: F401  (shared fixtures)
from tests.training.sandbox import training_cluster
from training.logs.follower import follow_job
from training.models import TrainingJob, TrainingLogLine

pytestmark = [*BROWSER_MARKS, pytest.mark.django_db(transaction=True)]

SANDBOX = "sandbox.instantstart.dev/"
#: 40 steps of 150 nominal seconds at the e2e sandbox clock (1/1000): about 6 s of streaming, 2 lines per step.
RUN = {SANDBOX + "steps": "40", SANDBOX + "step-seconds": "150", SANDBOX + "lines-per-step": "2"}
CONFIG = "model_name_or_path: Qwen/Qwen2.5-0.5B-Instruct\nstage: sft\nfinetuning_type: lora\n"


class Follower:
    """``follow_job`` on a thread of its own (the runner's part)."""

    def __init__(self, job_id: int):
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(job_id,), daemon=True)
        self.thread.start()

    def _run(self, job_id: int) -> None:
        try:
            follow_job(job_id, stop=self.stop, drain_seconds=5.0, discover_seconds=0.2)
        except BaseException as error:  # reported by finish()
            self.error = error
        finally:
            connection.close()

    def finish(self) -> None:
        self.thread.join(timeout=30)
        self.stop.set()
        assert not self.thread.is_alive(), "the log follower did not finish"
        if self.error is not None:
            raise self.error


def shown_seqs(page: Page) -> list[int]:
    return [int(seq) for seq in page.locator("[data-log-lines] .log-line").evaluate_all(
        "lines => lines.map(line => line.dataset.seq)")]


def submit_llama_factory(page: Page, portal_url: str, cluster) -> TrainingJob:  # noqa: F811
    page.goto(f"{portal_url}/training/jobs/")
    page.get_by_test_id("job-new").click()
    page.get_by_test_id("recipe-llama-factory").click()
    expect(page.get_by_role("heading", name="LLaMA-Factory")).to_be_visible()
    page.get_by_label("Job name").fill("sft-portal")
    page.get_by_test_id("browse-project").click()
    page.get_by_test_id("browser-folder-lf").click()
    expect(page.get_by_test_id("browser-path")).to_have_text("/mnt/shared/lf")
    page.get_by_test_id("browser-use-folder").click()
    expect(page.locator("#id_cfg-project")).to_have_value("/mnt/shared/lf")
    page.locator("#id_cfg-config").fill(CONFIG)
    page.locator("#id_cfg-instance_group").select_option("workers")
    page.locator("#id_cfg-annotations").fill("\n".join(f"{key}={value}" for key, value in RUN.items()))
    page.get_by_text("Recovery budget, elastic training and hang detection").click()
    page.locator("#id_cfg-hang_detection").uncheck()
    page.get_by_test_id("job-submit").click()
    expect(page).to_have_url(re.compile(r"/training/jobs/\d+/$"))
    job = TrainingJob.objects.get(pk=int(re.search(r"/training/jobs/(\d+)/", page.url).group(1)))
    assert (job.cluster_id, job.recipe, job.config["project"], job.config["hang_detection"]) == \
        (cluster.pk, "llama-factory", "/mnt/shared/lf", False)
    assert job.manifest["metadata"]["annotations"].items() >= RUN.items()
    return job


def test_a_portal_job_streams_its_log_and_a_reload_resumes_without_loss_or_duplicates(
        cast, sandbox, driver, portal_url, page):  # noqa: F811
    cluster = training_cluster(cast.team, count=1, ray=False)
    aws.client("s3", region=cluster.region).put_object(
        Bucket=shared_bucket_name(cluster.region), Key=f"{team_prefix(cast.team.slug)}lf/train.yaml", Body=b"x")
    sign_in(page, portal_url, "otto")
    job = submit_llama_factory(page, portal_url, cluster)
    expect(page.get_by_text("Submitted sft-portal (llama-factory)")).to_be_visible()

    driver.start(job.operation_id)
    follower = Follower(job.pk)

    expect(page.get_by_test_id("log-status")).to_have_text("Live")
    lines = page.locator("[data-log-lines] .log-line")
    expect(lines.nth(11)).to_be_attached(timeout=30_000)
    before = shown_seqs(page)
    assert before == list(range(1, len(before) + 1))
    sockets: list[str] = []
    page.on("websocket", lambda socket: sockets.append(socket.url))
    page.reload()
    expect(page.get_by_test_id("job-log")).to_have_attribute("data-ended", "succeeded", timeout=60_000)
    expect(page.get_by_test_id("log-status")).to_have_text("Ended · succeeded")
    driver.wait()
    follower.finish()

    stored = list(TrainingLogLine.objects.filter(job=job).order_by("seq").values_list("seq", flat=True))
    assert stored[-1] > before[-1], "the reload happened mid-stream"
    resumed = int(re.search(r"after_seq=(\d+)", next(url for url in sockets if "/logs/" in url)).group(1))
    assert resumed >= before[-1], "the reloaded page resumed after the seq it had kept"
    assert shown_seqs(page) == stored, "every line once, in order, across the reload"
    expect(page.get_by_test_id("job-state")).to_have_text("Succeeded", timeout=15_000)
    expect(page.get_by_test_id("job-resubmit")).to_be_visible()
