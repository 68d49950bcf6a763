"""``plan_job``: defaults, every bad input's code on its field, the elastic constraints, the operator check, and —
on sandbox clusters — GPU/EFA limits from real EC2 instance data with nothing created on the cluster."""

from __future__ import annotations

import json

import pytest
from kubernetes import client as k8s

from accounts.models import Membership
from cloud import kube
from clusters.models import InstanceGroup
from config.errors import ValidationFailed
from tests.training.test_manifests import VALID, build_fake_cluster, enable_tiered_checkpointing
from training import constraints
from training.constraints import OperatorMissing
from training.models import TrainingJob
from training.planning import plan_job
from training.recipes import SHARED_MOUNT


@pytest.fixture
def fake_cluster(make_team, monkeypatch):
    return build_fake_cluster(make_team, monkeypatch)


def _refusal(cluster, recipe="pytorch", name="job", **config) -> ValidationFailed:
    with pytest.raises(ValidationFailed) as caught:
        plan_job(cluster=cluster, recipe=recipe, name=name, config=config)
    return caught.value


def _codes(error: ValidationFailed) -> dict[str, list[str]]:
    return {field: [item["code"] for item in items] for field, items in error.fields.items()}


def test_defaults_are_filled_and_resubmitting_them_plans_the_same_job(fake_cluster):
    plan = plan_job(cluster=fake_cluster, recipe="pytorch", name="first", config=VALID["pytorch"])
    assert (plan.instance_group, plan.instance_type, plan.replicas, plan.processes_per_node) == \
        ("gpu", "ml.p5.48xlarge", 1, 8)
    assert plan.namespace == "team-vision" and plan.service_account == "default"
    config = plan.config
    assert config["script"] == f"{SHARED_MOUNT}/train.py"
    assert (config["gpus_per_node"], config["efa_per_node"], config["processes_per_node"]) == (8, 32, 8)
    assert (config["max_retries"], config["restarts_before_full_job_restart"], config["eval_period_seconds"],
            config["max_full_job_restarts"], config["hang_detection"], config["checkpoints"]) == \
        (3, 2, 3600, 1, True, "nvme")
    again = plan_job(cluster=fake_cluster, recipe="pytorch", name="first", config=json.loads(json.dumps(config)))
    assert again == plan


def test_unknown_recipe(fake_cluster):
    error = _refusal(fake_cluster, recipe="tensorflow")
    assert error.code == "validation_failed" and _codes(error) == {"recipe": ["unknown_recipe"]}


@pytest.mark.parametrize(("recipe", "config", "field", "code"), [
    ("pytorch", {}, "script", "required"),
    ("pytorch", {"script": "/etc/train.py"}, "script", "path_outside_shared_bucket"),
    ("pytorch", {"script": "s3://someone-elses-bucket/train.py"}, "script", "path_outside_shared_bucket"),
    ("pytorch", {"script": "../other-team/train.py"}, "script", "path_outside_shared_bucket"),
    ("pytorch", {"script": "x.py", "epochs": 3}, "epochs", "unknown_field"),
    ("pytorch", {"script": "x.py", "replicas": 0}, "replicas", "min_value"),
    ("pytorch", {"script": "x.py", "replicas": 65}, "replicas", "max_value"),
    ("pytorch", {"script": "x.py", "replicas": "2"}, "replicas", "invalid_type"),
    ("pytorch", {"script": "x.py", "replicas": True}, "replicas", "invalid_type"),
    ("pytorch", {"script": "x.py", "replicas": 1.5}, "replicas", "invalid"),
    ("pytorch", {"script": "x.py", "gpus_per_node": "8"}, "gpus_per_node", "invalid_type"),
    ("pytorch", {"script": "x.py", "gpus_per_node": 9}, "gpus_per_node", "too_many_gpus"),
    ("pytorch", {"script": "x.py", "efa_per_node": 33}, "efa_per_node", "too_many_efa"),
    ("pytorch", {"script": "x.py", "instance_group": "gpu", "gpus_per_node": 8, "efa_per_node": 32}, None, None),
    ("pytorch", {"script": "x.py", "instance_group": "spot", "gpus_per_node": 8}, "gpus_per_node", "too_many_gpus"),
    ("pytorch", {"script": "x.py", "instance_group": "nope"}, "instance_group", "unknown_instance_group"),
    ("pytorch", {"script": "x.py", "start_pattern": "step=(\\d+"}, "start_pattern", "invalid_pattern"),
    ("pytorch", {"script": "x.py", "checkpoints": "tiered"}, "checkpoints", "tiered_checkpointing_off"),
    ("pytorch", {"script": "x.py", "checkpoints": "efs"}, "checkpoints", "invalid_choice"),
    ("pytorch", {"script": "x.py", "env": {"2X": "y"}}, "env", "invalid_env"),
    ("llama-factory", {"project": "lf"}, "config", "required"),
    ("llama-factory", {"project": "lf", "config": "model_name_or_path: [unclosed\n"}, "config", "invalid_yaml"),
    ("llama-factory", {"project": "lf", "config": "stage: sft\n"}, "config", "missing_config_key"),
    ("llama-factory", {"project": "/opt/lf", "config_path": "lf/sft.yaml"}, "project", "path_outside_shared_bucket"),
    ("ms-swift", {"command_type": "dpo", "config_path": "swift.yaml"}, "command_type", "unknown_command_type"),
    ("ms-swift", {"config": "- not\n- a mapping\n"}, "config", "invalid_yaml"),
    ("verl", {"overrides": ["trainer.total_epochs"]}, "overrides", "invalid_override"),
    ("verl", {"config_path": "s3://other/ppo.yaml"}, "config_path", "path_outside_shared_bucket"),
    ("verl", {"max_retries": 2}, "max_retries", "unknown_field"),
    ("custom", {}, "command", "required"),
])
def test_bad_input_is_refused_on_its_field(fake_cluster, recipe, config, field, code):
    if field is None:
        plan_job(cluster=fake_cluster, recipe=recipe, name="job", config=config)
        return
    error = _refusal(fake_cluster, recipe, **config)
    assert code in _codes(error).get(field, []), error.fields
    assert error.status == 400


