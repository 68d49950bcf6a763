"""Reads of task governance. Those taking an ``actor`` start from ``access.visible`` (a cluster's scheduler config and
quotas are its team's) or from the actor's teams (the clusters their quotas let them run work on); the others are for
the apps that run work on clusters (training, inference), which ask what queue and priority a workload gets and where
it stands with Kueue, without an access check of their own.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet

from accounts import access
from accounts.models import Team, User
from accounts.selectors import get_visible
from clusters import selectors as cluster_selectors
from clusters.features.catalog import TASK_GOVERNANCE
from clusters.models import Cluster, ClusterFeature, ClusterState, FeatureState, InstanceGroup
from config.errors import InvalidFields, NotFound
from governance import actions, admission, names, queue_usage
from governance.models import ComputeQuota, PolicyState, SchedulerConfig

Admission = admission.Admission
QUEUE_LABEL, PRIORITY_LABEL = names.QUEUE_LABEL, names.PRIORITY_LABEL


def scheduler_config_of(*, actor: User, cluster: Cluster) -> SchedulerConfig | None:
    """The cluster's scheduler config, or ``None`` when none was set."""
    access.require(actor, actions.VIEW, cluster)
    return SchedulerConfig.objects.filter(cluster=cluster).first()


def quota_list(*, actor: User, cluster: Cluster | None = None) -> QuerySet[ComputeQuota]:
    quotas = access.visible(actor, ComputeQuota).select_related("cluster", "for_team")
    return quotas.filter(cluster=cluster) if cluster is not None else quotas


def quota_get(*, actor: User, quota_id: int | str) -> ComputeQuota:
    return get_visible(quota_list(actor=actor), quota_id, "compute quota")


def task_governance_state(cluster: Cluster) -> str:
    """The task_governance feature's state as last observed (``unknown`` before the Features tab read it)."""
    row = ClusterFeature.objects.filter(cluster=cluster, feature=TASK_GOVERNANCE).first()
    return row.state if row is not None else FeatureState.UNKNOWN


# for the apps that run work on clusters (no access check) ------------------------------------------------------


@dataclass(frozen=True)
class Queue:
    """Where a team's workload goes on a governed cluster: ``namespace`` (``hyperpod-ns-<team>``), ``name`` its local
    queue; ``labels`` the workload carries (``priority``: a priority class of the scheduler config, or none)."""

    namespace: str
    name: str

    def labels(self, priority: str = "") -> dict[str, str]:
        found = {names.QUEUE_LABEL: self.name}
        if priority:
            found[names.PRIORITY_LABEL] = names.workload_priority_class(priority)
        return found


def _usable(quotas: QuerySet[ComputeQuota]) -> QuerySet[ComputeQuota]:
    """Quotas SageMaker made and no operation is making or deleting."""
    return quotas.exclude(state__in=[PolicyState.CREATING, PolicyState.DELETING]).exclude(quota_id="")


def quota_team(actor: User, cluster: Cluster) -> Team | None:
    """A team of ``actor``'s other than the cluster's that has a compute quota on ``cluster`` — the team its work
    there runs as (``None``: none)."""
    teams = list(access.roles(actor))
    found = _usable(ComputeQuota.objects.filter(cluster=cluster, for_team_id__in=teams)).exclude(
        for_team_id=cluster.team_id).select_related("for_team").order_by("for_team__name").first()
    return found.for_team if found is not None else None


def shared_clusters(actor: User, team: Team | None = None) -> QuerySet[Cluster]:
    """Clusters of other teams on which one of ``actor``'s teams (only ``team`` when given) has a compute quota."""
    teams = list(access.roles(actor))
    wanted = teams if team is None else [team.pk] if team.pk in teams else []
    quotas = _usable(ComputeQuota.objects.filter(for_team_id__in=wanted))
    return Cluster.objects.filter(pk__in=quotas.values("cluster_id")).exclude(team_id__in=teams)


def shared_cluster_get(*, actor: User, cluster_id: int | str) -> Cluster:
    """One of :func:`shared_clusters` (``NotFound`` otherwise, as for a cluster the actor cannot see)."""
    return get_visible(shared_clusters(actor).select_related("team"), cluster_id, "cluster")


