"""Every recipe's manifest against the real CRD schemas (``../shared/crds``, vendored in ``sandbox/kube/crd_files``):

- the HyperPodPyTorchJob strictly against the derived JSON Schema (``additionalProperties: false`` everywhere), and
  through the emulator's admission (pruning must drop nothing, then the structural schema with the core
  PodTemplateSpec);
- the RayJob through the emulator's admission against KubeRay's ``ray.io_rayjobs.yaml``;
- and, once, created on a sandbox cluster, whose API server answers 422 for anything its CRDs refuse.

Also: the shape of the pod (shared claim, /dev/shm, NVMe checkpoints, node selection, GPU/EFA, env) and
``with_env``. ``fake_cluster`` (a cluster row with instance groups; EC2 facts and the operator check stubbed) is
shared with ``test_planning``.
"""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest
from kubernetes import client as k8s

from cloud import kube
from clusters.inspection.catalog import InstanceTypeOffer
from clusters.models import Cluster, ClusterFeature, FeatureState
from sandbox.kube import crds, customresources, validation
from tests import factories
from training import constraints, shared_files
from training.planning import plan_job, with_env
from training.recipes import SHARED_MOUNT

BUCKET = "instantstart-shared-test"
RAYJOBS = "ray.io/rayjobs.yaml"
DERIVED = "sagemaker.amazonaws.com/hyperpodpytorchjobs.derived-schema.json"


def _offer(name: str, gpus: int, efa: int) -> InstanceTypeOffer:
    return InstanceTypeOffer(name=name, ec2_type=name.removeprefix("ml."), zones=("us-west-2a",), vcpus=96,
                             memory_gib=768.0, accelerator_count=gpus, accelerator_type="NVIDIA H100" if gpus else "",
                             accelerator_memory_gib=80.0 if gpus else 0.0, efa_supported=efa > 0,
                             max_efa_interfaces=efa)


OFFERS = {"ml.m5.xlarge": _offer("ml.m5.xlarge", 0, 0), "ml.p5.48xlarge": _offer("ml.p5.48xlarge", 8, 32),
          "ml.g5.12xlarge": _offer("ml.g5.12xlarge", 4, 1)}

VALID = {
    "pytorch": {"script": "train.py", "args": ["--steps", "100"]},
    "llama-factory": {"project": "llama-factory", "config": "model_name_or_path: Qwen/Qwen2.5-0.5B\nstage: sft\n"
                                                            "finetuning_type: lora\n"},
    "ms-swift": {"command_type": "sft", "config": "model: Qwen/Qwen2.5-0.5B\ntrain_type: lora\n"},
    "verl": {"overrides": [f"data.train_files={SHARED_MOUNT}/data/gsm8k/train.parquet"]},
    "custom": {"command": ["python", "-c", "print('hi')"]},
}


def build_fake_cluster(make_team, monkeypatch) -> Cluster:
    """An active cluster row of team ``vision`` with groups ``controller`` (CPU), ``gpu`` (2 × ml.p5.48xlarge:
    8 GPUs, 32 EFA) and ``spot`` (spot ml.g5.12xlarge); EC2 facts, the CRD check and the script's ``HeadObject``
    are stubbed (every script exists)."""
    monkeypatch.setenv("INSTANTSTART_SHARED_BUCKET", BUCKET)
    monkeypatch.setattr(constraints, "instance_facts", lambda region, instance_type: OFFERS.get(instance_type))
    monkeypatch.setattr(constraints, "operator_served", lambda cluster, path: True)
    monkeypatch.setattr(shared_files, "file_exists", lambda cluster, mount_path, team=None: True)
    cluster = factories.cluster(make_team("Vision"))
    for name, instance_type, capacity_type, count in [("controller", "ml.m5.xlarge", "on-demand", 1),
                                                       ("gpu", "ml.p5.48xlarge", "on-demand", 2),
                                                       ("spot", "ml.g5.12xlarge", "spot", 1)]:
        factories.instance_group(cluster, name, instance_type=instance_type, capacity_type=capacity_type,
                                 target_count=count)
    return cluster


@pytest.fixture
def fake_cluster(make_team, monkeypatch) -> Cluster:
    return build_fake_cluster(make_team, monkeypatch)


