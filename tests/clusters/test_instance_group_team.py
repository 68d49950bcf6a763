"""Instance groups carry their cluster's team like every team-owned row: the migration fills it in for groups that
existed before, every writer sets it, and every read narrows by it through ``access.visible``."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.urls import reverse

from accounts import access
from clusters import selectors
from clusters.models import InstanceGroup
from config.errors import NotFound
from tests.clusters.sandbox import tracked_hyperpod_cluster

BEFORE = [("clusters", "0002_instance_groups_features")]
AFTER = [("clusters", "0003_instance_group_team")]


@pytest.mark.django_db(transaction=True)
def test_the_migration_gives_each_existing_group_its_clusters_team():
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    try:
        executor.migrate(BEFORE)
        old = executor.loader.project_state(BEFORE).apps
        Team, Cluster = old.get_model("accounts", "Team"), old.get_model("clusters", "Cluster")
        groups = []
        for name in ("vision", "speech"):
            team = Team.objects.create(name=name, slug=name)
            cluster = Cluster.objects.create(team=team, name=name, region="us-west-2")
            groups.append(old.get_model("clusters", "InstanceGroup").objects.create(
                cluster=cluster, name="workers", instance_type="ml.g5.12xlarge"))

        executor = MigrationExecutor(connection)
        executor.migrate(AFTER)
        new = executor.loader.project_state(AFTER).apps.get_model("clusters", "InstanceGroup")
        filled = {group.pk: (group.team_id, group.cluster.team_id) for group in new.objects.select_related("cluster")}
        assert sorted(filled) == sorted(group.pk for group in groups)
        assert all(team_id == cluster_team_id is not None for team_id, cluster_team_id in filled.values())
        assert not new._meta.get_field("team").null
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(latest)


def test_a_group_is_seen_only_by_its_teams_members_and_read_through_the_selector(cast, sandbox, api):
    cluster = tracked_hyperpod_cluster(cast.team, cloud=True)
    group = InstanceGroup.objects.get(cluster=cluster, name="workers")
    assert group.team_id == cluster.team_id
    assert list(access.visible(cast.viewer, InstanceGroup)) == [group]
    assert not access.visible(cast.outsider, InstanceGroup).exists()
    assert selectors.group_get(actor=cast.viewer, cluster_id=cluster.pk, name="workers") == group
    with pytest.raises(NotFound):
        selectors.group_get(actor=cast.outsider, cluster_id=cluster.pk, name="workers")

    path = f"/api/v1/clusters/{cluster.pk}/instance-groups/workers"
    assert api(cast.viewer).get(path).json()["name"] == "workers"
    assert api(cast.outsider).get(path).json()["code"] == "not_found"


def test_a_group_added_in_the_portal_belongs_to_its_clusters_team(cast, sandbox, client):
    cluster = tracked_hyperpod_cluster(cast.team)
    client.force_login(cast.admin)
    client.post(reverse("cluster-group-add", args=[cluster.pk]), {
        "name": "spot", "instance_type": "ml.g5.8xlarge", "instance_count": "1", "capacity_type": "spot",
        "interface_mode": "standard", "zone": "us-west-2a"})
    assert InstanceGroup.objects.get(cluster=cluster, name="spot").team == cast.team
