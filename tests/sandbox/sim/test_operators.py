"""RayJob, InferenceEndpointConfig and KEDA ScaledObject: what their operators would make of them."""

from __future__ import annotations

from typing import Any

from kubernetes import client as k8s
from kubernetes import watch

from sandbox.kube import crds
from sandbox.sim.objects import OUTCOME, STEPS
from tests.sandbox.sim.harness import OPERATOR_PREREQUISITES, REGION, client, make_cluster, pod_template, wait_for

INFERENCE_ADDON = "amazon-sagemaker-hyperpod-inference"


def install_crds(api: k8s.ApiClient, *paths: str) -> None:
    """Apply an operator's CRDs (files under the reference CRD folder), as the product does with its manifests."""
    extensions = k8s.ApiextensionsV1Api(api)
    for path in paths:
        extensions.create_custom_resource_definition(crds.load(path))


def ray_job(name: str, outcome: str | None = None) -> dict[str, Any]:
    def group(container: str) -> dict[str, Any]:
        return {"spec": {"containers": [{"name": container, "image": "rayproject/ray:2.46.0"}]}}

    return {"apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": {"name": name, "annotations": {STEPS: "8", **({OUTCOME: outcome} if outcome else {})}},
            "spec": {"entrypoint": "python /home/ray/train.py", "rayClusterSpec": {
                "rayVersion": "2.46.0", "headGroupSpec": {"rayStartParams": {}, "template": group("ray-head")},
                "workerGroupSpecs": [{"groupName": "gpu", "replicas": 2, "minReplicas": 1, "maxReplicas": 4,
                                      "rayStartParams": {}, "template": group("ray-worker")}]}}}


def test_rayjob_runs_on_a_ray_cluster_and_reports_the_driver():
    api = make_cluster(addons=())
    install_crds(api, "ray.io/rayclusters.yaml", "ray.io/rayjobs.yaml")
    custom, core = k8s.CustomObjectsApi(api), k8s.CoreV1Api(api)
    custom.create_namespaced_custom_object("ray.io", "v1", "default", "rayjobs", ray_job("pretrain"))
    custom.create_namespaced_custom_object("ray.io", "v1", "default", "rayjobs", ray_job("doomed", "fail"))
    seen: list[tuple[str | None, str | None]] = []
    for event in watch.Watch().stream(custom.list_namespaced_custom_object, "ray.io", "v1", "default", "rayjobs",
                                      field_selector="metadata.name=pretrain", timeout_seconds=10):
        status = event["object"].get("status") or {}
        if not seen or seen[-1] != (status.get("jobDeploymentStatus"), status.get("jobStatus")):
            seen.append((status.get("jobDeploymentStatus"), status.get("jobStatus")))
        if status.get("jobStatus") == "SUCCEEDED":
            break
    assert [state for state in seen if state[0]] == [("Initializing", None), ("Running", "PENDING"),
                                                      ("Running", "RUNNING"), ("Complete", "SUCCEEDED")]
    done = custom.get_namespaced_custom_object("ray.io", "v1", "default", "rayjobs", "pretrain")["status"]
    cluster = custom.get_namespaced_custom_object("ray.io", "v1", "default", "rayclusters", done["rayClusterName"])
    assert cluster["status"]["state"] == "ready" and cluster["status"]["readyWorkerReplicas"] == 2
    assert done["dashboardURL"] == f"{done['rayClusterName']}-head-svc.default.svc.cluster.local:8265"
    (head,) = core.list_namespaced_pod("default", label_selector=f"ray.io/cluster={done['rayClusterName']},"
                                                                 "ray.io/node-type=head").items
    log = core.read_namespaced_pod_log(head.metadata.name, "default").splitlines()
    assert log[1] == f"Job '{done['jobId']}' submitted successfully" and log[-1] == f"Job '{done['jobId']}' succeeded"
    assert log[-2].startswith("step=8, loss=")
    failed = wait_for(lambda: custom.get_namespaced_custom_object("ray.io", "v1", "default", "rayjobs", "doomed"),
                      lambda j: (j.get("status") or {}).get("jobStatus") == "FAILED")["status"]
    assert failed["jobDeploymentStatus"] == "Failed" and "CUDA error" in failed["message"]