def enable_tiered_checkpointing(cluster: Cluster) -> None:
    ClusterFeature.objects.create(cluster=cluster, feature="tiered_checkpointing", state=FeatureState.ENABLED,
                                  details={"service_account": "instantstart-checkpoints"})


def assert_crd_accepts(manifest: dict) -> None:
    """Raise unless the CRD of ``manifest``'s kind accepts it as it is (nothing pruned, no schema error)."""
    if manifest["kind"] == "HyperPodPyTorchJob":
        schema = json.loads((crds.crds_dir() / DERIVED).read_text())
        jsonschema.Draft202012Validator(schema).validate(manifest)
        resource_type = customresources.resource_type(crds.load(crds.HYPERPOD_PYTORCH_JOB))
    else:
        resource_type = customresources.resource_type(crds.load(RAYJOBS))
    admitted = copy.deepcopy(manifest)
    assert validation.prune(resource_type, admitted) == []
    validation.check(resource_type, admitted)


@pytest.mark.parametrize("recipe", list(VALID))
def test_each_recipe_manifest_is_accepted_by_its_crd(fake_cluster, recipe):
    plan = plan_job(cluster=fake_cluster, recipe=recipe, name=f"{recipe}-job", config=VALID[recipe])
    assert_crd_accepts(plan.manifest)
    assert plan.manifest["metadata"] == {"name": f"{recipe}-job", "namespace": "team-vision",
                                         "labels": plan.manifest["metadata"]["labels"]}
    assert plan.manifest["metadata"]["labels"]["instantstart.io/recipe"] == recipe


@pytest.mark.parametrize("config", [
    {"elastic": True, "replicas": 2, "min_replicas": 1, "max_replicas": 4},
    {"hang_detection": False, "min_throughput": 100, "efa_per_node": 0, "gpus_per_node": 0},
    {"checkpoints": "tiered", "env": {"HF_HOME": "/mnt/shared/hf"}, "instance_group": "spot"},
])
def test_variants_are_accepted_too(fake_cluster, config):
    enable_tiered_checkpointing(fake_cluster)
    plan = plan_job(cluster=fake_cluster, recipe="pytorch", name="variant", config={**VALID["pytorch"], **config})
    assert_crd_accepts(plan.manifest)
    assert_crd_accepts(with_env(plan, {"MLFLOW_TRACKING_URI": "arn:aws:sagemaker:x"}).manifest)


def _pod(plan) -> dict:
    return plan.manifest["spec"]["replicaSpecs"][0]["template"]["spec"]


def test_hyperpod_pod_shape(fake_cluster):
    plan = plan_job(cluster=fake_cluster, recipe="pytorch", name="shape", config={**VALID["pytorch"], "replicas": 2})
    spec, pod = plan.manifest["spec"], _pod(plan)
    assert spec["nprocPerNode"] == "8" and spec["replicaSpecs"][0]["replicas"] == 2
    assert spec["runPolicy"]["jobMaxRetryCount"] == 3 and plan.restarts_total == 3
    assert spec["runPolicy"]["restartPolicy"] == {"numRestartBeforeFullJobRestart": 2, "evalPeriodSeconds": 3600,
                                                  "maxFullJobRestarts": 1}
    assert [rule["name"] for rule in spec["runPolicy"]["logMonitoringConfiguration"]] == ["job-start", "job-progress"]
    assert pod["nodeSelector"] == {"sagemaker.amazonaws.com/instance-group-name": "gpu",
                                   "node.kubernetes.io/instance-type": "ml.p5.48xlarge"}
    assert pod["serviceAccountName"] == "default"
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    assert volumes["shared"] == {"name": "shared", "persistentVolumeClaim": {"claimName": "shared"}}
    assert volumes["shm"]["emptyDir"] == {"medium": "Memory"}
    assert volumes["checkpoints"]["hostPath"]["path"] == "/opt/dlami/nvme/checkpoints/shape"
    container = pod["containers"][0]
    assert container["resources"]["limits"] == container["resources"]["requests"] == \
        {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 32}
    assert {m["mountPath"] for m in container["volumeMounts"]} == {SHARED_MOUNT, "/dev/shm", "/checkpoints"}
    env = {item["name"]: item["value"] for item in container["env"]}
    assert env["FI_PROVIDER"] == "efa" and env["FI_EFA_USE_DEVICE_RDMA"] == "1"
    assert env["CHECKPOINT_DIR"] == "/checkpoints" and env["SHARED_DIR"] == SHARED_MOUNT
    assert container["command"][:3] == ["hyperpodrun", "--nnodes=2", "--nproc-per-node=8"]
    assert container["image"].startswith("763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:")


