"""Fields every recipe of a path shares: compute, checkpoints, environment, and — on the HyperPod path — elastic
training, the run policy (the recovery budget) and hang detection by log patterns.

Defaults of ``instance_group``, ``gpus_per_node``, ``efa_per_node``, ``processes_per_node`` and ``max_replicas``
depend on the cluster, so they are ``None`` here and filled by ``training.planning``.

The default log patterns match the progress lines of the sandbox and of scripts that print ``step=N, loss=…``,
and the Hugging Face Trainer's ``{'loss': …}`` lines (LLaMA-Factory, MS-Swift). The AWS example's ``.*Loss:.*``
matches neither, so with it the start rule would declare every job hanging.
"""

from __future__ import annotations

from training.recipes.fields import Field

MAX_REPLICAS = 64
PROGRESS_PATTERN = r".*(step=\d+|'loss':).*"
THROUGHPUT_PATTERN = r".*throughput=([0-9.]+).*"
CHECKPOINT_MODES = ("nvme", "tiered")

COMPUTE: tuple[Field, ...] = (
    Field("instance_group", "string", help="Instance group whose nodes run the job. Default: the first group with "
                                           "GPUs."),
    Field("replicas", "integer", default=1, min=1, max=MAX_REPLICAS, help="Nodes (pods) the job runs on."),
    Field("gpus_per_node", "integer", min=0, help="GPUs per pod. Default: every GPU of the instance type."),
    Field("efa_per_node", "integer", min=0, help="EFA interfaces per pod. Default: every EFA interface of the "
                                                 "instance type."),
)

STORAGE: tuple[Field, ...] = (
    Field("checkpoints", "choice", default="nvme", choices=CHECKPOINT_MODES,
          help="nvme: the instance's local NVMe disk; tiered: managed tiered checkpointing (instance memory, then "
               "the team's checkpoints/ prefix of the shared bucket) — the cluster feature must be on."),
    Field("env", "map", default=None, help="Extra environment variables for every container."),
    Field("annotations", "annotations", default=None,
          help="Extra annotations on the job object (key: value), e.g. for a scheduler or admission policy."),
)

HYPERPOD: tuple[Field, ...] = (
    Field("processes_per_node", "integer", min=1, max=128,
          help="Training processes per pod (hyperpodrun --nproc-per-node). Default: the GPUs per pod, or 1."),
    Field("elastic", "boolean", default=False,
          help="Elastic training: the job scales between min_replicas and max_replicas. Not with spot instance "
               "groups, managed tiered checkpointing or checkpointless training."),
    Field("min_replicas", "integer", default=1, min=1, max=MAX_REPLICAS, help="Elastic: fewest nodes."),
    Field("max_replicas", "integer", min=1, max=MAX_REPLICAS, help="Elastic: most nodes. Default: replicas."),
    Field("checkpointless", "boolean", default=False,
          help="Checkpointless training (recovery from peers' memory instead of checkpoints)."),
    Field("max_retries", "integer", default=3, min=0, max=100,
          help="Recovery budget: job restarts the operator may make before the job fails (jobMaxRetryCount)."),
    Field("restarts_before_full_job_restart", "integer", default=2, min=0, max=100,
          help="Process-level restarts before a full job restart."),
    Field("eval_period_seconds", "integer", default=3600, min=1,
          help="Window in which restarts are counted against the limits."),
    Field("max_full_job_restarts", "integer", default=1, min=0, max=100, help="Full job restarts before failing."),
    Field("hang_detection", "boolean", default=True,
          help="Restart the job when its logs stop showing progress (log-pattern monitoring)."),
    Field("start_pattern", "string", default=PROGRESS_PATTERN,
          help="Regular expression of the first line that shows training started."),
    Field("start_timeout_seconds", "integer", default=600, min=1,
          help="Hanging when no line matches start_pattern this long after the start."),
    Field("progress_pattern", "string", default=PROGRESS_PATTERN,
          help="Regular expression of a line that shows progress."),
    Field("progress_timeout_seconds", "integer", default=900, min=1,
          help="Hanging when no line matches progress_pattern this long after the previous one."),
    Field("min_throughput", "integer", min=1,
          help="Straggler detection: a pod whose logged throughput=… stays below this for 3 lines is slow. "
               "Empty: off."),
)
