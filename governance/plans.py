"""What each governance operation would send, for a dry run's plan (``Phase.plan``): the SageMaker request rendered
by the builder the step sends from (:mod:`governance.sagemaker`), after the read the step makes (whether the
resource exists; an update's ``TargetVersion`` is the version read then)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clusters.plans import manifest
from config.plans import Change, aws_call, change, kubernetes_object
from governance import identity, sagemaker, storage
from governance.models import ComputeQuota, SchedulerConfig
from governance.names import team_namespace

Params = Mapping[str, Any]


def scheduler_config(params: Params) -> list[Change]:
    config = SchedulerConfig.objects.select_related("cluster", "cluster__team").get(pk=params["config_id"])
    live = sagemaker.find_scheduler_config(config)
    if live is None:
        return [aws_call("create", "SageMaker cluster scheduler config", config.name,
                         call="sagemaker:CreateClusterSchedulerConfig",
                         request=sagemaker.create_scheduler_request(config))]
    return [aws_call("update", "SageMaker cluster scheduler config", config.name,
                     call="sagemaker:UpdateClusterSchedulerConfig",
                     request=sagemaker.update_scheduler_request(config, live["ClusterSchedulerConfigVersion"]))]


def scheduler_config_delete(params: Params) -> list[Change]:
    config = SchedulerConfig.objects.select_related("cluster").get(pk=params["config_id"])
    return [aws_call("delete", "SageMaker cluster scheduler config", config.name,
                     call="sagemaker:DeleteClusterSchedulerConfig",
                     request={"ClusterSchedulerConfigId": config.config_id or "<the config's id>"})]


def _quota(params: Params) -> ComputeQuota:
    return ComputeQuota.objects.select_related("cluster", "cluster__team", "for_team").get(pk=params["quota_id"])


def quota_create(params: Params) -> list[Change]:
    quota = _quota(params)
    return [aws_call("create", "SageMaker compute quota", quota.name, call="sagemaker:CreateComputeQuota",
                     request=sagemaker.create_quota_request(quota))]


def team_storage(params: Params) -> list[Change]:
    """The team's shared PV and claim in its namespace, when the team has a shared volume on the cluster."""
    quota = _quota(params)
    volume = storage.shared_volume(quota)
    if volume is None:
        return []
    made = storage.objects(volume, team_namespace(quota.for_team))
    return [kubernetes_object("create", manifest(item), when="absent") for item in made]


def team_storage_delete(params: Params) -> list[Change]:
    """The team's shared claim and PV in its namespace, each deleted when it is there (read without the cluster: a
    dry run may have no credentials for it)."""
    quota = _quota(params)
    volume = storage.shared_volume(quota)
    claim = f"{team_namespace(quota.for_team)}/" + (volume.pvc_name if volume else "<the PV's claim>")
    return [change("delete", "kubernetes", "PersistentVolumeClaim", claim, when="present"),
            change("delete", "kubernetes", "PersistentVolume", storage.claim_pv_name(quota), when="present")]


def quota_update(params: Params) -> list[Change]:
    quota = _quota(params)
    live = sagemaker.find_quota(quota) or {}
    return [aws_call("update", "SageMaker compute quota", quota.name, call="sagemaker:UpdateComputeQuota",
                     request=sagemaker.update_quota_request(quota, live.get("ComputeQuotaVersion", 0)))]


def quota_delete(params: Params) -> list[Change]:
    quota = _quota(params)
    return [aws_call("delete", "SageMaker compute quota", quota.name, call="sagemaker:DeleteComputeQuota",
                     request={"ComputeQuotaId": quota.quota_id or "<the quota's id>"})]


def team_identity_delete(params: Params) -> list[Change]:
    """What queued jobs' identity left in the team's namespace, each deleted when it is there and ours
    (:func:`governance.identity.planned`); an association's role goes with it."""
    return [change("delete", "kubernetes" if kind == "ServiceAccount" else "aws", kind, name, when="ours")
            for kind, name in identity.planned(_quota(params))]
