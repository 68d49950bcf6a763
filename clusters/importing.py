"""Import of an EKS cluster made outside InstantStart: the ``cluster.import`` pipeline.

The service (``clusters.services.cluster_import``) calls :func:`check_import`, writes the Cluster row
(``importing``, origin ``imported``) and starts the operation with params ``{"cluster_id", "region", "eks_name"}``.
Two phases follow:

*access*
    The control plane's own IAM principal gets an EKS access entry (type STANDARD) with
    ``AmazonEKSClusterAdminPolicy`` on the whole cluster, adopting an entry or association that is already there.
    The cluster must authenticate with access entries (``API`` or ``API_AND_CONFIG_MAP``); otherwise the phase fails
    with ``access_entries_disabled`` and says how to turn them on. The poll step waits until the Kubernetes API
    accepts the principal.
*discover*
    Only reads: EKS facts, the HyperPod cluster it orchestrates, the network (into ``NetworkPlan``/``Subnet``),
    the installed dependencies (``managed=False``; HyperPod's required chart components that are not there are
    recorded ``absent`` with what is missing, reported but not installed), the EKS managed node groups (named in
    the phase's log and reference; the node-group views read them live from EKS) and the S3/FSx PersistentVolumes
    (``StorageVolume`` rows, ``managed=False``). Re-running it records the same rows again.

Nothing of the user's is tagged or deleted. Cancelling removes only the access entry (or policy association)
the *access* phase itself created. ``on_finished`` moves the row to ``active`` or ``failed``.

Who may import what (the platform policy, docs/clusters.md "Who may import"): :func:`require_import_allowed`. A
cluster whose ownership tags give it to another team is never imported; platform admins import any other; team
admins only what one of their team's :class:`~clusters.models.ImportRule` rows allows.
"""

from __future__ import annotations

import fnmatch
import uuid
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

from botocore.client import BaseClient
from botocore.exceptions import ClientError
from django.db import transaction
from django.utils import timezone
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from accounts import access
from accounts.models import Team, User
from cloud import aws, kube
from clusters import dependencies, drift, ownership
from clusters.inspection import catalog, facts
from clusters.inspection.network import NetworkFacts, read_network
from clusters.inspection.volumes import FoundVolume, persistent_volumes
from clusters.instance_groups import mirror
from clusters.models import Cluster, ClusterState, ImportRule, NetworkPlan, StorageState, StorageVolume, Subnet
from clusters.node_groups import live as node_groups
from clusters.phases import lifecycle
from clusters.phases.common import cluster_of
from config.converters import database_id
from config.errors import PermissionDenied, ValidationFailed
from operations import demo
from operations.context import StepContext
from operations.models import Operation
from operations.pipeline import Phase, PhaseFailed, Pipeline, Progress

KIND = "cluster.import"
CLUSTER_ADMIN_POLICY = "arn:{partition}:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
ACCESS_ENTRY_MODES = frozenset({"API", "API_AND_CONFIG_MAP"})
#: The states an import may finish from (``failed`` when the operation was retried).


def access_entries_disabled(eks: facts.EksFacts, region: str) -> str:
    """The message that tells the user how to let InstantStart in."""
    return (f"EKS cluster {eks.name} authenticates with {eks.authentication_mode} only, so it accepts no access "
            f"entries. Turn them on (this keeps the aws-auth ConfigMap working) with `aws eks update-cluster-config "
            f"--region {region} --name {eks.name} --access-config authenticationMode=API_AND_CONFIG_MAP`, wait "
            f"until the cluster is ACTIVE again, then import it.")


def check_import(*, region: str, eks_name: str) -> facts.EksFacts:
    """Refuse, before anything is written, an import that cannot work: ``unknown_region``,
    ``eks_cluster_not_found``, ``eks_cluster_not_ready`` (not ACTIVE or UPDATING) or ``access_entries_disabled``."""
    if region not in catalog.regions():
        raise ValidationFailed.for_field("region", "unknown_region",
                                         f"{region} is not a region where SageMaker HyperPod runs.")
    eks = facts.eks_cluster(region, eks_name)
    if eks is None:
        raise ValidationFailed.for_field("eks_name", "eks_cluster_not_found",
                                         f"There is no EKS cluster {eks_name} in {region}.")
    if eks.status not in kube.SERVING_STATUSES:
        raise ValidationFailed.for_field("eks_name", "eks_cluster_not_ready",
                                         f"EKS cluster {eks_name} is {eks.status}; import it once it is ACTIVE.")
    if eks.authentication_mode not in ACCESS_ENTRY_MODES:
        raise ValidationFailed.for_field("eks_name", "access_entries_disabled", access_entries_disabled(eks, region))
    return eks


