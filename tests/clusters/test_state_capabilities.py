"""``capabilities`` of clusters, instance groups and volumes include their state: an action is offered (REST
``capabilities``, the portal's buttons) only in a state where its service accepts it."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from clusters import services
from clusters.models import ClusterState, StorageKind, StorageState
from config.errors import Conflict
from tests import factories


def refusal(service, **arguments) -> str:
    """The code of the conflict ``service(**arguments)`` answers with."""
    with pytest.raises(Conflict) as refused:
        service(**arguments, source="api")
    return refused.value.code


def cluster_capabilities(api, user, cluster) -> dict[str, bool]:
    return api(user).get(f"/api/v1/clusters/{cluster.pk}").json()["capabilities"]


def test_an_active_cluster_offers_every_action_its_admin_may_take(api, cast):
    cluster = factories.cluster(cast.team)
    assert cluster_capabilities(api, cast.admin, cluster) == {
        "cluster.refresh": True, "cluster.delete": True, "cluster.activate": True, "storage.create": True}
    assert cluster_capabilities(api, cast.viewer, cluster)["cluster.delete"] is False


@pytest.mark.parametrize("state", [ClusterState.CREATING, ClusterState.IMPORTING, ClusterState.DELETING])
def test_a_busy_cluster_is_not_offered_for_deletion_nor_new_volumes(api, cast, state):
    cluster = factories.cluster(cast.team, state=state)
    capabilities = cluster_capabilities(api, cast.admin, cluster)
    assert capabilities["cluster.delete"] is False and capabilities["storage.create"] is False
    assert refusal(services.cluster_delete, actor=cast.admin, cluster=cluster, confirm=cluster.name,
                   delete_resources=False) == "cluster_busy"
    assert refusal(services.volume_create, actor=cast.admin, cluster=cluster, name="scratch", kind=StorageKind.S3,
                   bucket="b") == "cluster_not_active"


@pytest.mark.parametrize("state", [ClusterState.DELETING, ClusterState.DELETED])
def test_a_deleting_or_deleted_cluster_cannot_become_the_active_one(api, cast, state):
    cluster = factories.cluster(cast.team, state=state)
    assert cluster_capabilities(api, cast.viewer, cluster)["cluster.activate"] is False
    assert refusal(services.active_cluster_set, actor=cast.viewer, cluster=cluster) == "cluster_deleted"


def test_a_deleted_cluster_offers_nothing(api, cast):
    cluster = factories.cluster(cast.team, state=ClusterState.DELETED)
    assert not any(cluster_capabilities(api, cast.admin, cluster).values())
    assert refusal(services.cluster_refresh, actor=cast.admin, cluster=cluster) == "cluster_deleted"


def test_a_volume_is_offered_for_removal_exactly_in_the_states_the_service_accepts(api, cast):
    cluster = factories.cluster(cast.team)
    for state, removable in [(StorageState.CREATING, False), (StorageState.AVAILABLE, True),
                             (StorageState.FAILED, True), (StorageState.DELETING, False)]:
        volume = factories.storage_volume(cluster, name=state, state=state)
        path = f"/api/v1/clusters/{cluster.pk}/volumes/{volume.pk}"
        assert api(cast.operator).get(path).json()["capabilities"] == {"storage.delete": removable}, state
        if not removable:
            response = api(cast.operator).delete(path)
            assert response.status_code == 409 and response.json()["code"] in ("volume_busy", "volume_deleted")


def group_capabilities(api, user, cluster, name: str) -> dict[str, bool]:
    return api(user).get(f"/api/v1/clusters/{cluster.pk}/instance-groups/{name}").json()["capabilities"]


def test_a_group_hyperpod_is_deleting_or_on_a_cluster_that_is_not_active_is_not_offered_for_change(api, cast):
    cluster = factories.cluster(cast.team)
    factories.instance_group(cluster, "workers", status="InService")
    factories.instance_group(cluster, "leaving", status="Deleting")
    both = {"instance_group.update": True, "instance_group.delete": True}
    assert group_capabilities(api, cast.admin, cluster, "workers") == both
    assert group_capabilities(api, cast.admin, cluster, "leaving") == dict.fromkeys(both, False)
    assert group_capabilities(api, cast.operator, cluster, "workers") == dict.fromkeys(both, False)

    cluster.state = ClusterState.DELETING
    cluster.save()
    assert group_capabilities(api, cast.admin, cluster, "workers") == dict.fromkeys(both, False)


def test_the_cluster_page_shows_only_the_actions_each_row_offers(cast):
    cluster = factories.cluster(cast.team)
    factories.instance_group(cluster, "workers", status="InService")
    factories.instance_group(cluster, "leaving", status="Deleting")
    factories.storage_volume(cluster, name="ready", state=StorageState.AVAILABLE)
    factories.storage_volume(cluster, name="coming", state=StorageState.CREATING)
    browser = Client()
    browser.force_login(cast.admin)
    page = browser.get(reverse("cluster-detail", args=[cluster.pk])).content.decode()
    assert 'data-testid="group-edit-workers"' in page and 'data-testid="group-delete-workers"' in page
    assert 'data-testid="group-edit-leaving"' not in page and 'data-testid="group-delete-leaving"' not in page
    assert 'data-testid="volume-delete-ready"' in page and 'data-testid="volume-delete-coming"' not in page
    assert 'data-testid="group-add"' in page and 'data-testid="cluster-delete"' in page

    cluster.state = ClusterState.DELETING
    cluster.save()
    page = browser.get(reverse("cluster-detail", args=[cluster.pk])).content.decode()
    for hidden in ("group-add", "group-edit-workers", "cluster-delete", "cluster-activate"):
        assert f'data-testid="{hidden}"' not in page, hidden
    assert 'data-testid="cluster-refresh"' in page
