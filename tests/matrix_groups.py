"""Permission-matrix cases of instance groups, cluster settings and software updates (added to tests.matrix.CASES).

Their services read the HyperPod cluster before deciding, so the cases run against a HyperPod cluster made in the
sandbox with boto3 (its one group is ``workers``)."""

from tests.matrix import MEMBERS, Case

ADMINS = frozenset({"admin", "superuser"})


def hyperpod_cluster(cast, actor) -> dict:
    """An active cluster row of the cast's team tracking a HyperPod cluster made directly in the sandbox — for an
    actor who can see the team's clusters (the others are refused before AWS is read, so the row suffices)."""
    from accounts import access
    from clusters.instance_groups import mirror
    from clusters.models import Cluster, InstanceGroup
    from tests.clusters.sandbox import make_eks_cluster, make_hyperpod_cluster

    cluster = Cluster.objects.create(team=cast.team, name="matrix", region="us-west-2", state="active",
                                     eks_name="matrix", hyperpod_name="matrix")
    if actor is None or not access.can(actor, "cluster.view", cast.team):
        InstanceGroup.objects.create(cluster=cluster, name="workers", instance_type="ml.g5.8xlarge")
        return {"cluster_id": cluster.pk}
    eks = make_eks_cluster("matrix")
    cluster.eks_arn, cluster.hyperpod_arn = eks.arn, make_hyperpod_cluster(eks, "matrix")
    cluster.save()
    mirror.mirror(cluster, mirror.describe(cluster))
    return {"cluster_id": cluster.pk}


def group_of_hyperpod_cluster(cast, actor) -> dict:
    return {**hyperpod_cluster(cast, actor), "name": "workers"}


GROUPS = "/api/v1/clusters/{cluster_id}/instance-groups"

CASES = [
    Case("cluster_instance_groups_list", "GET", GROUPS, MEMBERS, params=hyperpod_cluster, sandbox=True),
    Case("cluster_instance_groups_create", "POST", GROUPS, ADMINS, params=hyperpod_cluster, sandbox=True,
         body={"name": "more", "instance_type": "ml.g5.8xlarge", "instance_count": 1, "zone": "us-west-2a"}),
    Case("cluster_instance_groups_retrieve", "GET", GROUPS + "/{name}", MEMBERS, params=group_of_hyperpod_cluster,
         sandbox=True),
    Case("cluster_instance_groups_update", "PATCH", GROUPS + "/{name}", ADMINS, params=group_of_hyperpod_cluster,
         sandbox=True, body={"instance_count": 1}),
    Case("cluster_instance_groups_destroy", "DELETE", GROUPS + "/{name}", ADMINS, params=group_of_hyperpod_cluster,
         sandbox=True),
    Case("cluster_settings_retrieve", "GET", "/api/v1/clusters/{cluster_id}/settings", MEMBERS,
         params=hyperpod_cluster, sandbox=True),
    Case("cluster_settings_update", "PATCH", "/api/v1/clusters/{cluster_id}/settings", ADMINS,
         params=hyperpod_cluster, sandbox=True, body={"node_recovery": "None"}),
    Case("cluster_software_update", "POST", "/api/v1/clusters/{cluster_id}/software-update", ADMINS,
         params=hyperpod_cluster, sandbox=True, body={}),
]
