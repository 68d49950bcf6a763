"""The HyperPod inference operator: ``InferenceEndpointConfig`` and ``JumpStartModel``
(``inference.sagemaker.aws.amazon.com/v1``).

For a config ``<name>`` it runs a Deployment ``<name>`` (``spec.replicas``, default 1) of the worker image with
its port, resources, environment, command, args and model volume (an ``emptyDir`` the operator's downloader
fills), on nodes of ``instanceType`` (or ``instanceTypes``, or ``nodeAffinity``); a ClusterIP Service
``<name>-service`` on the model port; and the routing Service ``<name>-routing`` (port 80 to the model port)
that requests enter through. The config's task-governance labels (``kueue.x-k8s.io/queue-name``,
``kueue.x-k8s.io/priority-class``) go on the worker pods, which Kueue then admits (``taskgovernance``). A
``JumpStartModel`` is the same with the image and arguments of its model id (:data:`JUMPSTART_MODELS`, the
sandbox's small hub; another id fails ``ModelNotFound``).

**KV cache** (``kvCacheSpec``): the workers get LMCache's environment — ``LMCACHE_LOCAL_CPU`` for L1 (with the
size the spec's worker environment names, ``LMCACHE_MAX_LOCAL_CPU_SIZE``), ``LMCACHE_REMOTE_URL`` for L2 (the
Redis URL, or ``sagemaker-hyperpod://`` managed tiered storage); :mod:`sandbox.sim.kvcache` serves the resulting
prefix-cache hits. **Intelligent routing** (``intelligentRoutingSpec``): the routing Service carries the strategy
(:data:`ROUTING_ANNOTATION`), which :mod:`sandbox.kube.proxy` applies when it picks the replica — prefix-aware and
KV-aware send a repeated prefix to the replica that holds it, session routing keys on the session header (the one
the config's ``instantstart.io/session-key`` annotation names, else ``x-session-id``). The
``DeploymentComplete`` condition's message names both.

**Autoscaling** (``autoScalingSpec``, once KEDA's CRD is served): a KEDA ScaledObject ``<name>-scaledobject`` owned by
the config scales the Deployment — its bounds, polling interval, cooldowns and HPA stabilization windows from the spec,
a ``prometheus`` trigger per Prometheus trigger (``threshold`` its ``targetValue``) and an ``aws-cloudwatch`` one per
CloudWatch trigger; :mod:`sandbox.sim.scaledobjects` then plays KEDA. While it exists the operator leaves the
Deployment's replica count to KEDA (``spec.replicas`` is the initial count) and reports against it; a spec without a
trigger makes none, and removing the spec deletes it.

``status`` mirrors the Deployment: ``state`` DeploymentInProgress → DeploymentComplete once every replica is
available, the conditions ``DeploymentInProgress`` and ``DeploymentComplete``, ``deploymentStatus``,
``replicas``/``selector`` (the scale subresource), and — with an endpoint name — the SageMaker endpoint the
operator registers: a ``SageMakerEndpointRegistration`` of that name in the namespace (``CreationCompleted``) and its
ARNs under ``status.endpoints.sagemaker``; with ``tlsConfig`` the certificate written to its S3 location
(``status.tlsCertificate``).

It fails (``state`` DeploymentFailed, ``DeploymentComplete`` False with the reason, a Warning event) as the operator
does before deploying anything: a model location with no object in its S3 bucket or a missing bucket
(``ModelSourceNotFound``), an FSx file system that does not exist, an instance type without NVIDIA GPUs
(``UnsupportedInstanceType``), a TLS output bucket that does not exist (``TLSCertificateBucketNotFound``).
"""

from __future__ import annotations

from typing import Any

from sandbox.aws import s3_objects
from sandbox.endpoints import ACCOUNT_ID
from sandbox.sim import events, instances, kvcache, objects
from sandbox.sim.context import Context

