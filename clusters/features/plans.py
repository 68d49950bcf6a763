"""What a ``cluster.features:…`` operation would do, for a dry run's plan (``Phase.plan``): per phase, the exact AWS
requests and Kubernetes manifests, rendered by the builders the feature's steps send from (the role's
:class:`~clusters.features.identity.RoleSpec`, ``addon_request``, ``service_account_body``, ``node_pool``, the load
balancer chart's manifests…) after the reads the steps make (whether a role, an add-on, a workspace exists).

Values only the real run knows are placeholders: a client request token it persists (``TOKEN``), the Prometheus
workspace it creates first (``WORKSPACE``). An IAM role is planned as ``CreateRole`` when it is absent, and its inline
policy as ``PutRolePolicy`` (sent when the policy differs). Disabling plans what is ours to delete.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from cloud import aws
from clusters import dependencies, pod_identity
from clusters import load_balancer_chart as chart
from clusters.features import (
    autoscaling,
    checkpointing,
    identity,
    inference,
    load_balancer,
    observability,
    prerequisites,
    task_governance,
    training,
)
from clusters.features.addons import AddonFeature
from clusters.features.catalog import (
    AUTOSCALING,
    DEFAULT_MEMORY_PERCENTAGE,
    INFERENCE_OPERATOR,
    LOAD_BALANCER_CONTROLLER,
    METRICS_SERVER,
    OBSERVABILITY,
    TASK_GOVERNANCE,
    TIERED_CHECKPOINTING,
    TRAINING_OPERATOR,
)
from clusters.iam_roles import create_role_request, find_role, inline_policy_request
from clusters.instance_groups import mirror
from clusters.instance_groups.update_cluster import update_request
from clusters.models import Cluster, ClusterFeature, DependencyState
from clusters.ownership import iam_name, owned_by, team_namespace
from clusters.plans import TOKEN, manifest
from config.plans import Change, aws_call, change, kubernetes_object

Params = Mapping[str, Any]
#: The Prometheus workspace the observability phase creates before the add-on that writes to it.
WORKSPACE = {"arn": "<the new workspace's ARN>", "prometheusEndpoint": "<the new workspace's endpoint>"}


def _cluster(params: Params) -> Cluster:
    return Cluster.objects.select_related("team").get(pk=params["cluster_id"])


def _update(cluster: Cluster, members: dict[str, Any]) -> Change:
    return aws_call("update", "SageMaker HyperPod cluster", cluster.hyperpod_name, call="sagemaker:UpdateCluster",
                    request=update_request(cluster, members))


def role_changes(cluster: Cluster, spec: identity.RoleSpec) -> list[Change]:
    """``CreateRole`` when the role is absent, then its inline policy."""
    name = iam_name(cluster, spec.purpose)
    changes = []
    if find_role(aws.client("iam", region=cluster.region), name) is None:
        changes.append(aws_call("create", "IAM role", name, call="iam:CreateRole", request=create_role_request(
            cluster, purpose=spec.purpose, trust=spec.trust, description=spec.description)))
    changes.append(aws_call("update", "IAM role policy", f"{name}/{spec.purpose}", call="iam:PutRolePolicy",
                            request=inline_policy_request(name, spec.purpose, spec.policy),
                            when="the role's policy differs"))
    return changes


def role_delete(cluster: Cluster, purpose: str) -> list[Change]:
    return [change("delete", "aws", "IAM role", iam_name(cluster, purpose), with_policies=True,
                   when="it exists and is the cluster's")]


def addon_enable(feature: AddonFeature, cluster: Cluster, spec: identity.RoleSpec | None = None,
                 configuration: str | None = None) -> list[Change]:
    """The add-on's role, then its ``CreateAddon`` (none when the add-on is there)."""
    changes = role_changes(cluster, spec or feature.role(cluster))
    if dependencies.describe_addon(cluster, feature.addon) is None:
        changes.append(aws_call("create", "EKS add-on", feature.addon, call="eks:CreateAddon",
                                request=feature.addon_request(cluster, role_arn=identity.role_arn(
                                    cluster, feature.purpose), token=TOKEN, configuration=configuration)))
    return changes


def addon_disable(feature: AddonFeature, cluster: Cluster) -> list[Change]:
    """``DeleteAddon`` when the add-on is ours, then its role."""
    addon = dependencies.describe_addon(cluster, feature.addon)
    changes = []
    if addon is not None and owned_by(addon.get("tags"), cluster):
        changes.append(aws_call("delete", "EKS add-on", feature.addon, call="eks:DeleteAddon",
                                request=dependencies.delete_addon_request(cluster, feature.addon)))
    return changes + role_delete(cluster, feature.purpose)


