"""Turning a self-managed endpoint's KEDA autoscaling on, changing it and turning it off; the ``endpoint.autoscale``
operation that carries it out; and what the cluster shows of it.

The services authorize through ``accounts.access`` (``endpoint.update``, operators), check the settings
(:func:`inference.endpoints.autoscaling.check`) before anything is written or sent, then record the settings on the
endpoint, start the operation and audit it in one transaction. ``no_changes`` when the settings are the ones it has
(or autoscaling is already off); ``endpoint_busy``/``endpoint_deleted`` as for every change of an endpoint.

``endpoint.autoscale``: *keda* (turning on: install KEDA's release manifests when no KEDA operator runs, and wait
until it does — ``keda_failed`` with the pod's reason when it cannot start) → *apply* (the ScaledObject created or
replaced — the API server validates it against KEDA's CRD — or, turning off, deleted and the Deployment scaled back
to the endpoint's own ``replicas``) → *settle* (turning on: until KEDA reports the ScaledObject ``Ready``, its
reason otherwise, ``autoscaling_failed``; turning off: until every replica is ready, then the KEDA InstantStart
installed is removed when no endpoint of the cluster autoscales any more —
:func:`inference.endpoints.pipeline.release_keda`).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, cast

from django.db import transaction
from kubernetes import client as k8s

from accounts import access, audit
from accounts.models import User
from cloud import kube, kube_objects
from clusters.features import keda
from config.errors import InvalidFields, ValidationFailed
from inference import actions
from inference import objects as inference_objects
from inference.endpoints import autoscaling, manifests, observe
from inference.endpoints.pipeline import endpoint_finished, endpoint_of, release_keda
from inference.endpoints.plan import SHARED_KEDA, check_shared
from inference.endpoints.services import _changeable
from inference.models import Endpoint, EndpointState
from inference.services import require_active, start_endpoint_operation
from operations import idempotency
from operations.context import StepContext
from operations.models import Operation
from operations.pipeline import Phase, PhaseFailed, Pipeline, Progress

KIND = "endpoint.autoscale"


# --- services -----------------------------------------------------------------------------------------------------


def autoscaling_set(*, actor: User, endpoint: Endpoint, requested: dict[str, Any], origin: str,
                    idempotency_key: str | None = None) -> tuple[Endpoint, Operation]:
    """Turn autoscaling on with ``requested`` settings, or change the fields given (the others stay). Not for an
    endpoint on another team's cluster (``not_on_shared_cluster``: KEDA is installed and removed cluster-wide)."""
    access.require(actor, actions.ENDPOINT_UPDATE, endpoint)
    replayed = idempotency.replayed(endpoint.team, idempotency_key)
    if replayed is not None:
        return endpoint, replayed
    _changeable(endpoint)
    require_active(endpoint.cluster)
    problems = InvalidFields()
    check_shared(endpoint.cluster, endpoint.team, "non_field_errors", SHARED_KEDA, problems)
    problems.raise_if_any()
    settings = autoscaling.check(endpoint, requested).as_json()
    if settings == endpoint.autoscaling:
        raise ValidationFailed.for_field("non_field_errors", "no_changes", "The endpoint already autoscales with "
                                         "these settings.")
    return _record(actor, endpoint, settings, origin, idempotency_key)


def autoscaling_disable(*, actor: User, endpoint: Endpoint, origin: str,
                        idempotency_key: str | None = None) -> tuple[Endpoint, Operation]:
    """Turn autoscaling off: the ScaledObject goes and the endpoint returns to its own ``replicas``."""
    access.require(actor, actions.ENDPOINT_UPDATE, endpoint)
    replayed = idempotency.replayed(endpoint.team, idempotency_key)
    if replayed is not None:
        return endpoint, replayed
    _changeable(endpoint)
    require_active(endpoint.cluster)
    if not endpoint.autoscaling:
        raise ValidationFailed.for_field("non_field_errors", "no_changes", "The endpoint does not autoscale.")
    return _record(actor, endpoint, {}, origin, idempotency_key)


def _record(actor: User, endpoint: Endpoint, settings: dict[str, Any], origin: str,
            idempotency_key: str | None) -> tuple[Endpoint, Operation]:
    with transaction.atomic():
        before = {"autoscaling": endpoint.autoscaling}
        endpoint.autoscaling = settings
        endpoint.state, endpoint.status_reason = EndpointState.UPDATING, (
            "Turning autoscaling on" if settings else "Turning autoscaling off")
        endpoint.save(update_fields=["autoscaling", "state", "status_reason", "updated_at"])
        title = (f"Autoscale {endpoint.name} on {settings['metric_name']} ({settings['min_replicas']}–"
                 f"{settings['max_replicas']} replicas)") if settings else f"Stop autoscaling {endpoint.name}"
        operation = start_endpoint_operation(actor, endpoint, KIND, title, {"autoscaling": settings}, origin,
                                             idempotency_key)
        audit.record(actor=actor, source=origin, action=actions.ENDPOINT_UPDATE, target=endpoint, team=endpoint.team,
                     before=before, after={"autoscaling": settings})
    return endpoint, operation


# --- the cluster's objects ----------------------------------------------------------------------------------------


