"""``plan_job``: the one validator of a training submission, and the plan it yields.

``plan_job(cluster=, recipe=, name=, config=)`` checks everything before anything is sent to the cluster and
returns a :class:`JobPlan` — the normalized inputs (defaults filled: what a resubmit clones) and the manifest ready
for ``CustomObjectsApi.create_namespaced_custom_object``. It raises:

- ``ValidationFailed`` with field ``recipe`` code ``unknown_recipe`` for an unknown recipe;
- one ``ValidationFailed`` naming every failing field (``fields={field: [{"code", "message"}]}``; the top code is
  ``validation_failed``, as for every refusal that names fields): ``invalid_job_name`` (``name``),
  ``unknown_field``, ``required``, ``invalid``, ``min_value``/``max_value``, ``invalid_choice``,
  ``unknown_command_type``, ``invalid_yaml``,
  ``missing_config_key``, ``invalid_override``, ``invalid_env``, ``invalid_pattern`` (a log pattern that does not
  compile), ``path_outside_shared_bucket``, ``script_not_found`` (the ``script`` is not a file of the team's
  shared bucket: ``HeadObject``), and the cluster constraints of ``training.constraints``
  (``unknown_instance_group``, ``too_many_gpus``, ``too_many_efa``, ``elastic_*``, ``tiered_checkpointing_off``…),
  and ``unknown_priority_class`` (``priority``) for a priority the cluster's scheduler config does not define;
- ``OperatorMissing`` (409 ``operator_missing``) when the cluster does not serve the path's CRD — asked last, so a
  submission with field errors never needs the cluster's API server.

On a cluster where the team has a compute quota (HyperPod task governance), the job runs in the team's namespace
``hyperpod-ns-<team>`` labelled ``kueue.x-k8s.io/queue-name`` (its local queue) and, with a ``priority``,
``kueue.x-k8s.io/priority-class`` (``governance.selectors.team_queue``), so Kueue admits it within the quota; the
submit operation's *identity* phase gives that namespace what the job's service account needs there
(:mod:`training.lifecycle.pipeline`; its dry-run plan lists it).

Environment every container gets (before the user's ``env``, which wins): ``SHARED_DIR``, ``JOB_NAME``,
``CHECKPOINT_MODE``, ``CHECKPOINT_DIR`` (``/checkpoints`` on NVMe; for tiered, the job's folder of the shared
mount) and, tiered, ``CHECKPOINT_S3_URI`` (the job's folder of the team's ``checkpoints/`` prefix, the one the
checkpoint role may write); ``CHECKPOINTLESS=1`` for checkpointless jobs; with EFA, the NCCL/libfabric settings
(``FI_PROVIDER=efa``, ``FI_EFA_USE_DEVICE_RDMA=1`` on RDMA-capable families only, ``NCCL_DEBUG=INFO``…).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from accounts.models import Team
from clusters.models import Cluster
from clusters.ownership import TEAM_LABEL, kube_labels, team_namespace
from clusters.shared_bucket import shared_bucket_name, team_prefix
from config.errors import InvalidFields, ValidationFailed
from governance import selectors as governance
from training import constraints, manifests, shared_files
from training.models import TrainingPath
from training.recipes import RECIPES
from training.recipes.base import LaunchContext, Recipe
from training.recipes.common import THROUGHPUT_PATTERN
from training.recipes.fields import FieldProblem, clean
from training.recipes.paths import SHARED_MOUNT, SharedBucket, resolve

JOB_NAME_PATTERN = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
JOB_NAME_MAX = 40
RECIPE_LABEL = "instantstart.io/recipe"
JOB_LABEL = "instantstart.io/training-job"
#: Instance families whose EFA supports GPUDirect RDMA (``FI_EFA_USE_DEVICE_RDMA=1`` elsewhere breaks libfabric).
RDMA_FAMILIES = ("p4d", "p4de", "p5", "p5e", "p5en", "p6", "trn1", "trn1n", "trn2")
EFA_ENV = {"FI_PROVIDER": "efa", "FI_EFA_FORK_SAFE": "1", "NCCL_DEBUG": "INFO", "NCCL_SOCKET_IFNAME": "^lo",
           "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"}


@dataclass(frozen=True)
class JobPlan:
    recipe: str
    path: str
    kind: str
    name: str
    namespace: str
    config: dict[str, Any]
    manifest: dict[str, Any]
    instance_group: str
    instance_type: str
    replicas: int
    processes_per_node: int
    restarts_total: int
    service_account: str

    def with_env(self, env: dict[str, str]) -> JobPlan:
        return with_env(self, env)


def with_env(plan: JobPlan, env: dict[str, str]) -> JobPlan:
    """``plan`` with ``env`` merged into every container of its manifest (e.g. the MLflow variables)."""
    return dataclasses.replace(plan, manifest=manifests.merge_env(plan.manifest, env))


def _add(problems: InvalidFields, field: str, problem: FieldProblem) -> None:
    problems.add(field, problem.code, problem.message)


def _clean_inputs(spec: Recipe, config: dict[str, Any], shared: SharedBucket, problems: InvalidFields) -> dict:
    known = {field.name: field for field in spec.all_fields}
    for key in config:
        if key not in known:
            problems.add(key, "unknown_field", f"The {spec.slug} recipe has no field {key!r}.")
    values: dict[str, Any] = {}
    for field in spec.all_fields:
        try:
            values[field.name] = clean(field, config.get(field.name))
            if field.type == "path" and values[field.name] is not None:
                values[field.name] = resolve(field.name, values[field.name], shared)
        except FieldProblem as refused:
            _add(problems, field.name, refused)
            values[field.name] = None
    for key, problem in (spec.check(values, shared) if spec.check else {}).items():
        if key not in problems:
            _add(problems, key, problem)
    return values


def _check_patterns(values: dict[str, Any], problems: InvalidFields) -> None:
    for key in ("start_pattern", "progress_pattern"):
        if values.get(key):
            try:
                re.compile(values[key])
            except re.error as error:
                problems.add(key, "invalid_pattern", f"{key} is not a regular expression: {error}.")


def _run_policy(values: dict[str, Any]) -> dict[str, Any]:
    rules = []
    if values["hang_detection"]:
        rules += [{"name": "job-start", "logPattern": values["start_pattern"],
                   "expectedStartCutOffInSeconds": values["start_timeout_seconds"]},
                  {"name": "job-progress", "logPattern": values["progress_pattern"],
                   "expectedRecurringFrequencyInSeconds": values["progress_timeout_seconds"]}]
    if values.get("min_throughput"):
        rules.append({"name": "slow-rank", "logPattern": THROUGHPUT_PATTERN, "operator": "lt",
                      "metricThreshold": values["min_throughput"], "metricEvaluationDataPoints": 3})
    policy: dict[str, Any] = {"jobMaxRetryCount": values["max_retries"], "cleanPodPolicy": "None",
                              "restartPolicy": {
                                  "numRestartBeforeFullJobRestart": values["restarts_before_full_job_restart"],
                                  "evalPeriodSeconds": values["eval_period_seconds"],
                                  "maxFullJobRestarts": values["max_full_job_restarts"]}}
    if rules:
        policy["logMonitoringConfiguration"] = rules
    return policy


def _environment(name: str, values: dict[str, Any], shared: SharedBucket, instance_type: str) -> dict[str, str]:
    env = {"SHARED_DIR": SHARED_MOUNT, "JOB_NAME": name, "CHECKPOINT_MODE": values["checkpoints"]}
    if values["checkpoints"] == "tiered":
        env["CHECKPOINT_DIR"] = f"{SHARED_MOUNT}/checkpoints/{name}"
        env["CHECKPOINT_S3_URI"] = f"{shared.uri}checkpoints/{name}/"
    else:
        env["CHECKPOINT_DIR"] = manifests.CHECKPOINT_MOUNT
    if values.get("checkpointless"):
        env["CHECKPOINTLESS"] = "1"
    if values["efa_per_node"]:
        env.update(EFA_ENV)
        if instance_type.removeprefix("ml.").split(".")[0] in RDMA_FAMILIES:
            env["FI_EFA_USE_DEVICE_RDMA"] = "1"
    return {**env, **(values.get("env") or {})}


def plan_job(*, cluster: Cluster, recipe: str, name: str, config: dict[str, Any], priority: str = "",
             team: Team | None = None) -> JobPlan:
    """Validate a submission of ``recipe`` named ``name`` with ``config`` to ``cluster`` by ``team`` (the cluster's,
    or a team with a compute quota on it: its prefix of the shared bucket, its namespace and queue); see the module
    docstring for the errors. Reads the database, EC2's instance facts and (last) the cluster's CRDs."""
    spec = RECIPES.get(recipe)
    if spec is None:
        raise ValidationFailed.for_field("recipe", "unknown_recipe",
                                         f"No recipe is called {recipe!r}; recipes: {', '.join(RECIPES)}.")
    problems = InvalidFields()
    if not isinstance(name, str) or len(name) > JOB_NAME_MAX or not JOB_NAME_PATTERN.match(name):
        problems.add("name", "invalid_job_name", f"Use 1–{JOB_NAME_MAX} lower-case letters, digits and hyphens, "
                     "starting with a letter.")
    if not isinstance(config, dict):
        problems.add("non_field_errors", "invalid", "config must be an object of recipe fields.")
        problems.raise_if_any()
    team = team or cluster.team
    shared = SharedBucket(shared_bucket_name(cluster.region), team_prefix(team.slug))
    values = _clean_inputs(spec, config, shared, problems)
    if values.get("script") and not shared_files.file_exists(cluster, values["script"], team=team):
        problems.add("script", "script_not_found", f"{shared.uri_of(values['script'])} does not exist: upload the "
                     "script to the team's shared bucket first (the Browse panel's Upload, or aws s3 cp).")
    if values.get("image"):
        values["image"] = spec.default_image(cluster.region) if values["image"] == spec.image \
            else values["image"].replace("{region}", cluster.region)
    hyperpod = spec.path == TrainingPath.HYPERPOD
    group = offer = None
    try:
        group, offer = constraints.choose_group(cluster, values.get("instance_group"))
        values["instance_group"] = group.name
    except FieldProblem as refused:
        _add(problems, "instance_group", refused)
    if offer is not None and "gpus_per_node" not in problems and "efa_per_node" not in problems:
        for key, problem in constraints.fit_hardware(values, offer).items():
            _add(problems, key, problem)
    if hyperpod and values.get("replicas"):
        for key, problem in constraints.check_elastic(values, group).items():
            _add(problems, key, problem)
        _check_patterns(values, problems)
    account, account_problem = constraints.checkpoint_service_account(cluster, values)
    if account_problem is not None:
        _add(problems, "checkpoints", account_problem)
    governance.check_priority(cluster, priority, problems)
    problems.raise_if_any()
    assert group is not None and offer is not None  # else instance_group is among the problems

    if hyperpod and values["processes_per_node"] is None:
        values["processes_per_node"] = values["gpus_per_node"] or 1
    processes = values["processes_per_node"] if hyperpod else 1
    checkpoint_dir = (f"{SHARED_MOUNT}/checkpoints/{name}" if values["checkpoints"] == "tiered"
                      else manifests.CHECKPOINT_MOUNT)
    launch = spec.launch(values, LaunchContext(job=name, replicas=values["replicas"], processes_per_node=processes,
                                               gpus_per_node=values["gpus_per_node"], checkpoint_dir=checkpoint_dir))
    queue = governance.team_queue(cluster, team)
    work = manifests.Workload(
        name=name, namespace=queue.namespace if queue else team_namespace(team),
        labels={**kube_labels(cluster), TEAM_LABEL: team.slug, RECIPE_LABEL: spec.slug, JOB_LABEL: name,
                **(queue.labels(priority) if queue else {})},
        image=values["image"], launch=launch,
        env={**launch.env, **_environment(name, values, shared, group.instance_type)},
        replicas=values["replicas"], processes_per_node=processes, gpus=values["gpus_per_node"],
        efa=values["efa_per_node"], instance_group=group.name, instance_type=group.instance_type,
        accelerator=manifests.NEURON if offer.accelerator_type.startswith("AWS") else manifests.GPU,
        service_account=account, nvme_checkpoints=values["checkpoints"] != "tiered",
        annotations=values.get("annotations") or {},
        run_policy=_run_policy(values) if hyperpod else None,
        elastic=(values["min_replicas"], values["max_replicas"]) if hyperpod and values["elastic"] else None)
    manifest = manifests.build(spec.kind, work)
    constraints.require_operator(cluster, spec.path)
    return JobPlan(recipe=spec.slug, path=str(spec.path), kind=spec.kind, name=name, namespace=work.namespace,
                   config=values, manifest=manifest, instance_group=group.name, instance_type=group.instance_type,
                   replicas=values["replicas"], processes_per_node=processes,
                   restarts_total=values["max_retries"] if hyperpod else 0, service_account=account)
