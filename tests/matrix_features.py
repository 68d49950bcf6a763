"""Permission-matrix cases of the feature slice (added to tests.matrix.CASES)."""

from tests.matrix import ADMINS, MEMBERS, Case, cluster_in


def hyperpod_cluster(cast, actor) -> dict:
    """An active cluster row whose HyperPod cluster is named (and absent from the sandbox: autoscaling reads off)."""
    from clusters.models import Cluster

    ids = cluster_in("active")(cast, actor)
    Cluster.objects.filter(pk=ids["cluster_id"]).update(hyperpod_name="matrix")
    return ids


CASES: list = [
    Case("cluster_features_retrieve", MEMBERS, params=cluster_in(), sandbox=True),
    Case("cluster_features_update", ADMINS, params=cluster_in(), sandbox=True,
         body={"autoscaling": {"enabled": False}}),
    Case("cluster_autoscaling_enable", ADMINS, params=hyperpod_cluster, sandbox=True),
    Case("cluster_autoscaling_disable", ADMINS, params=cluster_in(), sandbox=True),
]