def _replace(endpoint: Endpoint, found: dict[str, Any], body: dict[str, Any]) -> None:
    body = {**body, "metadata": {**body["metadata"], "resourceVersion": found["metadata"]["resourceVersion"]}}
    with kube.translated(f"replace {autoscaling.SCALED_OBJECTS}"):
        k8s.CustomObjectsApi(autoscaling.api(endpoint)).replace_namespaced_custom_object(
            autoscaling.GROUP, autoscaling.VERSION, endpoint.namespace, autoscaling.PLURAL, endpoint.name, body)


# --- the operation ------------------------------------------------------------------------------------------------


def _wanted(ctx: StepContext) -> dict[str, Any]:
    return cast(dict[str, Any], ctx.params["autoscaling"])


def submit_keda(ctx: StepContext) -> None:
    endpoint = endpoint_of(ctx)
    if not _wanted(ctx):
        return
    status = keda.observe(endpoint.cluster)
    if status.running:
        ctx.log(f"KEDA runs on {endpoint.cluster.name}" + ("" if status.managed else " (installed outside "
                                                          "InstantStart; used as it is)") + ".")
        return
    created = keda.apply(endpoint.cluster)
    ctx.log(f"Installing KEDA {keda.version()} ({len(created)} objects).")


def poll_keda(ctx: StepContext) -> Progress:
    endpoint = endpoint_of(ctx)
    if not _wanted(ctx):
        return Progress.finished("not needed")
    status = keda.observe(endpoint.cluster)
    if status.running:
        return Progress.finished("KEDA runs")
    if status.problem:
        raise PhaseFailed(f"KEDA does not start: {status.problem}", code="keda_failed")
    if not status.found:
        keda.apply(endpoint.cluster)
    return Progress.waiting(f"KEDA {', '.join(status.ready) or 'nothing'} ready")


def submit_apply(ctx: StepContext) -> None:
    endpoint = endpoint_of(ctx)
    api = autoscaling.api(endpoint)
    found = kube_objects.get(api, autoscaling.SCALED_OBJECTS, endpoint.namespace, endpoint.name)
    wanted = _wanted(ctx)
    if not wanted:
        if found is not None:
            kube_objects.delete(api, autoscaling.SCALED_OBJECTS, endpoint.namespace, endpoint.name)
        inference_objects.patch(endpoint.cluster, inference_objects.DEPLOYMENTS, endpoint.namespace, endpoint.name,
                                {"spec": {"replicas": endpoint.replicas}})
        ctx.log(f"Deleted the ScaledObject; back to {endpoint.replicas} replicas.")
        return
    body = autoscaling.scaled_object(endpoint, autoscaling.check(endpoint, wanted))
    if found is None:
        _, mine = kube_objects.create_once(api, autoscaling.SCALED_OBJECTS, endpoint.namespace, body,
                                           label=manifests.ENDPOINT_LABEL)
        if not mine:
            raise PhaseFailed(f"A ScaledObject named {endpoint.name} already exists in {endpoint.namespace} and "
                              "InstantStart did not make it.", code="endpoint_name_taken")
        ctx.log(f"Created ScaledObject {endpoint.namespace}/{endpoint.name}.")
    else:
        _replace(endpoint, found, body)
        ctx.log(f"Replaced ScaledObject {endpoint.namespace}/{endpoint.name}.")


def poll_done(ctx: StepContext) -> Progress:
    return Progress.finished()


def poll_settle(ctx: StepContext) -> Progress:
    endpoint = endpoint_of(ctx)
    if not _wanted(ctx):
        seen = observe.look(endpoint, with_logs=False)
        if seen.rolled_out:
            release_keda(ctx, endpoint)
            return Progress.finished(f"{seen.ready}/{seen.desired} replicas ready")
        return Progress.waiting(f"{seen.ready}/{seen.desired} replicas ready")
    scaled = kube_objects.get(autoscaling.api(endpoint), autoscaling.SCALED_OBJECTS, endpoint.namespace,
                              endpoint.name) or {}
    ready = next((entry for entry in (scaled.get("status") or {}).get("conditions") or []
                  if entry.get("type") == "Ready"), None)
    if ready is None:
        return Progress.waiting("Waiting for KEDA to take the ScaledObject")
    if ready.get("status") != "True":
        raise PhaseFailed(f"KEDA refuses the ScaledObject: {ready.get('message', ready.get('reason', ''))}",
                          code="autoscaling_failed")
    settings = endpoint.autoscaling
    return Progress.finished(f"KEDA scales {endpoint.name} between {settings['min_replicas']} and "
                             f"{settings['max_replicas']} replicas on {settings['metric_name']}")


def submit_settle(ctx: StepContext) -> None:
    ctx.log("Waiting for KEDA to report the ScaledObject ready." if _wanted(ctx) else
            "Waiting for the replicas to be ready.")


def autoscale_retried(operation: Operation) -> None:
    Endpoint.objects.filter(pk=operation.params["endpoint_id"]).update(state=EndpointState.UPDATING)


PIPELINE = Pipeline(
    kind=KIND,
    phases=(Phase("keda", "Install KEDA when needed", submit_keda, poll_keda, timeout=timedelta(minutes=15),
                  poll_interval=5.0),
            Phase("apply", "Apply the ScaledObject", submit_apply, poll_done, timeout=timedelta(minutes=5)),
            Phase("settle", "Wait for KEDA", submit_settle, poll_settle, timeout=timedelta(minutes=15),
                  poll_interval=2.0)),
    on_finished=endpoint_finished,
    on_retried=autoscale_retried,
)