@pytest.mark.parametrize("name", ["", "Upper", "9lives", "ends-", "under_score", "x" * 41])
def test_invalid_job_name(fake_cluster, name):
    error = _refusal(fake_cluster, name=name, **VALID["pytorch"])
    assert _codes(error) == {"name": ["invalid_job_name"]}


def test_every_field_error_is_reported_at_once(fake_cluster):
    error = _refusal(fake_cluster, name="Bad Name", script="/etc/x.py", replicas=0, gpus_per_node=99)
    codes = _codes(error)
    assert codes == {"name": ["invalid_job_name"], "script": ["path_outside_shared_bucket"],
                     "replicas": ["min_value"], "gpus_per_node": ["too_many_gpus"]}
    assert error.code == "validation_failed" and error.message.startswith("4 checks failed: Use 1–40 lower-case")


@pytest.mark.parametrize(("submission", "fields"), [
    ({"recipe": "tensorflow"}, {"recipe": ["unknown_recipe"]}),
    ({"config": {"script": "x.py", "replicas": "2"}}, {"replicas": ["invalid_type"]}),
    ({"name": "Bad Name"}, {"name": ["invalid_job_name"]}),
    ({"config": {"script": "/etc/x.py"}}, {"script": ["path_outside_shared_bucket"]}),
    ({"name": "Bad Name", "config": {"script": "/etc/x.py"}},
     {"name": ["invalid_job_name"], "script": ["path_outside_shared_bucket"]}),
])
def test_a_refused_submission_is_validation_failed_through_rest(fake_cluster, api, submission, fields):
    """The one rule for the top-level code: ``validation_failed`` with one failing field or several, as a refused
    cluster create; the specific codes are the fields'. A single failure's message is its own."""
    admin = Membership.objects.get(team=fake_cluster.team).user
    body = {"cluster": fake_cluster.pk, "recipe": "pytorch", "name": "job", **submission,
            "config": {**VALID["pytorch"], **submission.get("config", {})}}
    response = api(admin).post("/api/v1/training-jobs", body)
    answer = response.json()
    assert (response.status_code, answer["code"]) == (400, "validation_failed"), answer
    assert _codes(ValidationFailed(fields=answer["fields"])) == fields
    if len(fields) == 1:
        assert answer["message"] == next(iter(answer["fields"].values()))[0]["message"]
    assert not TrainingJob.objects.exists()


