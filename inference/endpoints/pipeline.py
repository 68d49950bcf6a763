"""The operations of an endpoint.

``endpoint.deploy``: *create* (the Hugging Face token's Secret when there is one, the Deployment and the Service,
each exactly once: a retry adopts what it made, recognised by the endpoint label) → *rollout* (polled until every
replica is ready; an image that cannot be pulled, a crash loop or an OOM kill fails it with the pod's reason and
last log line, ``endpoint_failed``) → *expose* (a load balancer Service waits for the controller's hostname).

``endpoint.update``: *apply* (patch the Deployment's replicas, image or command: a scale, or a rolling update that
keeps every ready replica until its replacement is ready; the router's policy and knobs: its command) → *rollout* →
*route*. A scale that adds the router (``router_moved`` :data:`ROUTER_ADDED`) creates its objects in *apply* and
points the Service at it in *route*, once it is ready; one that removes it (:data:`ROUTER_REMOVED`) points the
Service back at the workers, then deletes the router's objects, in *apply*.

An SGLang endpoint with a router (``inference.endpoints.router``) has its ServiceAccount, Role, RoleBinding,
Deployment and workers' Service created with the others and deleted with them.

``endpoint.delete``: *remove* (Service, Deployment, Secret, and the ScaledObject of an autoscaled endpoint) →
*drain* (polled until the pods are gone; then, when it autoscaled, :func:`release_keda`).

Every poll mirrors ready/desired replicas, pods, warning events and crash logs into the endpoint row
(``observed``). :func:`endpoint_finished` keeps the row's state in step with the operation.
"""

from __future__ import annotations

import base64
from datetime import timedelta

from django.utils import timezone

from cloud import kube_objects
from clusters.features import keda
from config import sealing
from inference import objects
from inference.endpoints import autoscaling, manifests, observe, plans, router
from inference.endpoints.plan import secret_name
from inference.models import Endpoint, EndpointState, Exposure
from operations.context import StepContext
from operations.models import Operation, OperationState
from operations.pipeline import Phase, PhaseFailed, Pipeline, Progress
from operations.plans import planned

#: A router's objects in the endpoint's manifest, in creation order (``inference.endpoints.router``).
ROUTER_OBJECTS = (("router_account", objects.SERVICE_ACCOUNTS), ("router_role", objects.ROLES),
                  ("router_binding", objects.ROLE_BINDINGS), ("router", objects.DEPLOYMENTS),
                  ("workers", objects.SERVICES))
ROUTER_ADDED, ROUTER_REMOVED = "added", "removed"
DEPLOY = "endpoint.deploy"
UPDATE = "endpoint.update"
DELETE = "endpoint.delete"
ROLLOUT_TIMEOUT = timedelta(hours=2)
LB_TIMEOUT = timedelta(minutes=20)


def endpoint_of(ctx_or_operation: StepContext | Operation) -> Endpoint:
    return Endpoint.objects.select_related("cluster", "team", "pool").get(pk=ctx_or_operation.params["endpoint_id"])


def _adopted(found: bool, endpoint: Endpoint, what: str) -> None:
    if not found:
        raise PhaseFailed(f"A {what} named {endpoint.name} already exists in {endpoint.namespace} and InstantStart "
                          "did not make it for this endpoint.", code="endpoint_name_taken")


def _secret_body(endpoint: Endpoint) -> dict:
    token = sealing.unseal(endpoint.hf_token)
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": secret_name(endpoint.name), "namespace": endpoint.namespace,
                         "labels": dict(endpoint.manifest["service"]["metadata"]["labels"])},
            "data": {manifests.TOKEN_KEY: base64.b64encode(token.encode()).decode()}}


