"""Managed endpoint writes: deploy and update through the HyperPod inference operator, and their refreshed status.

A managed endpoint is an :class:`~inference.models.Endpoint` of kind ``managed``: the list, the detail, the
playground, the call, scale and delete of every face treat it as any endpoint (``inference.endpoints.services``
hands it here). Each service authorizes through ``accounts.access`` (operators), checks everything before anything
is written or sent — the request's fields (:func:`inference.endpoints.managed.plan`), the cluster runs the inference
operator (``inference_operator_missing`` names the feature to turn on), then the API server's own check of the object
against the real CRD (a server-side dry run) — and writes the row, its operation and an audit event in one transaction.

Update follows the explicit-diff contract: only the fields the request names and that differ from the object on the
cluster (:func:`holds`: the CRD's defaults the API server added are no difference) are patched (``no_changes`` when
the cluster already matches: nothing is sent); a part turned off is removed with ``null`` in the merge patch (a whole
``kvCacheSpec``, ``autoScalingSpec`` or ``tlsConfig``, or :data:`OPTIONAL_PARTS` such as ``l2CacheSpec``).
Intelligent routing cannot be changed on a deployed endpoint
(``routing_immutable``: the operator's CRD says its ``enabled`` cannot be modified and routing is not supported for
existing deployments).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from django.db import IntegrityError, transaction

from accounts import access, audit
from accounts.models import User
from clusters import dependencies
from clusters.features import inference as operator_feature
from clusters.features.catalog import FEATURES, INFERENCE_OPERATOR
from clusters.models import Cluster
from config.errors import Conflict, InvalidFields, ValidationFailed
from governance import selectors as governance
from inference import actions, state_rules
from inference.endpoints import managed, managed_pipeline, notices
from inference.endpoints.managed import ManagedRequest
from inference.models import Endpoint, EndpointKind, EndpointState, ModelSource
from inference.services import require_active, start_endpoint_operation
from operations import idempotency
from operations.models import Operation

#: How to turn the operator on, from every face (the refusal names them all).
ENABLE_OPERATOR = (f"turn on the cluster's managed feature {INFERENCE_OPERATOR} (a team admin: the cluster's "
                   "Advanced features panel, PATCH /api/v1/clusters/{id}/features with "
                   f'{{"{INFERENCE_OPERATOR}": {{"enabled": true}}}}, or the MCP tool update_advanced_features)')
#: The fields an update may name, as the request and the row call them.
UPDATABLE = ("replicas", "image", "args", "kv_cache", "routing", "autoscaling", "tls_output_uri")


class InferenceOperatorMissing(Conflict):
    code = "inference_operator_missing"
    default_message = "The HyperPod inference operator does not run on the cluster."


def require_inference_operator(cluster: Cluster) -> None:
    """``inference_operator_missing`` unless the cluster's inference operator add-on is ACTIVE (or UPDATING); the
    message says how to turn the ``inference_operator`` feature on."""
    addon = dependencies.describe_addon(cluster, FEATURES[INFERENCE_OPERATOR].addon) if cluster.eks_name else None
    if addon is not None and addon.get("status") in ("ACTIVE", "UPDATING"):
        return
    enable = ENABLE_OPERATOR.replace("{id}", str(cluster.pk))
    if addon is None:
        raise InferenceOperatorMissing(f"Cluster {cluster.name} does not run the HyperPod inference operator, which "
                                       f"deploys managed endpoints: {enable}.")
    raise InferenceOperatorMissing(f"The HyperPod inference operator of cluster {cluster.name} is "
                                   f"{str(addon.get('status', '')).lower()}; wait until the {INFERENCE_OPERATOR} "
                                   "feature is enabled.")


def _served_name(args: list[str], fallback: str) -> str:
    if "--served-model-name" in args and args.index("--served-model-name") + 1 < len(args):
        return args[args.index("--served-model-name") + 1]
    return fallback


def default_args(name: str, port: int) -> list[str]:
    """The vLLM arguments of a managed worker when the user names none: the model the operator mounted, served
    under the endpoint's name, on the chosen port."""
    return [managed.MODEL_MOUNT, "--served-model-name", name, "--port", str(port)]


