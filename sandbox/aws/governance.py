"""SageMaker HyperPod task governance: cluster scheduler configs (cluster policies) and compute quotas (compute
allocations), as ``CreateClusterSchedulerConfig`` … ``ListComputeQuotas`` define them.

Both are versioned resources of one EKS-orchestrated HyperPod cluster. A create starts at version 1 in
``Creating``; after ``APPLY_SECONDS`` (AWS time, scaled by ``sandbox.clock``) it is ``Created`` when the
cluster's EKS cluster has the ``amazon-sagemaker-hyperpod-taskgovernance`` add-on installed, else
``CreateFailed`` with a ``FailureReason`` (SageMaker applies a policy through the add-on's Kueue). An update
names the version it changes (``TargetVersion``, the current one), makes the next version and goes
``Updating`` → ``Updated`` (``UpdateFailed`` without the add-on); a delete goes ``Deleting`` → ``Deleted``.
Deleted resources stay describable and listed with status ``Deleted`` but no longer count against a cluster's
limits; updating or deleting one again is ``ResourceNotFound``. Describe with a version number returns that
version's members.

Server-side checks beyond the model's constraints: the cluster must exist (``ResourceNotFound``) and be
orchestrated by EKS (``ValidationException``); one scheduler config per cluster and, per cluster, unique compute
quota names and team names (``ConflictException``); unique priority class names; an instance type the cluster
has an instance group of; a borrow limit only with the ``LendAndBorrow`` strategy; the team name never changes;
updates and deletes only of a settled resource, updates only from the current version (``ConflictException``).

``task_governance(eks_cluster_arn)`` is the in-process read the Kubernetes simulator uses to build the Kueue
objects; all functions run under ``core.transaction()``.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any

from sandbox import clock, control
from sandbox.aws import callers, core, eks_model, tags
from sandbox.aws import hyperpod_model as hyperpod
from sandbox.aws.core import ApiError, Call, operation, validation

APPLY_SECONDS = 60.0
"""How long (AWS time) creating, updating or deleting a policy takes."""
ADDON = "amazon-sagemaker-hyperpod-taskgovernance"
SETTLED = ("Created", "Updated", "CreateFailed", "UpdateFailed")
"""States from which a policy may be updated or deleted."""
GONE = ("Deleting", "Deleted")
_NEXT = {"Creating": ("Created", "CreateFailed"), "Updating": ("Updated", "UpdateFailed"),
         "Deleting": ("Deleted", "Deleted")}


@dataclass
class Policy:
    """A scheduler config (``kind`` ``cluster-scheduler-config``) or a compute quota (``compute-quota``).

    ``versions[n]`` holds the members the caller set in version ``n`` (SchedulerConfig or ComputeQuotaConfig,
    ComputeQuotaTarget, ActivationState, Description).
    """

    kind: str
    id: str
    name: str
    region: str
    cluster_arn: str
    created_at: float
    created_by: str
    tags: dict[str, str]
    versions: dict[int, dict[str, Any]]
    status: str = "Creating"
    since: float = 0.0
    modified_at: float = 0.0
    modified_by: str = ""
    failure_reason: str | None = None
    version: int = 1

    @property
    def arn(self) -> str:
        return core.arn("sagemaker", self.region, f"{self.kind}/{self.id}")

    @property
    def current(self) -> dict[str, Any]:
        return self.versions[self.version]


_policies: dict[str, Policy] = {}


@control.on_reset
def _reset() -> None:
    with core.transaction():
        _policies.clear()


def _addon_installed(cluster_arn: str) -> str | None:
    """``None`` when the cluster's EKS cluster has the task-governance add-on, else why the policy fails."""
    cluster = hyperpod.find(cluster_arn, region="")
    eks = eks_model.find_by_arn(cluster.eks_cluster_arn) if cluster and cluster.eks_cluster_arn else None
    if cluster is None or eks is None:
        return f"The cluster {cluster_arn} or its Amazon EKS cluster no longer exists."
    addon = eks.addons.get(ADDON)
    if addon is None or addon.status not in ("ACTIVE", "UPDATING", "DEGRADED"):
        return (f"The Amazon SageMaker HyperPod task governance add-on ({ADDON}) is not installed on the Amazon EKS "
                f"cluster {eks.name}. Install the add-on, then create the policy again.")
    return None


