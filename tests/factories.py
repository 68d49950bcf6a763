"""Rows the tests need without going through a service or the cloud: valid defaults, any field overridden by keyword.

``factories.cluster(team)`` is an active cluster record named ``alpha`` in ``us-west-2`` with nothing behind it in
AWS; tests that need the cloud build it in the sandbox (``tests/clusters/sandbox.py``) or through the API.
"""

from __future__ import annotations

from accounts.models import Team
from clusters.models import Cluster, ClusterState, InstanceGroup, StorageKind, StorageVolume
from clusters.ownership import team_namespace
from clusters.storage import volume_object_names
from config import sealing
from governance.models import ComputeQuota, PolicyState, SchedulerConfig
from governance.names import quota_name, scheduler_config_name
from inference.models import DownloadSource, DownloadState, ModelDownload
from notifications.models import Channel, Subscription
from training.models import JobState, TrainingJob, TrainingPath

REGION = "us-west-2"


def cluster(team: Team, name: str = "alpha", **fields) -> Cluster:
    """An ``active`` cluster of ``team`` in ``us-west-2`` whose EKS cluster has its name."""
    return Cluster.objects.create(**{"team": team, "name": name, "region": REGION, "state": ClusterState.ACTIVE,
                                     "eks_name": name, **fields})


def instance_group(cluster: Cluster, name: str = "workers", **fields) -> InstanceGroup:
    """An on-demand ``ml.g5.8xlarge`` instance group of ``cluster`` (no instances yet), owned by its team."""
    return InstanceGroup.objects.create(**{"cluster": cluster, "team": cluster.team, "name": name,
                                           "instance_type": "ml.g5.8xlarge", **fields})


def storage_volume(cluster: Cluster, name: str = "shared", **fields) -> StorageVolume:
    """An S3 volume of ``cluster`` (state ``creating``) in its team's namespace, its PersistentVolume and claim named
    as ``storage_create`` names them."""
    pv_name, pvc_name = volume_object_names(cluster, name)
    return StorageVolume.objects.create(**{
        "cluster": cluster, "team": cluster.team, "name": name, "kind": StorageKind.S3,
        "namespace": team_namespace(cluster.team), "pv_name": pv_name, "pvc_name": pvc_name, **fields})


def model_download(cluster: Cluster, name: str = "qwen", **fields) -> ModelDownload:
    """A ``running`` Hub download of ``cluster``'s team into ``models/<name>/`` of a bucket named ``shared``."""
    return ModelDownload.objects.create(**{
        "team": cluster.team, "cluster": cluster, "name": name, "source": DownloadSource.HUB,
        "repo_id": "Qwen/Qwen2.5-0.5B-Instruct", "revision": "main", "bucket": "shared",
        "prefix": f"teams/{cluster.team.slug}/models/{name}/", "namespace": team_namespace(cluster.team),
        "state": DownloadState.RUNNING, **fields})


def training_job(cluster: Cluster, name: str = "llama", **fields) -> TrainingJob:
    """A ``running`` PyTorch job of ``cluster``'s team on the HyperPod path, in the team's namespace."""
    return TrainingJob.objects.create(**{
        "team": cluster.team, "cluster": cluster, "name": name, "namespace": team_namespace(cluster.team),
        "recipe": "pytorch", "path": TrainingPath.HYPERPOD, "state": JobState.RUNNING, **fields})


def subscription(team: Team, name: str = "hooks", *, secret: str = "whsec_test", **fields) -> Subscription:
    """A webhook subscription of ``team`` to every operation event, to a URL nothing answers, signed with
    ``secret``."""
    return Subscription.objects.create(**{
        "team": team, "name": name, "channel": Channel.WEBHOOK, "url": "https://hooks.invalid/instantstart",
        "event_types": ["operation.cancelled", "operation.failed", "operation.succeeded"],
        "secret": sealing.seal(secret), **fields})


def scheduler_config(cluster: Cluster, **fields) -> SchedulerConfig:
    """A ``ready`` scheduler config of ``cluster`` (priority classes ``inference`` 100 and ``training`` 50, fair share
    on) with nothing behind it in AWS."""
    return SchedulerConfig.objects.create(**{
        "cluster": cluster, "team": cluster.team, "name": scheduler_config_name(cluster),
        "priority_classes": [{"name": "inference", "weight": 100}, {"name": "training", "weight": 50}],
        "fair_share": True, "state": PolicyState.READY, "status": "Created", "config_id": "abcdefabcdef", **fields})


def compute_quota(cluster: Cluster, team: Team | None = None, **fields) -> ComputeQuota:
    """A ``ready`` compute quota on ``cluster`` for ``team`` (the cluster's by default): one ``ml.g5.8xlarge``."""
    for_team = team or cluster.team
    return ComputeQuota.objects.create(**{
        "cluster": cluster, "team": cluster.team, "for_team": for_team, "name": quota_name(cluster, for_team),
        "resources": [{"instance_type": "ml.g5.8xlarge", "count": 1}], "state": PolicyState.READY,
        "status": "Created", "quota_id": "quota0000001", **fields})