def shown(endpoint: Endpoint) -> dict[str, Any]:
    """What the audit trail records of a managed endpoint's decisions."""
    return {"name": endpoint.name, "cluster": endpoint.cluster.name, "kind": endpoint.kind,
            "model_source": endpoint.model_source, "model": endpoint.model, "instance_type": endpoint.instance_type,
            "replicas": endpoint.replicas, "image": endpoint.image, "args": endpoint.command, "port": endpoint.port,
            "invocation_path": endpoint.invocation_path, "kv_cache": endpoint.kv_cache, "routing": endpoint.routing,
            "autoscaling": endpoint.operator_autoscaling, "tls_output_uri": endpoint.tls_output_uri,
            "sagemaker_endpoint": endpoint.sagemaker_endpoint}


def managed_endpoint_deploy(*, actor: User, cluster: Cluster, request: ManagedRequest, origin: str,
                            idempotency_key: str | None = None) -> tuple[Endpoint, Operation]:
    """Check the request and start ``managed_endpoint.deploy``; returns the endpoint and its operation."""
    team = governance.working_team(actor, cluster)
    access.require(actor, actions.ENDPOINT_DEPLOY, team)
    replayed = idempotency.replayed(team, idempotency_key)
    if replayed is not None:
        return Endpoint.objects.get(pk=replayed.params["endpoint_id"]), replayed
    require_active(cluster)
    if request.model_source != ModelSource.JUMPSTART and not request.args:
        request.args = default_args(request.name, request.port)
    decided = managed.plan(cluster=cluster, request=request, team=team)
    require_inference_operator(cluster)
    if decided.kind == managed.JUMPSTART and (gated := operator_feature.gated_role(cluster)):
        decided.body["spec"]["model"]["gatedModelDownloadRole"] = gated
    managed_pipeline.check_with_api_server(cluster, decided.body)
    served = request.model if decided.kind == managed.JUMPSTART else _served_name(decided.args,
                                                                                    managed.MODEL_MOUNT)
    try:
        with transaction.atomic():
            endpoint = Endpoint.objects.create(
                team=team, cluster=cluster, created_by=actor, name=decided.name, namespace=decided.namespace,
                kind=EndpointKind.MANAGED, engine="vllm", image=decided.image, command=decided.args,
                model_source=decided.model_source, model=decided.model, served_model_name=served,
                instance_group=decided.instance_group, instance_type=decided.instance_type, gpus=decided.gpus,
                replicas=decided.replicas, port=decided.port, invocation_path=decided.invocation_path,
                kv_cache=decided.kv_cache, routing=decided.routing, operator_autoscaling=decided.autoscaling,
                tls_output_uri=decided.tls_output_uri, sagemaker_endpoint=decided.sagemaker_endpoint,
                manifest={"config": decided.body}, state=EndpointState.DEPLOYING,
                status_reason="Waiting for the inference operator")
            operation = start_endpoint_operation(actor, endpoint, managed_pipeline.DEPLOY,
                               f"Deploy {endpoint.name} (managed, {decided.body['kind']})",
                               {"autoscaling": decided.autoscaling}, origin, idempotency_key)
            audit.record(actor=actor, source=origin, action=actions.ENDPOINT_DEPLOY, target=endpoint,
                         team=team, after=shown(endpoint))
    except IntegrityError:
        raise ValidationFailed.for_field("name", "endpoint_name_taken",
                                         f"Cluster {cluster.name} already has an endpoint named {decided.name}."
                                         ) from None
    return endpoint, operation


