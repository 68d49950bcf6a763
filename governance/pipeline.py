"""The operations of task governance: a phase that sends the SageMaker call and polls the resource to a terminal
status (and, for a new quota, the team's storage in its namespace):

=====================================  ===============================================================================
kind                                   phase
=====================================  ===============================================================================
``governance.scheduler_config.set``    *scheduler-config*: CreateClusterSchedulerConfig when the cluster has none of
                                       ours, else UpdateClusterSchedulerConfig (``TargetVersion`` = the version read);
                                       done when DescribeClusterSchedulerConfig says Created/Updated with the asked
                                       priority classes and fair share
``governance.scheduler_config.delete`` *scheduler-config*: DeleteClusterSchedulerConfig, then Describe until it is gone
``governance.compute_quota.create``    *compute-quota*: CreateComputeQuota, then Describe until Created;
                                       *team-storage*: the team's shared claim in its namespace
                                       (:mod:`governance.storage`), once task governance made the namespace
``governance.compute_quota.update``    *compute-quota*: UpdateComputeQuota, then Describe until Updated
``governance.compute_quota.delete``    *compute-quota*: DeleteComputeQuota, then Describe until it is gone;
                                       *team-identity*: what queued jobs' identity made in the team's namespace
                                       (its pod identity associations with their roles, its ServiceAccounts:
                                       :mod:`governance.identity`)
=====================================  ===============================================================================

Steps are level-triggered: they compare what the row asks for with what Describe answers (only the members
InstantStart sends; AWS fills in defaults such as a borrow limit of 50), send only when they differ and the resource
is settled, and adopt a resource found by its deterministic name. A *Failed status fails the phase with
``governance_failed`` and AWS's ``FailureReason``; retrying it updates a ``CreateFailed``/``UpdateFailed`` resource
once more with what the row asks. ``on_finished`` makes the row ``ready`` (a deleted quota's or config's row is
deleted) or ``failed`` with the error, kept for a retry, which puts it back to working; a create cancelled before
SageMaker made anything leaves no row.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone

from cloud import aws, kube
from governance import identity, plans, sagemaker, storage
from governance.models import ComputeQuota, PolicyState, SchedulerConfig
from operations.context import StepContext
from operations.models import Operation, OperationState
from operations.pipeline import Phase, PhaseFailed, Pipeline, Progress

SCHEDULER_SET = "governance.scheduler_config.set"
SCHEDULER_DELETE = "governance.scheduler_config.delete"
QUOTA_CREATE = "governance.compute_quota.create"
QUOTA_UPDATE = "governance.compute_quota.update"
QUOTA_DELETE = "governance.compute_quota.delete"
#: the row state an operation of each kind works in
WORKING = {SCHEDULER_SET: PolicyState.UPDATING, SCHEDULER_DELETE: PolicyState.DELETING,
           QUOTA_CREATE: PolicyState.CREATING, QUOTA_UPDATE: PolicyState.UPDATING, QUOTA_DELETE: PolicyState.DELETING}


#: The member naming each item of a SageMaker list (priority classes, resources): such lists compare in any order.
LIST_KEYS = ("Name", "InstanceType")


def _keyed(items: list[Any]) -> dict[Any, Any] | None:
    key = next((name for name in LIST_KEYS if items and all(isinstance(item, dict) and name in item
                                                            for item in items)), None)
    return {item[key]: item for item in items} if key else None


def matches(wanted: Any, live: Any) -> bool:
    """Whether ``live`` (Describe's answer) holds every member of ``wanted`` (what InstantStart sends) with its
    value; members AWS adds are ignored, and lists of named items (:data:`LIST_KEYS`) compare in any order."""
    if isinstance(wanted, dict):
        return isinstance(live, dict) and all(key in live and matches(value, live[key])
                                              for key, value in wanted.items())
    if isinstance(wanted, list):
        if not isinstance(live, list) or len(wanted) != len(live):
            return False
        by_name, live_by_name = _keyed(wanted), _keyed(live)
        if by_name is not None and live_by_name is not None:
            return by_name.keys() == live_by_name.keys() and all(
                matches(item, live_by_name[name]) for name, item in by_name.items())
        return all(matches(item, other) for item, other in zip(wanted, live, strict=True))
    return bool(wanted == live)


def _reapply(ctx: StepContext, live: dict[str, Any], version: str) -> bool:
    """On a retried phase, a resource SageMaker left ``CreateFailed`` or ``UpdateFailed`` is updated once more with
    what the row asks (its version then moves on: failing again fails the phase)."""
    if ctx.attempt == 1 or live["Status"] not in sagemaker.REAPPLIABLE:
        return False
    return bool(live[version] == ctx.intend(f"reapplied:{ctx.attempt}", lambda: live[version]))


def _failed(what: str, live: dict[str, Any]) -> PhaseFailed:
    reason = live.get("FailureReason", "")
    return PhaseFailed(f"The {what} is {live['Status']}" + (f": {reason}" if reason else "."),
                       code="governance_failed", detail={"status": live["Status"], "message": reason})


# scheduler config ------------------------------------------------------------------------------------------------


def _config(ctx: StepContext) -> SchedulerConfig:
    return SchedulerConfig.objects.select_related("cluster", "cluster__team").get(pk=ctx.params["config_id"])


def _scheduler_step(ctx: StepContext) -> Progress:
    config = _config(ctx)
    live = sagemaker.find_scheduler_config(config)
    sagemaker_client = sagemaker.client(config.cluster.region)
    if live is None:
        ctx.log(f"Creating the scheduler config {config.name}.")
        with aws.translated("sagemaker", "CreateClusterSchedulerConfig"):
            made = sagemaker_client.create_cluster_scheduler_config(**sagemaker.create_scheduler_request(config))
        config.config_id, config.arn = made["ClusterSchedulerConfigId"], made["ClusterSchedulerConfigArn"]
        config.save(update_fields=["config_id", "arn", "updated_at"])
        ctx.record(scheduler_config_id=config.config_id)
        return Progress.waiting("CreateClusterSchedulerConfig sent")
    status = live["Status"]
    reapply = _reapply(ctx, live, "ClusterSchedulerConfigVersion")
    if status in sagemaker.FAILED and not reapply:
        raise _failed("scheduler config", live)
    settled = status in sagemaker.DONE or reapply
    if settled and not reapply and matches(sagemaker.scheduler_body(config), live.get("SchedulerConfig") or {}):
        SchedulerConfig.objects.filter(pk=config.pk).update(
            config_id=live["ClusterSchedulerConfigId"], arn=live["ClusterSchedulerConfigArn"],
            version=live["ClusterSchedulerConfigVersion"], status=status, updated_at=timezone.now())
        return Progress.finished(f"scheduler config {status}")
    if settled:
        ctx.log(f"Updating the scheduler config {config.name} (version {live['ClusterSchedulerConfigVersion']}).")
        config.config_id = live["ClusterSchedulerConfigId"]
        with aws.translated("sagemaker", "UpdateClusterSchedulerConfig"):
            sagemaker_client.update_cluster_scheduler_config(
                **sagemaker.update_scheduler_request(config, live["ClusterSchedulerConfigVersion"]))
        return Progress.waiting("UpdateClusterSchedulerConfig sent")
    return Progress.waiting(f"scheduler config {status}")


def _scheduler_delete_step(ctx: StepContext) -> Progress:
    config = _config(ctx)
    live = sagemaker.find_scheduler_config(config)
    if live is None or live["Status"] in sagemaker.GONE:
        return Progress.finished("scheduler config deleted")
    if live["Status"] in sagemaker.FAILED and live["Status"].startswith("Delete"):
        raise _failed("scheduler config", live)
    if live["Status"] != "Deleting":
        ctx.log(f"Deleting the scheduler config {config.name}.")
        with aws.translated("sagemaker", "DeleteClusterSchedulerConfig"):
            sagemaker.client(config.cluster.region).delete_cluster_scheduler_config(
                ClusterSchedulerConfigId=live["ClusterSchedulerConfigId"])
        return Progress.waiting("DeleteClusterSchedulerConfig sent")
    return Progress.waiting("scheduler config Deleting")


def submit_scheduler_delete(ctx: StepContext) -> None:
    _scheduler_delete_step(ctx)


def poll_scheduler_delete(ctx: StepContext) -> Progress:
    return _scheduler_delete_step(ctx)


def submit_scheduler(ctx: StepContext) -> None:
    _scheduler_step(ctx)


def poll_scheduler(ctx: StepContext) -> Progress:
    return _scheduler_step(ctx)


# compute quotas --------------------------------------------------------------------------------------------------


def _quota(ctx: StepContext) -> ComputeQuota:
    return ComputeQuota.objects.select_related("cluster", "cluster__team", "for_team").get(pk=ctx.params["quota_id"])


def _quota_step(ctx: StepContext) -> Progress:
    quota = _quota(ctx)
    live = sagemaker.find_quota(quota)
    sagemaker_client = sagemaker.client(quota.cluster.region)
    if live is None:
        ctx.log(f"Creating the compute quota {quota.name} of team {quota.for_team.slug}.")
        with aws.translated("sagemaker", "CreateComputeQuota"):
            made = sagemaker_client.create_compute_quota(**sagemaker.create_quota_request(quota))
        ComputeQuota.objects.filter(pk=quota.pk).update(quota_id=made["ComputeQuotaId"], arn=made["ComputeQuotaArn"])
        ctx.record(compute_quota_id=made["ComputeQuotaId"])
        return Progress.waiting("CreateComputeQuota sent")
    status = live["Status"]
    reapply = _reapply(ctx, live, "ComputeQuotaVersion")
    if status in sagemaker.FAILED and not reapply:
        raise _failed("compute quota", live)
    settled = status in sagemaker.DONE or reapply
    wanted = {"ComputeQuotaConfig": sagemaker.quota_config(quota), "ComputeQuotaTarget": sagemaker.quota_target(quota)}
    if settled and not reapply and matches(wanted, live):
        ComputeQuota.objects.filter(pk=quota.pk).update(
            quota_id=live["ComputeQuotaId"], arn=live["ComputeQuotaArn"], version=live["ComputeQuotaVersion"],
            status=status, updated_at=timezone.now())
        return Progress.finished(f"compute quota {status}")
    if settled:
        ctx.log(f"Updating the compute quota {quota.name} (version {live['ComputeQuotaVersion']}).")
        quota.quota_id = live["ComputeQuotaId"]
        with aws.translated("sagemaker", "UpdateComputeQuota"):
            sagemaker_client.update_compute_quota(**sagemaker.update_quota_request(quota, live["ComputeQuotaVersion"]))
        return Progress.waiting("UpdateComputeQuota sent")
    return Progress.waiting(f"compute quota {status}")


def submit_quota(ctx: StepContext) -> None:
    _quota_step(ctx)


def poll_quota(ctx: StepContext) -> Progress:
    return _quota_step(ctx)


def _delete_step(ctx: StepContext) -> Progress:
    quota = _quota(ctx)
    live = sagemaker.find_quota(quota)
    if live is None or live["Status"] in sagemaker.GONE:
        return Progress.finished("compute quota deleted")
    if live["Status"] in sagemaker.FAILED and live["Status"].startswith("Delete"):
        raise _failed("compute quota", live)
    if live["Status"] != "Deleting":
        ctx.log(f"Deleting the compute quota {quota.name}.")
        with aws.translated("sagemaker", "DeleteComputeQuota"):
            sagemaker.client(quota.cluster.region).delete_compute_quota(ComputeQuotaId=live["ComputeQuotaId"])
        return Progress.waiting("DeleteComputeQuota sent")
    return Progress.waiting("compute quota Deleting")


def submit_delete(ctx: StepContext) -> None:
    _delete_step(ctx)


def poll_delete(ctx: StepContext) -> Progress:
    return _delete_step(ctx)


def _skip(ctx: StepContext) -> None:
    """Nothing to send before the poll looks."""


def _done(ctx: StepContext) -> Progress:
    return Progress.finished()


def poll_team_storage(ctx: StepContext) -> Progress:
    with kube.translated("team storage"):
        phase = storage.ensure_claim(_quota(ctx))
    if phase == "":
        return Progress.finished("no shared volume of the team on the cluster")
    if phase == "Bound":
        return Progress.finished("shared claim Bound")
    return Progress.waiting("waiting for the team's namespace" if phase == "waiting" else f"shared claim {phase}")


def submit_team_identity(ctx: StepContext) -> None:
    for deleted in identity.remove(_quota(ctx)):
        ctx.log(f"Deleted the {deleted}.")


def submit_team_storage_delete(ctx: StepContext) -> None:
    with kube.translated("team storage"):
        for deleted in storage.remove_claim(_quota(ctx)):
            ctx.log(f"Deleted the {deleted}.")


# bookkeeping -----------------------------------------------------------------------------------------------------


def _row(operation: Operation) -> SchedulerConfig | ComputeQuota | None:
    if operation.kind in (SCHEDULER_SET, SCHEDULER_DELETE):
        return SchedulerConfig.objects.filter(pk=operation.params["config_id"]).first()
    return ComputeQuota.objects.filter(pk=operation.params["quota_id"]).first()


def _finished(operation: Operation) -> None:
    """The row is ``ready`` (a deleted quota's row goes) or ``failed`` with the operation's error (kept for a retry);
    a create cancelled before SageMaker made anything (no id recorded) leaves no row."""
    row = _row(operation)
    if row is None:
        return
    made = row.config_id if isinstance(row, SchedulerConfig) else row.quota_id
    if operation.state == OperationState.CANCELLED and not made and row.state == PolicyState.CREATING:
        row.delete()
        return
    if operation.state == OperationState.SUCCEEDED:
        if operation.kind in (QUOTA_DELETE, SCHEDULER_DELETE):
            row.delete()
            return
        row.state, row.last_error = PolicyState.READY, ""
    else:
        row.state, row.last_error = PolicyState.FAILED, operation.error_message or operation.state
    row.save(update_fields=["state", "last_error", "updated_at"])


def _retried(operation: Operation) -> None:
    row = _row(operation)
    if row is not None:
        row.state, row.last_error = WORKING[operation.kind], ""
        row.save(update_fields=["state", "last_error", "updated_at"])


def _pipeline(kind: str, phase: Phase) -> Pipeline:
    return Pipeline(kind=kind, phases=(phase,), on_finished=_finished, on_retried=_retried)


PIPELINES = (
    _pipeline(SCHEDULER_SET, Phase(slug="scheduler-config", title="Scheduler config", submit=submit_scheduler,
                                   poll=poll_scheduler, plan=plans.scheduler_config, timeout=timedelta(minutes=15),
                                   poll_interval=5)),
    _pipeline(SCHEDULER_DELETE, Phase(slug="scheduler-config", title="Delete the scheduler config",
                                      submit=submit_scheduler_delete, poll=poll_scheduler_delete,
                                      plan=plans.scheduler_config_delete, timeout=timedelta(minutes=15),
                                      poll_interval=5)),
    Pipeline(kind=QUOTA_CREATE, phases=(
        Phase(slug="compute-quota", title="Compute quota", submit=submit_quota, poll=poll_quota,
              plan=plans.quota_create, timeout=timedelta(minutes=15), poll_interval=5),
        Phase(slug="team-storage", title="Team storage", submit=_skip, poll=poll_team_storage,
              plan=plans.team_storage, timeout=timedelta(minutes=15), poll_interval=2)),
             on_finished=_finished, on_retried=_retried),
    _pipeline(QUOTA_UPDATE, Phase(slug="compute-quota", title="Compute quota", submit=submit_quota, poll=poll_quota,
                                  plan=plans.quota_update, timeout=timedelta(minutes=15), poll_interval=5)),
    Pipeline(kind=QUOTA_DELETE, phases=(
        Phase(slug="compute-quota", title="Delete the compute quota", submit=submit_delete, poll=poll_delete,
              plan=plans.quota_delete, timeout=timedelta(minutes=15), poll_interval=5),
        Phase(slug="team-identity", title="Remove the queued jobs' identity", submit=submit_team_identity,
              poll=_done, plan=plans.team_identity_delete, timeout=timedelta(minutes=10), poll_interval=1),
        Phase(slug="team-storage", title="Remove the team's shared claim", submit=submit_team_storage_delete,
              poll=_done, plan=plans.team_storage_delete, timeout=timedelta(minutes=10), poll_interval=1)),
             on_finished=_finished, on_retried=_retried),
)
