"""What the portal shows is current and does not contradict itself (issue 24, item 5): a phase's status recorded at
submit gives way to its newer provider status, recovery times read as times, a standard group of a type without EFA
is not called "EFA with ENA", and the demo form's fields hold values rather than look-alike placeholders."""

from __future__ import annotations

import html
import re

import pytest
from django.test import Client
from django.urls import reverse

from operations.models import OperationPhase
from tests import factories
from tests.operations.helpers import start

pytestmark = pytest.mark.django_db


def page_for(user, url: str) -> str:
    browser = Client()
    browser.force_login(user)
    response = browser.get(url)
    assert response.status_code == 200
    return html.unescape(response.content.decode())


def test_a_phase_shows_its_newer_provider_status_not_the_one_recorded_at_submit(cast):
    operation = start(cast)
    OperationPhase.objects.filter(operation=operation, slug="cluster").update(
        reference={"name": "env", "status": "CREATING"}, status_reason="ACTIVE")
    OperationPhase.objects.filter(operation=operation, slug="bucket").update(reference={"status": "AVAILABLE"})

    page = page_for(cast.viewer, reverse("operation-detail", args=[operation.pk]))
    cluster_phase = re.search(r'data-phase="cluster".*?</li>', page, re.S).group(0)
    assert "ACTIVE" in cluster_phase and "CREATING" not in cluster_phase
    assert "<dt>name</dt>" in cluster_phase
    bucket_phase = re.search(r'data-phase="bucket".*?</li>', page, re.S).group(0)
    assert "AVAILABLE" in bucket_phase


def test_recoveries_show_human_times_in_two_columns(cast):
    job = factories.training_job(factories.cluster(cast.team), restarts_used=1, restarts_total=3, recoveries=[
        {"at": "2026-01-02T03:04:05.123456+00:00", "reason": "JobHanging", "type": "JLR",
         "pods": ["llama-worker-1"], "message": "no progress"}])

    page = page_for(cast.viewer, reverse("training-job", args=[job.pk]))
    table = re.search(r'<table class="table" data-testid="recoveries">.*?</table>', page, re.S).group(0)
    assert table.count("<th>") == 2
    shown = re.sub(r"<[^>]+>", " ", table)
    assert "Jan 2, 03:04:05" in shown and "123456" not in shown and "2026-01-02T" not in shown
    assert "llama-worker-1" in shown and "JLR" in shown and "no progress" in shown


def test_a_standard_group_of_a_type_without_efa_is_not_called_efa(cast, sandbox):
    cluster = factories.cluster(cast.team)
    factories.instance_group(cluster, "small", instance_type="ml.g5.2xlarge")
    factories.instance_group(cluster, "big", instance_type="ml.g5.8xlarge")

    page = page_for(cast.viewer, reverse("cluster-detail", args=[cluster.pk]))
    small = re.search(r'<tr data-group="small">.*?</tr>', page, re.S).group(0)
    big = re.search(r'<tr data-group="big">.*?</tr>', page, re.S).group(0)
    assert "EFA with ENA" not in small and "no EFA" in small
    assert "Standard (EFA with ENA)" in big


def test_the_demo_form_has_no_placeholder_that_looks_like_a_default(cast, settings):
    settings.OPERATIONS_DEMO = True
    page = page_for(cast.operator, reverse("operations"))
    name = re.search(r'<input[^>]*id="id_demo_name"[^>]*>', page).group(0)
    region = re.search(r'<input[^>]*id="id_demo_region"[^>]*>', page).group(0)
    assert "placeholder" not in name and 'value=""' in name
    assert "placeholder" not in region and 'value="us-west-2"' in region
