"""MCP tools of the MLflow slice: the team's SageMaker managed MLflow tracking servers and a training job's
reported metrics."""

from mcp_server.specs import PAGINATED, ToolSpec
from training import actions

_TEAM = " `team` (id) defaults to your current team; `region` to the deployment's."

MLFLOW_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_mlflow_servers",
        operation_id="mlflow_servers_list",
        action=actions.MLFLOW_VIEW,
        description=(
            "List the MLflow tracking servers of your teams (at most one per team and region): `state` (creating, "
            "ready, failed, deleting — jobs report only to a `ready` one), SageMaker's `status`, `arn`, `url`, "
            "`managed` (true: InstantStart created it). Filter by `team` id." + PAGINATED
        ),
    ),
    ToolSpec(
        name="get_mlflow_server",
        operation_id="mlflow_servers_retrieve",
        action=actions.MLFLOW_VIEW,
        description="Get one MLflow tracking server by id (`server_id`): state, status, ARN, URL, artifact store.",
    ),
    ToolSpec(
        name="create_mlflow_server",
        operation_id="mlflow_servers_create",
        action=actions.MLFLOW_MANAGE,
        idempotent=True,
        status_tool="wait_for_operation",
        description=(
            "Create the team's SageMaker managed MLflow tracking server in a region: an IAM role "
            "limited to the team's prefix of the shared bucket, then the server (`size` Small, Medium or Large; "
            "about 20 minutes). Returns `operation`: it is not ready until `wait_for_operation` reports `succeeded`. "
            "Jobs submitted afterwards in that region report throughput and loss to it. Check "
            "`list_mlflow_servers` first: a second one in the same region is `tracking_server_exists`." + _TEAM
        ),
    ),
    ToolSpec(
        name="attach_mlflow_server",
        operation_id="mlflow_servers_attach",
        action=actions.MLFLOW_MANAGE,
        status_tool="get_mlflow_server",
        description=(
            "Attach an existing, running tracking server of this AWS account by `arn`; it is `ready` "
            "at once. It must be the team's: tagged `instantstart:team=<team slug>` in AWS (a platform admin may "
            "attach an untagged one). Refusals: `invalid_arn`, `region_mismatch`, `tracking_server_not_found`, "
            "`tracking_server_not_active`, `tracking_server_exists`, `tracking_server_not_owned`, "
            "`tracking_server_owned_by_another_team`." + _TEAM
        ),
    ),
    ToolSpec(
        name="detach_mlflow_server",
        operation_id="mlflow_servers_destroy",
        action=actions.MLFLOW_MANAGE,
        destructive=True,
        status_tool="wait_for_operation",
        description=(
            "Detach a tracking server. One attached by ARN is only forgotten (`operation` null). One "
            "InstantStart created is DELETED with its IAM role (its runs go; its S3 artifacts stay) by `operation`; "
            "confirm with the user first. `tracking_server_busy` while it is being created or deleted."
        ),
    ),
    ToolSpec(
        name="get_training_job_metrics",
        operation_id="training_job_metrics_retrieve",
        action=actions.VIEW,
        description=(
            "A training job's reported throughput and loss by step (`series`, at most 500 points each) and its "
            "`latest` numbers: from its MLflow run when the team has a tracking server (`source: mlflow`), else "
            "parsed from its logs (`source: logs`); `source: null` when nothing was reported yet."
        ),
    ),
)
