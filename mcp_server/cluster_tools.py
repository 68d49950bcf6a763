"""MCP tools for clusters: inspection before create, create, import, refresh, delete, the active cluster, storage.

A tool whose REST path names ``cluster_id`` may be called without it: the caller's active cluster in their current
team is used (``mcp_server.server`` fills it in), and ``no_active_cluster`` says when there is none.
"""

from __future__ import annotations

from clusters import actions as cluster_actions
from mcp_server.specs import PAGINATED, ToolSpec

_TEAM = " `team` (id) defaults to your current team."
_LONG = (" Answers at once with `cluster` and `operation`; the change is not done until `wait_for_operation` (with the "
         "operation's id) reports `succeeded`. If it fails, read the failed phase's error, fix the cause and "
         "`retry_operation`: only that phase runs again.")
_ACTIVE = " `cluster_id` defaults to your active cluster."

CLUSTER_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_regions",
        operation_id="inspect_regions",
        action=cluster_actions.CLUSTER_INSPECT,
        description="List the AWS regions where HyperPod clusters can be created." + _TEAM,
    ),
    ToolSpec(
        name="list_availability_zones",
        operation_id="inspect_zones",
        action=cluster_actions.CLUSTER_INSPECT,
        description=(
            "List a region's availability zones with `name` (e.g. us-west-2a) and `zone_id` (e.g. usw2-az1). Zone "
            "names differ between AWS accounts, ids do not: compare ids when matching a training plan's zone. "
            "`region` defaults to the deployment's region." + _TEAM
        ),
    ),
    ToolSpec(
        name="list_instance_types",
        operation_id="inspect_instance_types",
        action=cluster_actions.CLUSTER_INSPECT,
        description=(
            "List the HyperPod instance types (ml.*) offered in a region, or in one `zone`, with `zones` offering "
            "each, vCPUs, memory, `accelerator_count`/`accelerator_type`/`accelerator_memory_gib` (GPUs or "
            "Trainium) and `efa_supported`. Only these are valid `instance_type` values for `create_cluster` in "
            "that zone. Pass `accelerated: true` for only the GPU/Trainium types (a much shorter answer)." + _TEAM
        ),
    ),
    ToolSpec(
        name="list_cluster_quotas",
        operation_id="inspect_quotas",
        action=cluster_actions.CLUSTER_INSPECT,
        description=(
            "List the account's HyperPod quotas in a region: for each instance type, `value` is how many instances "
            "all clusters of the account may use (\"<type> for cluster usage\"). `create_cluster` refuses a count "
            "above what is left with `quota_exceeded`." + _TEAM
        ),
    ),
    ToolSpec(
        name="list_training_plans",
        operation_id="inspect_training_plans",
        action=cluster_actions.CLUSTER_INSPECT,
        description=(
            "List the region's SageMaker training plans (reserved capacity) with instance type, `zone`, "
            "`total_count`, `available_count`, time window and committed cost (`upfront_fee` in `currency_code` for "
            "`duration_hours`: the plan's instances add no on-demand charge). A cluster created with capacity type "
            "`training-plan` runs in the plan's zone with the plan's capacity: the plan's zone wins over the zone "
            "you chose." + _TEAM
        ),
    ),
    ToolSpec(
        name="list_import_candidates",
        operation_id="inspect_import_candidates",
        action=cluster_actions.CLUSTER_IMPORT,
        description=(
            "List the EKS clusters of a region, each with the HyperPod cluster it orchestrates (if any), that you "
            "may import into the team with `import_cluster`: a platform admin sees every cluster but those tagged as "
            "another team's, a team admin only those the team's import rules (set by platform admins) allow; "
            "`tracked` ones are already managed by InstantStart." + _TEAM
        ),
    ),
    ToolSpec(
        name="list_clusters",
        operation_id="clusters_list",
        action=cluster_actions.CLUSTER_VIEW,
        description=(
            "List the clusters of your teams with `state` (`creating`, `importing`, `active`, `failed`, "
            "`deleting`), region, origin (`created` or `imported`), EKS and HyperPod facts and node/GPU counts. "
            "Filter by `team`, `state` (repeatable), `origin`, `region`." + PAGINATED
        ),
    ),
    ToolSpec(
        name="get_cluster",
        operation_id="clusters_retrieve",
        action=cluster_actions.CLUSTER_VIEW,
        description=(
            "Get one cluster: state, EKS (name, ARN, version, endpoint, OIDC issuer) and HyperPod (name, ARN, status, "
            "node recovery) facts, node and GPU counts, the network (VPC, subnets by role and zone, gateways, route "
            "tables, security groups, endpoints), dependencies (add-ons, operators and HyperPod's required "
            "components — health-monitoring agent, device plugins — with observed state and last error), `drift` "
            "found by the last refresh, whether it is your `active` cluster, and `capabilities`."
            + _ACTIVE
        ),
    ),
    ToolSpec(
        name="create_cluster",
        operation_id="clusters_create",
        action=cluster_actions.CLUSTER_CREATE,
        status_tool="wait_for_operation",
        description=(
            "Create a HyperPod cluster on a new EKS cluster. Give only decisions: `name` (1-63 letters, "
            "digits, hyphens), `region`, `zone`, `instance_type` and `instance_count` for the accelerated group, "
            "`capacity_type` (`on-demand`, `spot`, `training-plan` with `training_plan_arn`), optional "
            "`fsx_capacity_gib` (1200 or a multiple of 2400), `deep_health_checks`, `kubernetes_version`. Choose "
            "values from `list_availability_zones`, `list_instance_types` (for the zone), `list_cluster_quotas` and "
            "`list_training_plans`. Everything is checked before anything is created; each failure is a field error "
            "with a code (`cluster_name_taken`, `unknown_region`, `unknown_zone`, `instance_type_not_allowed`, "
            "`instance_type_not_offered`, `quota_exceeded`, `training_plan_zone`…) and nothing is created; "
            "`dry_run: true` is the preflight (REST `POST /api/v1/clusters/preflight`): every check, then the plan. "
            "The "
            "operation has six phases: network, eks, activate (it becomes your active cluster), dependencies, "
            "hyperpod, storage; EKS alone takes 10-15 minutes in AWS." + _TEAM + _LONG
        ),
    ),
    ToolSpec(
        name="import_cluster",
        operation_id="clusters_import",
        action=cluster_actions.CLUSTER_IMPORT,
        status_tool="wait_for_operation",
        description=(
            "Import an existing EKS cluster `eks_name` of `region` (and the HyperPod cluster it orchestrates): "
            "InstantStart grants itself access through an EKS access entry and records the "
            "cluster's facts, network, dependencies and storage. It tags, changes and deletes nothing else. Pick "
            "from `list_import_candidates`: `no_import_rule` when no import rule of the team allows the cluster "
            "(platform admins need none), `cluster_owned_by_another_team` when its InstantStart tags name another "
            "team." + _TEAM + _LONG
        ),
    ),
    ToolSpec(
        name="refresh_cluster",
        operation_id="clusters_refresh",
        action=cluster_actions.CLUSTER_REFRESH,
        idempotent=True,
        status_tool="get_cluster",
        description=(
            "Re-read a cluster from AWS and Kubernetes, update what InstantStart records and "
            "return `drift`: each `field` whose `recorded` value differs from the `actual` one (version changed, "
            "subnet missing, add-on gone…). Kubernetes objects InstantStart installed that were deleted (the KubeRay "
            "operator, HyperPod's device plugins and agents) are applied again." + _ACTIVE
        ),
    ),
    ToolSpec(
        name="delete_cluster",
        operation_id="clusters_delete",
        action=cluster_actions.CLUSTER_DELETE,
        destructive=True,
        status_tool="wait_for_operation",
        description=(
            "Delete a cluster. `confirm` must repeat the cluster's name; only call this when the user "
            "asked for this cluster to be deleted. A cluster InstantStart created is deleted in reverse (storage, "
            "hyperpod, dependencies, eks, network), removing only resources carrying InstantStart's tags. An "
            "imported cluster is only forgotten (`operation` is null, nothing in AWS changes) unless "
            "`delete_resources` is true, which only platform admins may ask. Refused with `cluster_in_use` "
            "(listing them) while jobs or endpoints run, and `cluster_busy` while another operation changes it."
            + _LONG
        ),
    ),
    ToolSpec(
        name="list_cluster_operations",
        operation_id="cluster_operations_list",
        action=cluster_actions.CLUSTER_VIEW,
        description="List the operations that created, imported or deleted a cluster, newest first." + _ACTIVE
        + PAGINATED,
    ),
    ToolSpec(
        name="get_active_cluster",
        operation_id="active_cluster_retrieve",
        action=cluster_actions.CLUSTER_VIEW,
        description=(
            "Get your active cluster in a team (null when you chose none): the cluster tools use when you leave "
            "`cluster_id` out." + _TEAM
        ),
    ),
    ToolSpec(
        name="set_active_cluster",
        operation_id="active_cluster_set",
        action=cluster_actions.CLUSTER_ACTIVATE,
        idempotent=True,
        status_tool="get_active_cluster",
        description=(
            "Make `cluster` (id) your active cluster in its team. It changes only your own default, never other "
            "users'."
        ),
    ),
    ToolSpec(
        name="list_cluster_volumes",
        operation_id="cluster_volumes_list",
        action=cluster_actions.STORAGE_VIEW,
        description=(
            "List a cluster's storage volumes: S3 buckets mounted through the Mountpoint S3 CSI driver and FSx for "
            "Lustre file systems, each with its `pvc_name` and `namespace` (what pods mount) and `state`. The "
            "`shared` one is the team's shared bucket." + _ACTIVE
        ),
    ),
    ToolSpec(
        name="create_cluster_volume",
        operation_id="cluster_volumes_create",
        action=cluster_actions.STORAGE_CREATE,
        status_tool="wait_for_operation",
        description=(
            "Add a volume to an active cluster: `kind` `s3` mounts `bucket` (optionally only "
            "`prefix`); `kind` `fsx` creates an FSx for Lustre file system of `capacity_gib` (1200 or a multiple of "
            "2400). `name` names the PersistentVolumeClaim in your team's namespace." + _ACTIVE
            + " Answers at once with `volume` and `operation`; the volume is usable once `wait_for_operation` "
            "reports `succeeded`."
        ),
    ),
    ToolSpec(
        name="delete_cluster_volume",
        operation_id="cluster_volumes_destroy",
        action=cluster_actions.STORAGE_DELETE,
        destructive=True,
        status_tool="wait_for_operation",
        description=(
            "Remove a volume: its PV and PVC, and its FSx file system when InstantStart "
            "created it. S3 buckets and their data are never deleted. Only call this when the user asked." + _ACTIVE
        ),
    ),
)
