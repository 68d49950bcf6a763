"""MCP tools for training jobs: the recipe catalog, submit, list, inspect, follow logs, cancel, resubmit."""

from __future__ import annotations

from mcp_server.specs import PAGINATED, ToolSpec, WaitSpec
from training import actions

_FOLLOW = (" Answers at once with the `job` and its `operation`; wait for the job's end with "
           "`wait_for_training_job`, and follow it with `get_training_job` (state, recovery budget) and "
           "`get_training_job_logs`.")

TRAINING_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_recipes",
        operation_id="training_recipes_list",
        action=None,
        description=(
            "List the training recipes (pytorch, llama-factory, ms-swift, verl, custom): each recipe's path — the "
            "HyperPod training operator (HyperPodPyTorchJob) or KubeRay (RayJob) —, its default image and its "
            "fields with types, defaults and allowed values, plus the fields every recipe shares (instance group, "
            "replicas, GPUs and EFA per node, run policy, hang detection, checkpoints). Paths are inside the team's "
            "shared bucket, mounted at the same place in every pod."
        ),
    ),
    ToolSpec(
        name="submit_training_job",
        operation_id="training_jobs_create",
        action=actions.SUBMIT,
        status_tool="wait_for_training_job",
        description=(
            "Submit a training job: `cluster` (id), `recipe` (from `list_recipes`), optional `name`, "
            "and `config` with the recipe's fields. Everything is checked before anything is created; refusals "
            "name the field: `unknown_recipe`, `required`, `invalid_yaml`, `unknown_command_type`, "
            "`path_outside_shared_bucket`, `too_many_gpus`, `too_many_efa`, `unknown_instance_group`, "
            "`elastic_spot_group`, `elastic_tiered_checkpointing`, `elastic_checkpointless`, "
            "`training_job_name_taken`. `operator_missing` means the cluster lacks the training operator (enable the "
            "`training_operator` feature with `update_advanced_features`) or KubeRay." + _FOLLOW
        ),
    ),
    ToolSpec(
        name="list_training_jobs",
        operation_id="training_jobs_list",
        action=actions.VIEW,
        description=(
            "List training jobs of your teams, newest first (filters: `team`, `cluster`, `state` — pending, "
            "submitting, running, stopping, succeeded, failed, stopped — and `recipe`), each with its recovery "
            "budget (`restarts_used` of `restarts_total`) and latest `metrics`." + PAGINATED
        ),
    ),
    ToolSpec(
        name="get_training_job",
        operation_id="training_jobs_retrieve",
        action=actions.VIEW,
        description=(
            "Get one training job: `state` and `status_reason`, `terminal`, the recovery budget (`restarts_used`, "
            "`restarts_total`, `restarts_remaining`) and every recovery (`recoveries`: reason such as JobHanging or "
            "ProcessFailure, restart type PLR/JLR, faulty pods), detected `hangs`, `stragglers`, per-rank `ranks` "
            "(pod, node, phase, latest throughput, straggler), `metrics` (step, loss, throughput; from MLflow or "
            "parsed from the logs) and `last_seq`, the number of log lines stored. The Kubernetes object the job was "
            "submitted as (several kilobytes) only with `manifest: true`."
        ),
    ),
    WaitSpec(
        name="wait_for_training_job",
        operation_id="training_jobs_retrieve",
        action=actions.VIEW,
        subject="Training job",
        after_failure="Read `get_training_job_logs` for the cause, fix it, then `resubmit_training_job`.",
        description=(
            "Wait until a training job is terminal (`succeeded`, `failed` or `stopped`) or `timeout_seconds` pass "
            "(default 60, at most 900), looking every half second to two seconds. The result is the job as "
            "`get_training_job` returns it plus `waited_seconds` and a `summary` that starts with the outcome. "
            "The job is done only when `terminal` is true and `state` is `succeeded`; if the timeout passed first, "
            "it is STILL RUNNING — call `wait_for_training_job` again and do not report it as finished. A failed or "
            "stopped job is not a tool error: read `status_reason` and `get_training_job_logs`."
        ),
    ),
    ToolSpec(
        name="get_training_job_logs",
        operation_id="training_job_logs",
        action=actions.LOGS,
        description=(
            "Read a training job's log lines across ranks, in order (`seq`): `tail` for the last N lines, or "
            "`after_seq` to continue from the `next_seq` of the previous answer (follow a running job by calling "
            "again with it), `since` (RFC 3339) for lines written after a moment, `rank` for one rank, `limit` up "
            "to 1000. `complete` is true once every line of a finished job is stored."
        ),
    ),
    ToolSpec(
        name="cancel_training_job",
        operation_id="training_jobs_cancel",
        action=actions.CANCEL,
        destructive=True,
        idempotent=True,
        status_tool="wait_for_training_job",
        description=(
            "Stop a running training job: its object is deleted and the pods stop gracefully; the job "
            "ends `stopped`. Refused with `training_job_finished` when it has already ended."
        ),
    ),
    ToolSpec(
        name="resubmit_training_job",
        operation_id="training_jobs_resubmit",
        action=actions.SUBMIT,
        status_tool="wait_for_training_job",
        description=(
            "Submit a finished job's configuration again as a new job, named `name` or "
            "`<name>-r<N>`; every check runs again. Refused with `training_job_active` while the job still runs."
            + _FOLLOW
        ),
    ),
)