def _request_of(endpoint: Endpoint, changes: dict[str, Any]) -> ManagedRequest:
    """The endpoint's decisions with ``changes`` applied, as a request :func:`managed.plan` checks."""
    current = ManagedRequest(
        name=endpoint.name, model=endpoint.model, model_source=endpoint.model_source,
        instance_type=endpoint.instance_type, gpus=endpoint.gpus, replicas=endpoint.replicas, image=endpoint.image,
        args=list(endpoint.command), port=endpoint.port, invocation_path=endpoint.invocation_path,
        kv_cache=dict(endpoint.kv_cache), routing=dict(endpoint.routing),
        autoscaling=dict(endpoint.operator_autoscaling), tls_output_uri=endpoint.tls_output_uri,
        sagemaker_endpoint=endpoint.sagemaker_endpoint, priority=governance.priority_of(
            (endpoint.manifest.get("config") or {}).get("metadata", {}).get("labels") or {}))
    memory = str(_at(endpoint.manifest.get("config") or {}, ("spec", "worker", "resources", "requests", "memory"))
                 or "").removesuffix("Gi")
    current.memory_gib = int(memory) if memory.isdigit() else current.memory_gib
    values = asdict(current)
    values.update({key: value for key, value in changes.items() if key in UPDATABLE})
    return ManagedRequest(**values)


#: Request field → the path of the object's spec it is sent as (an InferenceEndpointConfig / a JumpStartModel).
SPEC_PATHS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "replicas": (("replicas",), ("replicas",)),
    "image": (("worker", "image"), ()),
    "args": (("worker", "args"), ()),
    "kv_cache": (("kvCacheSpec",), ("kvCacheSpec",)),
    "routing": (("intelligentRoutingSpec",), ("intelligentRoutingSpec",)),
    "autoscaling": (("autoScalingSpec",), ("autoScalingSpec",)),
    "tls_output_uri": (("tlsConfig",), ("tlsConfig",)),
}