def test_default_group_is_the_first_with_gpus_and_cpu_groups_get_no_gpus(fake_cluster):
    assert plan_job(cluster=fake_cluster, recipe="custom", name="j", config=VALID["custom"]).instance_group == "gpu"
    plan = plan_job(cluster=fake_cluster, recipe="custom", name="j",
                    config={**VALID["custom"], "instance_group": "controller"})
    container = plan.manifest["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]
    assert "resources" not in container and plan.processes_per_node == 1
    assert "FI_PROVIDER" not in {item["name"] for item in container["env"]}
    InstanceGroup.objects.filter(cluster=fake_cluster).update(deleted=True)
    assert _codes(_refusal(fake_cluster, **VALID["pytorch"])) == {"instance_group": ["unknown_instance_group"]}


@pytest.mark.parametrize(("config", "code"), [
    ({"instance_group": "spot"}, "elastic_spot_group"),
    ({"checkpoints": "tiered"}, "elastic_tiered_checkpointing"),
    ({"checkpointless": True}, "elastic_checkpointless"),
])
def test_elastic_training_constraints(fake_cluster, config, code):
    enable_tiered_checkpointing(fake_cluster)
    error = _refusal(fake_cluster, **VALID["pytorch"], elastic=True, **config)
    assert _codes(error) == {"elastic": [code]} and error.code == "validation_failed"
    plan_job(cluster=fake_cluster, recipe="pytorch", name="job", config={**VALID["pytorch"], **config})


def test_elastic_range(fake_cluster):
    error = _refusal(fake_cluster, **VALID["pytorch"], elastic=True, replicas=2, min_replicas=3)
    assert _codes(error) == {"min_replicas": ["invalid_elastic_range"]}
    plan = plan_job(cluster=fake_cluster, recipe="pytorch", name="job",
                    config={**VALID["pytorch"], "elastic": True, "replicas": 2})
    assert plan.manifest["spec"]["elasticPolicy"] == {"minReplicas": 1, "maxReplicas": 2}


def test_operator_missing_is_a_conflict_after_field_checks(fake_cluster, monkeypatch):
    monkeypatch.setattr(constraints, "operator_served", lambda cluster, path: False)
    assert _codes(_refusal(fake_cluster, script="/etc/x.py")) == {"script": ["path_outside_shared_bucket"]}
    with pytest.raises(OperatorMissing) as caught:
        plan_job(cluster=fake_cluster, recipe="pytorch", name="job", config=VALID["pytorch"])
    assert caught.value.status == 409 and caught.value.code == "operator_missing"
    assert caught.value.as_dict()["detail"] == {
        "feature": "training_operator",
        "enable": f'PATCH /api/v1/clusters/{fake_cluster.pk}/features {{"training_operator": {{"enabled": true}}}}'}
    with pytest.raises(OperatorMissing) as caught:
        plan_job(cluster=fake_cluster, recipe="verl", name="job", config=VALID["verl"])
    assert caught.value.detail == {"dependency": "kuberay-operator"}


def _jobs(cluster, plural: str) -> list:
    custom = k8s.CustomObjectsApi(kube.api_client(cluster.eks_name, region=cluster.region))
    group, version = ("ray.io", "v1") if plural == "rayjobs" else ("sagemaker.amazonaws.com", "v1")
    return custom.list_namespaced_custom_object(group, version, "team-vision", plural)["items"]


def test_real_instance_data_limits_gpus_and_efa_and_nothing_is_created(cast, sandbox):
    from tests.training.sandbox import training_cluster

    cluster = training_cluster(cast.team)
    plan = plan_job(cluster=cluster, recipe="pytorch", name="fits", config=VALID["pytorch"])
    assert (plan.instance_type, plan.config["gpus_per_node"], plan.config["efa_per_node"]) == ("ml.g5.12xlarge", 4, 1)
    error = _refusal(cluster, **VALID["pytorch"], gpus_per_node=5, efa_per_node=2)
    assert _codes(error) == {"gpus_per_node": ["too_many_gpus"], "efa_per_node": ["too_many_efa"]}
    _refusal(cluster, recipe="verl", gpus_per_node=8)
    assert _jobs(cluster, "hyperpodpytorchjobs") == [] and _jobs(cluster, "rayjobs") == []


def test_operators_missing_on_a_real_cluster(cast, sandbox):
    from tests.training.sandbox import training_cluster

    cluster = training_cluster(cast.team, operator=False, ray=False)
    with pytest.raises(OperatorMissing) as caught:
        plan_job(cluster=cluster, recipe="pytorch", name="job", config=VALID["pytorch"])
    assert caught.value.detail["feature"] == "training_operator"
    with pytest.raises(OperatorMissing) as caught:
        plan_job(cluster=cluster, recipe="verl", name="job", config=VALID["verl"])
    assert caught.value.detail == {"dependency": "kuberay-operator"}


def test_a_number_sent_as_a_string_is_refused_by_mcp_like_rest(fake_cluster, token_for):
    """REST and MCP take JSON, where ``"2"`` is not a number; only the portal's form, whose values are all text,
    reads its integer fields as numbers."""
    from mcp_server.testing import call_tool

    admin = Membership.objects.get(team=fake_cluster.team).user
    data = {"cluster": fake_cluster.pk, "recipe": "pytorch", "name": "job",
            "config": {**VALID["pytorch"], "replicas": "2"}}
    is_error, body = call_tool(token_for(admin), "submit_training_job", data)
    assert is_error
    assert (body["code"], body["fields"]["replicas"][0]["code"]) == ("validation_failed", "invalid_type")
    assert not TrainingJob.objects.exists()
