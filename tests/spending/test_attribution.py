"""Spend attributed by task governance, against the sandbox with the real clients: two teams share one governed
cluster (two ``ml.g5.12xlarge`` nodes, 4 GPUs each), each with a compute quota of one node. Team B's admitted
workload holds 4 of the 8 GPUs; after two looks of the meter, B's spend (page, REST, CSV, MCP, budget) shows half of
the node-hours between them on the owner's cluster, named, the owner carries the rest, and the two add up to the
cluster's node-hours. A cluster whose Kueue cannot be read meters everything to its owner.
"""

from __future__ import annotations

import csv
import io
import logging
import time
from decimal import Decimal

import pytest
from django.test import Client
from django.utils import timezone
from kubernetes import client as k8s

from accounts.models import Membership, Role
from cloud import kube
from governance import names
from mcp_server.testing import call_tool
from spending import metering
from spending.budgets import this_month
from spending.models import ClusterMeter, NodeLifetime, UsageShare
from spending.spend import DAY, month_spend, spend_of, team_spend, window
from tests import factories
from tests.governance.test_governance import run
from tests.training.sandbox import training_cluster

INSTANCE_TYPE = "ml.g5.12xlarge"
#: Hours and dollars are Decimals divided by 3600: sums agree to far below a microsecond or a cent.
EPSILON = Decimal("1e-12")


def _kueue_holds_gpus(cluster, team, gpus: str, timeout: float = 20.0) -> None:
    """Wait until the team's ClusterQueue reports ``gpus`` GPUs in use."""
    custom = k8s.CustomObjectsApi(kube.api_client(cluster.eks_name, region=cluster.region))
    deadline = time.monotonic() + timeout
    while True:
        queue = custom.get_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "clusterqueues",
                                                 names.cluster_queue(team))
        usage = {(flavor["name"], item["name"]): item["total"]
                 for flavor in (queue.get("status") or {}).get("flavorsUsage") or [] for item in flavor["resources"]}
        if usage.get((INSTANCE_TYPE, "nvidia.com/gpu")) == gpus:
            return
        assert time.monotonic() < deadline, usage
        time.sleep(0.05)


def _hours(spend) -> Decimal:
    return sum((line.node_hours for line in spend.lines), Decimal(0))


