"""The instance-group pipelines, each an operation on the cluster.

``instance_group.add``: *placement* (the compute subnet through :func:`clusters.capacity.place_instance_group`, and
the execution role's policy widened to it) → *hyperpod* (UpdateCluster with every group plus the new one, polled
until the group runs its count) → *autoscaling* (the group's Karpenter objects when managed autoscaling is on).

``instance_group.update``: *hyperpod* — the changed members only, on the group's whole specification, polled until
current equals target count. ``instance_group.delete``: *autoscaling* (its Karpenter objects go first) → *hyperpod*
(``InstanceGroupsToDelete``, polled until AWS no longer has the group).

Every poll mirrors the groups (:mod:`clusters.instance_groups.mirror`), so the portal shows current against target
count while the group converges.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from clusters import estimates, lifecycle, plans
from clusters.capacity import place_instance_group
from clusters.instance_groups import hyperpod_update, mirror, specs
from clusters.instance_groups.hyperpod_update import IN_SERVICE, described, group_details
from clusters.models import Cluster, ClusterOrigin, InstanceGroup
from clusters.phases import hyperpod
from clusters.phases.common import cluster_of
from clusters.shared_bucket import ensure_shared_bucket
from operations.context import StepContext
from operations.models import Operation, OperationState
from operations.pipeline import Phase, PhaseFailed, Pipeline, Progress
from operations.plans import planned

ADD_KIND = "instance_group.add"
UPDATE_KIND = "instance_group.update"
DELETE_KIND = "instance_group.delete"


def _autoscaling():
    from clusters.features import autoscaling  # the features app builds on instance groups

    return autoscaling


def _converged(found: dict[str, Any], name: str) -> bool:
    details = group_details(found, name)
    return (details is not None and found["ClusterStatus"] == IN_SERVICE and details.get("Status") == IN_SERVICE
            and details.get("CurrentCount", 0) == details.get("TargetCount", 0))


# add ---------------------------------------------------------------------------------------------------------------


def _role_and_lifecycle(ctx: StepContext, cluster: Cluster, found: dict[str, Any], placement) -> tuple[str, dict]:
    """Our execution role (its policy now covering the new subnet) and lifecycle scripts for a cluster we created;
    for an imported one, those of its first group."""
    if cluster.origin == ClusterOrigin.CREATED and cluster.details.get("hyperpod", {}).get("lifecycle_uri"):
        bucket = ensure_shared_bucket(ctx.client("s3"), ctx.region)
        role = hyperpod.ensure_execution_role(ctx.client("iam"), cluster, bucket=bucket, placement=placement,
                                              eks_arn=cluster.eks_arn, region=ctx.region)
        return role, specs.our_lifecycle_config(lifecycle.lifecycle_uri(bucket, cluster))
    groups = found.get("InstanceGroups") or []
    if not groups:
        raise PhaseFailed(f"Cluster {cluster.name} has no group to take an execution role and lifecycle scripts "
                          "from.", code="no_template_group")
    return groups[0]["ExecutionRole"], dict(groups[0]["LifeCycleConfig"])


def submit_placement(ctx: StepContext) -> None:
    cluster, params = cluster_of(ctx), ctx.params
    found = described(cluster)
    hyperpod.require_spot_support(ctx.client("sagemaker"), params["capacity_type"])
    placement = place_instance_group(cluster, zone=params["zone"], ec2=ctx.client("ec2"),
                                     capacity_type=params["capacity_type"], interface_mode=params["interface_mode"],
                                     cluster_subnet_ids=tuple((found.get("VpcConfig") or {}).get("Subnets") or ()))
    role, lifecycle_config = _role_and_lifecycle(ctx, cluster, found, placement)
    group = specs.new_group(
        name=params["name"], instance_type=params["instance_type"], instance_count=params["instance_count"],
        capacity_type=params["capacity_type"], training_plan_arn=params["training_plan_arn"],
        interface_mode=params["interface_mode"], placement=placement, execution_role_arn=role,
        lifecycle_config=lifecycle_config, deep_health_checks=params["deep_health_checks"],
        ebs_volume_gib=params["ebs_volume_gib"], threads_per_core=params["threads_per_core"])
    ctx.output(group=group)
    InstanceGroup.objects.filter(pk=params["group_id"]).update(subnet_id=placement.subnet_id, zone=placement.zone)
    ctx.log(f"Group {params['name']} goes to compute subnet {placement.subnet_id} ({placement.cidr}, "
            f"{placement.zone}).")


def _add(ctx: StepContext) -> hyperpod_update.Build:
    def build(found: dict[str, Any]) -> tuple[list[dict[str, Any]], tuple[str, ...]]:
        return [*hyperpod_update.live_specifications(found), ctx.outputs["group"]], ()

    return build


def submit_add(ctx: StepContext) -> None:
    name = ctx.params["name"]
    hyperpod_update.submit_or_wait(ctx, cluster_of(ctx), done=lambda found: group_details(found, name) is not None,
                                   build=_add(ctx))


def poll_group(ctx: StepContext, build: hyperpod_update.Build) -> Progress:
    """Shared poll of *add* and *update*: send when held back, mirror, wait until the group runs its count."""
    cluster, name = cluster_of(ctx), ctx.params["name"]
    found = described(cluster)
    if not hyperpod_update.send_when_ready(ctx, cluster, found, build=build):
        return Progress.waiting(found["ClusterStatus"])
    mirror.mirror(cluster, found)
    hyperpod_update.require_healthy(found, name)
    details = group_details(found, name)
    if details is None:
        return Progress.waiting(found["ClusterStatus"])
    status = f"{details.get('Status')}: {details.get('CurrentCount', 0)}/{details.get('TargetCount', 0)}"
    return Progress.finished(status) if _converged(found, name) else Progress.waiting(status)


def poll_add(ctx: StepContext) -> Progress:
    return poll_group(ctx, _add(ctx))


def submit_apply_group_objects(ctx: StepContext) -> None:
    cluster, name = cluster_of(ctx), ctx.params["name"]
    autoscaling = _autoscaling()
    if not autoscaling.enabled(cluster):
        ctx.log("Managed autoscaling is off; the group needs no Karpenter objects.")
        return
    if not autoscaling.supported(group_details(described(cluster), name) or {}):
        ctx.log(f"Group {name} keeps its count: HyperPod autoscales only on-demand groups without deep health "
                "checks.")
        return
    autoscaling.apply_group_objects(cluster, group=name, instance_type=ctx.params["instance_type"])
    ctx.log(f"Group {name} scales with Karpenter (NodePool and HyperPod node class applied).")


def submit_remove_group_objects(ctx: StepContext) -> None:
    cluster, name = cluster_of(ctx), ctx.params["name"]
    autoscaling = _autoscaling()
    if autoscaling.enabled(cluster):
        autoscaling.remove_group_objects(cluster, group=name)
        ctx.log(f"Removed the Karpenter NodePool and node class of group {name}.")


def poll_done(ctx: StepContext) -> Progress:
    """The poll of a phase whose submit step finishes the work."""
    return Progress.finished()


# update ------------------------------------------------------------------------------------------------------------


def _update(ctx: StepContext) -> hyperpod_update.Build:
    def build(found: dict[str, Any]) -> tuple[list[dict[str, Any]], tuple[str, ...]]:
        groups = hyperpod_update.live_specifications(found)
        for group in groups:
            if group["InstanceGroupName"] != ctx.params["name"]:
                continue
            for member, value in ctx.params["members"].items():
                if value is None:
                    group.pop(member, None)
                else:
                    group[member] = value
        return groups, ()

    return build


def _update_in_effect(ctx: StepContext):
    def done(found: dict[str, Any]) -> bool:
        details = group_details(found, ctx.params["name"])
        if details is None:
            raise PhaseFailed(f"Instance group {ctx.params['name']} no longer exists.", code="resource_missing")
        current = specs.specification(details)
        return all(current.get(key) == value for key, value in ctx.params["members"].items())

    return done


def submit_update(ctx: StepContext) -> None:
    hyperpod_update.submit_or_wait(ctx, cluster_of(ctx), done=_update_in_effect(ctx), build=_update(ctx))


def poll_update(ctx: StepContext) -> Progress:
    return poll_group(ctx, _update(ctx))


# delete ------------------------------------------------------------------------------------------------------------


def _delete(ctx: StepContext) -> hyperpod_update.Build:
    def build(found: dict[str, Any]) -> tuple[list[dict[str, Any]], tuple[str, ...]]:
        groups = [group for group in hyperpod_update.live_specifications(found)
                  if group["InstanceGroupName"] != ctx.params["name"]]
        return groups, (ctx.params["name"],)

    return build


def submit_delete(ctx: StepContext) -> None:
    name = ctx.params["name"]
    hyperpod_update.submit_or_wait(ctx, cluster_of(ctx), build=_delete(ctx), done=lambda found: (
        group_details(found, name) or {"Status": "Deleting"}).get("Status") == "Deleting")


def poll_delete(ctx: StepContext) -> Progress:
    cluster, name = cluster_of(ctx), ctx.params["name"]
    found = described(cluster)
    if not hyperpod_update.send_when_ready(ctx, cluster, found, build=_delete(ctx)):
        return Progress.waiting(found["ClusterStatus"])
    mirror.mirror(cluster, found)
    details = group_details(found, name)
    if details is not None:
        return Progress.waiting(f"{details.get('Status')}: {details.get('CurrentCount', 0)} left")
    return Progress.finished("deleted")


# registration ------------------------------------------------------------------------------------------------------


def _group_row_finished(operation: Operation) -> None:
    """A failed add leaves no row claiming a group AWS does not have (the name is free again)."""
    if operation.kind == ADD_KIND and operation.state != OperationState.SUCCEEDED:
        InstanceGroup.objects.filter(pk=operation.params["group_id"], status__in=("", "Pending")).update(
            deleted=True, status="Failed")


PLACEMENT = Phase(slug="placement", title="Compute subnet", submit=submit_placement, poll=poll_done,
                  timeout=timedelta(minutes=10), poll_interval=1)
ADD = planned(Pipeline(kind=ADD_KIND, on_finished=_group_row_finished, cost=estimates.group_add_cost, phases=(
    PLACEMENT,
    Phase(slug="hyperpod", title="HyperPod instance group", submit=submit_add, poll=poll_add,
          timeout=timedelta(hours=3), poll_interval=30),
    Phase(slug="autoscaling", title="Autoscaling objects", submit=submit_apply_group_objects, poll=poll_done,
          timeout=timedelta(minutes=10), poll_interval=1),
)), plans.GROUP_ADD)
UPDATE = planned(Pipeline(kind=UPDATE_KIND, cost=estimates.group_update_cost, phases=(
    Phase(slug="hyperpod", title="HyperPod instance group", submit=submit_update, poll=poll_update,
          timeout=timedelta(hours=3), poll_interval=30),
)), plans.GROUP_UPDATE)
DELETE = planned(Pipeline(kind=DELETE_KIND, phases=(
    Phase(slug="autoscaling", title="Autoscaling objects", submit=submit_remove_group_objects, poll=poll_done,
          timeout=timedelta(minutes=10), poll_interval=1),
    Phase(slug="hyperpod", title="HyperPod instance group", submit=submit_delete, poll=poll_delete,
          timeout=timedelta(hours=1), poll_interval=30),
)), plans.GROUP_DELETE)
