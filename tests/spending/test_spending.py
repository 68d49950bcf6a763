"""Spend and budgets against the sandbox: one HyperPod cluster (one ``ml.p5.48xlarge`` node, $63.296/hour in the
sandbox's price list) built once for the module; each test gets its own cluster row of its own team tracking it.

The meter records the node's lifetime from its ``LaunchTime``; the team's spend page, REST and CSV show its
node-hours and cost for the day; looks are idempotent and a deleted cluster's nodes are closed; a budget threshold
crossed while metering is recorded once, notifies (the team's feed and a subscription) and, when the budget says so,
refuses a new instance group with ``budget_exceeded`` on REST and MCP until an admin raises it.
"""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal

import pytest
from django.core import mail
from django.test import Client

from accounts.models import AuditEvent, Team
from clusters.models import Cluster, ClusterState
from mcp_server.testing import call_tool
from notifications.models import Subscription
from spending import metering
from spending.models import BudgetAlert, NodeLifetime
from tests import factories
from tests.clusters.sandbox import instant_clock
from tests.conftest import SandboxHandle, sandbox_in_use
from tests.notifications.receiver import drain

INSTANCE_TYPE = "ml.p5.48xlarge"


@pytest.fixture(scope="module")
def shared_sandbox(sandbox_world) -> Iterator[SandboxHandle]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield from sandbox_in_use(sandbox_world, monkeypatch)


@pytest.fixture(scope="module")
def hyperpod(shared_sandbox, django_db_setup, django_db_blocker) -> dict:
    """The sandbox HyperPod cluster (one running node in group ``workers``), built once; its rows deleted again."""
    from tests import matrix  # noqa: F401  (loads tests.matrix_nodes after the names it builds on)
    from tests.matrix_nodes import sandbox_nodes_cluster

    with django_db_blocker.unblock(), instant_clock():
        builder = Team.objects.create(name="Spend builder", slug="spend-builder")
        built = sandbox_nodes_cluster(builder, name="spend", groups={"workers": 1}, instance_type=INSTANCE_TYPE,
                                      kube=False)
        facts = {"eks_name": built.eks_name, "eks_arn": built.eks_arn, "hyperpod_name": built.hyperpod_name,
                 "hyperpod_arn": built.hyperpod_arn}
        Cluster.objects.filter(team=builder).delete()
        builder.delete()
    return facts


@pytest.fixture
def cluster(cast, hyperpod) -> Cluster:
    return factories.cluster(cast.team, "spend", **hyperpod)


def _lines(body: dict) -> list[tuple]:
    return [(line["cluster"]["name"], line["instance_type"], line["capacity_type"], line["nodes"], line["basis"])
            for line in body["lines"]]


