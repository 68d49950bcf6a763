"""Permission-matrix cases of instance groups, cluster settings and software updates (added to tests.matrix.CASES).

Their services read the HyperPod cluster before deciding, so the cases run against a HyperPod cluster made in the
sandbox with boto3 (its one group is ``workers``)."""

from tests.matrix import MEMBERS, Case

ADMINS = frozenset({"admin", "superuser"})


def hyperpod_cluster(cast, actor) -> dict:
    """An active cluster of the cast's team with a HyperPod cluster in the sandbox — for an actor who can see the
    team's clusters (the others are refused before AWS is read, so a row suffices)."""
    from accounts import access
    from tests.clusters.sandbox import tracked_hyperpod_cluster

    cloud = actor is not None and access.can(actor, "cluster.view", cast.team)
    return {"cluster_id": tracked_hyperpod_cluster(cast.team, cloud=cloud).pk}


def group_of_hyperpod_cluster(cast, actor) -> dict:
    return {**hyperpod_cluster(cast, actor), "name": "workers"}


CASES = [
    Case("cluster_instance_groups_list", MEMBERS, params=hyperpod_cluster, sandbox=True),
    Case("cluster_instance_groups_create", ADMINS, params=hyperpod_cluster, sandbox=True,
         body={"name": "more", "instance_type": "ml.g5.8xlarge", "instance_count": 1, "zone": "us-west-2a"}),
    Case("cluster_instance_groups_retrieve", MEMBERS, params=group_of_hyperpod_cluster, sandbox=True),
    Case("cluster_instance_groups_update", ADMINS, params=group_of_hyperpod_cluster, sandbox=True,
         body={"instance_count": 1}),
    Case("cluster_instance_groups_destroy", ADMINS, params=group_of_hyperpod_cluster, sandbox=True),
    Case("cluster_settings_retrieve", MEMBERS, params=hyperpod_cluster, sandbox=True),
    Case("cluster_settings_update", ADMINS, params=hyperpod_cluster, sandbox=True, body={"node_recovery": "None"}),
    Case("cluster_software_update", ADMINS, params=hyperpod_cluster, sandbox=True, body={}),
]
