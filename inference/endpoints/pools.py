"""Model pools: warm GPU workers running one server image and model, each serving the pool endpoint its label
names.

A pool is a StatefulSet ``<pool>`` (``Parallel``) of ``workers`` pods ``<pool>-0`` … in the team's namespace,
labelled ``instantstart.io/model-pool: <pool>`` and ``instantstart.io/serves: <endpoint>`` (``idle`` for none). A
pool endpoint is a Service selecting both labels. Moving a worker from one endpoint to another is a label change on
its pod: the server keeps running with its model loaded (no restart, no cold start) and the Services' endpoints
follow at once. The assignment is also kept in :class:`PoolWorker` rows and re-applied to a worker recreated by the
StatefulSet (:func:`reapply`).

``model_pool.create``: *create* (the StatefulSet, exactly once) → *warm* (polled until every worker is ready).
``model_pool.delete``: *remove* → *drain*. A pool that still has endpoints cannot be deleted (``pool_in_use``).
"""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from accounts import access, audit
from accounts.models import User
from clusters.models import Cluster
from config.errors import Conflict, ValidationFailed
from inference import actions, objects
from inference.endpoints import manifests, observe
from inference.endpoints.pipeline import DEPLOY
from inference.endpoints.plan import NAME, Request, plan
from inference.models import Endpoint, EndpointState, Exposure, ModelPool, PoolWorker
from inference.services import require_active
from operations import idempotency
from operations.context import StepContext
from operations.models import Operation, OperationState
from operations.pipeline import Phase, PhaseFailed, Pipeline, Progress
from operations.services import operation_start

CREATE = "model_pool.create"
DELETE = "model_pool.delete"
IDLE = "idle"


def statefulset(pool: ModelPool, labels: dict[str, str], spec: dict) -> dict:
    selector = {manifests.POOL_LABEL: pool.name}
    template_labels = {**labels, manifests.POOL_LABEL: pool.name, manifests.SERVES_LABEL: IDLE}
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": pool.name, "namespace": pool.namespace, "labels": {**labels, **selector}},
            "spec": {"replicas": pool.workers, "serviceName": pool.name, "podManagementPolicy": "Parallel",
                     "selector": {"matchLabels": selector},
                     "template": {"metadata": {"labels": template_labels}, "spec": spec}}}


def pool_create(*, actor: User, cluster: Cluster, request: Request, workers: int, origin: str,
                idempotency_key: str | None = None) -> tuple[ModelPool, Operation]:
    """Check the pool like an endpoint (``inference.endpoints.plan``) and start ``model_pool.create``."""
    access.require(actor, actions.POOL_MANAGE, cluster)
    replayed = idempotency.replayed(cluster.team, idempotency_key)
    if replayed is not None:
        return ModelPool.objects.get(pk=replayed.params["pool_id"]), replayed
    require_active(cluster)
    decided = plan(cluster=cluster, request=request, owner_label=manifests.POOL_LABEL)
    if ModelPool.objects.filter(cluster=cluster, namespace=decided.namespace, name=decided.name).exclude(
            state=EndpointState.DELETED).exists():
        raise ValidationFailed.for_field("name", "pool_name_taken", f"Cluster {cluster.name} already has a model "
                                         f"pool named {decided.name}.")
    server = manifests.container(image=decided.image, command=decided.command, port=decided.port,
                                 gpus=decided.gpus, secret=None)
    spec = manifests.pod_spec(server=server, instance_group=decided.instance_group,
                              instance_type=decided.instance_type)
    with transaction.atomic():
        pool = ModelPool.objects.create(
            team=cluster.team, cluster=cluster, created_by=actor, name=decided.name, namespace=decided.namespace,
            engine=decided.engine, image=decided.image, command=decided.command, model_source=decided.model_source,
            model=decided.model, instance_group=decided.instance_group, instance_type=decided.instance_type,
            gpus=decided.gpus, tensor_parallel=decided.tensor_parallel, pipeline_parallel=decided.pipeline_parallel,
            workers=workers, port=decided.port, status_reason="Waiting for a worker")
        pool.manifest = statefulset(pool, decided.labels, spec)
        pool.save(update_fields=["manifest"])
        PoolWorker.objects.bulk_create(PoolWorker(pool=pool, index=index) for index in range(workers))
        operation, _ = operation_start(actor=actor, team=cluster.team, kind=CREATE, title=f"Warm pool {pool.name}",
                                       params={"pool_id": pool.pk, "cluster_id": cluster.pk,
                                               "region": cluster.region},
                                       source=origin, target=pool, idempotency_key=idempotency_key)
        ModelPool.objects.filter(pk=pool.pk).update(operation=operation)
        audit.record(actor=actor, source=origin, action=actions.POOL_CREATE, target=pool, team=cluster.team,
                     after={"name": pool.name, "workers": workers, "engine": pool.engine, "model": pool.model,
                            "gpus": pool.gpus})
    return pool, operation