def workload_cluster_get(*, actor: User, cluster_id: int | str, field: str | None = "cluster") -> Cluster:
    """The cluster a training submission or an endpoint deploy names: one of the actor's teams' (``cluster_get``),
    or another team's on which one of them has a usable compute quota (:func:`shared_cluster_get`). Any other (or
    none) is ``NotFound`` (404) with the field error ``cluster_not_found`` on ``field`` (the body's member naming
    it; ``None``: a path's cluster, plain ``not_found``) — the same answer as for a cluster the actor cannot see,
    whatever the reason."""
    try:
        return cluster_selectors.cluster_get(actor=actor, cluster_id=cluster_id)
    except NotFound:
        pass
    try:
        return shared_cluster_get(actor=actor, cluster_id=cluster_id)
    except NotFound:
        if field is None:
            raise
        message = "No such cluster among your teams' clusters."
        raise NotFound(message, fields={field: [{"code": "cluster_not_found", "message": message}]}) from None


def working_team(actor: User, cluster: Cluster) -> Team:
    """The team the actor's work on ``cluster`` (a training job, an endpoint) belongs to: the cluster's, unless the
    actor is not in it (nor a platform admin) and one of the actor's teams has a compute quota on it — task
    governance shares the cluster with that team, and the work is that team's (its members see and manage it, it
    runs in that team's namespace and queue)."""
    if access.role_in(actor, cluster.team) is None and not access.can_administer_platform(actor):
        return quota_team(actor, cluster) or cluster.team
    return cluster.team


def shared_cluster_choices(actor: User, team: Team | None, action: str) -> list[Cluster]:
    """The active clusters of :func:`shared_clusters` (``team``'s quotas, every team of the actor's when ``None``)
    on which the actor may ``action`` as the team its work there runs as (:func:`working_team`), by name, with their
    team — what a form offers besides the team's own clusters."""
    found = shared_clusters(actor, team).filter(state=ClusterState.ACTIVE).select_related("team").order_by("name")
    return [cluster for cluster in found if access.can(actor, action, working_team(actor, cluster))]


def shared_groups(cluster: Cluster) -> QuerySet[InstanceGroup]:
    """The live instance groups of a shared cluster, by name, for the forms of a team with a quota on it (the caller
    found ``cluster`` through :func:`shared_clusters`)."""
    return InstanceGroup.objects.filter(cluster=cluster, deleted=False).select_related("cluster").order_by("name")


def team_queue(cluster: Cluster, team: Team) -> Queue | None:
    """The team's queue on ``cluster`` when it has a compute quota there that SageMaker made (``None``: the cluster
    is not governed for the team, and its workloads are not queued)."""
    governed = _usable(ComputeQuota.objects.filter(cluster=cluster, for_team=team)).exists()
    return Queue(names.team_namespace(team), names.local_queue(team)) if governed else None


def priority_classes(cluster: Cluster) -> list[str]:
    """The priority classes of the cluster's scheduler config (``[]`` without one)."""
    config = SchedulerConfig.objects.filter(cluster=cluster).first()
    return config.priority_names if config is not None else []


def check_priority(cluster: Cluster, priority: str, errors: InvalidFields, *, field: str = "priority") -> None:
    """A workload's ``priority`` must be a priority class of the cluster's scheduler config:
    ``unknown_priority_class`` otherwise (also on a cluster with none). An empty priority asks for none."""
    if not priority:
        return
    known = priority_classes(cluster)
    if priority not in known:
        errors.add(field, "unknown_priority_class",
                   f"Cluster {cluster.name} defines no priority class {priority}; "
                   + (f"its scheduler config has {', '.join(known)}." if known
                      else "it has no scheduler config (its admins set one on the Governance tab)."))


def priority_of(labels: dict[str, str]) -> str:
    """The scheduler-config priority class a workload's ``labels`` name (``""``: none)."""
    return labels.get(names.PRIORITY_LABEL, "").removesuffix("-priority")


def workload_admission(cluster: Cluster, *, namespace: str, kind: str, name: str) -> Admission | None:
    """Where the ``kind`` object ``name`` stands with Kueue (:mod:`governance.admission`); ``None`` when it is not
    queued."""
    return admission.workload_admission(cluster, namespace=namespace, kind=kind, name=name)


def queue_usage_by_team(cluster: Cluster) -> dict[int, queue_usage.FlavorsUsage]:
    """What the ClusterQueue of each team with a compute quota on ``cluster`` uses now, by team id
    (:mod:`governance.queue_usage`: per instance type, the resources its admitted workloads hold, borrowed ones
    included); ``{}`` without quotas, and no Kubernetes call then. Raises the vocabulary error of a failed read."""
    teams = {names.cluster_queue(quota.for_team): quota.for_team_id
             for quota in ComputeQuota.objects.filter(cluster=cluster).exclude(quota_id="").select_related("for_team")}
    if not teams:
        return {}
    return {teams[name]: usage for name, usage in queue_usage.usage_by_queue(cluster, set(teams)).items()}
