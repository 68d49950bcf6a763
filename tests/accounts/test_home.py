"""The dashboard as the team's home (issue 24, item 8): clusters with node and accelerator counts and health, running
and recent jobs and endpoints, operations in flight with their progress, recent activity, and what needs attention
(failed operations, groups short of instances, failed dependencies, pending approvals) — in a fixed number of
queries whatever the team holds."""

from __future__ import annotations

import html
import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from accounts import services as account_services
from clusters.models import ClusterDependency, DependencyKind, DependencyState
from config.context import Source
from inference.models import Endpoint
from operations.models import ApprovalRequest
from tests import factories
from tests.operations.helpers import fail_first_phase, start
from training.models import JobState

pytestmark = pytest.mark.django_db


def home(user, team) -> str:
    account_services.user_switch_team(actor=user, team=team, source=Source.SYSTEM)
    browser = Client()
    browser.force_login(user)
    response = browser.get(reverse("dashboard"))
    assert response.status_code == 200
    return html.unescape(response.content.decode())


def section(page: str, testid: str) -> str:
    return re.search(rf'<section [^>]*data-testid="{testid}".*?</section>', page, re.S).group(0)


def endpoint(cluster, name: str, state: str) -> Endpoint:
    return Endpoint.objects.create(
        team=cluster.team, cluster=cluster, name=name, namespace=f"team-{cluster.team.slug}", engine="vllm",
        image="vllm/vllm-openai:v0.10.1", model_source="shared", model="/mnt/shared/models/m",
        served_model_name=name, instance_group="workers", instance_type="ml.g5.8xlarge", gpus=1, port=8000,
        state=state, status_reason="pods crash" if state == "failed" else "")


def fill(team, suffix: str, cast) -> None:
    """A cluster with a short group and a failing dependency, jobs, endpoints and operations, named by ``suffix``."""
    cluster = factories.cluster(team, f"vision-{suffix}", node_count=4, gpu_count=16)
    factories.instance_group(cluster, "workers", status="InService", current_count=3, target_count=4)
    factories.instance_group(cluster, "spare", status="InService", current_count=1, target_count=1)
    ClusterDependency.objects.create(cluster=cluster, component=f"kueue-{suffix}", kind=DependencyKind.MANIFEST,
                                     observed_state=DependencyState.FAILED)
    factories.training_job(cluster, f"llama-{suffix}", metrics={"throughput": 310.5})
    factories.training_job(cluster, f"old-{suffix}", state=JobState.FAILED, status_reason="OOM",
                           finished_at=timezone.now())
    endpoint(cluster, f"qwen-{suffix}", "ready")
    endpoint(cluster, f"broken-{suffix}", "failed")
    start(cast, f"env-{suffix}", team=team)
    fail_first_phase(start(cast, f"bad-{suffix}", team=team))


def test_the_home_shows_what_runs_what_changes_and_what_needs_attention(cast):
    fill(cast.team, "a", cast)
    ApprovalRequest.objects.create(team=cast.team, requested_by=cast.operator, action="cluster.delete",
                                   method="DELETE", path="/api/v1/clusters/1", target_type="cluster", target_id="1",
                                   target_repr="vision-a", expires_at=timezone.now() + timedelta(hours=1))

    page = home(cast.admin, cast.team)
    clusters = section(page, "home-clusters")
    assert "1 cluster · 4 nodes · 16 accelerators" in clusters
    assert 'data-testid="home-health-vision-a">Unhealthy' in clusters
    jobs = section(page, "home-jobs")
    assert "llama-a" in jobs and "old-a" in jobs and "310.5" in jobs
    endpoints = section(page, "home-endpoints")
    assert "qwen-a" in endpoints and "broken-a" in endpoints
    in_flight = section(page, "home-operations")
    assert "Demo environment env-a" in in_flight and "Demo environment bad-a" not in in_flight
    assert "0/5 phases" in in_flight and "data-operation-feed" in in_flight
    attention = section(page, "home-attention")
    for needed in ("vision-a: group workers runs 3 of 4 instances", "vision-a: kueue-a is failed",
                   "Demo environment bad-a failed", "Training job old-a failed: OOM", "Endpoint broken-a is failed",
                   "1 approval request waiting for a decision"):
        assert needed in attention, needed
    assert "group spare" not in attention
    assert 'data-testid="home-activity"' in page


def test_a_quiet_team_needs_nothing(cast):
    page = home(cast.viewer, cast.team)
    assert 'data-testid="home-attention"' not in page
    assert "No clusters yet" in section(page, "home-clusters") and "Nothing in flight." in page


def test_the_home_costs_the_same_queries_for_one_or_many_of_everything(cast):
    fill(cast.team, "a", cast)
    account_services.user_switch_team(actor=cast.admin, team=cast.team, source=Source.SYSTEM)
    browser = Client()
    browser.force_login(cast.admin)
    with CaptureQueriesContext(connection) as one:
        assert browser.get(reverse("dashboard")).status_code == 200
    for suffix in ("b", "c", "d"):
        fill(cast.team, suffix, cast)
    with CaptureQueriesContext(connection) as many:
        page = browser.get(reverse("dashboard")).content.decode()
    assert "vision-d" in page
    assert len(many) == len(one) <= 30, [query["sql"] for query in many.captured_queries]
