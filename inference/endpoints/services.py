"""Endpoint writes: deploy, scale, update (image, command), delete; and the status read from the cluster.

Each service authorizes through ``accounts.access`` (operators), checks everything before anything is written or
sent to the cluster (:func:`inference.endpoints.plan.plan`), then writes the endpoint row, its operation and an
audit event in one transaction. A change to an endpoint whose operation is still running is
``endpoint_busy``; a deleted endpoint cannot be changed (``endpoint_deleted``).
"""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction

from accounts import access, audit
from accounts.models import User
from clusters.features.catalog import LOAD_BALANCER_CONTROLLER
from clusters.models import Cluster
from config import sealing
from config.errors import ApplicationError, Conflict, InvalidFields, ValidationFailed
from governance import selectors as governance
from inference import actions, state_rules
from inference import objects as inference_objects
from inference.endpoints import (
    autoscaling,
    managed_pipeline,
    managed_services,
    manifests,
    notices,
    observe,
    pipeline,
    router,
)
from inference.endpoints.plan import Request, engine_of, objects, plan
from inference.models import Endpoint, EndpointKind, EndpointState, Exposure
from inference.services import require_active, start_endpoint_operation
from operations import idempotency
from operations.models import Operation

LB_CONTROLLER = "aws-load-balancer-controller"


def endpoint_deploy(*, actor: User, cluster: Cluster, request: Request, origin: str,
                    idempotency_key: str | None = None) -> tuple[Endpoint, Operation]:
    """Check the request and start ``endpoint.deploy``; returns the endpoint and its operation. The endpoint is the
    team's that deploys it: the cluster's, or one with a compute quota on it (``governance.working_team``)."""
    team = governance.working_team(actor, cluster)
    access.require(actor, actions.ENDPOINT_DEPLOY, team)
    replayed = idempotency.replayed(team, idempotency_key)
    if replayed is not None:
        return Endpoint.objects.get(pk=replayed.params["endpoint_id"]), replayed
    require_active(cluster)
    decided = plan(cluster=cluster, request=request, team=team)
    if decided.exposure in (Exposure.INTERNAL_LB, Exposure.INTERNET_LB):
        require_load_balancer_controller(cluster)
    manifest = objects(decided, with_token=bool(request.hf_token))
    try:
        with transaction.atomic():
            endpoint = Endpoint.objects.create(
                team=team, cluster=cluster, created_by=actor, name=decided.name, namespace=decided.namespace,
                engine=decided.engine, image=decided.image, command=decided.command,
                model_source=decided.model_source, model=decided.model, served_model_name=decided.served_model_name,
                instance_group=decided.instance_group, instance_type=decided.instance_type, gpus=decided.gpus,
                tensor_parallel=decided.tensor_parallel, pipeline_parallel=decided.pipeline_parallel,
                replicas=decided.replicas, port=decided.port, exposure=decided.exposure, manifest=manifest,
                router=decided.router,
                hf_token=sealing.seal(request.hf_token) if request.hf_token else "",
                state=EndpointState.DEPLOYING, status_reason="Waiting for a worker")
            operation = start_endpoint_operation(actor, endpoint, pipeline.DEPLOY,
                                                 f"Deploy {endpoint.name} ({endpoint.engine})", {}, origin,
                                                 idempotency_key)
            audit.record(actor=actor, source=origin, action=actions.ENDPOINT_DEPLOY, target=endpoint,
                         team=team, after=_shown(endpoint))
    except IntegrityError:
        raise ValidationFailed.for_field("name", "endpoint_name_taken",
                                         f"Cluster {cluster.name} already has an endpoint named {decided.name}."
                                         ) from None
    return endpoint, operation


class LoadBalancerControllerMissing(Conflict):
    code = "load_balancer_controller_missing"
    default_message = "The AWS Load Balancer Controller does not run on the cluster."