RESOURCE = "inferenceendpointconfigs.inference.sagemaker.aws.amazon.com"
JUMPSTART = "jumpstartmodels.inference.sagemaker.aws.amazon.com"
REGISTRATIONS = "sagemakerendpointregistrations.inference.sagemaker.aws.amazon.com"
SCALED_OBJECTS = "scaledobjects.keda.sh"
CONFIG_LABEL = "inference.sagemaker.aws.amazon.com/endpoint-config"
CONTAINER = "model-server"
KUEUE_LABELS = ("kueue.x-k8s.io/queue-name", "kueue.x-k8s.io/priority-class")
"""Task-governance labels of a config, carried to its worker pods (AWS: "add task governance labels to your
InferenceEndpointConfig or JumpStartModel")."""
#: The hash of the worker template the Deployment runs (a changed worker or KV cache rolls it out again).
WORKER_HASH = "inference.sagemaker.aws.amazon.com/worker-hash"
#: The routing Service's strategy, as the sandbox's API-server proxy reads it (``sandbox.sim.kvcache``).
ROUTING_ANNOTATION = "sandbox.instantstart.dev/routing-strategy"
#: The routing Service's session header (session routing), as the proxy reads it: the config's
#: :data:`SESSION_KEY_ANNOTATION`, else :data:`sandbox.sim.kvcache.SESSION_HEADER`.
SESSION_ANNOTATION = "sandbox.instantstart.dev/session-key"
#: Where InstantStart records the session routing header of a config (the CRD has no field for it).
SESSION_KEY_ANNOTATION = "instantstart.io/session-key"
#: The sandbox's JumpStart hub: model id → (image, args).
JUMPSTART_MODELS: dict[str, tuple[str, list[str]]] = {
    "deepseek-llm-r1-distill-qwen-1-5b": ("lmcache/vllm-openai:v0.3.7",
                                          ["/opt/ml/model", "--served-model-name",
                                           "deepseek-llm-r1-distill-qwen-1-5b"]),
    "meta-textgeneration-llama-3-1-8b-instruct": ("lmcache/vllm-openai:v0.3.7",
                                                  ["/opt/ml/model", "--served-model-name",
                                                   "meta-textgeneration-llama-3-1-8b-instruct"]),
}


class Refused(Exception):
    """Why the operator will not deploy a config: ``reason`` (CamelCase) and ``message``."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason, self.message = reason, message


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


def _kv_env(spec: dict[str, Any]) -> list[dict[str, Any]]:
    kv = spec.get("kvCacheSpec")
    if kv is None:
        return []
    env = [{"name": "LMCACHE_USE_EXPERIMENTAL", "value": "True"}]
    if kv.get("enableL1Cache", True):
        env.append({"name": "LMCACHE_LOCAL_CPU", "value": "True"})
    l2 = kv.get("l2CacheSpec") or {}
    if kv.get("enableL2Cache") and l2:
        backend = str(l2.get("l2CacheBackend", "")).lower()
        url = l2.get("l2CacheLocalUrl") if backend == "redis" else "sagemaker-hyperpod://$(NODE_IP):9200"
        env.append({"name": "LMCACHE_REMOTE_URL", "value": str(url or "")})
    return env


def _deployment_body(config: dict[str, Any]) -> dict[str, Any]:
    spec, name = config["spec"], objects.name(config)
    worker = spec["worker"]
    port = worker["modelInvocationPort"]
    mount = worker["modelVolumeMount"]
    env = [*(worker.get("environmentVariables") or []), *_kv_env(spec)]
    container = {"name": CONTAINER, "image": worker["image"], "resources": worker.get("resources") or {},
                 "ports": [{"name": port.get("name", "http"), "containerPort": port["containerPort"]}],
                 "env": env,
                 "volumeMounts": [{"name": mount["name"], "mountPath": mount.get("mountPath", "/opt/ml/model")}]}
    for key in ("command", "args", "workingDir"):
        if worker.get(key):
            container[key] = worker[key]
    labels = {"app": name, CONFIG_LABEL: name}
    queueing = {key: value for key, value in objects.labels(config).items() if key in KUEUE_LABELS}
    template = {"metadata": {"labels": {**labels, **queueing}},
                "spec": {"containers": [container], **_affinity(spec),
                         "volumes": [{"name": mount["name"], "emptyDir": {}}]}}
    return {"metadata": {"name": name, "labels": labels,
                         "annotations": {WORKER_HASH: objects.template_hash(template)}},
            "spec": {"replicas": spec.get("replicas", 1), "selector": {"matchLabels": labels},
                     "template": template}}


def _service_body(config: dict[str, Any], name: str, port: int) -> dict[str, Any]:
    target = config["spec"]["worker"]["modelInvocationPort"]["containerPort"]
    return {"metadata": {"name": name, "labels": {CONFIG_LABEL: objects.name(config)}},
            "spec": {"selector": {CONFIG_LABEL: objects.name(config)},
                     "ports": [{"name": "http", "port": port, "targetPort": target}]}}


def _routing_body(config: dict[str, Any]) -> dict[str, Any]:
    body = _service_body(config, f"{objects.name(config)}-routing", 80)
    routing = config["spec"].get("intelligentRoutingSpec") or {}
    if routing.get("enabled"):
        strategy = routing.get("routingStrategy", "prefixaware")
        body["metadata"]["annotations"] = {ROUTING_ANNOTATION: strategy}
        if strategy == "session":
            body["metadata"]["annotations"][SESSION_ANNOTATION] = objects.annotation(
                config, SESSION_KEY_ANNOTATION) or kvcache.SESSION_HEADER
    return body


def scaled_object_name(config: dict[str, Any]) -> str:
    """The ScaledObject the operator makes for a config's ``autoScalingSpec``."""
    return f"{objects.name(config)}-scaledobject"


