"""The five recipes, in catalog order: ``pytorch``, ``llama-factory``, ``ms-swift``, ``verl``, ``custom``.

How each maps to the job (the container command; see ``training.recipes.base``):

========== ========== ==================================================================================
recipe     path       command
========== ========== ==================================================================================
pytorch    hyperpod   ``hyperpodrun … <script> <args…>`` in the script's folder
llama-fac. hyperpod   ``hyperpodrun … -m llamafactory.launcher <config.yaml>`` in the project folder (what
                      ``llamafactory-cli train <config.yaml>`` runs under torchrun)
ms-swift   hyperpod   ``hyperpodrun … -m swift.cli.<pt|sft|rlhf> --config <config.yaml>`` (what
                      ``swift <type> --config …`` runs under torchrun)
verl       kuberay    RayJob entrypoint ``python3 -m verl.trainer.main_ppo [--config-path … --config-name …]
                      trainer.nnodes=… trainer.n_gpus_per_node=… trainer.default_local_dir=… <overrides…>``
custom     hyperpod   the given command and arguments, unchanged
========== ========== ==================================================================================

A YAML config is given inline (``config``, validated: it must parse to a mapping with the tool's required keys,
and absolute paths or S3 URIs in its path settings must be in the shared bucket) or as ``config_path`` on the
shared bucket (not read).
"""

from __future__ import annotations

import posixpath
import shlex
from typing import Any

from training.models import TrainingPath
from training.recipes.base import (
    Launch,
    LaunchContext,
    Recipe,
    config_file,
    hyperpodrun,
    with_inline_config,
)
from training.recipes.fields import Field, FieldProblem, parse_yaml_mapping
from training.recipes.paths import SHARED_MOUNT, SharedBucket, resolve

DLC_PYTORCH = "763104351884.dkr.ecr.{region}.amazonaws.com/pytorch-training:2.7.1-gpu-py312-cu128-ubuntu22.04-ec2"
LLAMA_FACTORY_IMAGE = "hiyouga/llamafactory:latest"
MS_SWIFT_IMAGE = ("modelscope-registry.us-west-1.cr.aliyuncs.com/modelscope-repo/modelscope:"
                  "ubuntu22.04-cuda12.8.1-py311-torch2.8.0-vllm0.11.0-modelscope1.31.0-swift3.10.1")
VERL_IMAGE = "verlai/verl:app-verl0.5-transformers4.55.4-vllm0.10.0-mcore0.13.0-te2.2"
SWIFT_COMMAND_TYPES = ("pt", "sft", "rlhf")

_CONFIG_HELP = "YAML config, inline. Give this or config_path."
_CONFIG_PATH_HELP = "YAML config file on the shared bucket, instead of an inline config."


def _config_fields(tool: str) -> tuple[Field, ...]:
    return (Field("config", "yaml", help=f"{tool} {_CONFIG_HELP}"),
            Field("config_path", "path", help=f"{tool} {_CONFIG_PATH_HELP}"))


def _config_check(required_keys: tuple[str, ...], path_keys: tuple[str, ...]):
    """A check that ``config`` xor ``config_path`` is given and the inline YAML has ``required_keys`` and keeps its
    ``path_keys`` (when they are absolute paths or S3 URIs) inside the shared bucket."""

    def check(values: dict[str, Any], shared: SharedBucket) -> dict[str, FieldProblem]:
        text, path = values.get("config"), values.get("config_path")
        if text and path:
            return {"config_path": FieldProblem("invalid", "Give config or config_path, not both.")}
        if not text and not path:
            return {"config": FieldProblem("required", "config (inline YAML) or config_path is required.")}
        if not text:
            return {}
        try:
            settings = parse_yaml_mapping(text)
        except FieldProblem as problem:
            return {"config": problem}
        absent = [key for key in required_keys if settings.get(key) in (None, "")]
        if absent:
            return {"config": FieldProblem("missing_config_key", f"The config has no {', '.join(absent)}.")}
        for key in path_keys:
            value = settings.get(key)
            if isinstance(value, str) and value.startswith(("/", "s3://")):
                try:
                    resolve(f"config {key}", value, shared)
                except FieldProblem as problem:
                    return {"config": problem}
        return {}

    return check


def _pytorch(values: dict[str, Any], ctx: LaunchContext) -> Launch:
    script = values["script"]
    return Launch(command=hyperpodrun(ctx, script, *values["args"]), working_dir=posixpath.dirname(script))


def _llama_factory(values: dict[str, Any], ctx: LaunchContext) -> Launch:
    command, env = with_inline_config(values, hyperpodrun(ctx, "-m", "llamafactory.launcher", config_file(values)))
    return Launch(command=command, working_dir=values["project"], env=env)


