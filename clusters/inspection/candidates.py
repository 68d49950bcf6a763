"""Import candidates: the region's EKS clusters, each with the HyperPod cluster it orchestrates, and whether
InstantStart already tracks it — only those the actor may import into the team (the platform policy of
``clusters.importing``). Another team's cluster shows only as ``tracked`` — never whose it is."""

from __future__ import annotations

from dataclasses import dataclass

from accounts import access
from accounts.models import Team, User
from clusters import importing
from clusters.inspection.facts import eks_cluster, eks_cluster_names, hyperpod_by_orchestrator
from clusters.models import LIVE_STATES, Cluster


@dataclass(frozen=True)
class ImportCandidate:
    """An EKS cluster (and its HyperPod cluster, blank when it has none). ``tracked``: a live InstantStart cluster
    of any team records it; ``tracked_by_team``: one of ``team``'s does."""

    eks_name: str
    eks_arn: str
    eks_status: str
    kubernetes_version: str
    hyperpod_name: str
    hyperpod_arn: str
    hyperpod_status: str
    tracked: bool
    tracked_by_team: bool


def import_candidates(region: str, *, team: Team, actor: User) -> list[ImportCandidate]:
    """The EKS clusters of ``region`` that ``actor`` may import into ``team``, by name: for a platform admin every
    cluster but those whose ownership tags give them to another team; for a team admin only those one of the team's
    import rules allows (none without rules). The caller has checked ``cluster.import`` on the team."""
    platform_admin = access.can_administer_platform(actor)
    rules = list(team.import_rules.all())
    if not platform_admin and not any(rule.region in ("", region) for rule in rules):
        return []
    hyperpods = hyperpod_by_orchestrator(region)
    live = Cluster.objects.filter(region=region, state__in=LIVE_STATES)
    owners: dict[str, set[int]] = {}
    for arn, name, team_id in live.values_list("eks_arn", "eks_name", "team_id"):
        for key in (arn, name):
            if key:
                owners.setdefault(key, set()).add(team_id)
    candidates = []
    for name in sorted(eks_cluster_names(region)):
        if not platform_admin and not importing.allowed_by_rules(rules, region=region, name=name, tags=None):
            continue
        eks = eks_cluster(region, name)
        if eks is None or importing.claimed_by_another_team(eks.tags, team):
            continue
        if not platform_admin and not importing.allowed_by_rules(rules, region=region, name=name, tags=eks.tags):
            continue
        hyperpod = hyperpods.get(eks.arn)
        teams = owners.get(eks.arn, set()) | owners.get(eks.name, set())
        candidates.append(ImportCandidate(
            eks_name=eks.name, eks_arn=eks.arn, eks_status=eks.status, kubernetes_version=eks.version,
            hyperpod_name=hyperpod.name if hyperpod else "", hyperpod_arn=hyperpod.arn if hyperpod else "",
            hyperpod_status=hyperpod.status if hyperpod else "", tracked=bool(teams),
            tracked_by_team=team.pk in teams,
        ))
    return candidates
