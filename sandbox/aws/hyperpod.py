"""SageMaker HyperPod cluster operations (replacing moto's cluster model).

``CreateCluster`` stores every member the caller set and ``DescribeCluster`` returns it, with the instance
groups in ``ClusterInstanceGroupDetails`` form (``InstanceCount`` → ``TargetCount``, ``MinInstanceCount`` →
``MinCount``, ``KubernetesConfig`` → current/desired labels and taints, …). ``UpdateCluster`` replaces each
listed group's specification (a member left out is unset, as on SageMaker) and leaves unlisted groups alone;
a disabled ``TieredStorageConfig`` is stored as ``{"Mode": "Disable"}``.

Every input is checked before anything is stored: the model's constraints (instance types are botocore's
``ClusterInstanceType`` enum, the tiered-storage percentage 0–100), the group rules of ``hyperpod_groups``
(unique names, instance type or requirements, EFA-only support, Spot with a training plan, training plans and
their zone, immutable members of existing groups), the EKS orchestrator cluster (must exist, be ACTIVE and use
the API or API_AND_CONFIG_MAP authentication mode), the autoscaling prerequisites (EKS orchestrator,
Continuous provisioning, ClusterRole) and the "<type> for cluster usage" quotas (``ResourceLimitExceeded`` with
SageMaker's message).

Each instance group's execution role gets a HYPERPOD_LINUX access entry on the EKS cluster. A tag
``sandbox:fail`` (or an outcome rule) makes the cluster end Creating as Failed — as does a group whose
``LifeCycleConfig`` names an ``OnCreate`` script that is not in the sandbox's S3 under ``SourceS3Uri``: its
instances fail to provision with SageMaker's "Lifecycle scripts did not run successfully" message.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from sandbox import clock
from sandbox.aws import core, eks_model, outcomes, quotas, s3_objects, tags, training_plans
from sandbox.aws import hyperpod_groups as rules
from sandbox.aws import hyperpod_model as model
from sandbox.aws.core import ApiError, Call, operation, validation

_NOT_STORED = ("ClusterName", "InstanceGroups", "Tags")
_CLUSTER_UPDATABLE = ("RestrictedInstanceGroups", "RestrictedInstanceGroupsConfig", "TieredStorageConfig",
                      "NodeRecovery", "NodeProvisioningMode", "ClusterRole", "AutoScaling", "Orchestrator")


def lookup(call: Call, key: str = "ClusterName") -> model.Cluster:
    name = call.params[key]
    cluster = model.find(name, call.region)
    if cluster is None:
        raise ApiError("ResourceNotFound", f"Cluster with name or ARN '{name}' not found.")
    return cluster


def _quota_usage(region: str, exclude: model.Cluster | None) -> Counter[str]:
    usage: Counter[str] = Counter()
    for cluster in model.clusters():
        if cluster.region != region or cluster is exclude or cluster.status in ("Failed", "Deleting"):
            continue
        for group in cluster.groups.values():
            if not group.deleting and not group.spec.get("TrainingPlanArn"):
                usage[group.instance_type] += group.target
    return usage


def check_quotas(call: Call, groups: list[model.Group], cluster: model.Cluster | None = None) -> None:
    """``ResourceLimitExceeded`` if ``groups`` (a cluster's groups after the change) exceed a usage quota."""
    current = _quota_usage(call.region, cluster)
    before: Counter[str] = Counter()
    if cluster is not None:
        for group in cluster.groups.values():
            if not group.spec.get("TrainingPlanArn"):
                before[group.instance_type] += group.target
    after: Counter[str] = Counter()
    for group in groups:
        if not group.deleting and not group.spec.get("TrainingPlanArn"):
            after[group.instance_type] += group.target
    for instance_type, wanted in after.items():
        delta = wanted - before[instance_type]
        refusal = _limit_refusal(call.region, instance_type, current[instance_type] + before[instance_type], delta)
        if refusal:
            raise ApiError("ResourceLimitExceeded", refusal)


def _limit_refusal(region: str, instance_type: str, used: int, delta: int) -> str | None:
    limit = quotas.hyperpod_limit(region, instance_type)
    if delta <= 0 or limit is None or used + delta <= limit[1]:
        return None
    name, value = limit
    return (f"The account-level service limit '{name}' is {value:g} Instances, with current utilization of {used} "
            f"Instances and a request delta of {delta} Instances. Please use AWS Service Quotas to request an "
            "increase for this quota. If AWS Service Quotas is not available, contact AWS support to request an "
            "increase for this quota.")


def usage_refusal(region: str, instance_type: str, delta: int) -> str | None:
    """``ResourceLimitExceeded``'s message when ``delta`` more instances of ``instance_type`` in ``region`` would
    exceed its "for cluster usage" quota (what HyperPod answers its Karpenter), else ``None``."""
    return _limit_refusal(region, instance_type, _quota_usage(region, None)[instance_type], delta)


def check_cluster_settings(settings: dict[str, Any], new_orchestrator: bool = True) -> None:
    """A new orchestrator must be an ACTIVE EKS cluster; autoscaling needs EKS, Continuous mode and a role."""
    eks_arn = ((settings.get("Orchestrator") or {}).get("Eks") or {}).get("ClusterArn")
    if eks_arn and new_orchestrator:
        eks = eks_model.find_by_arn(eks_arn)
        if eks is None:
            raise validation(f"The EKS cluster {eks_arn} does not exist.")
        if eks.status != "ACTIVE":
            raise validation(f"The EKS cluster {eks.name} is in {eks.status} state; it must be ACTIVE.")
        if eks.authentication_mode not in eks_model.ACCESS_MODES_WITH_ENTRIES:
            raise validation(f"The EKS cluster {eks.name} uses the {eks.authentication_mode} authentication mode; "
                             "HyperPod supports API and API_AND_CONFIG_MAP.")
    if (settings.get("AutoScaling") or {}).get("Mode") == "Enable":
        if not eks_arn:
            raise validation("Autoscaling is supported only for clusters orchestrated by Amazon EKS.")
        if settings.get("NodeProvisioningMode") != "Continuous":
            raise validation("Autoscaling requires NodeProvisioningMode to be Continuous.")
        if not settings.get("ClusterRole"):
            raise validation("Autoscaling requires a ClusterRole.")


def _settings(params: dict[str, Any], keys: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The cluster-level members of a request (all but ``_NOT_STORED``, or ``keys``); a disabled tiered
    storage configuration is stored as ``{"Mode": "Disable"}``."""
    settings = {key: value for key, value in params.items()
                if (key in keys if keys is not None else key not in _NOT_STORED)}
    if (settings.get("TieredStorageConfig") or {}).get("Mode") == "Disable":
        settings["TieredStorageConfig"] = {"Mode": "Disable"}
    return settings


@operation("sagemaker", "CreateCluster")
def create_cluster(call: Call) -> dict[str, Any]:
    name = call.params["ClusterName"]
    if model.find(name, call.region) is not None:
        raise ApiError("ResourceInUse", f"Cluster with name '{name}' already exists.")
    specs = call.get("InstanceGroups", [])
    settings = _settings(call.params)
    rules.check_unique(specs)
    rules.check_vpc_config(call.region, settings.get("VpcConfig"), "the cluster")
    for spec in specs:
        rules.check_override(call.region, spec, settings.get("VpcConfig"))
        rules.check_group(call, spec, settings.get("VpcConfig"))
        rules.check_role(spec)
    check_cluster_settings(settings)
    groups = [model.new_group(spec) for spec in specs]
    check_quotas(call, groups)
    cluster_tags = core.tag_list(call.get("Tags"))
    outcome = outcomes.take("hyperpod-cluster", name, cluster_tags)
    now = clock.now()
    cluster = model.Cluster(name=name, arn=core.arn("sagemaker", call.region, f"cluster/{core.lower_alnum(12)}"),
                            region=call.region, created_at=now, since=now, spec=settings, tags=cluster_tags,
                            groups={group.name: group for group in groups},
                            pending_failure=outcome[1] if outcome else None)
    model.add(cluster)
    grant_node_access(cluster)
    for group in groups:
        model.reconcile(cluster, group)
    if cluster.pending_failure is None:
        cluster.pending_failure = _lifecycle_failure(cluster, groups)
    return {"ClusterArn": cluster.arn}


def _script_exists(uri: str, script: str) -> bool:
    """Whether ``<uri>/<script>`` is an object in the sandbox's S3."""
    bucket, _, prefix = uri.removeprefix("s3://").partition("/")
    key = f"{prefix.rstrip('/')}/{script}" if prefix.strip("/") else script
    try:
        return s3_objects.exists(bucket, key)
    except s3_objects.NoSuchBucket:
        return False


def _lifecycle_failure(cluster: model.Cluster, groups: list[model.Group]) -> str | None:
    """SageMaker's failure message when a group's ``OnCreate`` script is not at its ``SourceS3Uri``."""
    for group in groups:
        config = group.spec.get("LifeCycleConfig") or {}
        uri, script = config.get("SourceS3Uri", ""), config.get("OnCreate", "")
        if not uri.startswith("s3://") or _script_exists(uri, script):
            continue
        node = next((node.instance_id for node in cluster.group_nodes(group.name)), "i-00000000000000000")
        return (f'Instance {node} failed to provision with the following error: "Lifecycle scripts did not run '
                "successfully. Ensure the scripts exist in provided S3 path, are accessible, and run without errors. "
                'Please see CloudWatch logs for lifecycle script execution details." Note that multiple instances '
                "may be impacted.")
    return None


def grant_node_access(cluster: model.Cluster) -> None:
    """Give each execution role a HYPERPOD_LINUX access entry on the EKS cluster, as HyperPod does."""
    eks = eks_model.find_by_arn(cluster.eks_cluster_arn) if cluster.eks_cluster_arn else None
    if eks is None:
        return
    for group in cluster.groups.values():
        eks_model.ensure_node_entry(eks, group.spec["ExecutionRole"])


def _group_status(cluster: model.Cluster, group: model.Group) -> str:
    if cluster.status in ("Failed", "Deleting"):
        return cluster.status
    if group.deleting:
        return "Deleting"
    if cluster.status == "Creating":
        return "Creating"
    nodes = cluster.group_nodes(group.name)
    if group.desired_release or any(node.phase in ("launching", "terminating") for node in nodes):
        return "Updating"
    return "InService"


def _both(current: str, desired: str, value: Any) -> dict[str, Any]:
    return {current: value, desired: value}


def group_details(cluster: model.Cluster, group: model.Group) -> dict[str, Any]:
    """One ``ClusterInstanceGroupDetails``: the stored specification in the response's member names."""
    spec = group.spec
    running = [node for node in cluster.group_nodes(group.name) if model.node_status(node)[0] == "Running"]
    details = {key: value for key, value in spec.items()
               if key not in ("InstanceCount", "MinInstanceCount", "KubernetesConfig", "InstanceRequirements",
                              "ImageId", "ImageReleaseVersion", "AutoPatchConfig")}
    details.update(CurrentCount=len(running), TargetCount=group.target, Status=_group_status(cluster, group),
                   CurrentImageReleaseVersion=group.image_release,
                   DesiredImageReleaseVersion=group.desired_release or group.image_release,
                   ImageVersionStatus="UpToDate")
    if group.desired_release or group.software_updated:
        details["SoftwareUpdateStatus"] = "InProgress" if group.desired_release else "Succeeded"
    if "MinInstanceCount" in spec:
        details["MinCount"] = spec["MinInstanceCount"]
    kubernetes = spec.get("KubernetesConfig")
    if kubernetes is not None:
        details["KubernetesConfig"] = {**_both("CurrentLabels", "DesiredLabels", kubernetes.get("Labels", {})),
                                       **_both("CurrentTaints", "DesiredTaints", kubernetes.get("Taints", []))}
    requirements = spec.get("InstanceRequirements")
    if requirements is not None:
        types = requirements.get("InstanceTypes", [])
        details["InstanceRequirements"] = _both("CurrentInstanceTypes", "DesiredInstanceTypes", types)
        details["InstanceTypeDetails"] = [
            {"InstanceType": instance_type, "ThreadsPerCore": spec.get("ThreadsPerCore"),
             "CurrentCount": sum(1 for node in running if node.instance_type == instance_type)}
            for instance_type in types]
    if "ImageId" in spec:
        details.update(_both("CurrentImageId", "DesiredImageId", spec["ImageId"]))
    patch = spec.get("AutoPatchConfig")
    if patch is not None:
        details["AutoPatchConfig"] = {"PatchingStrategy": patch.get("PatchingStrategy"),
                                      "DeploymentConfig": patch.get("DeploymentConfig"),
                                      **_both("CurrentPatchSchedule", "DesiredPatchSchedule",
                                              patch.get("PatchSchedule"))}
    if spec.get("TrainingPlanArn"):
        plan = training_plans.find(spec["TrainingPlanArn"], cluster.region)
        details["TrainingPlanStatus"] = plan.status if plan else "Expired"
    return details


def _autoscaling(cluster: model.Cluster) -> dict[str, Any] | None:
    config = cluster.spec.get("AutoScaling")
    if config is None:
        return None
    return {**config, "Status": "Creating" if cluster.status in ("Creating", "Updating") else "InService"}


@operation("sagemaker", "DescribeCluster")
def describe_cluster(call: Call) -> dict[str, Any]:
    cluster = lookup(call)
    return {**cluster.spec, "ClusterArn": cluster.arn, "ClusterName": cluster.name,
            "ClusterStatus": cluster.status, "CreationTime": core.utc(cluster.created_at),
            "FailureMessage": cluster.failure_message, "NodeRecovery": cluster.node_recovery,
            "AutoScaling": _autoscaling(cluster),
            "InstanceGroups": [group_details(cluster, group) for group in cluster.groups.values()]}


@operation("sagemaker", "ListClusters")
def list_clusters(call: Call) -> dict[str, Any]:
    selected = [cluster for cluster in model.clusters() if cluster.region == call.region]
    if call.get("NameContains"):
        selected = [cluster for cluster in selected if call.params["NameContains"] in cluster.name]
    after, before, plan = call.get("CreationTimeAfter"), call.get("CreationTimeBefore"), call.get("TrainingPlanArn")
    if after is not None:
        selected = [cluster for cluster in selected if cluster.created_at > after.timestamp()]
    if before is not None:
        selected = [cluster for cluster in selected if cluster.created_at < before.timestamp()]
    if plan:
        selected = [cluster for cluster in selected
                    if any(group.spec.get("TrainingPlanArn") == plan for group in cluster.groups.values())]
    by_name = call.get("SortBy") == "NAME"
    selected.sort(key=lambda cluster: cluster.name if by_name else cluster.created_at,
                  reverse=call.get("SortOrder", "Descending") == "Descending")
    page, token = core.paginate(selected, call.get("NextToken"), call.get("MaxResults"))
    summaries = []
    for cluster in page:
        plans = sorted({group.spec["TrainingPlanArn"] for group in cluster.groups.values()
                        if group.spec.get("TrainingPlanArn")})
        summaries.append({"ClusterArn": cluster.arn, "ClusterName": cluster.name, "ClusterStatus": cluster.status,
                          "CreationTime": core.utc(cluster.created_at), "TrainingPlanArns": plans or None,
                          "ImageVersionStatus": "UpToDate"})
    return {"ClusterSummaries": summaries, "NextToken": token}


def _require_in_service(cluster: model.Cluster) -> None:
    if cluster.status != "InService":
        raise ApiError("ConflictException", f"Cluster {cluster.name} is in {cluster.status} state; the operation "
                                            "is allowed only when it is InService.")


@operation("sagemaker", "UpdateCluster")
def update_cluster(call: Call) -> dict[str, Any]:
    cluster = lookup(call)
    _require_in_service(cluster)
    specs = call.get("InstanceGroups", [])
    to_delete = call.get("InstanceGroupsToDelete", [])
    rules.check_unique(specs)
    unknown = sorted(set(to_delete) - set(cluster.groups))
    if unknown:
        raise validation(f"Instance groups to delete do not exist: {', '.join(unknown)}.")
    both = sorted(set(to_delete) & {spec["InstanceGroupName"] for spec in specs})
    if both:
        raise validation(f"Instance groups cannot be both updated and deleted: {', '.join(both)}.")
    merged: dict[str, model.Group] = {name: model.Group(name, dict(group.spec), group.deleting)
                                      for name, group in cluster.groups.items()}
    for spec in specs:
        name = spec["InstanceGroupName"]
        if name in cluster.groups:
            rules.check_unchanged(cluster.groups[name].spec, spec)
        else:
            rules.check_override(call.region, spec, cluster.spec.get("VpcConfig"))
            rules.check_role(spec)
        rules.check_group(call, spec, cluster.spec.get("VpcConfig"))
        merged[name] = model.new_group(spec)
    for name in to_delete:
        merged[name].deleting = True
    settings = {**cluster.spec, **_settings(call.params, _CLUSTER_UPDATABLE)}
    check_cluster_settings(settings, new_orchestrator="Orchestrator" in call.params)
    check_quotas(call, list(merged.values()), cluster)
    cluster.spec = settings
    for name, group in merged.items():
        if name in cluster.groups:
            cluster.groups[name].spec, cluster.groups[name].deleting = group.spec, group.deleting
        else:
            cluster.groups[name] = group
    model.set_status(cluster, "Updating")
    grant_node_access(cluster)
    for group in list(cluster.groups.values()):
        model.reconcile(cluster, group)
    return {"ClusterArn": cluster.arn}


@operation("sagemaker", "UpdateClusterSoftware")
def update_cluster_software(call: Call) -> dict[str, Any]:
    cluster = lookup(call)
    _require_in_service(cluster)
    requested = call.get("InstanceGroups") or [{"InstanceGroupName": name} for name in cluster.groups]
    unknown = sorted({item["InstanceGroupName"] for item in requested} - set(cluster.groups))
    if unknown:
        raise validation(f"Instance groups do not exist: {', '.join(unknown)}.")
    for item in requested:
        group = cluster.groups[item["InstanceGroupName"]]
        group.desired_release = item.get("ImageReleaseVersion") or model.IMAGE_RELEASE_VERSION
        if call.get("ImageId"):
            group.spec["ImageId"] = call.params["ImageId"]
        if call.get("DeploymentConfig"):
            group.spec["ActiveSoftwareUpdateConfig"] = call.params["DeploymentConfig"]
    model.set_status(cluster, "Updating")
    return {"ClusterArn": cluster.arn}


@operation("sagemaker", "DeleteCluster")
def delete_cluster(call: Call) -> dict[str, Any]:
    cluster = lookup(call)
    if cluster.status != "Deleting":
        model.set_status(cluster, "Deleting")
        for node in list(cluster.nodes.values()):
            model.terminate(cluster, node)
    return {"ClusterArn": cluster.arn}


def _cluster_tags(arn: str) -> dict[str, str] | None:
    cluster = model.find(arn, region="")
    return cluster.tags if cluster is not None else None


tags.register("sagemaker", ("cluster",), _cluster_tags)