def test_inference_endpoint_config_deploys_the_model_and_becomes_ready():
    api = make_cluster(addons=(*OPERATOR_PREREQUISITES, INFERENCE_ADDON))
    s3 = client("s3")
    s3.create_bucket(Bucket="models", CreateBucketConfiguration={"LocationConstraint": REGION})
    s3.put_object(Bucket="models", Key="llama-3-8b/config.json", Body=b"{}")  # the operator refuses an empty location
    custom, apps, core = k8s.CustomObjectsApi(api), k8s.AppsV1Api(api), k8s.CoreV1Api(api)
    group, plural = "inference.sagemaker.aws.amazon.com", "inferenceendpointconfigs"
    custom.create_namespaced_custom_object(group, "v1", "default", plural, {
        "apiVersion": f"{group}/v1", "kind": "InferenceEndpointConfig", "metadata": {"name": "llama"},
        "spec": {"modelName": "llama-3-8b", "endpointName": "llama-endpoint", "instanceType": "ml.g5.8xlarge",
                 "modelSourceConfig": {"modelSourceType": "s3", "s3Storage": {"bucketName": "models",
                                                                              "region": REGION},
                                       "modelLocation": "llama-3-8b"},
                 "worker": {"image": "763104351884.dkr.ecr.us-west-2.amazonaws.com/djl-inference:0.32.0-lmi14.0.0",
                            "resources": {"requests": {"nvidia.com/gpu": 1}, "limits": {"nvidia.com/gpu": 1}},
                            "modelInvocationPort": {"containerPort": 8080, "name": "http"},
                            "modelVolumeMount": {"name": "model-weights", "mountPath": "/opt/ml/model"}}}})
    ready = wait_for(lambda: custom.get_namespaced_custom_object(group, "v1", "default", plural, "llama"),
                     lambda c: (c.get("status") or {}).get("state") == "DeploymentComplete")["status"]
    assert {c["type"]: c["status"] for c in ready["conditions"]} == {"DeploymentInProgress": "False",
                                                                      "DeploymentComplete": "True"}
    assert ready["deploymentStatus"]["status"]["availableReplicas"] == 1
    assert ready["endpoints"]["sagemaker"]["endpointArn"].endswith(":endpoint/llama-endpoint")
    (pod,) = core.list_namespaced_pod("default", label_selector="app=llama").items
    assert core.read_node(pod.spec.node_name).metadata.labels["node.kubernetes.io/instance-type"] == "ml.g5.8xlarge"
    services = {s.metadata.name for s in core.list_namespaced_service("default").items}
    assert {"llama-service", "llama-routing"} <= services
    custom.patch_namespaced_custom_object(group, "v1", "default", plural, "llama", {"spec": {"replicas": 2}})
    wait_for(lambda: apps.read_namespaced_deployment("llama", "default").status.available_replicas,
             lambda n: n == 2)
    custom.delete_namespaced_custom_object(group, "v1", "default", plural, "llama")
    wait_for(lambda: apps.list_namespaced_deployment("default").items, lambda left: not left)


def test_scaled_object_gets_an_hpa_and_keeps_its_target_within_bounds():
    api = make_cluster(addons=())
    install_crds(api, "keda.sh/scaledobjects.yaml")
    custom, apps = k8s.CustomObjectsApi(api), k8s.AppsV1Api(api)
    keda = {"app": "keda-operator"}  # KEDA's operator runs: without it nothing acts on ScaledObjects
    apps.create_namespaced_deployment("default", {"metadata": {"name": "keda-operator", "labels": keda}, "spec": {
        "replicas": 1, "selector": {"matchLabels": keda}, "template": pod_template("keda-operator")}})
    apps.create_namespaced_deployment("default", {"metadata": {"name": "worker"}, "spec": {
        "replicas": 1, "selector": {"matchLabels": {"app": "worker"}}, "template": pod_template("worker")}})

    def scaled_object(name: str, target: str) -> dict[str, Any]:
        return {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": {"name": name},
                "spec": {"scaleTargetRef": {"name": target}, "minReplicaCount": 2, "maxReplicaCount": 5,
                         "triggers": [{"type": "prometheus", "metadata": {
                             "serverAddress": "http://prometheus:9090", "query": "sum(queue_depth)",
                             "threshold": "10"}}]}}

    custom.create_namespaced_custom_object("keda.sh", "v1alpha1", "default", "scaledobjects",
                                           scaled_object("worker", "worker"))
    custom.create_namespaced_custom_object("keda.sh", "v1alpha1", "default", "scaledobjects",
                                           scaled_object("orphan", "missing"))
    status = wait_for(lambda: custom.get_namespaced_custom_object("keda.sh", "v1alpha1", "default", "scaledobjects",
                                                                  "worker").get("status"),
                      lambda s: s and s.get("hpaName"))
    assert {c["type"]: c["status"] for c in status["conditions"]} == {"Ready": "True", "Active": "False",
                                                                      "Fallback": "False", "Paused": "False"}
    assert status["originalReplicaCount"] == 1 and status["scaleTargetKind"] == "apps/v1.Deployment"
    assert status["externalMetricNames"] == ["s0-prometheus"]
    hpa = k8s.AutoscalingV2Api(api).read_namespaced_horizontal_pod_autoscaler("keda-hpa-worker", "default")
    assert (hpa.spec.min_replicas, hpa.spec.max_replicas) == (2, 5)
    wait_for(lambda: apps.read_namespaced_deployment("worker", "default").status.ready_replicas, lambda n: n == 2)
    orphan = wait_for(lambda: custom.get_namespaced_custom_object("keda.sh", "v1alpha1", "default", "scaledobjects",
                                                                  "orphan").get("status"), bool)
    assert {c["type"]: c["reason"] for c in orphan["conditions"]} == {"Ready": "ScaledObjectCheckFailed"}
