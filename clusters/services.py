"""Cluster writes: create, import, refresh, delete (or forget), the active cluster, storage volumes.

Each service authorizes through ``accounts.access``, checks business rules *before* anything is written or sent to
AWS, writes inside one transaction with an audit row, and leaves long work to an operation enqueued on commit. A
cluster that an operation is changing (``creating``, ``importing``, ``deleting``, or a failed one whose operation
was retried) accepts no second create/import/delete.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts import access, audit
from accounts.models import Team, User
from clusters import actions, drift, importing, inspection, pipelines, preflight, storage, usage
from clusters.models import (
    ActiveCluster,
    Cluster,
    ClusterOrigin,
    ClusterState,
    ImportRule,
    StorageKind,
    StorageState,
    StorageVolume,
)
from clusters.ownership import team_namespace
from clusters.spec import ClusterSpec
from config.errors import Conflict, ValidationFailed
from operations import idempotency
from operations.models import ACTIVE_STATES, Operation
from operations.services import operation_start

CLUSTER_AUDIT_FIELDS = ("name", "region", "state", "origin")


def _name_taken(name: str) -> ValidationFailed:
    return ValidationFailed.for_field("name", "cluster_name_taken", f"Your team already has a cluster named {name}.")


def _snapshot(cluster: Cluster) -> dict:
    return {field: getattr(cluster, field) for field in CLUSTER_AUDIT_FIELDS}


def running_operation(cluster: Cluster) -> Operation | None:
    return Operation.objects.filter(target_type="cluster", target_id=str(cluster.pk),
                                    state__in=ACTIVE_STATES).order_by("-created_at").first()


def require_idle(cluster: Cluster) -> None:
    """``cluster_busy`` while an operation works on the cluster (or it is being created, imported or deleted)."""
    running = running_operation(cluster)
    if cluster.state in {ClusterState.CREATING, ClusterState.IMPORTING, ClusterState.DELETING} or running:
        what = f"operation {running.pk} ({running.kind}) is {running.state}" if running else f"it is {cluster.state}"
        raise Conflict(f"Cluster {cluster.name} is busy: {what}. Wait for it to finish or cancel it.",
                       code="cluster_busy")


def claim_idle(cluster: Cluster) -> None:
    """Inside the transaction that starts an operation on ``cluster``: lock its row, then :func:`require_idle` — so
    of two requests racing to change the cluster, the second waits for the first and then sees its operation."""
    require_idle(Cluster.objects.select_for_update().get(pk=cluster.pk))


def cluster_create(*, actor: User, team: Team, spec: ClusterSpec, source: str,
                   idempotency_key: str | None = None) -> tuple[Cluster, Operation]:
    """Check ``spec`` (preflight: names, zone, instance type, quota, training plan) and start ``cluster.create``.

    Nothing is written and nothing is sent to AWS when a check fails (``ValidationFailed`` with the failing
    fields, or what a capacity check of ``clusters.usage`` raises, such as ``budget_exceeded``). With an
    ``idempotency_key`` already used in the team, the first cluster and operation come back.
    """
    access.require(actor, actions.CLUSTER_CREATE, team)
    replayed = idempotency.replayed(team, idempotency_key)
    if replayed is not None:
        return Cluster.objects.get(pk=replayed.params["cluster_id"]), replayed
    usage.check_new_capacity(usage.NewCapacity(team=team, region=spec.region, instance_type=spec.instance_type,
                                               count=spec.instance_count, capacity_type=spec.capacity_type,
                                               what=f"cluster {spec.name}"))
    checked = preflight.check_create(team=team, spec=spec)
    params = spec.as_params()
    if checked.zone != spec.zone:
        params["zone"] = checked.zone
    try:
        with transaction.atomic():
            cluster = Cluster.objects.create(team=team, name=spec.name, region=spec.region, spec=params,
                                             state=ClusterState.CREATING, origin=ClusterOrigin.CREATED,
                                             created_by=actor, eks_name=spec.name)
            operation, _ = operation_start(
                actor=actor, team=team, kind=pipelines.CREATE_KIND, title=f"Create cluster {spec.name}",
                params={"cluster_id": cluster.pk, **params}, source=source, target=cluster,
                idempotency_key=idempotency_key)
            audit.record(actor=actor, source=source, action=actions.CLUSTER_CREATE, target=cluster, team=team,
                         after={**_snapshot(cluster), "spec": params})
    except IntegrityError:
        raise _name_taken(spec.name) from None
    return cluster, operation


def cluster_import(*, actor: User, team: Team, region: str, eks_name: str, source: str,
                   idempotency_key: str | None = None) -> tuple[Cluster, Operation]:
    """Start ``cluster.import`` for the EKS cluster ``eks_name`` (and the HyperPod cluster it orchestrates).

    The import grants the control plane access through an EKS access entry and records what it finds; it tags and
    deletes nothing. ``cluster_already_tracked`` when a live cluster of any team already tracks it. The platform
    policy (``importing.require_import_allowed``) is checked on the name and region before anything is read, then on
    the cluster's tags: ``no_import_rule`` for a team admin no import rule of the team allows,
    ``cluster_owned_by_another_team`` for a cluster tagged as another team's, whoever asks.
    """
    access.require(actor, actions.CLUSTER_IMPORT, team)
    replayed = idempotency.replayed(team, idempotency_key)
    if replayed is not None:
        return Cluster.objects.get(pk=replayed.params["cluster_id"]), replayed
    importing.require_import_allowed(actor, team, region=region, name=eks_name, tags=None)
    tracked = Cluster.objects.filter(region=region, eks_name=eks_name).exclude(state=ClusterState.DELETED).first()
    if tracked is not None:
        owner = "your team" if tracked.team_id == team.pk else "another team"
        raise ValidationFailed.for_field("eks_name", "cluster_already_tracked",
                                         f"EKS cluster {eks_name} in {region} is already managed by {owner}.")
    if Cluster.objects.filter(team=team, name=eks_name).exclude(state=ClusterState.DELETED).exists():
        raise _name_taken(eks_name)
    eks = importing.check_import(region=region, eks_name=eks_name)
    importing.require_import_allowed(actor, team, region=region, name=eks_name, tags=eks.tags)
    try:
        with transaction.atomic():
            cluster = Cluster.objects.create(team=team, name=eks_name, region=region, eks_name=eks_name,
                                             state=ClusterState.IMPORTING, origin=ClusterOrigin.IMPORTED,
                                             created_by=actor)
            operation, _ = operation_start(
                actor=actor, team=team, kind=importing.KIND, title=f"Import cluster {eks_name}",
                params={"cluster_id": cluster.pk, "region": region, "eks_name": eks_name}, source=source,
                target=cluster, idempotency_key=idempotency_key)
            audit.record(actor=actor, source=source, action=actions.CLUSTER_IMPORT, target=cluster, team=team,
                         after=_snapshot(cluster))
    except IntegrityError:
        raise _name_taken(eks_name) from None
    return cluster, operation


def cluster_refresh(*, actor: User, cluster: Cluster, source: str) -> list[drift.Difference]:
    """Re-read the cluster from AWS and Kubernetes, update the record and return what differed (also kept in
    ``cluster.drift``)."""
    access.require(actor, actions.CLUSTER_REFRESH, cluster)
    if cluster.state == ClusterState.DELETED:
        raise Conflict(f"Cluster {cluster.name} was deleted.", code="cluster_deleted")
    differences = drift.refresh(cluster)
    audit.record(actor=actor, source=source, action=actions.CLUSTER_REFRESH, target=cluster, team=cluster.team,
                 after={"drift": [difference.as_dict() for difference in differences]})
    return differences


def cluster_delete(*, actor: User, cluster: Cluster, confirm: str, delete_resources: bool, source: str,
                   idempotency_key: str | None = None) -> Operation | None:
    """Delete ``cluster`` (``confirm`` must repeat its name).

    A cluster InstantStart created is deleted by ``cluster.delete``, which removes only resources carrying our tags.
    An imported cluster is only forgotten (``None`` is returned, nothing is sent to AWS) unless
    ``delete_resources`` asks for its EKS and HyperPod clusters to be deleted too — AWS resources InstantStart did
    not create, so only a platform admin may ask (``permission_denied`` otherwise), with the same typed name. Refused
    with ``cluster_in_use`` (listing them) while jobs or endpoints run on it, ``cluster_has_dependents`` (listing
    them) while other apps keep something on it through its features (teams' compute quotas), and ``cluster_busy``
    while an operation changes it.
    """
    access.require(actor, actions.CLUSTER_DELETE, cluster)
    replayed = idempotency.replayed(cluster.team, idempotency_key)
    if replayed is not None:
        return replayed
    if cluster.state == ClusterState.DELETED:
        raise Conflict(f"Cluster {cluster.name} is already deleted.", code="cluster_deleted")
    if confirm != cluster.name:
        raise ValidationFailed.for_field("confirm", "confirmation_mismatch",
                                         f"Type the cluster's name ({cluster.name}) to confirm.")
    if cluster.origin == ClusterOrigin.IMPORTED and delete_resources:
        access.require_platform_admin(actor, f"Only platform admins delete the AWS resources of an imported cluster "
                                             f"(InstantStart did not create them); forget {cluster.name} instead.")
    require_idle(cluster)
    workloads = usage.workloads_on(cluster)
    if workloads:
        raise Conflict(f"Cluster {cluster.name} still runs {', '.join(workloads)}; stop them first.",
                       code="cluster_in_use")
    dependents = usage.dependents_on(cluster)
    if dependents:
        raise Conflict(f"Cluster {cluster.name} still has {', '.join(dependents)}; delete them first.",
                       code="cluster_has_dependents")
    before = _snapshot(cluster)
    with transaction.atomic():
        ActiveCluster.objects.filter(cluster=cluster).delete()
        if cluster.origin == ClusterOrigin.IMPORTED and not delete_resources:
            now = timezone.now()
            cluster.state, cluster.deleted_at = ClusterState.DELETED, now
            cluster.save(update_fields=["state", "deleted_at", "updated_at"])
            cluster.volumes.exclude(state=StorageState.DELETED).update(state=StorageState.DELETED, updated_at=now)
            audit.record(actor=actor, source=source, action=actions.CLUSTER_FORGET, target=cluster, team=cluster.team,
                         before=before, after=_snapshot(cluster))
            return None
        cluster.state = ClusterState.DELETING
        cluster.save(update_fields=["state", "updated_at"])
        operation, _ = operation_start(
            actor=actor, team=cluster.team, kind=pipelines.DELETE_KIND, title=f"Delete cluster {cluster.name}",
            params={"cluster_id": cluster.pk, "region": cluster.region, "name": cluster.name,
                    "imported": cluster.origin == ClusterOrigin.IMPORTED},
            source=source, target=cluster, idempotency_key=idempotency_key)
        audit.record(actor=actor, source=source, action=actions.CLUSTER_DELETE, target=cluster, team=cluster.team,
                     before=before, after={**_snapshot(cluster), "operation": operation.pk})
    return operation


def active_cluster_set(*, actor: User, cluster: Cluster, source: str) -> ActiveCluster:
    """Make ``cluster`` the actor's active cluster in its team — the default of portal pages and MCP tools. It
    changes only the actor's own choice."""
    access.require(actor, actions.CLUSTER_ACTIVATE, cluster)
    if cluster.state in {ClusterState.DELETING, ClusterState.DELETED}:
        raise Conflict(f"Cluster {cluster.name} is {cluster.state}.", code="cluster_deleted")
    with transaction.atomic():
        choice, _ = ActiveCluster.objects.update_or_create(user=actor, team=cluster.team,
                                                           defaults={"cluster": cluster})
        audit.record(actor=actor, source=source, action=actions.CLUSTER_ACTIVATE, target=cluster, team=cluster.team,
                     after={"active_cluster": cluster.pk})
    return choice


def volume_create(*, actor: User, cluster: Cluster, name: str, kind: str, source: str, bucket: str = "",
                  prefix: str = "", capacity_gib: int | None = None,
                  idempotency_key: str | None = None) -> tuple[StorageVolume, Operation]:
    """Add a volume to an active cluster: an S3 bucket (optionally a prefix) mounted through the Mountpoint S3 CSI
    driver, or a new FSx for Lustre file system of ``capacity_gib``; either becomes a PV/PVC named ``name`` in the
    team's namespace."""
    access.require(actor, actions.STORAGE_CREATE, cluster)
    replayed = idempotency.replayed(cluster.team, idempotency_key)
    if replayed is not None:
        return StorageVolume.objects.get(pk=replayed.params["volume_id"]), replayed
    if cluster.state != ClusterState.ACTIVE:
        raise Conflict(f"Cluster {cluster.name} is {cluster.state}; volumes are added to active clusters.",
                       code="cluster_not_active")
    if cluster.volumes.filter(name=name).exclude(state=StorageState.DELETED).exists():
        raise ValidationFailed.for_field("name", "volume_name_taken", f"Cluster {cluster.name} already has a "
                                         f"volume named {name}.")
    if kind == StorageKind.S3 and not bucket:
        raise ValidationFailed.for_field("bucket", "required", "Name the S3 bucket to mount.")
    if kind == StorageKind.S3:
        storage.check_s3_source(cluster, bucket, prefix)
    if kind == StorageKind.FSX and not capacity_gib:
        raise ValidationFailed.for_field("capacity_gib", "required", "Give the FSx for Lustre capacity in GiB.")
    namespace = team_namespace(cluster.team)
    try:
        with transaction.atomic():
            volume = StorageVolume.objects.create(
                cluster=cluster, team=cluster.team, name=name, kind=kind, bucket=bucket, prefix=prefix,
                capacity_gib=capacity_gib, namespace=namespace, pv_name=f"instantstart-{cluster.pk}-{name}",
                pvc_name=name, created_by=actor)
            operation, _ = operation_start(
                actor=actor, team=cluster.team, kind=storage.CREATE_KIND, title=f"Add volume {name} to {cluster.name}",
                params={"cluster_id": cluster.pk, "volume_id": volume.pk, "region": cluster.region},
                source=source, target=volume, idempotency_key=idempotency_key)
            audit.record(actor=actor, source=source, action=actions.STORAGE_CREATE, target=volume, team=cluster.team,
                         after={"name": name, "kind": kind, "bucket": bucket, "prefix": prefix,
                                "capacity_gib": capacity_gib})
    except IntegrityError:
        raise ValidationFailed.for_field("name", "volume_name_taken",
                                         f"Cluster {cluster.name} already has a volume named {name}.") from None
    return volume, operation


def volume_delete(*, actor: User, volume: StorageVolume, source: str,
                  idempotency_key: str | None = None) -> Operation:
    """Remove a volume's PV/PVC (and its FSx file system when InstantStart created it; never a bucket)."""
    access.require(actor, actions.STORAGE_DELETE, volume)
    replayed = idempotency.replayed(volume.team, idempotency_key)
    if replayed is not None:
        return replayed
    if volume.state in {StorageState.DELETING, StorageState.DELETED}:
        raise Conflict(f"Volume {volume.name} is already {volume.state}.", code="volume_deleted")
    if volume.state == StorageState.CREATING:
        raise Conflict(f"Volume {volume.name} is still being created.", code="volume_busy")
    with transaction.atomic():
        volume.state = StorageState.DELETING
        volume.save(update_fields=["state", "updated_at"])
        operation, _ = operation_start(
            actor=actor, team=volume.team, kind=storage.DELETE_KIND, title=f"Remove volume {volume.name}",
            params={"cluster_id": volume.cluster_id, "volume_id": volume.pk, "region": volume.cluster.region},
            source=source, target=volume, idempotency_key=idempotency_key)
        audit.record(actor=actor, source=source, action=actions.STORAGE_DELETE, target=volume, team=volume.team,
                     before={"name": volume.name, "kind": volume.kind}, after={"state": volume.state})
    return operation


IMPORT_RULE_AUDIT_FIELDS = ["region", "name_pattern", "tag_key", "tag_value"]
PLATFORM_ADMINS_SET_IMPORT_RULES = "Only platform admins set the teams' import rules."


def import_rule_create(*, actor: User, team: Team, region: str = "", name_pattern: str = "", tag_key: str = "",
                       tag_value: str = "", source: str) -> ImportRule:
    """Let ``team``'s admins import EKS clusters this rule matches (platform admins only). ``region`` must be a
    region (``unknown_region``); a rule names a pattern, a tag or both (``import_rule_empty`` on field
    ``name_pattern``)."""
    access.require(actor, actions.IMPORT_RULE_VIEW, team)
    access.require_platform_admin(actor, PLATFORM_ADMINS_SET_IMPORT_RULES)
    if region and region not in inspection.regions():
        raise ValidationFailed.for_field("region", "unknown_region", f"{region} is not a region.")
    if not name_pattern and not tag_key:
        raise ValidationFailed.for_field("name_pattern", "import_rule_empty",
                                         "Give a name pattern, a tag or both: a rule that names neither would allow "
                                         "every cluster (use the pattern * for that).")
    with transaction.atomic():
        rule = ImportRule.objects.create(team=team, region=region, name_pattern=name_pattern, tag_key=tag_key,
                                         tag_value=tag_value, created_by=actor)
        audit.record(actor=actor, source=source, action=actions.IMPORT_RULE_CREATE, target=rule, team=team,
                     after=audit.snapshot(rule, IMPORT_RULE_AUDIT_FIELDS))
    return rule


def import_rule_delete(*, actor: User, rule: ImportRule, source: str) -> None:
    """Remove an import rule (platform admins only); clusters already imported under it stay."""
    access.require(actor, actions.IMPORT_RULE_VIEW, rule)
    access.require_platform_admin(actor, PLATFORM_ADMINS_SET_IMPORT_RULES)
    with transaction.atomic():
        audit.record(actor=actor, source=source, action=actions.IMPORT_RULE_DELETE, target=rule, team=rule.team,
                     before=audit.snapshot(rule, IMPORT_RULE_AUDIT_FIELDS))
        rule.delete()