def pool_endpoint_create(*, actor: User, pool: ModelPool, name: str, origin: str) -> tuple[Endpoint, Operation]:
    """A pool endpoint: a Service selecting the pool's workers labelled for ``name`` (none at first)."""
    access.require(actor, actions.ENDPOINT_DEPLOY, pool)
    require_active(pool.cluster)
    if not NAME.match(name or "") or name == IDLE:
        raise ValidationFailed.for_field("name", "invalid_endpoint_name", "Use 1–40 lower-case letters, digits and "
                                         "hyphens, starting with a letter (not 'idle').")
    if Endpoint.objects.filter(cluster=pool.cluster, namespace=pool.namespace, name=name).exclude(
            state=EndpointState.DELETED).exists():
        raise ValidationFailed.for_field("name", "endpoint_name_taken", f"An endpoint named {name} exists.")
    labels = {**pool.manifest["metadata"]["labels"], manifests.ENDPOINT_LABEL: name}
    labels.pop(manifests.POOL_LABEL, None)
    service = manifests.service(name=name, namespace=pool.namespace, labels=labels, port=pool.port,
                                selector={manifests.POOL_LABEL: pool.name, manifests.SERVES_LABEL: name},
                                exposure=Exposure.CLUSTER_IP)
    with transaction.atomic():
        endpoint = Endpoint.objects.create(
            team=pool.team, cluster=pool.cluster, created_by=actor, pool=pool, name=name, namespace=pool.namespace,
            engine=pool.engine, image=pool.image, command=pool.command, model_source=pool.model_source,
            model=pool.model, served_model_name=_served(pool), instance_group=pool.instance_group,
            instance_type=pool.instance_type, gpus=pool.gpus, tensor_parallel=pool.tensor_parallel,
            pipeline_parallel=pool.pipeline_parallel, replicas=0, port=pool.port, exposure=Exposure.POOL,
            manifest={"service": service}, state=EndpointState.DEPLOYING)
        operation, _ = operation_start(actor=actor, team=pool.team, kind=DEPLOY, title=f"Deploy {name} on {pool.name}",
                                       params={"endpoint_id": endpoint.pk, "cluster_id": pool.cluster_id,
                                               "region": pool.cluster.region}, source=origin, target=endpoint)
        Endpoint.objects.filter(pk=endpoint.pk).update(operation=operation)
        audit.record(actor=actor, source=origin, action=actions.ENDPOINT_DEPLOY, target=endpoint, team=pool.team,
                     after={"name": name, "pool": pool.name})
    return endpoint, operation


def _served(pool: ModelPool) -> str:
    command = list(pool.command)
    return command[command.index("--served-model-name") + 1] if "--served-model-name" in command else pool.name