def _advance(policy: Policy) -> None:
    if policy.status not in _NEXT or not clock.due(policy.since, APPLY_SECONDS):
        return
    done, failed = _NEXT[policy.status]
    problem = None if policy.status == "Deleting" else _addon_installed(policy.cluster_arn)
    policy.status, policy.since, policy.failure_reason = (failed if problem else done), clock.now(), problem


def refresh() -> None:
    """Apply every transition that is due."""
    for policy in _policies.values():
        _advance(policy)


def _principal(call: Call) -> str:
    return callers.credential(call.access_key).arn


def _user(arn: str) -> dict[str, Any]:
    return {"IamIdentity": {"Arn": arn}}


def _cluster(call: Call) -> hyperpod.Cluster:
    arn = call.params["ClusterArn"]
    cluster = hyperpod.find(arn, call.region)
    if cluster is None or cluster.status == "Deleting":
        raise ApiError("ResourceNotFound", f"Cluster with ARN '{arn}' not found.")
    if not cluster.eks_cluster_arn:
        raise validation(f"Cluster {cluster.name} is not orchestrated by Amazon EKS; task governance supports "
                         "only EKS-orchestrated clusters.")
    return cluster


def _live(kind: str, cluster_arn: str) -> list[Policy]:
    return [policy for policy in _policies.values()
            if policy.kind == kind and policy.cluster_arn == cluster_arn and policy.status not in GONE]


def _find(call: Call, kind: str, key: str) -> Policy:
    policy = _policies.get(call.params[key])
    if policy is None or policy.kind != kind or policy.region != call.region:
        noun = "Cluster scheduler config" if kind == "cluster-scheduler-config" else "Compute quota"
        raise ApiError("ResourceNotFound", f"{noun} with ID '{call.params[key]}' not found.")
    _advance(policy)
    return policy


def _gone(policy: Policy) -> None:
    if policy.status == "Deleted":
        raise ApiError("ResourceNotFound", f"{policy.name} ({policy.id}) has been deleted.")


def _check_update(policy: Policy, target_version: int) -> None:
    _gone(policy)
    if policy.status not in SETTLED:
        raise ApiError("ConflictException", f"{policy.name} is in {policy.status} state; it can be changed only "
                                            f"when it is in one of {', '.join(SETTLED)}.")
    if target_version != policy.version:
        raise ApiError("ConflictException", f"TargetVersion {target_version} does not match the current version "
                                            f"{policy.version} of {policy.name}.")


def _new(call: Call, kind: str, cluster: hyperpod.Cluster, members: dict[str, Any]) -> Policy:
    now, principal = clock.now(), _principal(call)
    policy = Policy(kind=kind, id=core.lower_alnum(12), name=call.params["Name"], region=call.region,
                    cluster_arn=cluster.arn, created_at=now, created_by=principal, since=now, modified_at=now,
                    modified_by=principal, tags=core.tag_list(call.get("Tags")), versions={1: members})
    _policies[policy.id] = policy
    return policy


def _revise(call: Call, policy: Policy, members: dict[str, Any]) -> None:
    now = clock.now()
    policy.version += 1
    policy.versions[policy.version] = members
    policy.status, policy.since, policy.modified_at, policy.modified_by = "Updating", now, now, _principal(call)
    policy.failure_reason = None


def _delete(policy: Policy) -> None:
    _gone(policy)
    if policy.status not in SETTLED:
        raise ApiError("ConflictException", f"{policy.name} is in {policy.status} state; it can be deleted only "
                                            f"when it is in one of {', '.join(SETTLED)}.")
    policy.status, policy.since, policy.modified_at = "Deleting", clock.now(), clock.now()


def _version(call: Call, policy: Policy, key: str) -> dict[str, Any]:
    number = call.get(key)
    if number is None:
        return policy.current
    if number not in policy.versions:
        raise ApiError("ResourceNotFound", f"Version {number} of {policy.name} not found.")
    return policy.versions[number]


def _described(policy: Policy, members: dict[str, Any]) -> dict[str, Any]:
    return {"Name": policy.name, "Status": policy.status, "FailureReason": policy.failure_reason,
            "ClusterArn": policy.cluster_arn, "CreationTime": core.utc(policy.created_at),
            "CreatedBy": _user(policy.created_by), "LastModifiedTime": core.utc(policy.modified_at),
            "LastModifiedBy": _user(policy.modified_by), **members}


