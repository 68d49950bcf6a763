"""The recipe catalog as data: its payload, field cleaning, the shared-bucket path contract and each recipe's
command. Pure functions: no database, no sandbox."""

from __future__ import annotations

import pytest

from training.recipes import RECIPES, SHARED_MOUNT, SharedBucket, catalog_payload
from training.recipes.base import INLINE_CONFIG_ENV, INLINE_CONFIG_FILE, LaunchContext
from training.recipes.fields import FIELD_TYPES, Field, FieldProblem, clean
from training.recipes.paths import resolve

SHARED = SharedBucket("instantstart-shared-123456789012-us-west-2", "teams/vision/")
CTX = LaunchContext(job="demo", replicas=2, processes_per_node=4, gpus_per_node=4, checkpoint_dir="/checkpoints")


def test_catalog_order_and_payload_shape():
    assert list(RECIPES) == ["pytorch", "llama-factory", "ms-swift", "verl", "custom"]
    payload = catalog_payload()
    assert [item["slug"] for item in payload] == list(RECIPES)
    for item in payload:
        assert set(item) == {"slug", "title", "description", "path", "kind", "image", "fields"}
        assert item["path"] in ("hyperpod", "kuberay")
        names = [f["name"] for f in item["fields"]]
        assert len(names) == len(set(names)), item["slug"]
        for field in item["fields"]:
            assert set(field) == {"name", "type", "required", "default", "choices", "help", "min", "max"}
            assert field["type"] in FIELD_TYPES and field["help"]
    by_slug = {item["slug"]: item for item in payload}
    assert by_slug["verl"]["path"] == "kuberay" and by_slug["verl"]["kind"] == "RayJob"
    assert "max_retries" not in [f["name"] for f in by_slug["verl"]["fields"]]
    assert "{region}" in by_slug["pytorch"]["image"]
    regional = {item["slug"]: item for item in catalog_payload("eu-west-1")}
    assert ".eu-west-1." in regional["pytorch"]["image"]
    assert next(f for f in regional["pytorch"]["fields"] if f["name"] == "image")["default"] == \
        regional["pytorch"]["image"]
    swift = next(f for f in by_slug["ms-swift"]["fields"] if f["name"] == "command_type")
    assert swift["type"] == "choice" and swift["choices"] == ["pt", "sft", "rlhf"]


@pytest.mark.parametrize(("field", "value", "expected"), [
    (Field("n", "integer", min=1, max=4), 3, 3),
    (Field("n", "integer", default=2), None, 2),
    (Field("b", "boolean"), "true", True),
    (Field("b", "boolean"), False, False),
    (Field("l", "list", default=[]), "--lr 1e-4 --name 'a b'", ["--lr", "1e-4", "--name", "a b"]),
    (Field("l", "list"), ["--epochs", 3], ["--epochs", "3"]),
    (Field("e", "map"), {"A": 1, "B_2": True}, {"A": "1", "B_2": "true"}),
    (Field("e", "map"), None, {}),
    (Field("s", "string"), "  x ", "x"),
    (Field("y", "yaml"), "a: 1\n", "a: 1\n"),
])
def test_clean_accepts(field, value, expected):
    assert clean(field, value) == expected


@pytest.mark.parametrize(("field", "value", "code"), [
    (Field("n", "integer", required=True), None, "required"),
    (Field("n", "integer", required=True), "  ", "required"),
    (Field("n", "integer"), "three", "invalid_type"),
    (Field("n", "integer"), "3", "invalid_type"),
    (Field("n", "integer"), True, "invalid_type"),
    (Field("n", "integer"), 2.5, "invalid"),
    (Field("n", "integer", min=1), 0, "min_value"),
    (Field("n", "integer", max=64), 65, "max_value"),
    (Field("b", "boolean"), "maybe", "invalid"),
    (Field("c", "choice", choices=("a",)), "b", "invalid_choice"),
    (Field("c", "choice", choices=("sft",), choice_code="unknown_command_type"), "dpo", "unknown_command_type"),
    (Field("y", "yaml"), "a: [1, 2\n", "invalid_yaml"),
    (Field("y", "yaml"), "- just\n- a list\n", "invalid_yaml"),
    (Field("l", "list"), {"not": "a list"}, "invalid"),
    (Field("e", "map"), {"1BAD": "x"}, "invalid_env"),
    (Field("e", "map"), {"OK": {"nested": 1}}, "invalid_env"),
])
def test_clean_refuses(field, value, code):
    with pytest.raises(FieldProblem) as caught:
        clean(field, value)
    assert caught.value.code == code


@pytest.mark.parametrize(("value", "expected"), [
    ("code/train.py", f"{SHARED_MOUNT}/code/train.py"),
    ("./code//train.py", f"{SHARED_MOUNT}/code/train.py"),
    (f"{SHARED_MOUNT}/data", f"{SHARED_MOUNT}/data"),
    (SHARED_MOUNT, SHARED_MOUNT),
    (f"s3://{SHARED.bucket}/teams/vision/models/llama", f"{SHARED_MOUNT}/models/llama"),
    (f"s3://{SHARED.bucket}/teams/vision/", SHARED_MOUNT),
])
def test_paths_inside_the_shared_bucket(value, expected):
    assert resolve("script", value, SHARED) == expected


