"""The operations of a managed endpoint, and what its objects on the cluster show.

``managed_endpoint.deploy``: *keda* (with an operator autoscaling spec, which the operator carries out through KEDA:
KEDA installed when no KEDA operator runs — :mod:`inference.endpoints.scaling`'s phase) → *create* (the
``InferenceEndpointConfig`` or ``JumpStartModel``, exactly once: a retry adopts the object carrying the endpoint
label) → *deploy* (polled until the operator's status says
``DeploymentComplete`` for the object's generation; ``DeploymentFailed`` fails it with the operator's reason,
``managed_endpoint_failed``).

``managed_endpoint.update``: *keda* (when the autoscaling changes) → *apply* (a merge patch of exactly the changed
fields) → *deploy* (an update that turns the operator's autoscaling off also waits for the operator to delete its
ScaledObject, then removes the KEDA InstantStart installed when no endpoint of the cluster autoscales any more —
:func:`inference.endpoints.pipeline.release_keda`).

``managed_endpoint.delete``: *remove* (the object; the operator's Deployment, Services, ScaledObject and SageMaker
registration go with it) → *drain* (polled until the object, its pods and its ScaledObject are gone; then, when it
autoscaled, the same release of KEDA).

Every poll mirrors what :func:`look` sees into the endpoint row: replicas ready of desired, the operator's state and
conditions, the registered SageMaker endpoint (name, ARN, state), the invocation URL, the TLS certificate's
location, the pods and the Warning events about the object and its pods.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from django.utils import timezone

from cloud import kube_objects
from clusters.models import Cluster
from config.errors import ApplicationError, InvalidFields, ValidationFailed
from config.plans import Change, change
from inference import objects
from inference.endpoints import autoscaling, managed, observe, plans, scaling
from inference.endpoints.pipeline import endpoint_finished, endpoint_of, endpoint_retried, release_keda
from inference.models import Endpoint
from operations.context import StepContext
from operations.pipeline import Phase, PhaseFailed, Pipeline, Progress
from operations.plans import planned

DEPLOY = "managed_endpoint.deploy"
UPDATE = "managed_endpoint.update"
DELETE = "managed_endpoint.delete"
#: The operator's own deadline for a deployment (``maxDeployTimeInSeconds``' default), and a margin.
DEPLOY_TIMEOUT = timedelta(hours=1, minutes=10)
CONFIG_LABEL = "inference.sagemaker.aws.amazon.com/endpoint-config"


def _api(endpoint: Endpoint):
    return objects.api_client(endpoint.cluster)


def live(endpoint: Endpoint) -> dict[str, Any] | None:
    """The endpoint's operator object as the cluster has it now (``None``: gone)."""
    return kube_objects.get(_api(endpoint), managed.kind_of(endpoint), endpoint.namespace, endpoint.name)


def check_with_api_server(cluster: Cluster, body: dict[str, Any], *, existing: bool = False) -> None:
    """Ask the cluster's API server to validate ``body`` against the real CRD — its OpenAPI schema and validation
    rules — with a server-side dry run (of the create; of a merge patch with ``body``'s spec when ``existing``),
    which persists nothing. Its refusal becomes ``crd_invalid`` on the request's fields."""
    api = objects.api_client(cluster)
    kind = managed.JUMPSTART if body["kind"] == "JumpStartModel" else managed.CONFIGS
    namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
    try:
        if existing:
            kube_objects.patch(api, kind, namespace, name, {"spec": body["spec"]}, dry_run=True)
        else:
            kube_objects.check_create(api, kind, namespace, body)
    except ValidationFailed as refusal:
        problems = InvalidFields()
        for path, errors in (refusal.fields or {}).items():
            for error in errors:
                problems.add(managed.field_of(path), "crd_invalid", f"{path}: {error.get('message', '')}")
        if not refusal.fields:
            problems.add("non_field_errors", "crd_invalid", refusal.message)
        problems.raise_if_any()


def _desired(spec: dict[str, Any], deployment: dict[str, Any]) -> int:
    """The replicas the endpoint should have: ``spec.replicas``, or — when the operator autoscales it (KEDA owns
    the count; ``spec.replicas`` was the initial one) — its Deployment's."""
    if spec.get("autoScalingSpec") and deployment.get("replicas") is not None:
        return int(deployment["replicas"])
    return int(spec.get("replicas") or 1)