def _training(cluster: Cluster, enabled: bool, change_: Params) -> list[Change]:
    return addon_enable(training.FEATURE, cluster) if enabled else addon_disable(training.FEATURE, cluster)


def _inference(cluster: Cluster, enabled: bool, change_: Params) -> list[Change]:
    if not enabled:
        changes = addon_disable(inference.FEATURE, cluster)
        row = ClusterFeature.objects.filter(cluster=cluster, feature=INFERENCE_OPERATOR).first()
        addon = dependencies.describe_addon(cluster, METRICS_SERVER)
        if (row is not None and METRICS_SERVER in row.details.get("installed_prerequisites", []) and addon is not None
                and owned_by(addon.get("tags"), cluster)):
            changes.append(aws_call("delete", "EKS add-on", METRICS_SERVER, call="eks:DeleteAddon",
                                    request=dependencies.delete_addon_request(cluster, METRICS_SERVER),
                                    why="the inference operator installed it"))
        return changes + role_delete(cluster, inference.GATED_PURPOSE)
    return addon_enable(inference.FEATURE, cluster) + role_changes(cluster, inference.gated_role_spec(cluster))


def _observability(cluster: Cluster, enabled: bool, change_: Params) -> list[Change]:
    workspace = observability.find_workspace(cluster)
    if not enabled:
        changes = addon_disable(observability.ADDON, cluster)
        if workspace is not None:
            changes.append(aws_call("delete", "Prometheus workspace", workspace["workspaceId"],
                                    call="aps:DeleteWorkspace",
                                    request=observability.delete_workspace_request(workspace)))
        return changes
    changes = []
    if workspace is None:
        changes.append(aws_call("create", "Prometheus workspace", observability.workspace_alias(cluster),
                                call="aps:CreateWorkspace", request=observability.workspace_request(cluster, TOKEN)))
    workspace = workspace or WORKSPACE
    spec = observability.ADDON.role(cluster, policy=observability.policy_for(cluster, workspace))
    return changes + addon_enable(observability.ADDON, cluster, spec,
                                  configuration=observability.configuration_for(workspace))


def _checkpointing(cluster: Cluster, enabled: bool, change_: Params) -> list[Change]:
    if not enabled:
        changes = [_update(cluster, {"TieredStorageConfig": {"Mode": "Disable"}})]
        found = checkpointing.read_service_account(cluster) if cluster.eks_name else None
        if found is not None and checkpointing.ours(found, cluster):
            changes.append(change("delete", "kubernetes", "ServiceAccount",
                                  f"{team_namespace(cluster.team)}/{checkpointing.SERVICE_ACCOUNT}"))
        return changes + role_delete(cluster, checkpointing.PURPOSE)
    percentage = change_.get("memory_percentage") or DEFAULT_MEMORY_PERCENTAGE
    return [*role_changes(cluster, checkpointing.role(cluster)),
            kubernetes_object("create", manifest(checkpointing.service_account_body(
                cluster, identity.role_arn(cluster, checkpointing.PURPOSE))), when="absent (else annotated)"),
            _update(cluster, {"TieredStorageConfig": checkpointing.tiered_storage(percentage)})]


def _autoscaling(cluster: Cluster, enabled: bool, change_: Params) -> list[Change]:
    described = mirror.describe(cluster) or {}
    if not enabled:
        left = autoscaling.our_objects(cluster) if cluster.eks_name else {}
        changes = [change("delete", "kubernetes", kind, name) for kind, plural in (
            ("NodePool", autoscaling.NODE_POOLS), (autoscaling.NODE_CLASS_KIND, autoscaling.NODE_CLASSES))
            for name in left.get(plural, [])]
        changes.append(_update(cluster, {"AutoScaling": {"Mode": "Disable"}}))
        return changes + role_delete(cluster, autoscaling.PURPOSE)
    changes = [*role_changes(cluster, autoscaling.role(cluster)),
               _update(cluster, autoscaling.enable_members(identity.role_arn(cluster, autoscaling.PURPOSE)))]
    for group, instance_type in autoscaling.groups(described):
        changes += [kubernetes_object("create", autoscaling.node_class(cluster, group)),
                    kubernetes_object("create", autoscaling.node_pool(cluster, group, instance_type))]
    return changes