#: How to turn the controller on, from every face (the refusal names them all).
ENABLE_CONTROLLER = (f"turn on the cluster's managed feature {LOAD_BALANCER_CONTROLLER} (a team admin: the cluster's "
                     "Advanced features panel, PATCH /api/v1/clusters/{id}/features with "
                     f'{{"{LOAD_BALANCER_CONTROLLER}": {{"enabled": true}}}}, or the MCP tool '
                     "update_advanced_features)")


def require_load_balancer_controller(cluster: Cluster) -> None:
    """``load_balancer_controller_missing`` unless the AWS Load Balancer Controller (``kube-system/
    aws-load-balancer-controller``) has an available replica: without it a load balancer Service never gets a load
    balancer. The message says how to turn it on (the ``load_balancer_controller`` feature), or what keeps it from
    running when it is installed."""
    found = inference_objects.get(cluster, inference_objects.DEPLOYMENTS, "kube-system", LB_CONTROLLER)
    if found is not None and int((found.get("status") or {}).get("availableReplicas") or 0):
        return
    enable = ENABLE_CONTROLLER.replace("{id}", str(cluster.pk))
    if found is None:
        reason = f"Cluster {cluster.name} does not run the AWS Load Balancer Controller, which makes the Network " \
                 f"Load Balancer: {enable}; or expose the endpoint in-cluster (cluster_ip)."
    else:
        reason = f"The AWS Load Balancer Controller of cluster {cluster.name} has no ready replica yet; wait until " \
                 f"the {LOAD_BALANCER_CONTROLLER} feature is enabled, or expose the endpoint in-cluster (cluster_ip)."
    raise LoadBalancerControllerMissing(reason)


def _shown(endpoint: Endpoint) -> dict[str, Any]:
    return {"name": endpoint.name, "cluster": endpoint.cluster.name, "engine": endpoint.engine,
            "image": endpoint.image, "command": endpoint.command, "model": endpoint.model,
            "instance_group": endpoint.instance_group, "gpus": endpoint.gpus, "replicas": endpoint.replicas,
            "port": endpoint.port, "exposure": endpoint.exposure, "with_token": bool(endpoint.hf_token),
            "router": endpoint.router}


def _changeable(endpoint: Endpoint) -> None:
    state_rules.require_changeable(endpoint)