def look(endpoint: Endpoint) -> dict[str, Any]:
    """What the operator's object, its pods, its events and its SageMaker registration show now (``exists``
    false: the object is gone)."""
    found = live(endpoint)
    if found is None:
        return {"exists": False}
    status = found.get("status") or {}
    generation = found["metadata"].get("generation", 1)
    conditions = [{key: entry.get(key, "") for key in ("type", "status", "reason", "message")}
                  for entry in status.get("conditions") or []]
    deployment = (status.get("deploymentStatus") or {}).get("status") or {}
    sagemaker = (status.get("endpoints") or {}).get("sagemaker") or {}
    pods = observe.pods_of(endpoint, f"{CONFIG_LABEL}={endpoint.name}")
    events = [{**event, "pod": endpoint.name}
              for event in objects.events_about(endpoint.cluster, endpoint.namespace, endpoint.name)
              if event["type"] == "Warning"]
    for pod in pods:
        events += [{**event, "pod": pod["name"]} for event in
                   objects.events_about(endpoint.cluster, endpoint.namespace, pod["name"])
                   if event["type"] == "Warning"]
    failed = next((entry for entry in conditions if entry["type"] == "DeploymentComplete"
                   and entry["status"] == "False" and status.get("state") == "DeploymentFailed"), None)
    spec = found.get("spec") or {}
    return {"exists": True, "state": status.get("state", "DeploymentPending"),
            "current": status.get("observedGeneration", 0) >= generation,
            "desired": _desired(spec, deployment), "ready": int(deployment.get("readyReplicas") or 0),
            "conditions": conditions, "failure": (f"{failed['reason']}: {failed['message']}" if failed else ""),
            "sagemaker": {"name": endpoint.sagemaker_endpoint, "state": sagemaker.get("state", ""),
                          "arn": sagemaker.get("endpointArn", "")},
            "tls": status.get("tlsCertificate") or {}, "pods": pods, "events": events}


def _mirror(endpoint: Endpoint, seen: dict[str, Any]) -> None:
    Endpoint.objects.filter(pk=endpoint.pk).update(ready_replicas=seen.get("ready", 0), observed=seen,
                                                   updated_at=timezone.now())


def submit_create(ctx: StepContext) -> None:
    endpoint = endpoint_of(ctx)
    body = endpoint.manifest["config"]
    _, mine = kube_objects.create_once(_api(endpoint), managed.kind_of(endpoint), endpoint.namespace, body,
                                       label=managed.manifests.ENDPOINT_LABEL)
    if not mine:
        raise PhaseFailed(f"A {body['kind']} named {endpoint.name} already exists in {endpoint.namespace} and "
                          "InstantStart did not make it for this endpoint.", code="endpoint_name_taken")
    ctx.log(f"Created {body['kind']} {endpoint.namespace}/{endpoint.name}; the HyperPod inference operator deploys "
            "it.")


def compensate_create(ctx: StepContext) -> None:
    endpoint = endpoint_of(ctx)
    if kube_objects.delete(_api(endpoint), managed.kind_of(endpoint), endpoint.namespace, endpoint.name):
        ctx.log(f"Deleted the {endpoint.manifest['config']['kind']} of {endpoint.name}.")


def poll_done(ctx: StepContext) -> Progress:
    return Progress.finished()


def submit_deploy(ctx: StepContext) -> None:
    ctx.log("Waiting for the operator: DeploymentComplete (every replica available), or DeploymentFailed.")


def poll_deploy(ctx: StepContext) -> Progress:
    endpoint = endpoint_of(ctx)
    seen = look(endpoint)
    _mirror(endpoint, seen)
    if not seen["exists"]:
        raise PhaseFailed(f"The operator object of {endpoint.name} was deleted outside InstantStart.",
                          code="endpoint_vanished")
    if seen["state"] == "DeploymentFailed" and seen["current"]:
        raise PhaseFailed(f"The inference operator failed to deploy {endpoint.name}: {seen['failure']}",
                          code="managed_endpoint_failed", detail={"conditions": seen["conditions"]})
    failure = observe.problem(observe.Seen(exists=True, pods=seen["pods"], events=seen["events"]))
    if failure:
        raise PhaseFailed(failure, code="endpoint_failed", detail={"pods": seen["pods"]})
    status = f"{seen['state']}: {seen['ready']}/{seen['desired']} replicas ready"
    if seen["state"] == "DeploymentComplete" and seen["current"]:
        if ctx.params.get("stops_autoscaling"):
            if _scaled_objects(endpoint):
                return Progress.waiting("The operator is removing its KEDA ScaledObject")
            release_keda(ctx, endpoint)
        ctx.log(status + (f"; SageMaker endpoint {seen['sagemaker']['name']} {seen['sagemaker']['state']}"
                          if seen["sagemaker"]["state"] else ""))
        return Progress.finished(status)
    Endpoint.objects.filter(pk=endpoint.pk).update(status_reason=status)
    return Progress.waiting(status)


