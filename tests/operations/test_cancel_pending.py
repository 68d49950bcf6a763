"""Cancelling a *pending* domain operation through the generic cancel keeps the domain row in step.

A pending operation never reaches a worker, so the only transition it makes is pending → cancelled in the cancel
service. That transition must run the pipeline's ``on_finished`` exactly as the engine's terminal transitions do:
otherwise a training job stays ``pending`` for ever (and pins its cluster), an instance group keeps its name taken,
a cluster stays ``creating``. Every pipeline with an ``on_finished`` has a case here; the last test fails when a
new one is registered without one.

The rows are written the way the domain services write them (row in its working state, then ``operation_start``
with the same params), without the services' cloud checks: a pending operation has touched nothing in the cloud.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from clusters import usage
from clusters.features.pipeline import kind_for
from clusters.models import (
    ClusterFeature,
    ClusterState,
    FeatureState,
    InstanceGroup,
    StorageState,
)
from inference.models import DownloadState, Endpoint, EndpointState, ModelPool
from inference.selectors import active_downloads_on
from operations import engine, pipeline, services
from operations.models import Operation, OperationPhase, OperationState, PhaseState
from tests import factories
from training.models import JobState, TrackingServer, TrackingServerState, TrainingJob
from training.selectors import active_jobs_on

CANCEL = "/api/v1/operations/{}/cancel"


@dataclass
class Case:
    """Make the domain row and its pending operation; then say what the row must look like once cancelled."""

    start: Callable[[object], tuple[Operation, object]]
    check: Callable[[object], None]


def _start(cast, kind: str, params: dict, target) -> Operation:
    operation, _ = services.operation_start(actor=cast.operator, team=cast.team, kind=kind, title=kind,
                                            params={"region": "us-west-2", **params}, source="api", target=target)
    return operation


def _cluster_case(kind: str, working: str, ends: str = ClusterState.FAILED) -> Case:
    def start(cast):
        cluster = factories.cluster(cast.team, state=working)
        return _start(cast, kind, {"cluster_id": cluster.pk, "eks_name": "alpha", "name": "alpha"}, cluster), cluster

    def check(cluster):
        cluster.refresh_from_db()
        assert cluster.state == ends

    return Case(start, check)


def _volume_case(kind: str, working: str) -> Case:
    def start(cast):
        cluster = factories.cluster(cast.team)
        volume = factories.storage_volume(cluster, "scratch", state=working)
        params = {"cluster_id": cluster.pk, "volume_id": volume.pk}
        return _start(cast, kind, params, volume), volume

    def check(volume):
        volume.refresh_from_db()
        assert volume.state == StorageState.FAILED

    return Case(start, check)


def _feature_start(cast):
    cluster = factories.cluster(cast.team)
    feature = ClusterFeature.objects.create(cluster=cluster, feature="observability", state=FeatureState.ENABLING)
    changes = {"observability": {"enabled": True}}
    return _start(cast, kind_for(changes), {"cluster_id": cluster.pk, "changes": changes}, cluster), feature


def _feature_check(feature):
    feature.refresh_from_db()
    assert feature.state == FeatureState.FAILED


def _group_start(cast):
    cluster = factories.cluster(cast.team)
    group = factories.instance_group(cluster, instance_type="ml.g5.12xlarge", target_count=2, status="Pending")
    params = {"cluster_id": cluster.pk, "group_id": group.pk, "name": "workers"}
    return _start(cast, "instance_group.add", params, group), group


def _group_check(group):
    group.refresh_from_db()
    assert group.deleted and group.status == "Failed"
    assert not InstanceGroup.objects.filter(cluster=group.cluster, name="workers", deleted=False).exists()


def _job_start(cast):
    cluster = factories.cluster(cast.team)
    job = factories.training_job(cluster, state=JobState.PENDING, instance_group="workers",
                                 instance_type="ml.g5.12xlarge")
    operation = _start(cast, "training_job.submit", {"job_id": job.pk, "cluster_id": cluster.pk}, job)
    TrainingJob.objects.filter(pk=job.pk).update(operation=operation)
    assert usage.workloads_on(cluster) == ["training job llama (pending)"]
    return operation, job


def _job_check(job):
    job.refresh_from_db()
    assert job.state == JobState.STOPPED and job.finished_at is not None
    assert not active_jobs_on(job.cluster).exists()
    assert usage.workloads_on(job.cluster) == [] and usage.pinned_to(job.cluster, "workers") == []


def _tracking_server_case(kind: str, working: str) -> Case:
    def start(cast):
        server = TrackingServer.objects.create(team=cast.team, region="us-west-2", name="vision", state=working)
        return _start(cast, kind, {"tracking_server_id": server.pk, "team_id": cast.team.pk}, server), server

    def check(server):
        server.refresh_from_db()
        assert server.state == TrackingServerState.FAILED

    return Case(start, check)


def _download_start(cast):
    download = factories.model_download(factories.cluster(cast.team), state=DownloadState.PENDING)
    return _start(cast, "model_download.run", {"download_id": download.pk}, download), download


def _download_check(download):
    download.refresh_from_db()
    assert download.state == DownloadState.CANCELLED and download.hf_token == ""
    assert not active_downloads_on(download.cluster).exists()


def _endpoint_case(kind: str, working: str, ends: str) -> Case:
    def start(cast):
        cluster = factories.cluster(cast.team)
        endpoint = Endpoint.objects.create(
            team=cast.team, cluster=cluster, name="qwen", namespace="team-x", engine="vllm", image="vllm",
            model_source="shared", model="/mnt/shared/m", served_model_name="qwen", instance_group="workers",
            instance_type="ml.g5.8xlarge", gpus=1, port=8000, state=working)
        return _start(cast, kind, {"endpoint_id": endpoint.pk, "changes": {"replicas": 2}}, endpoint), endpoint

    def check(endpoint):
        endpoint.refresh_from_db()
        assert endpoint.state == ends

    return Case(start, check)


def _pool_case(kind: str, working: str, ends: str) -> Case:
    def start(cast):
        pool = ModelPool.objects.create(
            team=cast.team, cluster=factories.cluster(cast.team), name="pool", namespace="team-x", engine="vllm",
            image="vllm", model_source="shared", model="/mnt/shared/m", instance_group="workers",
            instance_type="ml.g5.8xlarge", gpus=1, workers=1, port=8000, state=working)
        return _start(cast, kind, {"pool_id": pool.pk}, pool), pool

    def check(pool):
        pool.refresh_from_db()
        assert pool.state == ends

    return Case(start, check)


def _governance_case(kind: str, working: str, ends: str | None, *, quota: bool, made: bool = True) -> Case:
    """A scheduler config or compute quota ``working`` under its operation (``made``: SageMaker has it, its id
    recorded); once cancelled it is ``ends`` (``None``: the row is gone, nothing having been made)."""
    key = "quota_id" if quota else "config_id"

    def start(cast):
        make = factories.compute_quota if quota else factories.scheduler_config
        row = make(factories.cluster(cast.team), state=working, **({} if made else {key: ""}))
        return _start(cast, kind, {"cluster_id": row.cluster_id, key: row.pk}, row), row

    def check(row):
        found = type(row).objects.filter(pk=row.pk).first()
        assert (found.state if found else None) == ends

    return Case(start, check)


CASES: dict[str, Case] = {
    "governance.scheduler_config.set": _governance_case("governance.scheduler_config.set", "updating", "failed",
                                                        quota=False),
    "governance.scheduler_config.delete": _governance_case("governance.scheduler_config.delete", "deleting",
                                                           "failed", quota=False),
    "governance.compute_quota.create": _governance_case("governance.compute_quota.create", "creating", None,
                                                        quota=True, made=False),
    "governance.compute_quota.update": _governance_case("governance.compute_quota.update", "updating", "failed",
                                                        quota=True),
    "governance.compute_quota.delete": _governance_case("governance.compute_quota.delete", "deleting", "failed",
                                                        quota=True),
    "model_pool.create": _pool_case("model_pool.create", EndpointState.DEPLOYING, EndpointState.DELETED),
    "model_pool.delete": _pool_case("model_pool.delete", EndpointState.DELETING, EndpointState.DEGRADED),
    "model_download.run": Case(_download_start, _download_check),
    "endpoint.deploy": _endpoint_case("endpoint.deploy", EndpointState.DEPLOYING, EndpointState.DELETED),
    "endpoint.update": _endpoint_case("endpoint.update", EndpointState.UPDATING, EndpointState.DEGRADED),
    "endpoint.delete": _endpoint_case("endpoint.delete", EndpointState.DELETING, EndpointState.DEGRADED),
    "endpoint.autoscale": _endpoint_case("endpoint.autoscale", EndpointState.UPDATING, EndpointState.DEGRADED),
    "managed_endpoint.deploy": _endpoint_case("managed_endpoint.deploy", EndpointState.DEPLOYING,
                                              EndpointState.DELETED),
    "managed_endpoint.update": _endpoint_case("managed_endpoint.update", EndpointState.UPDATING,
                                              EndpointState.DEGRADED),
    "managed_endpoint.delete": _endpoint_case("managed_endpoint.delete", EndpointState.DELETING,
                                              EndpointState.DEGRADED),
    "cluster.create": _cluster_case("cluster.create", ClusterState.CREATING, ClusterState.DELETED),  # nothing made
    "cluster.delete": _cluster_case("cluster.delete", ClusterState.DELETING),
    "cluster.import": _cluster_case("cluster.import", ClusterState.IMPORTING),
    "storage.create": _volume_case("storage.create", StorageState.CREATING),
    "storage.delete": _volume_case("storage.delete", StorageState.DELETING),
    "cluster.features": Case(_feature_start, _feature_check),
    "instance_group.add": Case(_group_start, _group_check),
    "training_job.submit": Case(_job_start, _job_check),
    "mlflow.create": _tracking_server_case("mlflow.create", TrackingServerState.CREATING),
    "mlflow.delete": _tracking_server_case("mlflow.delete", TrackingServerState.DELETING),
}


def _case_of(kind: str) -> str:
    return kind.split(":", 1)[0]


@pytest.mark.parametrize("kind", sorted(CASES))
def test_cancelling_a_pending_operation_finishes_its_domain_row(kind, api, cast):
    operation, row = CASES[kind].start(cast)
    assert operation.state == OperationState.PENDING

    response = api(cast.operator).post(CANCEL.format(operation.pk), {})

    assert response.status_code == 202, response.content
    operation.refresh_from_db()
    assert operation.state == OperationState.CANCELLED
    assert set(OperationPhase.objects.filter(operation=operation).values_list("state", flat=True)) == {
        PhaseState.CANCELLED}
    CASES[kind].check(row)


def test_the_engine_finds_nothing_left_to_do_after_a_pending_cancel(api, cast):
    operation, job = CASES["training_job.submit"].start(cast)
    api(cast.operator).post(CANCEL.format(operation.pk), {})

    assert engine.advance(operation.pk) is None
    job.refresh_from_db()
    assert job.state == JobState.STOPPED


def test_every_pipeline_with_a_finish_hook_has_a_pending_cancel_case():
    hooked = {_case_of(kind) for kind, registered in pipeline._PIPELINES.items() if registered.on_finished}
    assert hooked == set(CASES), "add a case to CASES for each new pipeline with an on_finished hook"