def endpoint_update(*, actor: User, endpoint: Endpoint, origin: str, replicas: int | None = None,
                    image: str | None = None, command: list[str] | None = None,
                    router_settings: dict[str, Any] | None = None,
                    idempotency_key: str | None = None) -> tuple[Endpoint, Operation]:
    """Scale (``replicas``) and/or roll out a new ``image`` or ``command``, and/or change the router's policy and
    knobs (``router_settings``: ``router_needs_sglang``, ``router_needs_replicas`` or ``router_not_deployed`` on an
    endpoint without the router); an SGLang endpoint scaled from 1 replica to several gets the router, one scaled to
    1 loses it (:func:`_routing`). Only what differs is changed (``no_changes`` when nothing does). A pool endpoint
    is scaled by assigning workers, not here."""
    if endpoint.kind == EndpointKind.MANAGED:
        return managed_services.managed_endpoint_update(actor=actor, endpoint=endpoint, origin=origin,
                                                        idempotency_key=idempotency_key, replicas=replicas,
                                                        image=image, args=command)
    access.require(actor, actions.ENDPOINT_UPDATE, endpoint)
    replayed = idempotency.replayed(endpoint.team, idempotency_key)
    if replayed is not None:
        return endpoint, replayed
    _changeable(endpoint)
    require_active(endpoint.cluster)
    problems = InvalidFields()
    if endpoint.pool_id is not None:
        problems.add("replicas", "pool_endpoint", "A pool endpoint's replicas are the pool workers assigned to it; "
                     "assign workers on the pool instead.")
        problems.raise_if_any()
    changes: dict[str, Any] = {}
    if replicas is not None and replicas != endpoint.replicas and endpoint.autoscaling:
        problems.add("replicas", "autoscaling_enabled", "KEDA sets this endpoint's replicas (between "
                     f"{endpoint.autoscaling['min_replicas']} and {endpoint.autoscaling['max_replicas']}); change "
                     "its autoscaling bounds, or turn autoscaling off first.")
    elif replicas is not None and replicas != endpoint.replicas:
        changes["replicas"] = replicas
    if image and image != endpoint.image:
        changes["image"] = image
    if command is not None and command != endpoint.command:
        named = engine_of(command)
        if named and endpoint.engine in ("vllm", "sglang") and named != endpoint.engine:
            problems.add("command", "engine_mismatch", f"The command starts {named}, not {endpoint.engine}.")
        changes["command"] = command
    routing = _routing(endpoint, changes.get("replicas", endpoint.replicas), router_settings, problems)
    if routing is not None:
        changes["router"] = routing
    problems.raise_if_any()
    if not changes:
        raise ValidationFailed.for_field("non_field_errors", "no_changes", "The endpoint already has these values.")
    moved = "" if "router" not in changes or bool(changes["router"]) == bool(endpoint.router) else (
        pipeline.ROUTER_ADDED if changes["router"] else pipeline.ROUTER_REMOVED)
    with transaction.atomic():
        before = {key: getattr(endpoint, key) for key in changes}
        for key, value in changes.items():
            setattr(endpoint, key, value)
        if moved:
            endpoint.manifest = _routed_manifest(endpoint)
        endpoint.state, endpoint.status_reason = EndpointState.UPDATING, "Rolling out the change"
        endpoint.save()
        what = "Scale" if set(changes) == {"replicas"} else "Update"
        operation = start_endpoint_operation(actor, endpoint, pipeline.UPDATE, f"{what} {endpoint.name}",
                           {"changes": changes, **({"router_moved": moved} if moved else {})}, origin,
                           idempotency_key)
        audit.record(actor=actor, source=origin, action=actions.ENDPOINT_UPDATE, target=endpoint,
                     team=endpoint.team, before=before, after=changes)
    return endpoint, operation


def _routing(endpoint: Endpoint, replicas: int, requested: dict[str, Any] | None,
             problems: InvalidFields) -> dict[str, Any] | None:
    """The router's new settings when they change (``{}``: it goes), ``None`` when they stay. An SGLang endpoint
    scaled from 1 replica to several gets the router (``requested``'s settings, the defaults, or none with
    ``enabled`` false); one scaled to a single replica loses it (a router in front of one worker only adds a hop);
    otherwise ``requested`` changes the router it has (``router_not_deployed`` when it has none)."""
    if endpoint.pool_id is not None:
        return None
    if not endpoint.router and endpoint.replicas < 2 <= replicas:
        wanted = router.check(engine=endpoint.engine, replicas=replicas, requested=requested, problems=problems)
        return wanted or None
    if endpoint.router and replicas < 2:
        if requested is not None and requested.get("enabled") is not False:
            router.check(engine=endpoint.engine, replicas=replicas, requested=requested, problems=problems)
        return {}
    if requested is None:
        return None
    wanted = router.check(engine=endpoint.engine, replicas=max(replicas, 2) if endpoint.router else replicas,
                          requested=requested, problems=problems, current=endpoint.router)
    if not endpoint.router and "router" not in problems:
        problems.add("router", "router_not_deployed", f"Endpoint {endpoint.name} was deployed without the router; "
                     "scale it to 1 replica and back to several to have one, or deploy it again.")
        return None
    return wanted if wanted and wanted != endpoint.router else None