def submit_apply(ctx: StepContext) -> None:
    endpoint = endpoint_of(ctx)
    patch = ctx.params["patch"]
    kube_objects.patch(_api(endpoint), managed.kind_of(endpoint), endpoint.namespace, endpoint.name, patch)
    ctx.log("Changed " + ", ".join(sorted(patch.get("spec") or {})) + ".")


def submit_remove(ctx: StepContext) -> None:
    endpoint = endpoint_of(ctx)
    kube_objects.delete(_api(endpoint), managed.kind_of(endpoint), endpoint.namespace, endpoint.name,
                        propagation="Background")
    ctx.log(f"Deleted the {endpoint.manifest['config']['kind']} of {endpoint.name}; the operator removes its "
            "Deployment, Services and SageMaker registration.")


def submit_drain(ctx: StepContext) -> None:
    ctx.log("Waiting for the object and its pods to be gone.")


def poll_drain(ctx: StepContext) -> Progress:
    endpoint = endpoint_of(ctx)
    if live(endpoint) is not None:
        return Progress.waiting("The operator is removing what it made")
    pods = observe.pods_of(endpoint, f"{CONFIG_LABEL}={endpoint.name}")
    if pods:
        return Progress.waiting(f"{len(pods)} pods stopping")
    if endpoint.operator_autoscaling:
        if _scaled_objects(endpoint):
            return Progress.waiting("Its KEDA ScaledObject is being removed")
        release_keda(ctx, endpoint)
    return Progress.finished("Every pod has stopped")


def _scaled_objects(endpoint: Endpoint) -> list[dict[str, Any]]:
    """The KEDA ScaledObjects the operator made for the endpoint's object (owned by it)."""
    return kube_objects.list_owned(_api(endpoint), autoscaling.SCALED_OBJECTS, endpoint.namespace,
                                   endpoint.manifest["config"]["kind"], endpoint.name)


def refresh_seen(endpoint: Endpoint) -> dict[str, Any] | None:
    """:func:`look`, or ``None`` when the cluster cannot be reached."""
    try:
        return look(endpoint)
    except ApplicationError:
        return None


def _plan_create(params: Mapping[str, Any]) -> list[Change]:
    endpoint = Endpoint.objects.get(pk=params["endpoint_id"])
    config = endpoint.manifest["config"]
    return [change("create", "kubernetes", config["kind"], f"{endpoint.namespace}/{endpoint.name}", manifest=config)]


def _plan_remove(params: Mapping[str, Any]) -> list[Change]:
    endpoint = Endpoint.objects.get(pk=params["endpoint_id"])
    return [change("delete", "kubernetes", endpoint.manifest["config"]["kind"],
                   f"{endpoint.namespace}/{endpoint.name}", by="the HyperPod inference operator: its Deployment, "
                   "Services and SageMaker endpoint registration go too")]


DEPLOY_PHASE = Phase("deploy", "Wait for the operator's deployment", submit_deploy, poll_deploy,
                     timeout=DEPLOY_TIMEOUT, poll_interval=5.0)

#: The operator scales an endpoint with an ``autoScalingSpec`` through KEDA: installed first when it does not run
#: (``params["autoscaling"]`` empty: nothing to do).
KEDA_PHASE = Phase("keda", "Install KEDA when the endpoint autoscales", scaling.submit_keda, scaling.poll_keda,
                   timeout=timedelta(minutes=15), poll_interval=3.0)

DEPLOY_PIPELINE = planned(Pipeline(
    kind=DEPLOY,
    phases=(KEDA_PHASE,
            Phase("create", "Create the operator object", submit_create, poll_done, compensate=compensate_create,
                  timeout=timedelta(minutes=10)),
            DEPLOY_PHASE),
    on_finished=endpoint_finished,
    on_retried=endpoint_retried,
    cost=plans.deploy_cost,
), {"create": _plan_create})
UPDATE_PIPELINE = Pipeline(
    kind=UPDATE,
    phases=(KEDA_PHASE,
            Phase("apply", "Patch the changed fields", submit_apply, poll_done, timeout=timedelta(minutes=10)),
            DEPLOY_PHASE),
    on_finished=endpoint_finished,
    on_retried=endpoint_retried,
)
DELETE_PIPELINE = planned(Pipeline(
    kind=DELETE,
    phases=(Phase("remove", "Delete the operator object", submit_remove, poll_done, timeout=timedelta(minutes=10)),
            Phase("drain", "Wait for its pods to stop", submit_drain, poll_drain, timeout=timedelta(minutes=30),
                  poll_interval=2.0)),
    on_finished=endpoint_finished,
    on_retried=endpoint_retried,
), {"remove": _plan_remove})