def _listed(call: Call, kind: str, sort_keys: dict[str, Any]) -> tuple[list[Policy], str | None]:
    selected = [policy for policy in _policies.values() if policy.kind == kind and policy.region == call.region]
    for policy in selected:
        _advance(policy)
    after, before = call.get("CreatedAfter"), call.get("CreatedBefore")
    filters: list[Any] = [
        (call.get("NameContains"), lambda p, v: v in p.name),
        (call.get("ClusterArn"), lambda p, v: p.cluster_arn == v),
        (call.get("Status"), lambda p, v: p.status == v),
        (after, lambda p, v: p.created_at > _epoch(v)),
        (before, lambda p, v: p.created_at < _epoch(v)),
    ]
    for value, keep in filters:
        if value is not None:
            selected = [policy for policy in selected if keep(policy, value)]
    selected.sort(key=sort_keys[call.get("SortBy", "CreationTime")],
                  reverse=call.get("SortOrder", "Descending") == "Descending")
    return core.paginate(selected, call.get("NextToken"), call.get("MaxResults"))


def _epoch(value: Any) -> float:
    return value.timestamp() if isinstance(value, datetime.datetime) else float(value)


_SORT = {"Name": lambda p: p.name, "CreationTime": lambda p: p.created_at, "Status": lambda p: p.status,
         "ClusterArn": lambda p: (p.cluster_arn, p.created_at)}


def _check_scheduler_config(config: dict[str, Any]) -> None:
    names = [item["Name"] for item in config.get("PriorityClasses") or []]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise validation(f"Priority class names must be unique; repeated: {', '.join(duplicates)}.")


@operation("sagemaker", "CreateClusterSchedulerConfig")
def create_cluster_scheduler_config(call: Call) -> dict[str, Any]:
    cluster = _cluster(call)
    _check_scheduler_config(call.params["SchedulerConfig"])
    existing = _live("cluster-scheduler-config", cluster.arn)
    if existing:
        raise ApiError("ConflictException", f"Cluster {cluster.name} already has a cluster scheduler config "
                                            f"({existing[0].id}); update it or delete it first.")
    policy = _new(call, "cluster-scheduler-config", cluster, {
        "SchedulerConfig": call.params["SchedulerConfig"], "Description": call.get("Description")})
    return {"ClusterSchedulerConfigArn": policy.arn, "ClusterSchedulerConfigId": policy.id}


def _scheduler_status_details(policy: Policy) -> dict[str, str]:
    config = policy.current["SchedulerConfig"]
    return {component: policy.status for component in ("PriorityClasses", "FairShare", "IdleResourceSharing")
            if config.get(component) is not None}


@operation("sagemaker", "DescribeClusterSchedulerConfig")
def describe_cluster_scheduler_config(call: Call) -> dict[str, Any]:
    policy = _find(call, "cluster-scheduler-config", "ClusterSchedulerConfigId")
    members = _version(call, policy, "ClusterSchedulerConfigVersion")
    return {"ClusterSchedulerConfigArn": policy.arn, "ClusterSchedulerConfigId": policy.id,
            "ClusterSchedulerConfigVersion": call.get("ClusterSchedulerConfigVersion", policy.version),
            "StatusDetails": _scheduler_status_details(policy) or None, **_described(policy, members)}


@operation("sagemaker", "UpdateClusterSchedulerConfig")
def update_cluster_scheduler_config(call: Call) -> dict[str, Any]:
    policy = _find(call, "cluster-scheduler-config", "ClusterSchedulerConfigId")
    _check_update(policy, call.params["TargetVersion"])
    members = dict(policy.current)
    for key in ("SchedulerConfig", "Description"):
        if call.get(key) is not None:
            members[key] = call.params[key]
    _check_scheduler_config(members["SchedulerConfig"])
    _revise(call, policy, members)
    return {"ClusterSchedulerConfigArn": policy.arn, "ClusterSchedulerConfigVersion": policy.version}


@operation("sagemaker", "DeleteClusterSchedulerConfig")
def delete_cluster_scheduler_config(call: Call) -> dict[str, Any]:
    _delete(_find(call, "cluster-scheduler-config", "ClusterSchedulerConfigId"))
    return {}