def _metric_type(trigger: dict[str, Any]) -> str:
    return "Value" if trigger.get("metricType") == "Value" else "AverageValue"


def _triggers(ctx: Context, scaling: dict[str, Any]) -> list[dict[str, Any]]:
    """KEDA triggers of an ``autoScalingSpec``: its Prometheus triggers (``prometheusTriggerList`` over
    ``prometheusTrigger``) as ``prometheus`` ones, its CloudWatch triggers as ``aws-cloudwatch`` ones."""
    found: list[dict[str, Any]] = []
    prometheus = scaling.get("prometheusTriggerList") or [scaling.get("prometheusTrigger") or {}]
    for trigger in (entry for entry in prometheus if entry.get("query")):
        metadata = {"serverAddress": str(trigger.get("serverAddress", "")), "query": str(trigger["query"]),
                    "threshold": str(trigger.get("targetValue", 1)),
                    "activationThreshold": str(trigger.get("activationTargetValue", 0))}
        metadata.update({key: str(trigger[key]) for key in ("namespace", "customHeaders") if trigger.get(key)})
        found.append({"type": "prometheus", "metricType": _metric_type(trigger), "metadata": metadata,
                      **({"name": trigger["name"]} if trigger.get("name") else {})})
    cloudwatch = scaling.get("cloudWatchTriggerList") or [scaling.get("cloudWatchTrigger") or {}]
    for trigger in (entry for entry in cloudwatch if entry.get("metricName")):
        dimensions = trigger.get("dimensions") or []
        metadata = {"namespace": str(trigger.get("namespace", "")), "metricName": str(trigger["metricName"]),
                    "targetMetricValue": str(trigger.get("targetValue", 1)),
                    "activationTargetMetricValue": str(trigger.get("activationTargetValue", 0)),
                    "minMetricValue": str(trigger.get("minValue", 0)), "awsRegion": ctx.region,
                    "dimensionName": ";".join(str(entry.get("name", "")) for entry in dimensions),
                    "dimensionValue": ";".join(str(entry.get("value", "")) for entry in dimensions)}
        found.append({"type": "aws-cloudwatch", "metricType": _metric_type(trigger), "metadata": metadata,
                      **({"name": trigger["name"]} if trigger.get("name") else {})})
    return found


