"""The shape of a recipe: its fields, its image, and how its inputs become a container command.

A recipe's ``launch(values, ctx)`` receives the cleaned inputs (paths already resolved to mount paths) and a
:class:`LaunchContext` (job size and checkpoint location) and returns a :class:`Launch`: the container command and
working directory for the HyperPod path, or the Ray job ``entrypoint`` for the KubeRay path, plus environment
variables the recipe needs. ``check(values, shared)`` adds recipe-specific field problems (``{field: problem}``).

HyperPod recipes run under ``hyperpodrun``, the HyperPod elastic agent's launcher (a torchrun extension the
operator talks to for process-level recovery; the image must have the ``hyperpod-elastic-agent`` package).
Tools with their own CLI are launched as the Python module that CLI hands to torchrun, so hyperpodrun owns the
worker processes.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from training.models import TrainingPath
from training.recipes import common
from training.recipes.fields import Field, FieldProblem
from training.recipes.paths import SharedBucket

#: Where an inline YAML config is written in the container before the launcher starts.
INLINE_CONFIG_FILE = "/tmp/instantstart-recipe.yaml"
INLINE_CONFIG_ENV = "INSTANTSTART_RECIPE_CONFIG"


@dataclass(frozen=True)
class LaunchContext:
    job: str
    replicas: int
    processes_per_node: int
    gpus_per_node: int
    checkpoint_dir: str


@dataclass(frozen=True)
class Launch:
    command: list[str] = field(default_factory=list)
    working_dir: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    #: RayJob ``spec.entrypoint`` (KubeRay path only).
    entrypoint: str = ""


@dataclass(frozen=True)
class Recipe:
    slug: str
    title: str
    description: str
    path: str
    #: Default image; ``{region}`` is replaced by the cluster's region.
    image: str
    fields: tuple[Field, ...]
    launch: Callable[[dict[str, Any], LaunchContext], Launch]
    check: Callable[[dict[str, Any], SharedBucket], dict[str, FieldProblem]] | None = None

    @property
    def kind(self) -> str:
        return "HyperPodPyTorchJob" if self.path == TrainingPath.HYPERPOD else "RayJob"

    @property
    def all_fields(self) -> tuple[Field, ...]:
        """The recipe's own fields, then the image, compute and storage fields, then (HyperPod) the run policy."""
        shared = (self.image_field, *common.COMPUTE, *common.STORAGE)
        return (*self.fields, *shared, *(common.HYPERPOD if self.path == TrainingPath.HYPERPOD else ()))

    @property
    def image_field(self) -> Field:
        return Field("image", "string", default=self.image,
                     help="Container image. {region} is replaced by the cluster's region.")

    def default_image(self, region: str) -> str:
        return self.image.replace("{region}", region)

    def payload(self, region: str | None = None) -> dict[str, Any]:
        fields = [f.payload() for f in self.all_fields]
        if region:
            for item in fields:
                if item["name"] == "image":
                    item["default"] = self.default_image(region)
        return {"slug": self.slug, "title": self.title, "description": self.description, "path": self.path,
                "kind": self.kind, "image": self.default_image(region) if region else self.image,
                "fields": fields}


def hyperpodrun(ctx: LaunchContext, *program: str) -> list[str]:
    """``hyperpodrun --nnodes=N --nproc-per-node=P <program…>``."""
    return ["hyperpodrun", f"--nnodes={ctx.replicas}", f"--nproc-per-node={ctx.processes_per_node}", *program]


def with_inline_config(values: dict[str, Any], command: list[str]) -> tuple[list[str], dict[str, str]]:
    """When the config was given inline, a shell wrapper writes it to :data:`INLINE_CONFIG_FILE` (from the
    environment variable :data:`INLINE_CONFIG_ENV`) and execs ``command`` so the launcher stays PID 1."""
    if not values.get("config"):
        return command, {}
    script = f'printf "%s" "${INLINE_CONFIG_ENV}" > {INLINE_CONFIG_FILE} && exec {shlex.join(command)}'
    return ["/bin/sh", "-c", script], {INLINE_CONFIG_ENV: values["config"]}


def config_file(values: dict[str, Any]) -> str:
    return values.get("config_path") or INLINE_CONFIG_FILE
