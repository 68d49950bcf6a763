"""Every check of an endpoint (or model pool) before anything is written or sent to the cluster, and the objects
it becomes.

:func:`plan` refuses, each on its field (``validation_failed``): a name that is not a DNS label
(``invalid_endpoint_name``) or is taken (``endpoint_name_taken``); an unknown instance group
(``unknown_instance_group``), one without GPUs (``no_gpus_in_group``); more GPUs than a node of the group has
(``too_many_gpus``); tensor × pipeline parallel sizes that do not multiply to the GPU count
(``parallelism_mismatch`` — the GPU count is the user's, never inferred from the parallel sizes); a custom engine
without an image (``image_required``); a command that names an engine different from the one chosen
(``engine_mismatch``); a shared-bucket model path outside the team's prefix (``path_outside_shared_bucket``); an
unknown or gated Hub model (``hub_repo_not_found``, ``hub_gated``, ``hub_token_invalid``); router settings on
another engine than SGLang (``router_needs_sglang``) or a single replica (``router_needs_replicas``); a ``priority``
the cluster's scheduler config does not define (``unknown_priority_class``); on another team's cluster (shared
through a compute quota), a load balancer (``exposure``: ``not_on_shared_cluster`` — the Network Load Balancer would
be made in the cluster team's account and network).

On a cluster where the team has a compute quota (HyperPod task governance), the endpoint runs in the team's namespace
``hyperpod-ns-<team>`` and its objects carry the team's Kueue queue and priority labels
(``governance.selectors.team_queue``). The team is the cluster's, or the team that deploys on another team's cluster
through its quota: its prefix of the shared bucket, its namespace and queue.

The engine is the one chosen, or recognised from the command (``vllm serve …`` → vLLM,
``python3 -m sglang.launch_server …`` → SGLang); without a command the engine's own is generated.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from accounts.models import Team
from cloud import huggingface
from clusters.inspection import catalog
from clusters.models import Cluster, InstanceGroup
from clusters.ownership import TEAM_LABEL, kube_labels, team_namespace
from clusters.shared_bucket import shared_bucket_name, team_prefix
from config.errors import InvalidFields
from governance import selectors as governance
from inference.endpoints import manifests, router
from inference.models import Endpoint, Engine, Exposure, ModelSource

NAME = re.compile(r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$")
IMAGES: dict[str, str] = {Engine.VLLM: "vllm/vllm-openai:v0.10.1", Engine.SGLANG: "lmsysorg/sglang:v0.5.1"}
TP_FLAGS = ("--tensor-parallel-size", "-tp", "--tp-size", "--tp")
PP_FLAGS = ("--pipeline-parallel-size", "-pp", "--pp-size")


@dataclass
class Request:
    """What the user asked for (the deploy body)."""

    name: str
    gpus: int
    model: str
    engine: str = ""
    image: str = ""
    command: list[str] = field(default_factory=list)
    model_source: str = ModelSource.SHARED
    served_model_name: str = ""
    instance_group: str = ""
    tensor_parallel: int | None = None
    pipeline_parallel: int = 1
    replicas: int = 1
    port: int = 8000
    exposure: str = "cluster_ip"
    hf_token: str = ""
    #: The SGLang router's settings; ``None``: the default (``inference.endpoints.router``).
    router: dict[str, Any] | None = None
    #: A priority class of the cluster's scheduler config (task governance); blank: none.
    priority: str = ""


@dataclass(frozen=True)
class Plan:
    name: str
    namespace: str
    engine: str
    image: str
    command: list[str]
    model_source: str
    model: str
    served_model_name: str
    instance_group: str
    instance_type: str
    gpus: int
    tensor_parallel: int
    pipeline_parallel: int
    replicas: int
    port: int
    exposure: str
    labels: dict[str, str]
    router: dict[str, Any] = field(default_factory=dict)


def engine_of(command: list[str]) -> str:
    """The engine a command starts (``""``: neither vLLM nor SGLang)."""
    text = " ".join(command)
    if re.search(r"(^|[\s/])vllm\s+serve\b|vllm\.entrypoints", text):
        return Engine.VLLM
    if "sglang.launch_server" in text:
        return Engine.SGLANG
    return ""


def _flag(command: list[str], names: tuple[str, ...]) -> int | None:
    for index, part in enumerate(command):
        key, _, inline = part.partition("=")
        if key in names:
            value = inline or (command[index + 1] if index + 1 < len(command) else "")
            return int(value) if value.isdigit() else None
    return None


def generated_command(engine: str, model: str, served: str, port: int, tp: int, pp: int) -> list[str]:
    if engine == Engine.SGLANG:
        return ["python3", "-m", "sglang.launch_server", "--model-path", model, "--served-model-name", served,
                "--host", "0.0.0.0", "--port", str(port), "--tp-size", str(tp), "--pp-size", str(pp)]
    return ["vllm", "serve", model, "--served-model-name", served, "--host", "0.0.0.0", "--port", str(port),
            "--tensor-parallel-size", str(tp), "--pipeline-parallel-size", str(pp)]


def shared_model_path(cluster: Cluster, value: str, team: Team | None = None) -> str | None:
    """The mount path of a shared-bucket model (relative to ``/mnt/shared``, absolute under it, or an ``s3://``
    URI in the prefix of ``team``, the cluster's by default); ``None`` when it is outside."""
    text = value.strip()
    uri = f"s3://{shared_bucket_name(cluster.region)}/{team_prefix((team or cluster.team).slug)}"
    if text.startswith("s3://"):
        if not text.startswith(uri):
            return None
        relative = text[len(uri):]
    elif text.startswith("/"):
        if not text.startswith(f"{manifests.SHARED_MOUNT}/"):
            return None
        relative = text[len(manifests.SHARED_MOUNT) + 1:]
    elif "://" in text:
        return None
    else:
        relative = text
    if not relative.strip("/") or ".." in relative.split("/"):
        return None
    return posixpath.join(manifests.SHARED_MOUNT, posixpath.normpath(relative.strip("/")))


def serving_group(cluster: Cluster, name: str) -> InstanceGroup | None:
    """The group an endpoint asking for ``name`` would run on (that group, else the cluster's first group with
    NVIDIA GPUs), as the deploy checks choose it; ``None`` when they would refuse it."""
    group, _ = _group(cluster, name, InvalidFields())
    return group


def _group(cluster: Cluster, name: str, problems: InvalidFields) -> tuple[InstanceGroup | None, int]:
    groups = list(InstanceGroup.objects.filter(cluster=cluster, deleted=False).order_by("name"))
    offers = {group.name: catalog.catalog(cluster.region).get(group.instance_type) for group in groups}

    def gpus(group: InstanceGroup) -> int:
        offer = offers.get(group.name)
        return offer.accelerator_count if offer and offer.accelerator_type.startswith("NVIDIA") else 0

    if name:
        group = next((group for group in groups if group.name == name), None)
        if group is None:
            problems.add("instance_group", "unknown_instance_group", f"Cluster {cluster.name} has no instance "
                         f"group {name!r}; groups: {', '.join(g.name for g in groups) or 'none'}.")
            return None, 0
    else:
        group = next((group for group in groups if gpus(group)), None)
        if group is None:
            problems.add("instance_group", "no_gpus_in_group", f"Cluster {cluster.name} has no instance group with "
                         "NVIDIA GPUs; endpoints run on GPU nodes only.")
            return None, 0
    if not gpus(group):
        problems.add("instance_group", "no_gpus_in_group", f"Group {group.name} ({group.instance_type}) has no "
                     "NVIDIA GPUs; endpoints run on GPU nodes only.")
        return None, 0
    return group, gpus(group)


def _model(cluster: Cluster, team: Team, request: Request, problems: InvalidFields) -> str:
    if request.model_source == ModelSource.SHARED:
        path = shared_model_path(cluster, request.model, team)
        if path is None:
            problems.add("model", "path_outside_shared_bucket", f"The model must be in the team's shared bucket: a "
                         f"path under {manifests.SHARED_MOUNT} (or relative to it); got {request.model!r}.")
        return path or ""
    try:
        if request.hf_token:
            huggingface.check_token(request.hf_token)
        found = huggingface.model(request.model, "main", request.hf_token or None)
        huggingface.check_access(found, "main", request.hf_token or None)
    except huggingface.HubError as error:
        problems.add("hf_token" if error.code in ("hub_gated", "hub_token_invalid") else "model", error.code,
                     error.message)
    return request.model


def _parallelism(request: Request, command_engine: str, problems: InvalidFields) -> tuple[int, int]:
    tp = _flag(request.command, TP_FLAGS) if command_engine else None
    pp = _flag(request.command, PP_FLAGS) if command_engine else None
    tensor = tp or request.tensor_parallel or max(request.gpus // (pp or request.pipeline_parallel or 1), 1)
    pipeline = pp or request.pipeline_parallel or 1
    if tensor * pipeline != request.gpus:
        problems.add("tensor_parallel", "parallelism_mismatch", f"Tensor parallel {tensor} × pipeline parallel "
                     f"{pipeline} = {tensor * pipeline} GPUs, but each replica is given {request.gpus}; they must "
                     "be equal.")
    return tensor, pipeline


#: Why an endpoint on another team's cluster does not autoscale (:func:`check_shared`).
SHARED_KEDA = ("autoscaling needs KEDA, which InstantStart installs and removes for the whole cluster: only its own "
               "team's endpoints autoscale there")


def check_shared(cluster: Cluster, team: Team, field: str, what: str, problems: InvalidFields) -> None:
    """``not_on_shared_cluster`` on ``field`` when ``team`` deploys on another team's cluster (through its compute
    quota) and asks for ``what``, which that cluster's team keeps to itself."""
    if team.pk != cluster.team_id:
        problems.add(field, "not_on_shared_cluster", f"Cluster {cluster.name} is team {cluster.team.name}'s, shared "
                     f"with team {team.name} through a compute quota; {what}.")


def plan(*, cluster: Cluster, request: Request, owner_label: str = manifests.ENDPOINT_LABEL,
         team: Team | None = None) -> Plan:
    """Check ``request`` of ``team`` (the cluster's by default, or a team with a compute quota on it) — see the
    module docstring — and decide the endpoint; ``ValidationFailed`` otherwise."""
    problems = InvalidFields()
    team = team or cluster.team
    queue = governance.team_queue(cluster, team)
    namespace = queue.namespace if queue else team_namespace(team)
    if not NAME.match(request.name or ""):
        problems.add("name", "invalid_endpoint_name", "Use 1–40 lower-case letters, digits and hyphens, starting "
                     "with a letter and ending with a letter or digit.")
    elif Endpoint.objects.filter(cluster=cluster, namespace=namespace, name=request.name).exclude(
            state="deleted").exists():
        problems.add("name", "endpoint_name_taken", f"Cluster {cluster.name} already has an endpoint named "
                     f"{request.name}.")
    command_engine = engine_of(request.command)
    engine = request.engine or command_engine or Engine.VLLM
    if request.engine and command_engine and request.engine != command_engine and request.engine != Engine.CUSTOM:
        problems.add("command", "engine_mismatch", f"The command starts {command_engine}, not {request.engine}.")
    image = request.image or IMAGES.get(engine, "")
    if not image:
        problems.add("image", "image_required", "A custom engine needs its container image.")
    if engine == Engine.CUSTOM and not request.command:
        problems.add("command", "required", "A custom engine needs the command that starts its server.")
    group, per_node = _group(cluster, request.instance_group, problems)
    if group is not None and request.gpus > per_node:
        problems.add("gpus", "too_many_gpus", f"A node of group {group.name} ({group.instance_type}) has "
                     f"{per_node} GPUs; a replica cannot use {request.gpus}.")
    tensor, pipeline = _parallelism(request, command_engine, problems)
    model = _model(cluster, team, request, problems)
    routing = router.check(engine=engine, replicas=request.replicas, requested=request.router, problems=problems)
    governance.check_priority(cluster, request.priority, problems)
    if request.exposure in (Exposure.INTERNAL_LB, Exposure.INTERNET_LB):
        check_shared(cluster, team, "exposure", "a load balancer would be made in its team's account and network: "
                     "expose the endpoint in-cluster (cluster_ip)", problems)
    problems.raise_if_any()
    assert group is not None  # else instance_group is among the problems
    served = request.served_model_name or request.name
    command = list(request.command) or generated_command(engine, model, served, request.port, tensor, pipeline)
    labels = {**kube_labels(cluster), TEAM_LABEL: team.slug, owner_label: request.name,
              **(queue.labels(request.priority) if queue else {})}
    return Plan(name=request.name, namespace=namespace, engine=engine, image=image, command=command,
                model_source=request.model_source, model=model, served_model_name=served,
                instance_group=group.name, instance_type=group.instance_type, gpus=request.gpus,
                tensor_parallel=tensor, pipeline_parallel=pipeline, replicas=request.replicas, port=request.port,
                exposure=request.exposure, labels=labels, router=routing)


def secret_name(name: str) -> str:
    return f"{name}-hf-token"


def objects(plan_: Plan, *, with_token: bool) -> dict[str, Any]:
    """``{"deployment", "service"}`` of an endpoint plan (a pool endpoint has no Deployment of its own), and with a
    router its objects (``inference.endpoints.router.objects``), the Service then selecting the router."""
    server = manifests.container(image=plan_.image, command=plan_.command, port=plan_.port, gpus=plan_.gpus,
                                 secret=secret_name(plan_.name) if with_token else None)
    spec = manifests.pod_spec(server=server, instance_group=plan_.instance_group,
                              instance_type=plan_.instance_type)
    made = {"deployment": manifests.deployment(name=plan_.name, namespace=plan_.namespace, labels=plan_.labels,
                                               replicas=plan_.replicas, spec=spec),
            "service": manifests.service(name=plan_.name, namespace=plan_.namespace, labels=plan_.labels,
                                         selector={manifests.ENDPOINT_LABEL: plan_.name}, port=plan_.port,
                                         exposure=plan_.exposure)}
    if plan_.router:
        made |= router.objects(endpoint=plan_.name, namespace=plan_.namespace, labels=plan_.labels,
                               image=plan_.image, port=plan_.port, settings=plan_.router)
        made["service"] = manifests.service(name=plan_.name, namespace=plan_.namespace, labels=plan_.labels,
                                            selector={router.ROUTER_LABEL: plan_.name}, port=router.PORT,
                                            exposure=plan_.exposure)
    return made


def command_text(command: list[str]) -> str:
    return shlex.join(command)