# who may import what ------------------------------------------------------------------------------------------


def claimed_team(tags: Mapping[str, str]) -> str | None:
    """The slug of the team our ownership tags give a cluster to: ``instantstart:team``, else the team of the
    operation ``instantstart:operation`` names (the sandbox demo's tag). ``""`` when the tags claim it for a team or
    operation this deployment does not know; ``None`` when they claim it for nobody."""
    if tags.get(ownership.TEAM_TAG):
        return tags[ownership.TEAM_TAG]
    operation_id = tags.get(demo.OWNER_TAG, "")
    if not operation_id:
        return None
    pk = database_id(operation_id)
    operation = Operation.objects.filter(pk=pk).select_related("team").first() if pk is not None else None
    return operation.team.slug if operation is not None and operation.team is not None else ""


def rule_matches(rule: ImportRule, *, region: str, name: str, tags: Mapping[str, str] | None) -> bool:
    """Does ``rule`` allow the EKS cluster ``name`` of ``region`` with ``tags``? ``tags`` ``None``: not read yet, so
    a tag condition counts as met (the check before any AWS call)."""
    if rule.region and rule.region != region:
        return False
    if rule.name_pattern and not fnmatch.fnmatchcase(name, rule.name_pattern):
        return False
    return not rule.tag_key or tags is None or tags.get(rule.tag_key) == rule.tag_value


def allowed_by_rules(rules: Iterable[ImportRule], *, region: str, name: str,
                     tags: Mapping[str, str] | None) -> bool:
    """Does one of ``rules`` allow the cluster (see :func:`rule_matches`)?"""
    return any(rule_matches(rule, region=region, name=name, tags=tags) for rule in rules)


def claimed_by_another_team(tags: Mapping[str, str], team: Team) -> bool:
    """Do the cluster's ownership tags give it to a team other than ``team``?"""
    claimed = claimed_team(tags)
    return claimed is not None and claimed != team.slug


def require_import_allowed(actor: User, team: Team, *, region: str, name: str,
                           tags: Mapping[str, str] | None) -> None:
    """Refuse an import the platform policy forbids (``tags`` ``None``: before the cluster was read, when only the
    name and region can be checked): ``cluster_owned_by_another_team`` (403) for a cluster whose ownership tags give
    it to another team — whoever asks; ``no_import_rule`` (403) for a team admin when none of the team's import
    rules allows it."""
    if tags is not None and claimed_by_another_team(tags, team):
        raise PermissionDenied(f"EKS cluster {name} carries InstantStart's ownership tags of another team; it "
                               f"cannot be imported into {team.name}.", code="cluster_owned_by_another_team")
    if access.can_administer_platform(actor):
        return
    if not allowed_by_rules(team.import_rules.all(), region=region, name=name, tags=tags):
        raise PermissionDenied(f"Team {team.name} may not import EKS cluster {name} of {region}: no import rule "
                               f"allows it. Ask a platform admin to add one (Clusters → Import → Import rules).",
                               code="no_import_rule")


def _eks(ctx: StepContext) -> facts.EksFacts:
    eks = facts.eks_cluster(ctx.region, ctx.params["eks_name"])
    if eks is None:
        raise PhaseFailed(f"There is no EKS cluster {ctx.params['eks_name']} in {ctx.region}.",
                          code="eks_cluster_not_found")
    return eks


# access ----------------------------------------------------------------------------------------------------------


def access_entry(client: BaseClient, eks_name: str, principal: str) -> dict | None:
    """The EKS access entry of ``principal`` on ``eks_name``, or ``None``."""
    try:
        return client.describe_access_entry(clusterName=eks_name, principalArn=principal)["accessEntry"]
    except ClientError as error:
        if aws.error_is(error, "ResourceNotFoundException"):
            return None
        raise


def cluster_admin_policy(region: str) -> str:
    return CLUSTER_ADMIN_POLICY.format(partition=aws.partition(region))


def has_cluster_admin(client: BaseClient, eks_name: str, principal: str, region: str) -> bool:
    """Whether ``principal`` has ``AmazonEKSClusterAdminPolicy`` on the whole of ``eks_name``."""
    pages = client.get_paginator("list_associated_access_policies").paginate(clusterName=eks_name,
                                                                             principalArn=principal)
    return any(policy["policyArn"] == cluster_admin_policy(region) and policy["accessScope"]["type"] == "cluster"
               for page in pages for policy in page["associatedAccessPolicies"])