@operation("sagemaker", "ListClusterSchedulerConfigs")
def list_cluster_scheduler_configs(call: Call) -> dict[str, Any]:
    page, token = _listed(call, "cluster-scheduler-config", _SORT)
    return {"ClusterSchedulerConfigSummaries": [
        {"ClusterSchedulerConfigArn": policy.arn, "ClusterSchedulerConfigId": policy.id,
         "ClusterSchedulerConfigVersion": policy.version, "Name": policy.name,
         "CreationTime": core.utc(policy.created_at), "LastModifiedTime": core.utc(policy.modified_at),
         "Status": policy.status, "ClusterArn": policy.cluster_arn} for policy in page], "NextToken": token}


def _check_quota(cluster: hyperpod.Cluster, config: dict[str, Any]) -> None:
    types = {group.instance_type for group in cluster.groups.values() if not group.deleting}
    for item in config.get("ComputeQuotaResources") or []:
        if item["InstanceType"] not in types:
            raise validation(f"Instance type {item['InstanceType']} is not in any instance group of cluster "
                             f"{cluster.name}; the cluster has {', '.join(sorted(types)) or 'no instance groups'}.")
    sharing = config.get("ResourceSharingConfig") or {}
    borrows = sharing.get("BorrowLimit") is not None or sharing.get("AbsoluteBorrowLimits")
    if borrows and sharing.get("Strategy") != "LendAndBorrow":
        raise validation(f"BorrowLimit and AbsoluteBorrowLimits apply only to the LendAndBorrow strategy, not to "
                         f"{sharing.get('Strategy')}.")


def _check_quota_unique(cluster: hyperpod.Cluster, name: str, team: str, own: Policy | None = None) -> None:
    for other in _live("compute-quota", cluster.arn):
        if other is own:
            continue
        if other.name == name:
            raise ApiError("ConflictException", f"A compute quota named {name} already exists in cluster "
                                                f"{cluster.name}.")
        if other.current["ComputeQuotaTarget"]["TeamName"] == team:
            raise ApiError("ConflictException", f"Team {team} already has a compute quota ({other.name}) in "
                                                f"cluster {cluster.name}.")


@operation("sagemaker", "CreateComputeQuota")
def create_compute_quota(call: Call) -> dict[str, Any]:
    cluster = _cluster(call)
    config, target = call.params["ComputeQuotaConfig"], call.params["ComputeQuotaTarget"]
    _check_quota(cluster, config)
    _check_quota_unique(cluster, call.params["Name"], target["TeamName"])
    policy = _new(call, "compute-quota", cluster, {
        "ComputeQuotaConfig": config, "ComputeQuotaTarget": target,
        "ActivationState": call.get("ActivationState", "Enabled"), "Description": call.get("Description")})
    return {"ComputeQuotaArn": policy.arn, "ComputeQuotaId": policy.id}


@operation("sagemaker", "DescribeComputeQuota")
def describe_compute_quota(call: Call) -> dict[str, Any]:
    policy = _find(call, "compute-quota", "ComputeQuotaId")
    members = _version(call, policy, "ComputeQuotaVersion")
    return {"ComputeQuotaArn": policy.arn, "ComputeQuotaId": policy.id,
            "ComputeQuotaVersion": call.get("ComputeQuotaVersion", policy.version), **_described(policy, members)}


@operation("sagemaker", "UpdateComputeQuota")
def update_compute_quota(call: Call) -> dict[str, Any]:
    policy = _find(call, "compute-quota", "ComputeQuotaId")
    _check_update(policy, call.params["TargetVersion"])
    members = dict(policy.current)
    for key in ("ComputeQuotaConfig", "ComputeQuotaTarget", "ActivationState", "Description"):
        if call.get(key) is not None:
            members[key] = call.params[key]
    team = policy.current["ComputeQuotaTarget"]["TeamName"]
    if members["ComputeQuotaTarget"]["TeamName"] != team:
        raise validation(f"The team name of compute quota {policy.name} cannot change (it is {team}).")
    cluster = hyperpod.find(policy.cluster_arn, region="")
    if cluster is None:
        raise ApiError("ResourceNotFound", f"Cluster with ARN '{policy.cluster_arn}' not found.")
    _check_quota(cluster, members["ComputeQuotaConfig"])
    _revise(call, policy, members)
    return {"ComputeQuotaArn": policy.arn, "ComputeQuotaVersion": policy.version}


@operation("sagemaker", "DeleteComputeQuota")
def delete_compute_quota(call: Call) -> dict[str, Any]:
    _delete(_find(call, "compute-quota", "ComputeQuotaId"))
    return {}