def _scaled_object_body(ctx: Context, config: dict[str, Any]) -> dict[str, Any] | None:
    """The KEDA ScaledObject of a config's ``autoScalingSpec`` scaling its Deployment (``None``: no spec, or no
    trigger to scale on)."""
    scaling = config["spec"].get("autoScalingSpec")
    triggers = _triggers(ctx, scaling) if scaling else []
    if not scaling or not triggers:
        return None
    name = objects.name(config)
    behavior = {"scaleDown": {"stabilizationWindowSeconds": int(scaling.get("scaleDownStabilizationTime", 300))},
                "scaleUp": {"stabilizationWindowSeconds": int(scaling.get("scaleUpStabilizationTime", 0))}}
    return {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
            "metadata": {"name": scaled_object_name(config), "labels": {CONFIG_LABEL: name}},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                     "minReplicaCount": int(scaling.get("minReplicaCount", 1)),
                     "maxReplicaCount": int(scaling.get("maxReplicaCount", 5)),
                     "pollingInterval": int(scaling.get("pollingInterval", 30)),
                     "cooldownPeriod": int(scaling.get("cooldownPeriod", 300)),
                     "initialCooldownPeriod": int(scaling.get("initialCooldownPeriod", 300)),
                     "advanced": {"horizontalPodAutoscalerConfig": {"behavior": behavior}},
                     "triggers": triggers}}


def _autoscale(ctx: Context, config: dict[str, Any], deployed: dict[str, Any]) -> bool:
    """Keep the config's ScaledObject as its ``autoScalingSpec`` says (made, changed, or deleted when the spec
    goes); whether KEDA scales the Deployment (the operator then leaves its replica count alone)."""
    namespace = objects.namespace(config)
    if not ctx.served(SCALED_OBJECTS):
        return False
    found = ctx.store.find(SCALED_OBJECTS, scaled_object_name(config), namespace)
    body = _scaled_object_body(ctx, deployed)
    if body is None:
        if found is not None:
            ctx.delete(SCALED_OBJECTS, found)
        return False
    if found is None:
        ctx.create(SCALED_OBJECTS, body, config)
    elif found["spec"] != body["spec"]:
        ctx.store.update(SCALED_OBJECTS, {**found, "spec": body["spec"]}, namespace)
    return True


def _ensure(ctx: Context, config: dict[str, Any], resource: str, body: dict[str, Any]) -> dict[str, Any]:
    found = ctx.store.find(resource, objects.name(body), objects.namespace(config))
    return found if found is not None else ctx.create(resource, body, config)


def _bucket_has(bucket: str, prefix: str) -> bool:
    try:
        return bool(s3_objects.listing(bucket, prefix))
    except s3_objects.NoSuchBucket:
        return False


def _bucket_exists(bucket: str) -> bool:
    try:
        s3_objects.listing(bucket, "")
    except s3_objects.NoSuchBucket:
        return False
    return True


def _check(spec: dict[str, Any]) -> None:
    """Refuse what the operator refuses before deploying (see the module docstring)."""
    source = spec.get("modelSourceConfig") or {}
    if source.get("modelSourceType") == "s3":
        bucket = (source.get("s3Storage") or {}).get("bucketName", "")
        location = str(source.get("modelLocation") or "").strip("/")
        if not _bucket_has(bucket, f"{location}/" if location else ""):
            raise Refused("ModelSourceNotFound", f"No model artifacts at s3://{bucket}/{location}: the bucket or "
                          "the location does not exist.")
    instance_type = spec.get("instanceType") or (spec.get("server") or {}).get("instanceType") or ""
    if instance_type and not instances.facts(instance_type).gpus:
        raise Refused("UnsupportedInstanceType", f"Instance type {instance_type} is not supported for inference: "
                      "it has no NVIDIA GPUs.")
    tls = (spec.get("tlsConfig") or {}).get("tlsCertificateOutputS3Uri", "")
    if tls and not _bucket_exists(tls[len("s3://"):].split("/", 1)[0]):
        raise Refused("TLSCertificateBucketNotFound", f"The TLS certificate output bucket of {tls} does not exist.")


def _arns(ctx: Context, endpoint: str, model: str) -> dict[str, str]:
    arn = f"arn:aws:sagemaker:{ctx.region}:{ACCOUNT_ID}"
    return {"endpointArn": f"{arn}:endpoint/{endpoint}", "configArn": f"{arn}:endpoint-config/{endpoint}",
            "modelArn": f"{arn}:model/{model}"}