@pytest.mark.django_db(transaction=True)
def test_a_teams_workloads_on_another_teams_cluster_are_its_spend(api, cast, make_team, make_user, sandbox, drive,
                                                                  token_for, caplog):
    cluster = training_cluster(cast.team, instance_type=INSTANCE_TYPE, count=2, operator=False, ray=False)
    admin = api(cast.admin)
    run(drive, admin.patch(f"/api/v1/clusters/{cluster.pk}/features", {"task_governance": {"enabled": True}}))
    other = make_team("Robotics")
    for team in (cast.team, other):
        run(drive, admin.post("/api/v1/compute-quotas", {
            "cluster": cluster.pk, "team": team.pk, "strategy": "LendAndBorrow", "borrow_limit": 100,
            "resources": [{"instance_type": INSTANCE_TYPE, "count": 1}]}))
    namespace = names.team_namespace(other)
    apps = k8s.AppsV1Api(kube.api_client(cluster.eks_name, region=cluster.region))
    apps.create_namespaced_deployment(namespace, {
        "metadata": {"name": "trainer", "labels": {names.QUEUE_LABEL: names.local_queue(other)}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "trainer"}}, "template": {
            "metadata": {"labels": {"app": "trainer"}},
            "spec": {"containers": [{"name": "main", "image": "trainer:1", "resources": {
                "requests": {"cpu": "1", "nvidia.com/gpu": "4"}, "limits": {"nvidia.com/gpu": "4"}}}]}}}})
    _kueue_holds_gpus(cluster, other, "4")

    assert metering.meter(cluster)
    assert ClusterMeter.objects.get(cluster=cluster).shares == {str(other.pk): {INSTANCE_TYPE: "0.500000"}}
    first = ClusterMeter.objects.get(cluster=cluster).looked_at
    time.sleep(0.2)
    assert metering.meter(cluster)
    second = ClusterMeter.objects.get(cluster=cluster).looked_at
    assert not metering.record(cluster, metering._listed(cluster), second)  # the same look again: nothing more
    [used] = UsageShare.objects.filter(cluster=cluster)
    expected = Decimal(str((second - first).total_seconds())) * 2 / 2  # half of two nodes
    assert (used.owner_id, used.team_id, used.share, used.nodes, used.start, used.end) == (
        cast.team.pk, other.pk, Decimal("0.5"), 2, first, second)
    assert abs(used.node_seconds - expected) < Decimal("0.001")

    now = timezone.now()
    span = window(DAY, now.date())
    lifetimes = NodeLifetime.objects.filter(cluster=cluster)
    everything = spend_of(lifetimes, span, now=now)
    owners, theirs = team_spend(cast.team.pk, span, now=now), team_spend(other.pk, span, now=now)
    [line] = theirs.lines
    assert (line.cluster_id, line.cluster_name, line.attribution, line.nodes) == (
        cluster.pk, cluster.name, "workloads", 2)
    assert abs(line.node_hours - used.node_seconds / 3600) < EPSILON
    assert line.usd == line.node_hours * line.usd_per_hour > 0
    assert abs(_hours(owners) + _hours(theirs) - _hours(everything)) < EPSILON and _hours(owners) > _hours(theirs)
    assert abs(owners.usd + theirs.usd - everything.usd) < EPSILON
    assert abs(sum(day.node_hours for day in theirs.days) - line.node_hours) < EPSILON
    assert month_spend(other.pk, this_month(now), now=now) == theirs.usd  # what B's budget counts

    member = make_user()
    Membership.objects.create(team=other, user=member, role=Role.VIEWER)
    body = api(member).get(f"/api/v1/teams/{other.pk}/spend").json()
    [rest] = body["lines"]
    assert (rest["cluster"], rest["attribution"], rest["instance_type"]) == (
        {"id": cluster.pk, "name": cluster.name}, "workloads", INSTANCE_TYPE)
    assert Decimal(rest["node_hours"]) > 0 and Decimal(body["usd"]) > 0
    one = api(member).get(f"/api/v1/teams/{other.pk}/spend", cluster_id=cluster.pk).json()
    assert [item["attribution"] for item in one["lines"]] == ["workloads"]
    export = api(member).get(f"/api/v1/teams/{other.pk}/spend/export")
    [row] = list(csv.DictReader(io.StringIO(export.content.decode())))
    assert (row["cluster"], row["attribution"]) == (cluster.name, "workloads")
    is_error, tool = call_tool(token_for(member), "get_team_spend", {"team_id": other.pk})
    assert not is_error and tool["lines"][0]["attribution"] == "workloads"
    assert Decimal(api(member).get(f"/api/v1/teams/{other.pk}/budget").json()["spent_usd"]) > 0
    owner_body = api(cast.viewer).get(f"/api/v1/teams/{cast.team.pk}/spend").json()
    assert [item["attribution"] for item in owner_body["lines"]] == ["owner"]
    browser = Client()
    browser.force_login(member)
    page = browser.get("/spending/").content.decode()
    assert 'data-testid="spend-workloads"' in page and cluster.name in page
    filtered = browser.get("/spending/", {"cluster_id": cluster.pk}).content.decode()
    assert f'value="{cluster.pk}" selected>{cluster.name} (your workloads)' in filtered
    assert 'data-testid="spend-workloads"' in filtered

    # the same nodes through a cluster row whose EKS cluster is gone: Kueue cannot be read, the owner keeps it all
    unreachable = factories.cluster(cast.team, "unreachable", hyperpod_name=cluster.hyperpod_name,
                                    hyperpod_arn=cluster.hyperpod_arn, eks_name="gone", eks_arn="")
    factories.compute_quota(unreachable, other, resources=[{"instance_type": INSTANCE_TYPE, "count": 1}])
    with caplog.at_level(logging.WARNING, logger="spending.metering"):
        assert metering.meter(unreachable) and metering.meter(unreachable)
    assert "could not read the Kueue usage of cluster" in caplog.text
    assert ClusterMeter.objects.get(cluster=unreachable).shares == {}
    assert not UsageShare.objects.filter(cluster=unreachable).exists()
    assert NodeLifetime.objects.filter(cluster=unreachable).count() == 2
    later = timezone.now()
    alone = team_spend(cast.team.pk, span, cluster_id=unreachable.pk, now=later)
    assert _hours(alone) == _hours(spend_of(NodeLifetime.objects.filter(cluster=unreachable), span, now=later))
    assert _hours(alone) > 0
    assert team_spend(other.pk, span, cluster_id=unreachable.pk, now=later).lines == []