def pool_assign(*, actor: User, pool: ModelPool, worker: int, endpoint: Endpoint | None, origin: str) -> PoolWorker:
    """Make worker ``worker`` serve ``endpoint`` (``None``: idle) by relabelling its pod; no restart. The endpoint
    must be one of this pool's (``pool_endpoint_foreign``, also for another team's endpoint)."""
    access.require(actor, actions.POOL_MANAGE, pool)
    row = PoolWorker.objects.filter(pool=pool, index=worker).first()
    if row is None:
        raise ValidationFailed.for_field("worker", "unknown_pool_worker", f"Pool {pool.name} has workers 0–"
                                         f"{pool.workers - 1}.")
    if endpoint is not None and (endpoint.pool_id != pool.pk or endpoint.state == EndpointState.DELETED):
        raise ValidationFailed.for_field("endpoint", "pool_endpoint_foreign", "A pool worker can only serve a live "
                                         f"endpoint of pool {pool.name}.")
    value = endpoint.name if endpoint is not None else IDLE
    objects.patch(pool.cluster, objects.PODS, pool.namespace, f"{pool.name}-{worker}",
                  {"metadata": {"labels": {manifests.SERVES_LABEL: value}}})
    with transaction.atomic():
        before = {"endpoint": row.endpoint.name if row.endpoint else None}
        row.endpoint = endpoint
        row.save(update_fields=["endpoint", "updated_at"])
        for affected in {e for e in (endpoint, _before_endpoint(before, pool)) if e is not None}:
            Endpoint.objects.filter(pk=affected.pk).update(replicas=PoolWorker.objects.filter(
                endpoint=affected).count())
        audit.record(actor=actor, source=origin, action=actions.POOL_ASSIGN, target=pool, team=pool.team,
                     before={"worker": worker, **before}, after={"worker": worker, "endpoint": value})
    return row


def _before_endpoint(before: dict, pool: ModelPool) -> Endpoint | None:
    name = before.get("endpoint")
    return Endpoint.objects.filter(pool=pool, name=name).exclude(state=EndpointState.DELETED).first() if name else None


def reapply(pool: ModelPool) -> None:
    """Put each worker's label back where its pod lost it (a pod the StatefulSet recreated starts ``idle``)."""
    pods = {pod["name"]: pod for pod in observe.pods_of(_probe(pool), f"{manifests.POOL_LABEL}={pool.name}")}
    for row in PoolWorker.objects.filter(pool=pool).select_related("endpoint"):
        pod = pods.get(f"{pool.name}-{row.index}")
        wanted = row.endpoint.name if row.endpoint else IDLE
        if pod is not None and pod["labels"].get(manifests.SERVES_LABEL) != wanted:
            objects.patch(pool.cluster, objects.PODS, pool.namespace, pod["name"],
                          {"metadata": {"labels": {manifests.SERVES_LABEL: wanted}}})
        ready = bool(pod and pod["ready"])
        if row.ready != ready:
            PoolWorker.objects.filter(pk=row.pk).update(ready=ready)


def _probe(pool: ModelPool) -> Endpoint:
    """An unsaved endpoint standing for the pool, to list its pods with :func:`observe.pods_of`."""
    return Endpoint(cluster=pool.cluster, namespace=pool.namespace, name=pool.name)


def pool_delete(*, actor: User, pool: ModelPool, origin: str) -> tuple[ModelPool, Operation]:
    access.require(actor, actions.POOL_MANAGE, pool)
    if pool.state == EndpointState.DELETED:
        raise Conflict(f"Pool {pool.name} is already deleted.", code="pool_deleted")
    using = list(pool.endpoints.exclude(state=EndpointState.DELETED).values_list("name", flat=True))
    if using:
        raise Conflict(f"Pool {pool.name} still serves {', '.join(using)}; delete those endpoints first.",
                       code="pool_in_use")
    with transaction.atomic():
        pool.state, pool.status_reason = EndpointState.DELETING, "Deleting"
        pool.save(update_fields=["state", "status_reason", "updated_at"])
        operation, _ = operation_start(actor=actor, team=pool.team, kind=DELETE, title=f"Delete pool {pool.name}",
                                       params={"pool_id": pool.pk, "cluster_id": pool.cluster_id,
                                               "region": pool.cluster.region}, source=origin, target=pool)
        ModelPool.objects.filter(pk=pool.pk).update(operation=operation)
        audit.record(actor=actor, source=origin, action=actions.POOL_DELETE, target=pool, team=pool.team,
                     before={"state": EndpointState.READY})
    return pool, operation


# --- pipelines ------------------------------------------------------------------------------------------------