def _register(ctx: Context, config: dict[str, Any], endpoint: str, model: str, instance_type: str,
              image: str) -> dict[str, Any]:
    """The SageMakerEndpointRegistration ``endpoint`` (made once, owned by the config) and its ARNs."""
    arns = _arns(ctx, endpoint, model)
    found = ctx.store.find(REGISTRATIONS, endpoint, objects.namespace(config))
    if found is None:
        body = {"apiVersion": "inference.sagemaker.aws.amazon.com/v1", "kind": "SageMakerEndpointRegistration",
                "metadata": {"name": endpoint, "labels": {CONFIG_LABEL: objects.name(config)}},
                "spec": {"name": endpoint, "instanceType": instance_type, "imageUri": image[:255],
                         "executionRole": f"arn:aws:iam::{ACCOUNT_ID}:role/hyperpod-inference-execution",
                         "loadBalancerHostName": f"{objects.name(config)}-routing.{objects.namespace(config)}"
                                                 ".svc.cluster.local",
                         "restApiId": "sandbox", "invocationEndpoint": config["spec"].get("invocationEndpoint",
                                                                                         "invocations"),
                         "eksClusterDetails": {"arn": f"arn:aws:eks:{ctx.region}:{ACCOUNT_ID}:cluster/"
                                                      f"{ctx.store.name}", "name": ctx.store.name,
                                               "clusterSecurityGroupId": "sg-sandbox", "securityGroupIds": [],
                                               "subnetIds": [], "vpcId": "vpc-sandbox"},
                         "tlsConfig": {"tlsCertificateOutputS3Bucket": "", "tlsCertificateS3Keys": []}}}
        found = ctx.create(REGISTRATIONS, body, config)
    ctx.set_status(REGISTRATIONS, found, {"state": "CreationCompleted",
                                          "endpoint": {"arn": arns["endpointArn"], "configArn": arns["configArn"],
                                                       "modelArn": arns["modelArn"]},
                                          "observedGeneration": found["metadata"].get("generation", 1)})
    return {"sagemaker": {"state": "CreationCompleted", **arns}}


def _features(spec: dict[str, Any]) -> str:
    parts = []
    kv = spec.get("kvCacheSpec")
    if kv is not None:
        tiers = ["L1"] if kv.get("enableL1Cache", True) else []
        if kv.get("enableL2Cache"):
            tiers.append(f"L2 ({str((kv.get('l2CacheSpec') or {}).get('l2CacheBackend', '')).lower()})")
        parts.append("KV cache " + (" + ".join(tiers) or "off"))
    routing = spec.get("intelligentRoutingSpec") or {}
    if routing.get("enabled"):
        parts.append(f"intelligent routing {routing.get('routingStrategy', 'prefixaware')}")
    return "; ".join(parts)


def _fail(ctx: Context, resource: str, config: dict[str, Any], refused: Refused) -> None:
    status = dict(config.get("status") or {})
    if status.get("state") != "DeploymentFailed":
        events.record(ctx, config, refused.reason, refused.message, kind="Warning")
    conditions = objects.condition(status.get("conditions"), "DeploymentInProgress", "False", refused.reason,
                                   refused.message)
    conditions = objects.condition(conditions, "DeploymentComplete", "False", refused.reason, refused.message)
    status.update(state="DeploymentFailed", conditions=conditions,
                  observedGeneration=config["metadata"].get("generation", 1))
    ctx.set_status(resource, config, status)