def test_a_teams_spend_page_shows_node_hours_and_cost_for_the_day(cast, api, cluster, make_team):
    assert metering.meter(cluster)
    lifetime = NodeLifetime.objects.get(cluster=cluster)
    assert (lifetime.instance_group, lifetime.instance_type, lifetime.capacity_type, lifetime.terminated_at) == (
        "workers", INSTANCE_TYPE, "on-demand", None)
    assert lifetime.team_id == cast.team.pk and lifetime.launched_at < lifetime.last_seen_at

    body = api(cast.viewer).get(f"/api/v1/teams/{cast.team.pk}/spend").json()
    assert body["period"] == "day" and _lines(body) == [("spend", INSTANCE_TYPE, "on-demand", 1, "on-demand")]
    line = body["lines"][0]
    assert Decimal(line["usd_per_hour"]) == Decimal("63.296")
    assert Decimal(line["node_hours"]) > 0 and Decimal(line["usd"]) > 0
    assert Decimal(body["usd"]) == Decimal(line["usd"]) and body["unpriced_node_hours"] == "0.000000"
    month = api(cast.viewer).get(f"/api/v1/teams/{cast.team.pk}/spend", period="month",
                                 cluster_id=cluster.pk).json()
    assert _lines(month) == _lines(body) and sum(Decimal(day["node_hours"]) for day in month["days"]) > 0

    export = api(cast.viewer).get(f"/api/v1/teams/{cast.team.pk}/spend/export", period="week")
    assert export.status_code == 200 and export["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(export.content.decode())))
    assert [(row["cluster"], row["instance_type"], row["basis"]) for row in rows] == [
        ("spend", INSTANCE_TYPE, "on-demand")]

    theirs = factories.cluster(make_team("Speech two"), "theirs")
    refused = api(cast.viewer).get(f"/api/v1/teams/{cast.team.pk}/spend", cluster_id=theirs.pk)
    assert refused.status_code == 404

    browser = Client()
    browser.force_login(cast.viewer)
    page = browser.get("/spending/")
    assert page.status_code == 200
    text = page.content.decode()
    assert INSTANCE_TYPE in text and 'data-testid="spend-node-hours"' in text and "$63.30/hour" in text
    assert 'data-testid="budget-none"' in text and 'action="/spending/budget/"' not in text  # viewers do not set it
    month_page = browser.get("/spending/", {"period": "month", "cluster_id": cluster.pk})
    assert month_page.status_code == 200 and "<th>Day</th>" in month_page.content.decode()


def test_looks_are_idempotent_and_a_deleted_clusters_nodes_are_closed(cluster):
    assert metering.meter(cluster)
    lifetime = NodeLifetime.objects.get(cluster=cluster)
    listed = metering._listed(cluster)
    assert not metering.record(cluster, listed, lifetime.last_seen_at - timedelta(seconds=1))  # a slow worker's
    assert not metering.record(cluster, listed, lifetime.last_seen_at)  # the same look again
    assert metering.meter(cluster)
    assert NodeLifetime.objects.filter(cluster=cluster).count() == 1

    seen = NodeLifetime.objects.get(cluster=cluster).last_seen_at
    Cluster.objects.filter(pk=cluster.pk).update(state=ClusterState.DELETED)
    assert metering.meter_all() >= 1
    closed = NodeLifetime.objects.get(cluster=cluster)
    assert closed.terminated_at is not None and seen <= closed.terminated_at <= seen + metering.interval()
    assert metering.meter_all() >= 0 and NodeLifetime.objects.get(cluster=cluster).terminated_at == closed.terminated_at
    assert cluster not in metering.clusters_to_meter()


def test_a_budget_threshold_notifies_once_and_refuses_new_capacity(cast, api, token_for, cluster,
                                                                   django_capture_on_commit_callbacks):
    Subscription.objects.create(team=cast.team, name="finance", channel="email", email="finance@example.com",
                                event_types=["budget.threshold"])
    budget = {"amount_usd": "0.01", "thresholds": [50, 100], "refuse_new_capacity": True}
    answer = api(cast.admin).request("PUT", f"/api/v1/teams/{cast.team.pk}/budget", budget)
    assert answer.status_code == 200, answer.content
    assert answer.json()["budget"]["thresholds"] == [50, 100] and answer.json()["thresholds_crossed"] == []

    deadline = time.monotonic() + 10  # $0.01 at $63.296/hour: reached 0.57 s after the node's launch
    while not BudgetAlert.objects.filter(team=cast.team, threshold=100).exists():
        assert time.monotonic() < deadline, "the budget's thresholds were not crossed"
        with django_capture_on_commit_callbacks(execute=True):
            metering.meter_all()
        time.sleep(0.05)
    with django_capture_on_commit_callbacks(execute=True):
        metering.meter_all()  # crossed already: nothing more
    assert sorted(AuditEvent.objects.filter(team=cast.team, action="budget.threshold")
                  .values_list("after__threshold", flat=True)) == [50, 100]
    drain()
    assert len(mail.outbox) == 2 and all(message.to == ["finance@example.com"] for message in mail.outbox)
    assert all("budget for" in message.subject for message in mail.outbox)
    standing = api(cast.viewer).get(f"/api/v1/teams/{cast.team.pk}/budget").json()
    assert standing["thresholds_crossed"] == [50, 100] and standing["refusing_new_capacity"] is True
    browser = Client()
    browser.force_login(cast.admin)
    page = browser.get("/spending/").content.decode()
    assert 'data-testid="budget-refusing"' in page and 'action="/spending/budget/"' in page
    assert "new capacity is refused until an admin raises it" in browser.get("/").content.decode()  # the home

    group = {"name": "more", "instance_type": INSTANCE_TYPE, "instance_count": 1}
    secret = token_for(cast.admin)
    rest = api(cast.admin).post(f"/api/v1/clusters/{cluster.pk}/instance-groups", group)
    assert rest.status_code == 409 and rest.json()["code"] == "budget_exceeded"
    is_error, body = call_tool(secret, "add_instance_group", {"cluster_id": cluster.pk, **group})
    assert is_error and (body["code"], body["fields"]) == ("budget_exceeded", {})  # its message: the spend by then
    portal = browser.post(f"/clusters/{cluster.pk}/groups/new/", group)
    assert portal.status_code == 409 and 'data-error-code="budget_exceeded"' in portal.content.decode()

    raised = api(cast.admin).request("PUT", f"/api/v1/teams/{cast.team.pk}/budget", {**budget, "amount_usd": "1000"})
    assert raised.json()["refusing_new_capacity"] is False