def access_entry_request(eks_name: str, principal: str, token: str) -> dict[str, Any]:
    """The ``CreateAccessEntry`` the *access* phase sends when ``principal`` has no entry."""
    return {"clusterName": eks_name, "principalArn": principal, "type": "STANDARD", "clientRequestToken": token}


def admin_policy_request(eks_name: str, principal: str, region: str) -> dict[str, Any]:
    """The ``AssociateAccessPolicy`` the *access* phase sends when ``principal`` is not cluster admin yet."""
    return {"clusterName": eks_name, "principalArn": principal, "policyArn": cluster_admin_policy(region),
            "accessScope": {"type": "cluster"}}


def submit_access(ctx: StepContext) -> None:
    eks = _eks(ctx)
    if eks.authentication_mode not in ACCESS_ENTRY_MODES:
        raise PhaseFailed(access_entries_disabled(eks, ctx.region), code="access_entries_disabled",
                          detail={"authentication_mode": eks.authentication_mode})
    principal = ctx.intend("principal_arn", lambda: aws.principal_arn(region=ctx.region))
    # One token per run of the phase: a retry after the entry was removed must create it again, not replay.
    token = ctx.intend(f"client_request_token_{ctx.attempt}", lambda: str(uuid.uuid4()))
    client = ctx.client("eks")
    entry = access_entry(client, eks.name, principal)
    ctx.intend("creates_entry", lambda: entry is None)
    if entry is None:
        try:
            client.create_access_entry(**access_entry_request(eks.name, principal, token))
        except ClientError as error:
            if not aws.error_is(error, "ResourceInUseException"):
                raise
        ctx.log(f"Created an access entry for {principal} on {eks.name}.")
    else:
        ctx.log(f"{principal} already has an access entry on {eks.name}; adopting it.")
    associated = has_cluster_admin(client, eks.name, principal, ctx.region)
    ctx.intend("associates_policy", lambda: not associated)
    if not associated:
        client.associate_access_policy(**admin_policy_request(eks.name, principal, ctx.region))
        ctx.log(f"Associated AmazonEKSClusterAdminPolicy with {principal}.")
    ctx.record(principal_arn=principal, created_entry=ctx.intent["creates_entry"],
               associated_policy=ctx.intent["associates_policy"])
    cluster = cluster_of(ctx)
    cluster.details = {**cluster.details, "access_entry": {
        "principal_arn": principal, "created_by_import": ctx.intent["creates_entry"]}}
    cluster.save(update_fields=["details", "updated_at"])


def poll_access(ctx: StepContext) -> Progress:
    principal = ctx.intent["principal_arn"]
    client, name = ctx.client("eks"), ctx.params["eks_name"]
    if access_entry(client, name, principal) is None or not has_cluster_admin(client, name, principal, ctx.region):
        raise PhaseFailed(f"The access entry of {principal} disappeared.", code="resource_missing")
    try:
        k8s.CoreV1Api(kube.api_client(ctx.params["eks_name"], region=ctx.region)).list_namespace(limit=1)
    except ApiException as error:
        if error.status in (401, 403):
            return Progress.waiting("access entry not yet effective")
        raise
    return Progress.finished("granted")


def undo_access(ctx: StepContext) -> None:
    principal, name = ctx.intent.get("principal_arn"), ctx.params["eks_name"]
    if principal is None:
        return
    client = ctx.client("eks")
    try:
        if ctx.intent.get("creates_entry"):
            client.delete_access_entry(clusterName=name, principalArn=principal)
        elif ctx.intent.get("associates_policy"):
            client.disassociate_access_policy(clusterName=name, principalArn=principal,
                                              policyArn=cluster_admin_policy(ctx.region))
    except ClientError as error:
        if not aws.error_is(error, "ResourceNotFoundException"):
            raise


# discover --------------------------------------------------------------------------------------------------------


def record_network(cluster: Cluster, network: NetworkFacts, security_groups: dict[str, str]) -> None:
    """Write what EC2 says about the cluster's network into its ``NetworkPlan`` and ``Subnet`` rows (rows of
    subnets it no longer uses go)."""
    plan, _ = NetworkPlan.objects.update_or_create(cluster=cluster, defaults={
        "vpc_id": network.vpc_id, "vpc_cidr": network.vpc_cidr, "internet_gateway_id": network.internet_gateway_id,
        "nat_gateway_id": network.nat_gateway_id, "route_tables": network.route_tables,
        "security_groups": security_groups, "endpoints": network.endpoints})
    for subnet in network.subnets:
        Subnet.objects.update_or_create(network=plan, subnet_id=subnet.subnet_id, defaults={
            "role": subnet.role, "zone": subnet.zone, "zone_id": subnet.zone_id, "cidr": subnet.cidr})
    plan.subnets.exclude(subnet_id__in=[subnet.subnet_id for subnet in network.subnets]).delete()


