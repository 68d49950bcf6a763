"""What marks a cloud or Kubernetes resource as ours, and the names we derive for a cluster.

Every AWS resource a cluster pipeline creates carries :func:`aws_tags`; every Kubernetes object carries
:func:`kube_labels`. Deletion only ever touches resources whose tags say ``managed-by=instantstart`` *and* name the
same cluster id — an imported cluster's own resources never carry them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from accounts.models import Team
from clusters.models import Cluster

MANAGED_BY_TAG = "instantstart:managed-by"
MANAGED_BY = "instantstart"
TEAM_TAG = "instantstart:team"
CLUSTER_TAG = "instantstart:cluster"
CLUSTER_ID_TAG = "instantstart:cluster-id"
ROLE_TAG = "instantstart:role"

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
TEAM_LABEL = "instantstart.io/team"
CLUSTER_LABEL = "instantstart.io/cluster"


def aws_tags(cluster: Cluster, role: str = "") -> dict[str, str]:
    """The tags of a resource we create for ``cluster``; ``role`` says which part of it the resource is."""
    tags = {MANAGED_BY_TAG: MANAGED_BY, TEAM_TAG: cluster.team.slug, CLUSTER_TAG: cluster.name,
            CLUSTER_ID_TAG: str(cluster.pk)}
    if role:
        tags[ROLE_TAG] = role
        tags["Name"] = f"{cluster.name}-{role}"
    return tags


def as_tag_list(tags: Mapping[str, str]) -> list[dict[str, str]]:
    """``[{"Key": k, "Value": v}]`` — the shape EC2, IAM and SageMaker take."""
    return [{"Key": key, "Value": value} for key, value in tags.items()]


def tag_dict(tags: Sequence[Mapping[str, str]] | Mapping[str, str] | None) -> dict[str, str]:
    """Tags in either AWS shape as a plain dict."""
    if not tags:
        return {}
    if isinstance(tags, Mapping):
        return dict(tags)
    return {tag["Key"]: tag["Value"] for tag in tags}


def owned_by(tags: Sequence[Mapping[str, str]] | Mapping[str, str] | None, cluster: Cluster) -> bool:
    """True when ``tags`` mark the resource as created by InstantStart for ``cluster``."""
    found = tag_dict(tags)
    return found.get(MANAGED_BY_TAG) == MANAGED_BY and found.get(CLUSTER_ID_TAG) == str(cluster.pk)


def ec2_owner_filters(cluster: Cluster, role: str = "") -> list[dict]:
    """EC2 ``Filters`` that find what we created for ``cluster`` (and ``role``)."""
    filters = [{"Name": f"tag:{MANAGED_BY_TAG}", "Values": [MANAGED_BY]},
               {"Name": f"tag:{CLUSTER_ID_TAG}", "Values": [str(cluster.pk)]}]
    if role:
        filters.append({"Name": f"tag:{ROLE_TAG}", "Values": [role]})
    return filters


def kube_labels(cluster: Cluster) -> dict[str, str]:
    """The labels of every Kubernetes object we create on ``cluster``."""
    return {MANAGED_BY_LABEL: MANAGED_BY, TEAM_LABEL: cluster.team.slug, CLUSTER_LABEL: str(cluster.pk)}


def team_namespace(team: Team) -> str:
    """The Kubernetes namespace of ``team``'s workloads and volumes on every cluster."""
    return f"team-{team.slug}"


def iam_name(cluster: Cluster, purpose: str) -> str:
    """A deterministic IAM role or policy name for ``cluster`` (≤ 64 characters): the same on every re-run, so a
    step adopts what an earlier run created instead of creating a second one."""
    return f"instantstart-{cluster.pk}-{purpose}"[:64]