def _routed_manifest(endpoint: Endpoint) -> dict[str, Any]:
    """The endpoint's manifest after the router came or went: the router's objects, and the Service selecting the
    router or the workers (``inference.endpoints.plan.objects``)."""
    kept = {key: value for key, value in endpoint.manifest.items()
            if key not in {key for key, _ in pipeline.ROUTER_OBJECTS}}
    labels = dict(endpoint.manifest["deployment"]["metadata"]["labels"])
    selector, port = {manifests.ENDPOINT_LABEL: endpoint.name}, endpoint.port
    if endpoint.router:
        kept |= router.objects(endpoint=endpoint.name, namespace=endpoint.namespace, labels=labels,
                               image=endpoint.image, port=endpoint.port, settings=endpoint.router)
        selector, port = {router.ROUTER_LABEL: endpoint.name}, router.PORT
    kept["service"] = manifests.service(name=endpoint.name, namespace=endpoint.namespace, labels=labels,
                                        selector=selector, port=port, exposure=endpoint.exposure)
    return kept


def endpoint_delete(*, actor: User, endpoint: Endpoint, origin: str,
                    idempotency_key: str | None = None) -> tuple[Endpoint, Operation]:
    """Delete the endpoint's objects (its pods stop) and end it ``deleted``."""
    access.require(actor, actions.ENDPOINT_DELETE, endpoint)
    replayed = idempotency.replayed(endpoint.team, idempotency_key)
    if replayed is not None:
        return endpoint, replayed
    if endpoint.state == EndpointState.DELETED:
        raise Conflict(f"Endpoint {endpoint.name} is already deleted.", code="endpoint_deleted")
    if endpoint.state == EndpointState.DELETING:
        raise Conflict(f"Endpoint {endpoint.name} is being deleted.", code="endpoint_busy")
    with transaction.atomic():
        before = {"state": endpoint.state}
        endpoint.state, endpoint.status_reason = EndpointState.DELETING, "Deleting"
        endpoint.save(update_fields=["state", "status_reason", "updated_at"])
        kind = managed_pipeline.DELETE if endpoint.kind == EndpointKind.MANAGED else pipeline.DELETE
        operation = start_endpoint_operation(actor, endpoint, kind, f"Delete {endpoint.name}", {}, origin,
                                             idempotency_key)
        audit.record(actor=actor, source=origin, action=actions.ENDPOINT_DELETE, target=endpoint,
                     team=endpoint.team, before=before, after={"state": endpoint.state})
    return endpoint, operation


def endpoint_refresh(endpoint: Endpoint) -> Endpoint:
    """Read the endpoint's objects now and keep what they show (replicas, pods, events, crash logs, hostname, its
    autoscaling under ``observed["autoscaling"]``); a ready endpoint with fewer ready replicas than desired becomes
    ``degraded``, and back (an autoscaled one only when a pod is stuck, or none is ready while some are wanted).
    Nothing is read for a deleted endpoint, nor when the cluster cannot be reached (the last observation stays)."""
    if endpoint.state == EndpointState.DELETED:
        return endpoint
    if endpoint.kind == EndpointKind.MANAGED:
        return managed_services.managed_endpoint_refresh(endpoint)
    try:
        seen = observe.look(endpoint)
        scaling = autoscaling.observed(endpoint)
        routing = router.observed(endpoint)
    except ApplicationError:
        return endpoint
    endpoint.ready_replicas = seen.ready
    endpoint.observed = {**seen.as_json(), "autoscaling": scaling, "router": routing}
    endpoint.hostname = seen.hostname or endpoint.hostname
    fields = ["ready_replicas", "observed", "hostname", "updated_at"]
    was = endpoint.state
    if endpoint.state in (EndpointState.READY, EndpointState.DEGRADED):
        # An autoscaled endpoint scaling out (or to zero) is healthy while no pod is stuck.
        healthy = seen.exists and (seen.ready >= seen.desired or (bool(endpoint.autoscaling)
                                   and not observe.problem(seen) and (seen.ready > 0 or seen.desired == 0)))
        endpoint.state = EndpointState.READY if healthy else EndpointState.DEGRADED
        endpoint.status_reason = f"{seen.ready}/{seen.desired} replicas ready" + (
            f"; {observe.problem(seen)}" if observe.problem(seen) else "")
        fields += ["state", "status_reason"]
    endpoint.save(update_fields=fields)
    notices.health_changed(endpoint, was)
    return endpoint
