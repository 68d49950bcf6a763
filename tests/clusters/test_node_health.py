"""The node-health watch against the sandbox: a node HyperPod's health agent flags is reported once as
``node.unhealthy`` to the teams that subscribed, again only after it was healthy in between; clusters of teams that
did not subscribe are not read."""

from __future__ import annotations

from django.core import mail
from kubernetes import client as k8s

from cloud import kube
from clusters.models import Cluster
from clusters.tasks import watch_node_health
from notifications.models import Subscription
from tests import matrix  # noqa: F401  (loads tests.matrix_nodes after the names it builds on)
from tests.matrix_nodes import running_node, sandbox_nodes_cluster
from tests.notifications.receiver import drain

HEALTH = "sagemaker.amazonaws.com/node-health-status"


def test_a_node_turning_unhealthy_is_reported_once(cast, sandbox, make_team, django_capture_on_commit_callbacks):
    cluster = sandbox_nodes_cluster(cast.team, groups={"workers": 2})
    core = k8s.CoreV1Api(kube.api_client(cluster.eks_name, region=cluster.region))
    node = running_node(cluster)

    def label(health: str) -> None:
        core.patch_node(f"hyperpod-{node}", {"metadata": {"labels": {HEALTH: health}}})

    def watched() -> int:
        with django_capture_on_commit_callbacks(execute=True):
            return watch_node_health()

    label("Unschedulable")
    assert watched() == 0  # nobody subscribed: the cluster is not even read
    assert Cluster.objects.get(pk=cluster.pk).unhealthy_nodes == []
    Subscription.objects.create(team=cast.team, name="oncall", channel="email", email="oncall@example.com",
                                event_types=["node.unhealthy"])
    Subscription.objects.create(team=make_team("Other"), name="theirs", channel="email", email="x@example.com",
                                event_types=["node.replaced"])
    assert watched() == 1
    assert watched() == 0  # still unhealthy: reported once
    assert Cluster.objects.get(pk=cluster.pk).unhealthy_nodes == [node]
    label("Schedulable")
    assert watched() == 0 and Cluster.objects.get(pk=cluster.pk).unhealthy_nodes == []
    label("Unschedulable")
    assert watched() == 1
    drain()
    subjects = [message.subject for message in mail.outbox]
    assert subjects == [f"[InstantStart · {cast.team.name}] Node {node} of cluster {cluster.name} is unhealthy: "
                        "Unschedulable"] * 2
    assert all(message.to == ["oncall@example.com"] for message in mail.outbox)
