"""Rows of a governed cluster without the cloud, for tests refused before AWS is read (the permission matrix, the
contract test)."""

from __future__ import annotations


def governed_cluster(team):
    """An active cluster of ``team`` with a HyperPod cluster, one group of 2 ml.g5.8xlarge, the task_governance
    feature seen enabled and a ready scheduler config."""
    from clusters.models import ClusterFeature
    from tests import factories

    cluster = factories.cluster(team, "matrix", hyperpod_name="matrix",
                                hyperpod_arn="arn:aws:sagemaker:us-west-2:123456789012:cluster/matrix0000")
    factories.instance_group(cluster, target_count=2, current_count=2)
    ClusterFeature.objects.create(cluster=cluster, feature="task_governance", state="enabled")
    factories.scheduler_config(cluster)
    return cluster