def _load_balancer(cluster: Cluster, enabled: bool, change_: Params) -> list[Change]:
    linked = load_balancer.association(cluster)
    if not enabled:
        changes = [change("delete", "kubernetes", item["kind"], _kube_name(item))
                   for item in reversed(chart.manifests(cluster, chart.values(cluster)))]
        if linked is not None and owned_by(linked.get("tags"), cluster):
            changes.append(aws_call("delete", "EKS Pod Identity association", linked["associationId"],
                                    call="eks:DeletePodIdentityAssociation",
                                    request=load_balancer.delete_association_request(cluster, linked)))
        return changes + role_delete(cluster, load_balancer.PURPOSE)
    role_arn = identity.role_arn(cluster, load_balancer.PURPOSE)
    changes = role_changes(cluster, load_balancer.role(cluster))
    if linked is None:
        changes.append(aws_call("create", "EKS Pod Identity association",
                                f"{chart.NAMESPACE}/{chart.SERVICE_ACCOUNT}", call="eks:CreatePodIdentityAssociation",
                                request=load_balancer.association_request(cluster, role_arn)))
    return changes + [kubernetes_object("create", item, **({"data": "a new webhook certificate"}
                                                           if item["kind"] == "Secret" else {}))
                      for item in chart.manifests(cluster, chart.values(cluster))]


def _kube_name(item: dict[str, Any]) -> str:
    meta = item["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]


def _task_governance(cluster: Cluster, enabled: bool, change_: Params) -> list[Change]:
    addon = dependencies.describe_addon(cluster, task_governance.ADDON)
    if enabled:
        return [] if addon is not None else [aws_call(
            "create", "EKS add-on", task_governance.ADDON, call="eks:CreateAddon",
            request=task_governance.addon_request(cluster, token=TOKEN))]
    if addon is None or not owned_by(addon.get("tags"), cluster):
        return []
    return [aws_call("delete", "EKS add-on", task_governance.ADDON, call="eks:DeleteAddon",
                     request=dependencies.delete_addon_request(cluster, task_governance.ADDON))]


FEATURE_PLANS: dict[str, Callable[[Cluster, bool, Params], list[Change]]] = {
    TRAINING_OPERATOR: _training, INFERENCE_OPERATOR: _inference, OBSERVABILITY: _observability,
    TIERED_CHECKPOINTING: _checkpointing, AUTOSCALING: _autoscaling, LOAD_BALANCER_CONTROLLER: _load_balancer,
    TASK_GOVERNANCE: _task_governance}


def feature(slug: str) -> Callable[[Params], list[Change]]:
    """The plan of the phase of feature ``slug``: enabling or disabling it as ``params["changes"][slug]`` says."""

    def plan(params: Params) -> list[Change]:
        wanted = params["changes"][slug]
        return FEATURE_PLANS[slug](_cluster(params), bool(wanted["enabled"]), wanted)

    return plan


def prerequisites_plan(params: Params) -> list[Change]:
    """*prerequisites*: each absent component's pod identity role and ``CreateAddon``, requirements first."""
    cluster = _cluster(params)
    names = prerequisites.needed(slug for slug, wanted in params["changes"].items() if wanted["enabled"])
    seen = prerequisites.observe(cluster, names)
    changes: list[Change] = []
    for name in names:
        if seen[name].state != DependencyState.ABSENT:
            continue
        component = prerequisites.component(name)
        role_arn = ""
        if component.identity is not None:
            purpose = component.identity.purpose
            role_arn = identity.role_arn(cluster, purpose)
            name = iam_name(cluster, purpose)
            if find_role(aws.client("iam", region=cluster.region), name) is None:
                changes.append(aws_call("create", "IAM role", name, call="iam:CreateRole",
                                        request=create_role_request(
                                            cluster, purpose=purpose, trust=pod_identity.pod_identity_trust(cluster),
                                            description=pod_identity.role_description(cluster, component.identity))))
                changes += [aws_call("update", "IAM role policy", f"{name}/{policy}", call="iam:AttachRolePolicy",
                                     request={"RoleName": name,
                                              "PolicyArn": pod_identity.managed_policy_arn(cluster, policy)})
                            for policy in component.identity.managed_policies]
            if component.identity.policy is not None:
                changes.append(aws_call("update", "IAM role policy", f"{name}/{purpose}", call="iam:PutRolePolicy",
                                        request=inline_policy_request(name, purpose,
                                                                      component.identity.policy(cluster)),
                                        when="the role's policy differs"))
        changes.append(aws_call("create", "EKS add-on", name, call="eks:CreateAddon",
                                request=dependencies.addon_request(cluster, component, token=TOKEN,
                                                                   role_arn=role_arn)))
    return changes