def _at(spec: dict[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = spec
    for key in path:
        value = (value or {}).get(key) if isinstance(value, dict) else None
    return value


def _nest(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    result: dict[str, Any] = {path[-1]: value}
    for key in reversed(path[:-1]):
        result = {key: result}
    return result


def holds(live: Any, wanted: Any) -> bool:
    """Whether the cluster's value already is ``wanted``: equal, or — for objects — every field ``wanted`` names
    equal there (the API server adds the CRD's defaults to what it stores, and those are not a difference)."""
    if isinstance(wanted, dict) and isinstance(live, dict):
        return all(holds(live.get(key), value) for key, value in wanted.items())
    return bool(live == wanted)


#: Optional parts of a spec object InstantStart writes, as (object, part): a part the new value lacks but the cluster
#: has is removed (``null`` in the merge patch), e.g. ``l2CacheSpec`` when L2 is turned off.
OPTIONAL_PARTS = (("kvCacheSpec", "l2CacheSpec"), ("autoScalingSpec", "prometheusTrigger"))


def _removed(live: Any, wanted: Any, key: str) -> dict[str, None]:
    """The optional parts of ``key``'s object (:data:`OPTIONAL_PARTS`) that the cluster has and ``wanted`` lacks,
    each as ``None`` (``{}``: none, or the object itself goes)."""
    if not isinstance(live, dict) or not isinstance(wanted, dict):
        return {}
    return {part: None for name, part in OPTIONAL_PARTS if name == key and part in live and part not in wanted}


def _merge(into: dict[str, Any], patch: dict[str, Any]) -> None:
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def managed_endpoint_update(*, actor: User, endpoint: Endpoint, origin: str, idempotency_key: str | None = None,
                            **changes: Any) -> tuple[Endpoint, Operation]:
    """Change ``replicas``, ``image``, ``args``, ``kv_cache``, ``routing``, ``autoscaling`` or
    ``tls_output_uri`` (see the module docstring for the contract); ``None`` values are not asked for."""
    access.require(actor, actions.ENDPOINT_UPDATE, endpoint)
    replayed = idempotency.replayed(endpoint.team, idempotency_key)
    if replayed is not None:
        return endpoint, replayed
    asked = {key: value for key, value in changes.items() if key in UPDATABLE and value is not None}
    state_rules.require_changeable(endpoint)
    require_active(endpoint.cluster)
    jumpstart = endpoint.model_source == ModelSource.JUMPSTART
    problems = InvalidFields()
    for key in ("image", "args"):
        if jumpstart and key in asked:
            problems.add(key, "jumpstart_fixed", "A JumpStart model runs the image and arguments of its model id.")
    problems.raise_if_any()
    decided = managed.plan(cluster=endpoint.cluster, request=_request_of(endpoint, asked), existing=endpoint,
                           team=endpoint.team)
    if decided.routing != endpoint.routing:
        raise ValidationFailed.for_field("routing", "routing_immutable", "Intelligent routing is chosen when the "
                                         "endpoint is deployed; the operator does not change it on an existing "
                                         "deployment. Deploy a new endpoint instead.")
    found = managed_pipeline.live(endpoint)
    if found is None:
        raise Conflict(f"The operator object of {endpoint.name} is gone from the cluster; delete the endpoint.",
                       code="endpoint_vanished")
    spec = found.get("spec") or {}
    wanted = decided.body["spec"]
    patch: dict[str, Any] = {}
    changed: dict[str, Any] = {}
    for key in asked:
        path = SPEC_PATHS[key][1 if jumpstart else 0]
        gone = _removed(_at(spec, path), _at(wanted, path), path[-1]) if path else {}
        if path and (gone or not holds(_at(spec, path), _at(wanted, path))):
            value = _at(wanted, path)
            _merge(patch, _nest(path, {**value, **gone} if gone else value))
            changed[key] = asked[key]
    if "kv_cache" in changed and not jumpstart and \
            not holds(_at(spec, ("worker", "environmentVariables")), _at(wanted, ("worker", "environmentVariables"))):
        _merge(patch, {"worker": {"environmentVariables": _at(wanted, ("worker", "environmentVariables"))}})
    if not patch:
        raise ValidationFailed.for_field("non_field_errors", "no_changes", "The cluster already runs these values.")
    managed_pipeline.check_with_api_server(endpoint.cluster, {**decided.body, "spec": patch}, existing=True)
    had_autoscaling = bool(endpoint.operator_autoscaling)
    with transaction.atomic():
        before = shown(endpoint)
        endpoint.replicas, endpoint.image, endpoint.command = decided.replicas, decided.image, decided.args
        endpoint.kv_cache, endpoint.operator_autoscaling = decided.kv_cache, decided.autoscaling
        endpoint.tls_output_uri = decided.tls_output_uri
        endpoint.manifest = {"config": {**endpoint.manifest["config"], "spec": {**wanted}}}
        endpoint.state, endpoint.status_reason = EndpointState.UPDATING, "The operator is applying the change"
        endpoint.save()
        what = "Scale" if set(changed) == {"replicas"} else "Update"
        operation = start_endpoint_operation(
            actor, endpoint, managed_pipeline.UPDATE, f"{what} {endpoint.name} (managed)",
            {"patch": {"spec": patch}, "autoscaling": decided.autoscaling if "autoscaling" in changed else {},
             "stops_autoscaling": "autoscaling" in changed and had_autoscaling and not decided.autoscaling},
            origin, idempotency_key)
        audit.record(actor=actor, source=origin, action=actions.ENDPOINT_UPDATE, target=endpoint,
                     team=endpoint.team, before={key: before[key] for key in changed}, after=changed)
    return endpoint, operation


def managed_endpoint_refresh(endpoint: Endpoint) -> Endpoint:
    """Read the operator's object now and keep what it shows; a ready endpoint with fewer ready replicas than
    desired becomes ``degraded``, and back. Nothing changes when the cluster cannot be reached."""
    seen = managed_pipeline.refresh_seen(endpoint)
    if seen is None:
        return endpoint
    endpoint.observed = seen
    endpoint.ready_replicas = int(seen.get("ready", 0))
    fields = ["ready_replicas", "observed", "updated_at"]
    was = endpoint.state
    if endpoint.state in (EndpointState.READY, EndpointState.DEGRADED) and seen.get("exists"):
        healthy = seen["state"] == "DeploymentComplete" and seen["ready"] >= seen["desired"]
        endpoint.state = EndpointState.READY if healthy else EndpointState.DEGRADED
        endpoint.status_reason = f"{seen['state']}: {seen['ready']}/{seen['desired']} replicas ready"
        fields += ["state", "status_reason"]
    endpoint.save(update_fields=fields)
    notices.health_changed(endpoint, was)
    return endpoint
