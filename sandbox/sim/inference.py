"""InferenceEndpointConfig (``inference.sagemaker.aws.amazon.com/v1``): what the HyperPod inference operator does.

For a config ``<name>`` it runs a Deployment ``<name>`` (``spec.replicas``, default 1) of the worker image with
its port, resources, environment, command, args and model volume (an ``emptyDir`` the operator's downloader
fills), on nodes of ``instanceType`` (or ``instanceTypes``, or ``nodeAffinity``); a ClusterIP Service
``<name>-service`` on the model port; and the routing Service ``<name>-routing`` (port 80 to the model port)
that requests enter through. ``status`` mirrors the Deployment: ``state`` DeploymentInProgress →
DeploymentComplete once every replica is available, the conditions ``DeploymentInProgress`` and
``DeploymentComplete``, ``deploymentStatus``, ``replicas``/``selector`` (the scale subresource), and with
``endpointName`` the SageMaker endpoint registration under ``endpoints.sagemaker``.
"""

from __future__ import annotations

from typing import Any

from sandbox.endpoints import ACCOUNT_ID
from sandbox.sim import objects
from sandbox.sim.context import Context

RESOURCE = "inferenceendpointconfigs.inference.sagemaker.aws.amazon.com"
CONFIG_LABEL = "inference.sagemaker.aws.amazon.com/endpoint-config"
CONTAINER = "model-server"


def _affinity(spec: dict[str, Any]) -> dict[str, Any]:
    if spec.get("nodeAffinity"):
        return {"affinity": {"nodeAffinity": spec["nodeAffinity"]}}
    if spec.get("instanceTypes"):
        return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "node.kubernetes.io/instance-type",
                                                         "operator": "In", "values": spec["instanceTypes"]}]}]}}}}
    if spec.get("instanceType"):
        return {"nodeSelector": {"node.kubernetes.io/instance-type": spec["instanceType"]}}
    return {}


def _deployment_body(config: dict[str, Any]) -> dict[str, Any]:
    spec, name = config["spec"], objects.name(config)
    worker = spec["worker"]
    port = worker["modelInvocationPort"]
    mount = worker["modelVolumeMount"]
    container = {"name": CONTAINER, "image": worker["image"], "resources": worker.get("resources") or {},
                 "ports": [{"name": port.get("name", "http"), "containerPort": port["containerPort"]}],
                 "env": worker.get("environmentVariables") or [],
                 "volumeMounts": [{"name": mount["name"], "mountPath": mount.get("mountPath", "/opt/ml/model")}]}
    for key in ("command", "args", "workingDir"):
        if worker.get(key):
            container[key] = worker[key]
    labels = {"app": name, CONFIG_LABEL: name}
    return {"metadata": {"name": name, "labels": labels},
            "spec": {"replicas": spec.get("replicas", 1), "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [container], **_affinity(spec),
                                           "volumes": [{"name": mount["name"], "emptyDir": {}}]}}}}


def _service_body(config: dict[str, Any], name: str, port: int) -> dict[str, Any]:
    target = config["spec"]["worker"]["modelInvocationPort"]["containerPort"]
    return {"metadata": {"name": name, "labels": {CONFIG_LABEL: objects.name(config)}},
            "spec": {"selector": {CONFIG_LABEL: objects.name(config)},
                     "ports": [{"name": "http", "port": port, "targetPort": target}]}}


def _ensure(ctx: Context, config: dict[str, Any], resource: str, body: dict[str, Any]) -> dict[str, Any]:
    found = ctx.store.find(resource, objects.name(body), objects.namespace(config))
    return found if found is not None else ctx.create(resource, body, config)


def _sagemaker(ctx: Context, spec: dict[str, Any]) -> dict[str, Any]:
    arn = f"arn:aws:sagemaker:{ctx.region}:{ACCOUNT_ID}"
    endpoint = spec["endpointName"]
    return {"sagemaker": {"state": "CreationCompleted", "endpointArn": f"{arn}:endpoint/{endpoint}",
                          "configArn": f"{arn}:endpoint-config/{endpoint}",
                          "modelArn": f"{arn}:model/{spec['modelName']}"}}


def _sync(ctx: Context, config: dict[str, Any]) -> None:
    deployment = _ensure(ctx, config, "deployments", _deployment_body(config))
    replicas = config["spec"].get("replicas", 1)
    if deployment["spec"].get("replicas") != replicas:
        deployment = ctx.store.update("deployments", {**deployment, "spec": {**deployment["spec"],
                                                                             "replicas": replicas}},
                                      objects.namespace(config))
    port = config["spec"]["worker"]["modelInvocationPort"]["containerPort"]
    _ensure(ctx, config, "services", _service_body(config, f"{objects.name(config)}-service", port))
    _ensure(ctx, config, "services", _service_body(config, f"{objects.name(config)}-routing", 80))
    observed = deployment.get("status") or {}
    available = int(observed.get("availableReplicas") or 0)
    complete = available >= replicas and observed.get("observedGeneration") == deployment["metadata"].get("generation")
    state = "DeploymentComplete" if complete else "DeploymentInProgress"
    message = (f"Deployment {objects.name(deployment)} has {available}/{replicas} replicas available")
    status = dict(config.get("status") or {})
    conditions = objects.condition(status.get("conditions"), "DeploymentInProgress", "False" if complete else "True",
                                   "DeploymentProgressing" if not complete else "DeploymentAvailable", message)
    conditions = objects.condition(conditions, "DeploymentComplete", "True" if complete else "False",
                                   "DeploymentAvailable" if complete else "DeploymentProgressing", message)
    deployment_status = {key: observed[key] for key in ("replicas", "readyReplicas", "availableReplicas",
                                                         "updatedReplicas", "unavailableReplicas",
                                                         "observedGeneration", "conditions") if key in observed}
    previous = status.get("deploymentStatus") or {}
    status.update(state=state, conditions=conditions, replicas=int(observed.get("replicas") or 0),
                  selector=f"app={objects.name(config)},{CONFIG_LABEL}={objects.name(config)}",
                  observedGeneration=config["metadata"].get("generation", 1),
                  deploymentStatus={"name": objects.name(deployment), "deploymentObjectOverallState": state,
                                    "status": deployment_status, "message": message,
                                    "reason": "DeploymentAvailable" if complete else "DeploymentProgressing",
                                    "lastUpdated": previous.get("lastUpdated") if previous.get(
                                        "deploymentObjectOverallState") == state else objects.timestamp()})
    if complete and config["spec"].get("endpointName"):
        status["endpoints"] = _sagemaker(ctx, config["spec"])
    ctx.set_status(RESOURCE, config, status)


def reconcile(ctx: Context) -> None:
    for config in ctx.list(RESOURCE):
        with ctx.guard(f"inferenceendpointconfig {objects.namespace(config)}/{objects.name(config)}"):
            _sync(ctx, config)