def pool_of(ctx_or_operation: StepContext | Operation) -> ModelPool:
    return ModelPool.objects.select_related("cluster", "team").get(pk=ctx_or_operation.params["pool_id"])


def submit_create(ctx: StepContext) -> None:
    pool = pool_of(ctx)
    _, mine = objects.create_once(pool.cluster, objects.STATEFULSETS, pool.namespace, pool.manifest,
                                  label=manifests.POOL_LABEL)
    if not mine:
        raise PhaseFailed(f"A StatefulSet named {pool.name} exists that InstantStart did not make for this pool.",
                          code="pool_name_taken")
    ctx.log(f"Created StatefulSet {pool.namespace}/{pool.name} of {pool.workers} workers.")


def compensate_create(ctx: StepContext) -> None:
    pool = pool_of(ctx)
    objects.delete(pool.cluster, objects.STATEFULSETS, pool.namespace, pool.name)


def poll_done(ctx: StepContext) -> Progress:
    return Progress.finished()


def submit_warm(ctx: StepContext) -> None:
    ctx.log("Waiting until every worker has loaded the model.")


def poll_warm(ctx: StepContext) -> Progress:
    pool = pool_of(ctx)
    seen = observe.Seen(exists=True, pods=observe.pods_of(_probe(pool), f"{manifests.POOL_LABEL}={pool.name}"))
    failure = observe.problem(seen)
    if failure:
        raise PhaseFailed(failure, code="endpoint_failed")
    reapply(pool)
    ready = sum(1 for pod in seen.pods if pod["ready"])
    status = f"{ready}/{pool.workers} workers ready"
    ModelPool.objects.filter(pk=pool.pk).update(status_reason=status)
    return Progress.finished(status) if ready >= pool.workers else Progress.waiting(status)


def submit_remove(ctx: StepContext) -> None:
    pool = pool_of(ctx)
    objects.delete(pool.cluster, objects.STATEFULSETS, pool.namespace, pool.name)
    ctx.log(f"Deleted StatefulSet {pool.name}; its workers stop.")


def submit_drain(ctx: StepContext) -> None:
    ctx.log("Waiting for the workers to stop.")


def poll_drain(ctx: StepContext) -> Progress:
    pool = pool_of(ctx)
    left = observe.pods_of(_probe(pool), f"{manifests.POOL_LABEL}={pool.name}")
    return Progress.waiting(f"{len(left)} workers stopping") if left else Progress.finished()


def pool_finished(operation: Operation) -> None:
    """A warmed pool is ``ready``; a failed one ``failed``; a deleted (or cancelled before it was made) one
    ``deleted``."""
    pool = ModelPool.objects.select_for_update().get(pk=operation.params["pool_id"])
    if (operation.kind == DELETE and operation.state == OperationState.SUCCEEDED) or \
            (operation.kind == CREATE and operation.state == OperationState.CANCELLED):
        pool.state, pool.status_reason = EndpointState.DELETED, "Deleted"
    elif operation.state == OperationState.SUCCEEDED:
        pool.state, pool.status_reason = EndpointState.READY, "Every worker is ready"
    elif operation.state == OperationState.FAILED:
        pool.state, pool.status_reason = EndpointState.FAILED, operation.error_message or pool.status_reason
    else:
        pool.state = EndpointState.DEGRADED
    pool.updated_at = timezone.now()
    pool.save(update_fields=["state", "status_reason", "updated_at"])


CREATE_PIPELINE = Pipeline(
    kind=CREATE,
    phases=(Phase("create", "Create the workers", submit_create, poll_done, compensate=compensate_create,
                  timeout=timedelta(minutes=10)),
            Phase("warm", "Load the model on every worker", submit_warm, poll_warm, timeout=timedelta(hours=2),
                  poll_interval=5.0)),
    on_finished=pool_finished,
)
DELETE_PIPELINE = Pipeline(
    kind=DELETE,
    phases=(Phase("remove", "Delete the workers", submit_remove, poll_done, timeout=timedelta(minutes=10)),
            Phase("drain", "Wait for the workers to stop", submit_drain, poll_drain, timeout=timedelta(minutes=30),
                  poll_interval=2.0)),
    on_finished=pool_finished,
)