def _as_config(model: dict[str, Any]) -> dict[str, Any]:
    """A JumpStartModel as the config the operator deploys for it (``Refused`` for an id the hub does not have)."""
    spec = model["spec"]
    model_id = spec["model"]["modelId"]
    if model_id not in JUMPSTART_MODELS:
        raise Refused("ModelNotFound", f"Model {model_id} was not found in hub "
                      f"{spec['model'].get('modelHubName', 'SageMakerPublicHub')}.")
    image, args = JUMPSTART_MODELS[model_id]
    gpus = str(max(instances.facts(spec["server"]["instanceType"]).gpus, 1))
    derived = {key: spec[key] for key in ("replicas", "kvCacheSpec", "intelligentRoutingSpec", "tlsConfig",
                                          "autoScalingSpec") if key in spec}
    return {**model, "spec": {**derived, "instanceType": spec["server"]["instanceType"], "modelName": model_id,
                              "endpointName": (spec.get("sageMakerEndpoint") or {}).get("name", ""),
                              "worker": {"image": image, "args": args,
                                         "resources": {"limits": {"nvidia.com/gpu": gpus},
                                                       "requests": {"nvidia.com/gpu": gpus}},
                                         "modelInvocationPort": {"containerPort": 8080, "name": "http"},
                                         "modelVolumeMount": {"name": "model-weights"}}}}


def _sync(ctx: Context, resource: str, config: dict[str, Any]) -> None:
    try:
        deployed = _as_config(config) if resource == JUMPSTART else config
        _check(deployed["spec"])
    except Refused as refused:
        _fail(ctx, resource, config, refused)
        return
    body = _deployment_body(deployed)
    deployment = _ensure(ctx, config, "deployments", body)
    scaled = _autoscale(ctx, config, deployed)
    replicas = deployment["spec"].get("replicas", 1) if scaled else deployed["spec"].get("replicas", 1)
    wanted = body["metadata"]["annotations"][WORKER_HASH]
    if deployment["spec"].get("replicas") != replicas or objects.annotation(deployment, WORKER_HASH) != wanted:
        metadata = {**deployment["metadata"],
                    "annotations": {**(deployment["metadata"].get("annotations") or {}), WORKER_HASH: wanted}}
        deployment = ctx.store.update("deployments", {**deployment, "metadata": metadata,
                                                      "spec": {**deployment["spec"], "replicas": replicas,
                                                               "template": body["spec"]["template"]}},
                                      objects.namespace(config))
    port = deployed["spec"]["worker"]["modelInvocationPort"]["containerPort"]
    _ensure(ctx, config, "services", _service_body(deployed, f"{objects.name(config)}-service", port))
    routing = _ensure(ctx, config, "services", _routing_body(deployed))
    wanted_annotations = _routing_body(deployed)["metadata"].get("annotations") or {}
    if (routing["metadata"].get("annotations") or {}) != wanted_annotations:
        ctx.store.update("services", {**routing, "metadata": {**routing["metadata"],
                                                              "annotations": wanted_annotations}},
                         objects.namespace(config))
    observed = deployment.get("status") or {}
    available = int(observed.get("availableReplicas") or 0)
    complete = available >= replicas and observed.get("observedGeneration") == deployment["metadata"].get("generation")
    state = "DeploymentComplete" if complete else "DeploymentInProgress"
    features = _features(deployed["spec"])
    message = f"Deployment {objects.name(deployment)} has {available}/{replicas} replicas available" + (
        f"; {features}" if features else "")
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
    endpoint = deployed["spec"].get("endpointName")
    if complete and endpoint:
        status["endpoints"] = _register(ctx, config, endpoint, deployed["spec"]["modelName"],
                                        deployed["spec"].get("instanceType", ""), deployed["spec"]["worker"]["image"])
    tls = (deployed["spec"].get("tlsConfig") or {}).get("tlsCertificateOutputS3Uri", "")
    if complete and tls:
        bucket, _, prefix = tls[len("s3://"):].partition("/")
        key = f"{prefix.strip('/')}/{objects.name(config)}.pem".lstrip("/")
        if not s3_objects.exists(bucket, key):
            s3_objects.put(bucket, key, 1200, b"-----BEGIN CERTIFICATE-----\nsandbox\n-----END CERTIFICATE-----\n")
        status["tlsCertificate"] = {"tlsCertificateOutputS3Bucket": bucket, "tlsCertificateS3Keys": [key],
                                    "certificateHealth": "Valid"}
    ctx.set_status(resource, config, status)


def reconcile(ctx: Context) -> None:
    for resource in (RESOURCE, JUMPSTART):
        for config in ctx.list(resource):
            with ctx.guard(f"{resource} {objects.namespace(config)}/{objects.name(config)}"):
                _sync(ctx, resource, config)