@pytest.mark.parametrize("value", [
    "/etc/passwd", "/mnt/sharedother/x", "../x", "code/../../x", f"{SHARED_MOUNT}/../x",
    "s3://other-bucket/teams/vision/x", f"s3://{SHARED.bucket}/teams/speech/x", f"s3://{SHARED.bucket}/x",
    f"s3://{SHARED.bucket}/teams/visionary/x", "https://example.com/train.py",
])
def test_paths_outside_the_shared_bucket(value):
    with pytest.raises(FieldProblem) as caught:
        resolve("script", value, SHARED)
    assert caught.value.code == "path_outside_shared_bucket"


def test_pytorch_runs_the_script_under_hyperpodrun():
    launch = RECIPES["pytorch"].launch({"script": f"{SHARED_MOUNT}/code/train.py", "args": ["--epochs", "3"]}, CTX)
    assert launch.command == ["hyperpodrun", "--nnodes=2", "--nproc-per-node=4", f"{SHARED_MOUNT}/code/train.py",
                              "--epochs", "3"]
    assert launch.working_dir == f"{SHARED_MOUNT}/code"


def test_llama_factory_inline_config_is_written_then_exec():
    values = {"project": f"{SHARED_MOUNT}/lf", "config": "model_name_or_path: x\nstage: sft\n", "config_path": None}
    launch = RECIPES["llama-factory"].launch(values, CTX)
    assert launch.command[:2] == ["/bin/sh", "-c"]
    assert "exec hyperpodrun --nnodes=2 --nproc-per-node=4 -m llamafactory.launcher" in launch.command[2]
    assert INLINE_CONFIG_FILE in launch.command[2]
    assert launch.env == {INLINE_CONFIG_ENV: values["config"]} and launch.working_dir == f"{SHARED_MOUNT}/lf"
    from_file = RECIPES["llama-factory"].launch({**values, "config": None,
                                                 "config_path": f"{SHARED_MOUNT}/lf/sft.yaml"}, CTX)
    assert from_file.command[-3:] == ["-m", "llamafactory.launcher", f"{SHARED_MOUNT}/lf/sft.yaml"]
    assert from_file.env == {}


def test_llama_factory_config_checks():
    check = RECIPES["llama-factory"].check
    assert check({"config": None, "config_path": None}, SHARED)["config"].code == "required"
    assert check({"config": "a: 1", "config_path": "/mnt/shared/x.yaml"}, SHARED)["config_path"].code == "invalid"
    assert check({"config": "stage: sft\n", "config_path": None}, SHARED)["config"].code == "missing_config_key"
    outside = "model_name_or_path: /opt/models/llama\nstage: sft\n"
    assert check({"config": outside, "config_path": None}, SHARED)["config"].code == "path_outside_shared_bucket"
    good = "model_name_or_path: Qwen/Qwen2.5-0.5B\nstage: sft\noutput_dir: /mnt/shared/out\n"
    assert check({"config": good, "config_path": None}, SHARED) == {}


def test_ms_swift_command_types_map_to_modules():
    for command_type in ("pt", "sft", "rlhf"):
        launch = RECIPES["ms-swift"].launch({"command_type": command_type, "config": None, "project": None,
                                             "config_path": f"{SHARED_MOUNT}/swift.yaml"}, CTX)
        assert launch.command[-4:] == ["-m", f"swift.cli.{command_type}", "--config", f"{SHARED_MOUNT}/swift.yaml"]
        assert launch.working_dir == SHARED_MOUNT


def test_verl_entrypoint_fills_size_unless_overridden():
    values = {"module": "verl.trainer.main_ppo", "config_path": f"{SHARED_MOUNT}/rl/ppo.yaml",
              "overrides": ["data.train_files=/mnt/shared/data/train.parquet", "trainer.nnodes=1"]}
    entrypoint = RECIPES["verl"].launch(values, CTX).entrypoint
    assert entrypoint.startswith("python3 -m verl.trainer.main_ppo --config-path=/mnt/shared/rl --config-name=ppo ")
    assert "trainer.n_gpus_per_node=4" in entrypoint and "trainer.default_local_dir=/checkpoints" in entrypoint
    assert entrypoint.count("trainer.nnodes=") == 1 and entrypoint.endswith("trainer.nnodes=1")
    assert RECIPES["verl"].check({"overrides": ["novalue"]}, SHARED)["overrides"].code == "invalid_override"


def test_custom_runs_the_command_as_given():
    launch = RECIPES["custom"].launch({"command": ["python", "x.py"], "args": ["-v"], "working_dir": None}, CTX)
    assert launch.command == ["python", "x.py", "-v"] and launch.working_dir is None