def submit_create(ctx: StepContext) -> None:
    endpoint = endpoint_of(ctx)
    cluster, namespace = endpoint.cluster, endpoint.namespace
    if endpoint.hf_token:
        _, mine = objects.create_once(cluster, objects.SECRETS, namespace, _secret_body(endpoint),
                                      label=manifests.ENDPOINT_LABEL)
        _adopted(mine, endpoint, "Secret")
    if endpoint.pool_id is None:
        _, mine = objects.create_once(cluster, objects.DEPLOYMENTS, namespace, endpoint.manifest["deployment"],
                                      label=manifests.ENDPOINT_LABEL)
        _adopted(mine, endpoint, "Deployment")
    for key, kind in ROUTER_OBJECTS:
        if key in endpoint.manifest:
            _, mine = objects.create_once(cluster, kind, namespace, endpoint.manifest[key],
                                          label=manifests.ENDPOINT_LABEL)
            _adopted(mine, endpoint, endpoint.manifest[key]["kind"])
    _, mine = objects.create_once(cluster, objects.SERVICES, namespace, endpoint.manifest["service"],
                                  label=manifests.ENDPOINT_LABEL)
    _adopted(mine, endpoint, "Service")
    ctx.log(f"Created {'the Service' if endpoint.pool_id else 'Deployment and Service'} {namespace}/"
            f"{endpoint.name} ({endpoint.get_exposure_display()}).")


def _remove(endpoint: Endpoint) -> bool:
    cluster, namespace = endpoint.cluster, endpoint.namespace
    gone = [objects.delete(cluster, objects.SERVICES, namespace, endpoint.name),
            objects.delete(cluster, objects.SECRETS, namespace, secret_name(endpoint.name))]
    if endpoint.pool_id is None:
        gone.append(objects.delete(cluster, objects.DEPLOYMENTS, namespace, endpoint.name, grace_seconds=30))
    for key, kind in reversed(ROUTER_OBJECTS):
        if key in endpoint.manifest:
            gone.append(objects.delete(cluster, kind, namespace, endpoint.manifest[key]["metadata"]["name"]))
    if endpoint.autoscaling:
        gone.append(kube_objects.delete(autoscaling.api(endpoint), autoscaling.SCALED_OBJECTS, namespace,
                                        endpoint.name, propagation="Background"))
    return any(gone)


def compensate_create(ctx: StepContext) -> None:
    endpoint = endpoint_of(ctx)
    if _remove(endpoint):
        ctx.log(f"Deleted the objects of {endpoint.name}.")


def poll_done(ctx: StepContext) -> Progress:
    return Progress.finished()


def _mirror(endpoint: Endpoint, seen: observe.Seen) -> None:
    Endpoint.objects.filter(pk=endpoint.pk).update(ready_replicas=seen.ready, observed=seen.as_json(),
                                                   hostname=seen.hostname or endpoint.hostname,
                                                   updated_at=timezone.now())


def submit_rollout(ctx: StepContext) -> None:
    ctx.log("Waiting until every replica is ready (model loaded, /health answering).")


def poll_rollout(ctx: StepContext) -> Progress:
    endpoint = endpoint_of(ctx)
    seen = observe.look(endpoint)
    _mirror(endpoint, seen)
    if not seen.exists:
        raise PhaseFailed(f"The objects of {endpoint.name} were deleted outside InstantStart.",
                          code="endpoint_vanished")
    failure = observe.problem(seen)
    if failure:
        raise PhaseFailed(failure, code="endpoint_failed", detail={"pods": seen.pods, "logs": seen.logs})
    status = f"{seen.ready}/{seen.desired} replicas ready"
    if seen.rolled_out and "router" in endpoint.manifest and not _router_ready(endpoint):
        status += "; waiting for the router"
    elif seen.rolled_out:
        ctx.log(status)
        return Progress.finished(status)
    Endpoint.objects.filter(pk=endpoint.pk).update(status_reason=status)
    return Progress.waiting(status)


def _router_ready(endpoint: Endpoint) -> bool:
    found = objects.get(endpoint.cluster, objects.DEPLOYMENTS, endpoint.namespace, router.name_of(endpoint.name))
    return bool(int(((found or {}).get("status") or {}).get("readyReplicas") or 0))


def submit_expose(ctx: StepContext) -> None:
    endpoint = endpoint_of(ctx)
    if endpoint.exposure in (Exposure.INTERNAL_LB, Exposure.INTERNET_LB):
        ctx.log("Waiting for the AWS Load Balancer Controller to provision the Network Load Balancer.")


