"""Deleting a cluster whose managed features are on leaves nothing tagged with it behind: the features' roles and
Prometheus workspace go with the cluster (``clusters.features.leftovers``)."""

from __future__ import annotations

from operations.models import Operation, OperationState
from tests.clusters.sandbox import tagged_resources


def test_a_cluster_with_every_feature_on_is_deleted_without_residue(api, cast, sandbox, drive, live_cluster):
    cluster = live_cluster()
    response = api(cast.admin).patch(f"/api/v1/clusters/{cluster.pk}/features", {
        "training_operator": {"enabled": True}, "observability": {"enabled": True},
        "tiered_checkpointing": {"enabled": True}, "autoscaling": {"enabled": True}})
    assert response.status_code == 202, response.content
    enabled = drive(Operation.objects.get(pk=response.json()["operation"]["id"]), timeout=120)
    assert enabled.state == OperationState.SUCCEEDED, (enabled.phase, enabled.error_message)
    roles = [entry for entry in tagged_resources(cluster.pk) if entry.startswith("role:")]
    assert len(roles) > 4

    response = api(cast.admin).post(f"/api/v1/clusters/{cluster.pk}/delete", {"confirm": cluster.name})
    assert response.status_code == 202, response.content
    deletion = drive(Operation.objects.get(pk=response.json()["operation"]["id"]), timeout=120)
    assert deletion.state == OperationState.SUCCEEDED, (deletion.phase, deletion.error_message)
    assert tagged_resources(cluster.pk) == []