def record_volumes(cluster: Cluster, found: list[FoundVolume]) -> list[str]:
    """Record each found PersistentVolume as an available, unmanaged ``StorageVolume`` named after it (a PV one of
    our own volumes already uses is skipped); the names recorded."""
    ours = set(cluster.volumes.filter(managed=True).exclude(state=StorageState.DELETED)
               .values_list("pv_name", flat=True))
    names = []
    for volume in found:
        if volume.pv_name in ours:
            continue
        name = volume.pv_name[:63]
        StorageVolume.objects.exclude(state=StorageState.DELETED).update_or_create(
            cluster=cluster, name=name,
            defaults={"team": cluster.team, "state": StorageState.AVAILABLE, "managed": False, "kind": volume.kind,
                      "bucket": volume.bucket, "prefix": volume.prefix,
                      "file_system_id": volume.file_system_id, "dns_name": volume.dns_name,
                      "mount_name": volume.mount_name, "capacity_gib": volume.capacity_gib,
                      "namespace": volume.namespace, "pv_name": volume.pv_name, "pvc_name": volume.pvc_name})
        names.append(name)
    return names


def _security_groups(eks: facts.EksFacts, hyperpod: facts.HyperPodFacts | None) -> dict[str, str]:
    groups = {"cluster": eks.cluster_security_group_id} if eks.cluster_security_group_id else {}
    groups.update((f"eks-{index}", group) for index, group in enumerate(eks.security_group_ids, 1))
    if hyperpod is not None:
        groups.update((f"hyperpod-{index}", group) for index, group in enumerate(hyperpod.security_group_ids, 1))
    return groups


def submit_discover(ctx: StepContext) -> None:
    cluster = cluster_of(ctx)
    eks = _eks(ctx)
    hyperpod = facts.hyperpod_orchestrated_by(ctx.region, eks.arn)
    network = read_network(ctx.region, eks.vpc_id, eks.subnet_ids, hyperpod.subnet_ids if hyperpod else ())
    found_volumes = persistent_volumes(eks.name, region=ctx.region)
    with transaction.atomic():
        drift.apply_eks(cluster, eks)
        if hyperpod is not None:
            drift.apply_hyperpod(cluster, hyperpod)
        cluster.refreshed_at = timezone.now()
        cluster.save(update_fields=drift.SAVED_FIELDS)
        if network is not None:
            record_network(cluster, network, _security_groups(eks, hyperpod))
        volumes = record_volumes(cluster, found_volumes)
    described = mirror.describe(cluster)
    if described is not None:
        mirror.mirror(cluster, described)
    observed = dependencies.observe(cluster, strict=True)
    found = [seen for seen in observed if seen.found]
    dependencies.record(cluster, found)
    missing = dependencies.report_required(cluster, observed)
    if missing:
        ctx.log(f"HyperPod's required dependencies not installed: {', '.join(missing)}.")
    ctx.record(eks_arn=eks.arn, hyperpod_arn=hyperpod.arn if hyperpod else "", vpc_id=eks.vpc_id,
               subnets=len(network.subnets) if network else 0, volumes=volumes)
    ctx.record(dependencies=[seen.component for seen in found])
    groups = node_groups.names(cluster, client=ctx.client("eks"))
    ctx.record(node_groups=groups)
    ctx.log(f"EKS {eks.name} {eks.version}; HyperPod {hyperpod.name if hyperpod else 'none'}; "
            f"{len(network.subnets) if network else 0} subnets; dependencies: "
            f"{', '.join(seen.component for seen in found) or 'none'}; node groups: {', '.join(groups) or 'none'}; "
            f"volumes: {', '.join(volumes) or 'none'}.")


def poll_discover(ctx: StepContext) -> Progress:
    return Progress.finished("discovered")


PIPELINE = Pipeline(
    kind=KIND,
    phases=(
        Phase("access", "Access entry", submit_access, poll_access, undo_access,
              timeout=timedelta(minutes=10), poll_interval=2),
        Phase("discover", "Discover", submit_discover, poll_discover, timeout=timedelta(minutes=10), poll_interval=1),
    ),
    on_finished=lifecycle.finished(ClusterState.IMPORTING, ClusterState.ACTIVE),
    on_retried=lifecycle.retried(ClusterState.IMPORTING),
)