def poll_expose(ctx: StepContext) -> Progress:
    endpoint = endpoint_of(ctx)
    if endpoint.exposure not in (Exposure.INTERNAL_LB, Exposure.INTERNET_LB):
        return Progress.finished("in-cluster")
    service = objects.get(endpoint.cluster, objects.SERVICES, endpoint.namespace, endpoint.name) or {}
    ingress = ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    if ingress and ingress[0].get("hostname"):
        Endpoint.objects.filter(pk=endpoint.pk).update(hostname=ingress[0]["hostname"])
        ctx.log(f"Load balancer: {ingress[0]['hostname']}")
        return Progress.finished(ingress[0]["hostname"])
    return Progress.waiting("Waiting for the load balancer's hostname")


def submit_apply(ctx: StepContext) -> None:
    endpoint = endpoint_of(ctx)
    changes = ctx.params["changes"]
    template: dict = {}
    if "image" in changes or "command" in changes:
        server = {"name": manifests.CONTAINER}
        if "image" in changes:
            server["image"] = changes["image"]
        if "command" in changes:
            server["command"] = changes["command"]
        template = {"template": {"spec": {"containers": [server]}}}
    body = {"spec": {**({"replicas": changes["replicas"]} if "replicas" in changes else {}), **template}}
    if body["spec"]:
        objects.patch(endpoint.cluster, objects.DEPLOYMENTS, endpoint.namespace, endpoint.name, body)
    moved = ctx.params.get("router_moved", "")
    if moved == ROUTER_ADDED:
        _create_router(endpoint)
    elif moved == ROUTER_REMOVED:
        _point_service(endpoint)
        for key, kind in reversed(ROUTER_OBJECTS):
            objects.delete(endpoint.cluster, kind, endpoint.namespace,
                           router.workers_service(endpoint.name) if key == "workers" else router.name_of(endpoint.name))
    elif "router" in changes:
        flags = router.command(endpoint=endpoint.name, namespace=endpoint.namespace, port=endpoint.port,
                               settings=changes["router"])
        objects.patch(endpoint.cluster, objects.DEPLOYMENTS, endpoint.namespace, router.name_of(endpoint.name),
                      {"spec": {"template": {"spec": {"containers": [{"name": "router", "command": flags}]}}}})
    ctx.log("Changed " + ", ".join(f"{key} to {value}" for key, value in changes.items()) + ".")


def _create_router(endpoint: Endpoint) -> None:
    for key, kind in ROUTER_OBJECTS:
        _, mine = objects.create_once(endpoint.cluster, kind, endpoint.namespace, endpoint.manifest[key],
                                      label=manifests.ENDPOINT_LABEL)
        _adopted(mine, endpoint, endpoint.manifest[key]["kind"])


def _point_service(endpoint: Endpoint) -> None:
    """Point the endpoint's Service where its manifest says: the router, or the workers."""
    wanted = endpoint.manifest["service"]["spec"]
    selector: dict[str, str | None] = {manifests.ENDPOINT_LABEL: None, router.ROUTER_LABEL: None,
                                       **wanted["selector"]}
    objects.patch(endpoint.cluster, objects.SERVICES, endpoint.namespace, endpoint.name,
                  {"spec": {"selector": selector, "ports": wanted["ports"]}})


def submit_route(ctx: StepContext) -> None:
    endpoint = endpoint_of(ctx)
    if ctx.params.get("router_moved") == ROUTER_ADDED:
        _point_service(endpoint)
        ctx.log(f"The Service {endpoint.name} now selects the router {router.name_of(endpoint.name)}.")


def submit_remove(ctx: StepContext) -> None:
    endpoint = endpoint_of(ctx)
    _remove(endpoint)
    ctx.log(f"Deleted the Service{'' if endpoint.pool_id else ' and Deployment'} of {endpoint.name}; its pods stop.")


def submit_drain(ctx: StepContext) -> None:
    ctx.log("Waiting for the pods to stop.")


def poll_drain(ctx: StepContext) -> Progress:
    endpoint = endpoint_of(ctx)
    if endpoint.pool_id is not None:
        return Progress.finished()
    pods = observe.pods_of(endpoint, f"{manifests.ENDPOINT_LABEL}={endpoint.name}")
    if pods:
        return Progress.waiting(f"{len(pods)} pods stopping")
    if endpoint.autoscaling:
        release_keda(ctx, endpoint)
    return Progress.finished("Every pod has stopped")