def test_tiered_checkpoints_use_the_checkpoint_service_account(fake_cluster):
    enable_tiered_checkpointing(fake_cluster)
    plan = plan_job(cluster=fake_cluster, recipe="pytorch", name="tiered",
                    config={**VALID["pytorch"], "checkpoints": "tiered"})
    pod = _pod(plan)
    assert plan.service_account == pod["serviceAccountName"] == "instantstart-checkpoints"
    assert "checkpoints" not in {volume["name"] for volume in pod["volumes"]}
    env = {item["name"]: item["value"] for item in pod["containers"][0]["env"]}
    assert env["CHECKPOINT_S3_URI"] == f"s3://{BUCKET}/teams/vision/checkpoints/tiered/"


def test_ray_job_shape(fake_cluster):
    plan = plan_job(cluster=fake_cluster, recipe="verl", name="grpo", config={**VALID["verl"], "replicas": 2})
    spec = plan.manifest["spec"]
    assert plan.kind == "RayJob" and plan.path == "kuberay" and plan.restarts_total == 0
    assert spec["shutdownAfterJobFinishes"] is True and spec["ttlSecondsAfterFinished"] > 0
    assert "trainer.nnodes=2" in spec["entrypoint"] and "trainer.n_gpus_per_node=8" in spec["entrypoint"]
    head = spec["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    workers = spec["rayClusterSpec"]["workerGroupSpecs"][0]
    assert workers["replicas"] == 2 and "resources" not in head
    assert workers["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 8
    assert "CHECKPOINT_DIR" in spec["runtimeEnvYAML"]


def test_with_env_reaches_every_container(fake_cluster):
    for recipe in ("pytorch", "verl"):
        plan = plan_job(cluster=fake_cluster, recipe=recipe, name="mlflow", config=VALID[recipe])
        extra = {"MLFLOW_TRACKING_URI": "arn:aws:sagemaker:us-west-2:1:mlflow-tracking-server/t",
                 "MLFLOW_EXPERIMENT_NAME": "vision", "JOB_NAME": "renamed"}
        changed = with_env(plan, extra)
        assert plan.manifest != changed.manifest and changed.config == plan.config
        templates = ([changed.manifest["spec"]["rayClusterSpec"]["headGroupSpec"]["template"],
                      changed.manifest["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]]
                     if recipe == "verl" else [changed.manifest["spec"]["replicaSpecs"][0]["template"]])
        for template in templates:
            env = template["spec"]["containers"][0]["env"]
            assert [item["name"] for item in env].count("JOB_NAME") == 1
            assert {item["name"]: item["value"] for item in env}.items() >= extra.items()
        if recipe == "verl":
            assert "MLFLOW_EXPERIMENT_NAME: vision" in changed.manifest["spec"]["runtimeEnvYAML"]
        assert plan.with_env(extra) == changed


def test_sandbox_api_server_accepts_every_recipe(cast, sandbox):
    from tests.training.sandbox import training_cluster

    cluster = training_cluster(cast.team)
    custom = k8s.CustomObjectsApi(kube.api_client(cluster.eks_name, region=cluster.region))
    for recipe, config in VALID.items():
        plan = plan_job(cluster=cluster, recipe=recipe, name=f"{recipe}-sbx", config=config)
        group, version = plan.manifest["apiVersion"].split("/")
        plural = "rayjobs" if plan.kind == "RayJob" else "hyperpodpytorchjobs"
        created = custom.create_namespaced_custom_object(group, version, plan.namespace, plural, plan.manifest)
        assert created["spec"] == plan.manifest["spec"] or plan.kind == "RayJob", recipe
        assert created["metadata"]["name"] == plan.name