@operation("sagemaker", "ListComputeQuotas")
def list_compute_quotas(call: Call) -> dict[str, Any]:
    page, token = _listed(call, "compute-quota", _SORT)
    return {"ComputeQuotaSummaries": [
        {"ComputeQuotaArn": policy.arn, "ComputeQuotaId": policy.id, "Name": policy.name,
         "ComputeQuotaVersion": policy.version, "Status": policy.status, "ClusterArn": policy.cluster_arn,
         "ComputeQuotaConfig": policy.current["ComputeQuotaConfig"],
         "ComputeQuotaTarget": policy.current["ComputeQuotaTarget"],
         "ActivationState": policy.current["ActivationState"], "CreationTime": core.utc(policy.created_at),
         "LastModifiedTime": core.utc(policy.modified_at)} for policy in page], "NextToken": token}


def _policy_tags(arn: str) -> dict[str, str] | None:
    policy = _policies.get(arn.rsplit("/", 1)[-1])
    return policy.tags if policy is not None and policy.arn == arn else None


tags.register("sagemaker", ("cluster-scheduler-config", "compute-quota"), _policy_tags)


@dataclass(frozen=True)
class QuotaView:
    """A compute quota in force (``Created``/``Updated`` and ``Enabled``), its current version's members."""

    id: str
    name: str
    team: str
    fair_share_weight: int
    resources: tuple[dict[str, Any], ...]
    strategy: str
    borrow_limit: int | None
    absolute_borrow_limits: tuple[dict[str, Any], ...]
    preempt_team_tasks: str


@dataclass(frozen=True)
class GovernanceView:
    """The task-governance policies of the HyperPod cluster an EKS cluster orchestrates, for the simulator."""

    cluster_arn: str
    priority_classes: tuple[tuple[str, int], ...]
    fair_share: bool
    quotas: tuple[QuotaView, ...]
    instance_types: dict[str, int] = field(default_factory=dict)
    """Instance type → instances the cluster's groups target."""


IN_FORCE = ("Created", "Updated", "UpdateFailed")


def task_governance(eks_cluster_arn: str) -> GovernanceView | None:
    """The policies in force on the HyperPod cluster orchestrated by ``eks_cluster_arn`` (``None`` without one)."""
    refresh()
    cluster = next((c for c in hyperpod.clusters() if c.eks_cluster_arn == eks_cluster_arn
                    and c.status != "Deleting"), None)
    if cluster is None:
        return None
    scheduler = next((p for p in _policies.values() if p.kind == "cluster-scheduler-config"
                      and p.cluster_arn == cluster.arn and p.status in IN_FORCE), None)
    config = scheduler.current["SchedulerConfig"] if scheduler else {}
    quotas = []
    for policy in _policies.values():
        if policy.kind != "compute-quota" or policy.cluster_arn != cluster.arn or policy.status not in IN_FORCE:
            continue
        members = policy.current
        if members.get("ActivationState", "Enabled") != "Enabled":
            continue
        quota, target = members["ComputeQuotaConfig"], members["ComputeQuotaTarget"]
        sharing = quota.get("ResourceSharingConfig") or {"Strategy": "LendAndBorrow"}
        strategy = sharing.get("Strategy", "LendAndBorrow")
        quotas.append(QuotaView(
            id=policy.id, name=policy.name, team=target["TeamName"],
            fair_share_weight=int(target.get("FairShareWeight", 0)),
            resources=tuple(quota.get("ComputeQuotaResources") or ()), strategy=strategy,
            borrow_limit=sharing.get("BorrowLimit", 50) if strategy == "LendAndBorrow" else None,
            absolute_borrow_limits=tuple(sharing.get("AbsoluteBorrowLimits") or ()),
            preempt_team_tasks=quota.get("PreemptTeamTasks", "LowerPriority")))
    types: dict[str, int] = {}
    for group in cluster.groups.values():
        if not group.deleting:
            types[group.instance_type] = types.get(group.instance_type, 0) + group.target
    return GovernanceView(cluster_arn=cluster.arn,
                          priority_classes=tuple((item["Name"], int(item["Weight"]))
                                                 for item in config.get("PriorityClasses") or ()),
                          fair_share=config.get("FairShare", "Enabled") == "Enabled", quotas=tuple(quotas),
                          instance_types=types)