def release_keda(ctx: StepContext, endpoint: Endpoint) -> None:
    """Remove the KEDA InstantStart installed on the endpoint's cluster once no other endpoint of the cluster
    autoscales (self-managed ``autoscaling``, or a managed endpoint's ``operator_autoscaling``); a KEDA installed
    outside InstantStart, or one a ScaledObject still uses, stays (``clusters.features.keda.remove``)."""
    others = Endpoint.objects.filter(cluster=endpoint.cluster).exclude(pk=endpoint.pk).exclude(
        state=EndpointState.DELETED)
    if others.exclude(autoscaling={}).exists() or others.exclude(operator_autoscaling={}).exists():
        return
    deleted = keda.remove(endpoint.cluster)
    if deleted:
        ctx.log(f"No endpoint of {endpoint.cluster.name} autoscales any more: removed KEDA ({len(deleted)} objects).")


def endpoint_finished(operation: Operation) -> None:
    """The endpoint (self-managed or managed: the operation kind's last word is the verb) follows its operation: a
    deploy or update that succeeded → ``ready``; one that failed → ``failed`` (its objects stay, to be inspected,
    changed or deleted); a delete → ``deleted``; a cancelled deploy (its objects undone) → ``deleted``."""
    endpoint = Endpoint.objects.select_for_update().get(pk=operation.params["endpoint_id"])
    verb = operation.kind.rsplit(".", 1)[-1]
    if (verb == "delete" and operation.state == OperationState.SUCCEEDED) or \
            (verb == "deploy" and operation.state == OperationState.CANCELLED):
        endpoint.state, endpoint.deleted_at, endpoint.hf_token = EndpointState.DELETED, timezone.now(), ""
        endpoint.status_reason = "Deleted" if verb == "delete" else "Deploy cancelled"
    elif operation.state == OperationState.SUCCEEDED:
        endpoint.state, endpoint.status_reason = EndpointState.READY, "Every replica is ready"
    elif operation.state == OperationState.FAILED:
        endpoint.state = EndpointState.FAILED
        endpoint.status_reason = operation.error_message or endpoint.status_reason
    else:
        endpoint.state, endpoint.status_reason = EndpointState.DEGRADED, "The change was cancelled"
    endpoint.save(update_fields=["state", "status_reason", "deleted_at", "hf_token", "updated_at"])


def endpoint_retried(operation: Operation) -> None:
    working = {"deploy": EndpointState.DEPLOYING, "update": EndpointState.UPDATING, "delete": EndpointState.DELETING}
    verb = operation.kind.rsplit(".", 1)[-1]
    Endpoint.objects.filter(pk=operation.params["endpoint_id"]).update(state=working[verb])


ROLLOUT = Phase("rollout", "Roll out the replicas", submit_rollout, poll_rollout, timeout=ROLLOUT_TIMEOUT,
                poll_interval=5.0)

DEPLOY_PIPELINE = planned(Pipeline(
    kind=DEPLOY,
    phases=(
        Phase("create", "Create the Deployment and Service", submit_create, poll_done, compensate=compensate_create,
              timeout=timedelta(minutes=10)),
        ROLLOUT,
        Phase("expose", "Expose the endpoint", submit_expose, poll_expose, timeout=LB_TIMEOUT, poll_interval=5.0),
    ),
    on_finished=endpoint_finished,
    on_retried=endpoint_retried,
    cost=plans.deploy_cost,
), plans.DEPLOY)
UPDATE_PIPELINE = Pipeline(
    kind=UPDATE,
    phases=(Phase("apply", "Change the Deployment", submit_apply, poll_done, timeout=timedelta(minutes=10)), ROLLOUT,
            Phase("route", "Point the Service at the router when it came", submit_route, poll_done,
                  timeout=timedelta(minutes=5))),
    on_finished=endpoint_finished,
    on_retried=endpoint_retried,
    cost=plans.scale_cost,
)
DELETE_PIPELINE = planned(Pipeline(
    kind=DELETE,
    phases=(Phase("remove", "Delete the objects", submit_remove, poll_done, timeout=timedelta(minutes=10)),
            Phase("drain", "Wait for the pods to stop", submit_drain, poll_drain, timeout=timedelta(minutes=30),
                  poll_interval=2.0)),
    on_finished=endpoint_finished,
    on_retried=endpoint_retried,
), plans.DELETE)