def _ms_swift(values: dict[str, Any], ctx: LaunchContext) -> Launch:
    program = ("-m", f"swift.cli.{values['command_type']}", "--config", config_file(values))
    command, env = with_inline_config(values, hyperpodrun(ctx, *program))
    return Launch(command=command, working_dir=values.get("project") or SHARED_MOUNT, env=env)


def _custom(values: dict[str, Any], ctx: LaunchContext) -> Launch:
    return Launch(command=[*values["command"], *values["args"]], working_dir=values.get("working_dir"))


def _verl(values: dict[str, Any], ctx: LaunchContext) -> Launch:
    words = ["python3", "-m", values["module"]]
    if values.get("config_path"):
        folder, name = posixpath.split(values["config_path"])
        words += [f"--config-path={folder}", f"--config-name={posixpath.splitext(name)[0]}"]
    given = {override.split("=", 1)[0].lstrip("+~") for override in values["overrides"]}
    automatic = {"trainer.nnodes": ctx.replicas, "trainer.n_gpus_per_node": ctx.gpus_per_node,
                 "trainer.default_local_dir": ctx.checkpoint_dir}
    words += [f"{key}={value}" for key, value in automatic.items() if key not in given]
    return Launch(entrypoint=shlex.join([*words, *values["overrides"]]))


def _verl_check(values: dict[str, Any], shared: SharedBucket) -> dict[str, FieldProblem]:
    bad = [item for item in values.get("overrides") or [] if "=" not in item or item.startswith("=")]
    if bad:
        return {"overrides": FieldProblem("invalid_override", f"Overrides are key=value; not {bad[0]!r}.")}
    return {}


_PROJECT = Field("project", "path", required=True, help="Project folder on the shared bucket (working directory).")

RECIPES: dict[str, Recipe] = {recipe.slug: recipe for recipe in (
    Recipe("pytorch", "PyTorch script",
           "A PyTorch training script on the shared bucket, run on every node by hyperpodrun.",
           TrainingPath.HYPERPOD, DLC_PYTORCH,
           (Field("script", "path", required=True, help="Training script on the shared bucket, e.g. code/train.py."),
            Field("args", "list", default=[], help="Arguments passed to the script.")),
           _pytorch),
    Recipe("llama-factory", "LLaMA-Factory",
           "Fine-tuning with LLaMA-Factory from a project folder and a training YAML (llamafactory-cli train).",
           TrainingPath.HYPERPOD, LLAMA_FACTORY_IMAGE, (_PROJECT, *_config_fields("LLaMA-Factory")),
           _llama_factory,
           _config_check(("model_name_or_path", "stage"),
                         ("model_name_or_path", "adapter_name_or_path", "dataset_dir", "output_dir", "deepspeed"))),
    Recipe("ms-swift", "MS-Swift",
           "Pre-training, fine-tuning or preference training with ModelScope Swift (swift pt|sft|rlhf --config).",
           TrainingPath.HYPERPOD, MS_SWIFT_IMAGE,
           (Field("command_type", "choice", default="sft", choices=SWIFT_COMMAND_TYPES,
                  choice_code="unknown_command_type", help="pt: pre-training, sft: fine-tuning, rlhf: preference "
                                                           "and reinforcement learning."),
            *_config_fields("MS-Swift"),
            Field("project", "path", help="Working directory on the shared bucket. Default: the mount root.")),
           _ms_swift,
           _config_check(("model",), ("model", "output_dir", "deepspeed", "resume_from_checkpoint"))),
    Recipe("verl", "VERL reinforcement learning",
           "Reinforcement learning (PPO, GRPO…) with VERL on a Ray cluster: a head and a GPU worker group.",
           TrainingPath.KUBERAY, VERL_IMAGE,
           (Field("module", "string", default="verl.trainer.main_ppo", help="Entry module run with python3 -m."),
            Field("config_path", "path", help="Hydra config YAML on the shared bucket (optional)."),
            Field("overrides", "list", default=[],
                  help="Hydra overrides key=value, e.g. data.train_files=/mnt/shared/data/train.parquet.")),
           _verl, _verl_check),
    Recipe("custom", "Custom command",
           "Any image and command, run on every node with the shared volume, GPUs and run policy.",
           TrainingPath.HYPERPOD, DLC_PYTORCH,
           (Field("command", "list", required=True, help="Command, e.g. [\"hyperpodrun\", \"train.py\"]."),
            Field("args", "list", default=[], help="Arguments after the command."),
            Field("working_dir", "path", help="Working directory on the shared bucket.")),
           _custom),
)}
