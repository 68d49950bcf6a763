"""Permission-matrix cases of task governance: a cluster's governance, its scheduler config and the teams' compute
quotas (added to tests.matrix.CASES). None reaches AWS: a change that differs from nothing answers at once, and a
quota's operation is only started."""

from tests.governance.rows import governed_cluster
from tests.matrix import ADMINS, AUTHENTICATED, MEMBERS, Case, cluster_in


def cluster_governed(cast, actor) -> dict:
    return {"cluster_id": governed_cluster(cast.team).pk}


def quota_of_cluster(cast, actor) -> dict:
    from tests import factories

    return {"quota_id": factories.compute_quota(governed_cluster(cast.team)).pk}


def quota_body(cast, actor) -> dict:
    return {"cluster": governed_cluster(cast.team).pk, "team": cast.team.pk,
            "resources": [{"instance_type": "ml.g5.8xlarge", "count": 1}]}


CASES = [
    Case("cluster_governance_retrieve", MEMBERS, params=cluster_in()),
    Case("scheduler_config_set", ADMINS, params=cluster_governed, body={
        "priority_classes": [{"name": "inference", "weight": 100}, {"name": "training", "weight": 50}],
        "fair_share": True}),
    Case("scheduler_config_delete", ADMINS, params=cluster_governed),
    Case("compute_quotas_list", AUTHENTICATED, team_scoped=False),
    Case("compute_quotas_create", ADMINS, body=quota_body),
    Case("compute_quotas_retrieve", MEMBERS, params=quota_of_cluster),
    Case("compute_quotas_update", ADMINS, params=quota_of_cluster, body={"fair_share_weight": 0}),
    Case("compute_quotas_destroy", ADMINS, params=quota_of_cluster),
]
