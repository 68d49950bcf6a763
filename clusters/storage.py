"""Storage volumes: the PersistentVolume/PersistentVolumeClaim builders and the per-volume steps the
*storage* phase of the cluster pipelines and the ``storage.create`` / ``storage.delete`` pipelines share.

A :class:`StorageVolume` is exposed to the team's pods as a statically provisioned PV (cluster-scoped, named
``instantstart-<cluster id>-<volume name>``, pre-bound to its claim, reclaim policy ``Retain`` so Kubernetes never
touches the data) and a PVC of the volume's name in the team namespace:

- **S3** through the Mountpoint S3 CSI driver (``s3.csi.aws.com``): ``volumeAttributes.bucketName``, and mount
  options ``allow-delete``, ``allow-other`` (pods running as non-root users), ``region <region>`` and, for a
  prefix, ``prefix <prefix>/``. The driver only mounts existing buckets: a bucket the team names must exist.
- **FSx for Lustre** through the FSx CSI driver (``fsx.csi.aws.com``): ``volumeHandle`` = file system id,
  ``volumeAttributes`` ``dnsname`` and ``mountname``. New file systems are ``PERSISTENT_2`` at 125 MB/s/TiB: a
  training cluster lives for weeks and keeps checkpoints on it, and persistent deployments replicate data within
  the zone and survive a file server's failure, which scratch ones do not (their data is lost). They go in the
  cluster's compute subnet (same zone as the accelerated instances) with the cluster security group, whose
  self-referencing rule opens Lustre's ports (988, 1018–1023) to the nodes. ``ClientRequestToken`` (persisted as
  phase intent first) makes ``CreateFileSystem`` exactly-once.

Deleting a volume removes its PVC and PV (only objects labelled as ours for the cluster), and its file system only
when InstantStart created it (``managed``) and its tags say it belongs to the cluster; a bucket is never deleted.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from botocore.exceptions import ClientError
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from cloud import aws, kube
from clusters.models import Cluster, StorageKind, StorageState, StorageVolume, Subnet, SubnetRole
from clusters.ownership import CLUSTER_LABEL, as_tag_list, aws_tags, kube_labels, owned_by, team_namespace
from clusters.phases.common import cluster_of
from clusters.shared_bucket import configured_bucket, shared_bucket_name, team_prefix
from config.errors import ApplicationError, Conflict, ValidationFailed
from operations.context import StepContext
from operations.models import Operation, OperationState
from operations.pipeline import Phase, PhaseFailed, Pipeline, Progress

S3_DRIVER = "s3.csi.aws.com"
FSX_DRIVER = "fsx.csi.aws.com"
#: Mountpoint ignores a PV's capacity, but Kubernetes requires one (and the claim's request must fit in it).
S3_NOMINAL_CAPACITY = "1200Gi"
FSX_DEPLOYMENT_TYPE = "PERSISTENT_2"
FSX_THROUGHPUT_MBPS_PER_TIB = 125
#: The largest file system InstantStart asks for: the account's default FSx for Lustre storage quota, which is also
#: the largest ``SizeInGiB`` SageMaker HyperPod takes for a cluster's Lustre file system (``FSxLustreConfig``).
#: FSx answers a larger request with ``ServiceLimitExceeded`` only after the volume was recorded, so it is refused
#: before anything is created.
FSX_MAX_CAPACITY_GIB = 100_800
VOLUME_LABEL = "instantstart.io/volume"
CREATE_KIND = "storage.create"
DELETE_KIND = "storage.delete"
_FSX_GONE = "gone"


def fsx_capacity_error(capacity_gib: int) -> str | None:
    """Why FSx would refuse ``capacity_gib`` for a PERSISTENT_2 file system, or ``None`` when it is valid."""
    if capacity_gib > FSX_MAX_CAPACITY_GIB:
        return f"FSx for Lustre file systems are at most {FSX_MAX_CAPACITY_GIB} GiB; {capacity_gib} GiB is more."
    if capacity_gib in (1200, 2400) or (capacity_gib > 0 and capacity_gib % 2400 == 0):
        return None
    return f"FSx for Lustre takes 1200, 2400 or a multiple of 2400 GiB; {capacity_gib} GiB is not one of them."


def check_s3_source(cluster: Cluster, bucket: str, prefix: str) -> None:
    """Refuse an S3 volume that would mount more of the shared bucket than the cluster team's own folder
    (``teams/<slug>/``): another team's data, the whole bucket or the clusters' lifecycle scripts. ``prefix`` is
    the mounted key prefix; ``..`` or empty segments are refused wherever they point. Other buckets are the team's
    own business (their IAM policy decides what the nodes may read)."""
    shared = bucket.startswith("instantstart-shared-") or bucket == configured_bucket()
    if not shared or bucket != shared_bucket_name(cluster.region):
        return
    own = team_prefix(cluster.team.slug)
    segments = prefix.strip("/").split("/")
    if not (prefix.rstrip("/") + "/").startswith(own) or any(part in ("", ".", "..") for part in segments):
        raise ValidationFailed.for_field(
            "prefix", "path_outside_shared_bucket",
            f"In the shared bucket {bucket} a volume mounts the team's own folder {own} or a folder under it.")


def volume_object_names(cluster: Cluster, name: str) -> tuple[str, str]:
    """The PV and PVC names of ``cluster``'s volume ``name``: the PV is cluster-scoped and says whose it is; the
    claim, in the team namespace, is what pods mount and is called like the volume."""
    return f"instantstart-{cluster.pk}-{name}", name


def core_api(cluster: Cluster) -> k8s.CoreV1Api:
    return k8s.CoreV1Api(kube.api_client(cluster.eks_name, region=cluster.region))


# Manifests ---------------------------------------------------------------------------------------------------------


def _labels(volume: StorageVolume) -> dict[str, str]:
    return {**kube_labels(volume.cluster), VOLUME_LABEL: str(volume.pk)}


def _csi_source(volume: StorageVolume) -> tuple[k8s.V1CSIPersistentVolumeSource, list[str], str]:
    if volume.kind == StorageKind.S3:
        options = ["allow-delete", "allow-other", f"region {volume.cluster.region}"]
        if volume.prefix:
            options.append(f"prefix {volume.prefix.rstrip('/')}/")
        source = k8s.V1CSIPersistentVolumeSource(driver=S3_DRIVER, volume_handle=f"instantstart-{volume.pk}",
                                                 volume_attributes={"bucketName": volume.bucket})
        return source, options, S3_NOMINAL_CAPACITY
    source = k8s.V1CSIPersistentVolumeSource(driver=FSX_DRIVER, volume_handle=volume.file_system_id,
                                             volume_attributes={"dnsname": volume.dns_name,
                                                                "mountname": volume.mount_name})
    return source, ["flock"], f"{volume.capacity_gib}Gi"


def persistent_volume(volume: StorageVolume) -> k8s.V1PersistentVolume:
    """The static PV of ``volume``, pre-bound to its claim (no other claim can take it)."""
    source, options, capacity = _csi_source(volume)
    return k8s.V1PersistentVolume(
        api_version="v1", kind="PersistentVolume",
        metadata=k8s.V1ObjectMeta(name=volume.pv_name, labels=_labels(volume)),
        spec=k8s.V1PersistentVolumeSpec(
            capacity={"storage": capacity}, access_modes=["ReadWriteMany"], persistent_volume_reclaim_policy="Retain",
            storage_class_name="", mount_options=options, volume_mode="Filesystem", csi=source,
            claim_ref=k8s.V1ObjectReference(api_version="v1", kind="PersistentVolumeClaim",
                                            namespace=volume.namespace, name=volume.pvc_name)))


def persistent_volume_claim(volume: StorageVolume) -> k8s.V1PersistentVolumeClaim:
    """The claim of ``volume`` in its namespace, bound to its PV by ``volumeName``."""
    _, _, capacity = _csi_source(volume)
    return k8s.V1PersistentVolumeClaim(
        api_version="v1", kind="PersistentVolumeClaim",
        metadata=k8s.V1ObjectMeta(name=volume.pvc_name, namespace=volume.namespace, labels=_labels(volume)),
        spec=k8s.V1PersistentVolumeClaimSpec(
            access_modes=["ReadWriteMany"], storage_class_name="", volume_name=volume.pv_name,
            volume_mode="Filesystem", resources=k8s.V1VolumeResourceRequirements(requests={"storage": capacity})))


# Kubernetes steps --------------------------------------------------------------------------------------------------


def namespace_exists(cluster: Cluster, namespace: str) -> bool:
    """Whether ``namespace`` exists on the cluster (a task-governance namespace appears once its quota is in force)."""
    try:
        core_api(cluster).read_namespace(namespace)
    except ApiException as error:
        if error.status == 404:
            return False
        raise
    return True


def ensure_namespace(core: k8s.CoreV1Api, cluster: Cluster) -> str:
    """The team namespace on the cluster, created (labelled as ours) when missing."""
    name = team_namespace(cluster.team)
    try:
        core.read_namespace(name)
    except ApiException as error:
        if error.status != 404:
            raise
        body = k8s.V1Namespace(api_version="v1", kind="Namespace",
                               metadata=k8s.V1ObjectMeta(name=name, labels=kube_labels(cluster)))
        try:
            core.create_namespace(body)
        except ApiException as conflict:
            if conflict.status != 409:
                raise
    return name


def _ours(labels: dict | None, volume: StorageVolume) -> bool:
    return (labels or {}).get(CLUSTER_LABEL) == str(volume.cluster_id) and (labels or {}).get(
        VOLUME_LABEL) == str(volume.pk)


def _create_or_adopt(create, read, body, volume: StorageVolume, what: str) -> None:
    """Create ``body`` unless it exists; an existing object must be this volume's (else ``volume_name_taken``)."""
    try:
        found = read()
    except ApiException as error:
        if error.status != 404:
            raise
        try:
            create(body)
            return
        except ApiException as conflict:
            if conflict.status != 409:
                raise
            found = read()
    if not _ours(found.metadata.labels, volume):
        raise PhaseFailed(f"A {what} named {body.metadata.name} already exists and is not this volume's.",
                          code="volume_name_taken")


def apply_volume(core: k8s.CoreV1Api, volume: StorageVolume) -> None:
    """Create the volume's PV and PVC, adopting ones an earlier run created."""
    _create_or_adopt(core.create_persistent_volume, lambda: core.read_persistent_volume(volume.pv_name),
                     persistent_volume(volume), volume, "PersistentVolume")
    _create_or_adopt(lambda body: core.create_namespaced_persistent_volume_claim(volume.namespace, body),
                     lambda: core.read_namespaced_persistent_volume_claim(volume.pvc_name, volume.namespace),
                     persistent_volume_claim(volume), volume, "PersistentVolumeClaim")


def claim_phase(core: k8s.CoreV1Api, volume: StorageVolume) -> str:
    """The claim's phase (``Pending``, ``Bound``, ``Lost``), or ``""`` when it does not exist."""
    try:
        claim = core.read_namespaced_persistent_volume_claim(volume.pvc_name, volume.namespace)
    except ApiException as error:
        if error.status == 404:
            return ""
        raise
    return (claim.status.phase if claim.status else "") or "Pending"


def remove_volume_objects(core: k8s.CoreV1Api, volume: StorageVolume) -> bool:
    """Delete the volume's PVC, then its PV — each only when labelled as ours; True once neither exists."""
    # The API server answers these deletes with a Status, not the object the client's models expect: the answer is
    # read raw and dropped.
    steps = ((lambda: core.read_namespaced_persistent_volume_claim(volume.pvc_name, volume.namespace),
              lambda: core.delete_namespaced_persistent_volume_claim(volume.pvc_name, volume.namespace,
                                                                     _preload_content=False).read()),  # type: ignore[attr-defined]
             (lambda: core.read_persistent_volume(volume.pv_name),
              lambda: core.delete_persistent_volume(volume.pv_name,
                                                    _preload_content=False).read()))  # type: ignore[attr-defined]
    gone = True
    for read, delete in steps:
        try:
            found = read()
            if not _ours(found.metadata.labels if found.metadata else None, volume):
                continue
            delete()
            gone = False
        except ApiException as error:
            if error.status != 404:
                raise
    return gone


# FSx steps ---------------------------------------------------------------------------------------------------------


def fsx_placement(cluster: Cluster) -> tuple[str, list[str]]:
    """The subnet (the compute subnet of the cluster's zone, else a private one there) and security groups a new
    file system of ``cluster`` goes in."""
    network = cluster.network
    zone = cluster.spec.get("zone", "")
    subnets = list(Subnet.objects.filter(network=network, role__in=[SubnetRole.COMPUTE, SubnetRole.PRIVATE]))
    subnets.sort(key=lambda subnet: (subnet.role != SubnetRole.COMPUTE, subnet.zone != zone, subnet.subnet_id))
    if not subnets or not network.security_groups.get("cluster"):
        raise PhaseFailed(f"Cluster {cluster.name} has no compute subnet or security group on record for FSx.",
                          code="network_incomplete")
    return subnets[0].subnet_id, [network.security_groups["cluster"]]


def describe_file_system(fsx, file_system_id: str) -> dict | None:
    try:
        return fsx.describe_file_systems(FileSystemIds=[file_system_id])["FileSystems"][0]
    except ClientError as error:
        if aws.error_is(error, "FileSystemNotFound"):
            return None
        raise


def file_system_request(volume: StorageVolume, token: str) -> dict[str, Any]:
    """The parameters of the ``CreateFileSystem`` that makes ``volume``'s new file system (``token`` its
    ``ClientRequestToken``): in the cluster's compute subnet (:func:`fsx_placement`), tagged as ours."""
    subnet_id, security_groups = fsx_placement(volume.cluster)
    return {"ClientRequestToken": token, "FileSystemType": "LUSTRE", "StorageCapacity": volume.capacity_gib,
            "StorageType": "SSD", "SubnetIds": [subnet_id], "SecurityGroupIds": security_groups,
            "LustreConfiguration": {"DeploymentType": FSX_DEPLOYMENT_TYPE,
                                    "PerUnitStorageThroughput": FSX_THROUGHPUT_MBPS_PER_TIB,
                                    "DataCompressionType": "LZ4"},
            "Tags": as_tag_list({**aws_tags(volume.cluster, "fsx"), "Name": f"{volume.cluster.name}-{volume.name}"})}


def _submit_file_system(ctx: StepContext, volume: StorageVolume) -> None:
    if volume.file_system_id:
        return
    token = ctx.intend(f"fsx_token_{volume.pk}", lambda: str(uuid.uuid4()))
    request = file_system_request(volume, token)
    created = ctx.client("fsx").create_file_system(**request)["FileSystem"]
    volume.file_system_id = created["FileSystemId"]
    volume.save(update_fields=["file_system_id", "updated_at"])
    ctx.log(f"FSx for Lustre file system {volume.file_system_id} ({volume.capacity_gib} GiB, "
            f"{FSX_DEPLOYMENT_TYPE}) requested in {request['SubnetIds'][0]}.")


def _file_system_ready(ctx: StepContext, volume: StorageVolume) -> Progress | None:
    """``None`` once the file system is AVAILABLE (its DNS and mount names recorded), else what to report."""
    described = describe_file_system(ctx.client("fsx"), volume.file_system_id)
    if described is None:
        raise PhaseFailed(f"The file system {volume.file_system_id} disappeared.", code="resource_missing")
    state = described["Lifecycle"]
    if state in ("FAILED", "MISCONFIGURED"):
        reason = (described.get("FailureDetails") or {}).get("Message") or state
        raise PhaseFailed(f"The file system {volume.file_system_id} failed: {reason}", code="fsx_failed",
                          detail={"status": state, "message": reason})
    if state != "AVAILABLE":
        return Progress.waiting(f"fsx {state}")
    if not volume.dns_name:
        volume.dns_name = described["DNSName"]
        volume.mount_name = described["LustreConfiguration"]["MountName"]
        volume.save(update_fields=["dns_name", "mount_name", "updated_at"])
    return None


def file_system_delete_request(volume: StorageVolume) -> dict[str, Any]:
    """The parameters of the ``DeleteFileSystem`` that deletes ``volume``'s file system."""
    return {"FileSystemId": volume.file_system_id}


def _delete_file_system(ctx: StepContext, volume: StorageVolume) -> str:
    """Delete the volume's file system when it is ours; its state, or ``gone``."""
    fsx = ctx.client("fsx")
    described = describe_file_system(fsx, volume.file_system_id) if volume.file_system_id else None
    if described is None:
        return _FSX_GONE
    if not volume.managed or not owned_by(described.get("Tags"), volume.cluster):
        ctx.log(f"File system {volume.file_system_id} is not ours to delete; leaving it.")
        return _FSX_GONE
    if described["Lifecycle"] in ("AVAILABLE", "FAILED", "MISCONFIGURED"):
        fsx.delete_file_system(**file_system_delete_request(volume))
        return "DELETING"
    return described["Lifecycle"]


# Per-volume steps --------------------------------------------------------------------------------------------------


def submit_volume(ctx: StepContext, volume: StorageVolume, core: k8s.CoreV1Api) -> None:
    """Start building ``volume``: its PV and PVC for a bucket, ``CreateFileSystem`` for a new FSx file system."""
    if volume.kind == StorageKind.FSX:
        _submit_file_system(ctx, volume)
    else:
        apply_volume(core, volume)


def poll_volume(ctx: StepContext, volume: StorageVolume, core: k8s.CoreV1Api) -> Progress:
    """Advance ``volume`` to ``available``: its file system AVAILABLE, then its PV/PVC applied and the claim Bound."""
    if volume.kind == StorageKind.FSX:
        waiting = _file_system_ready(ctx, volume)
        if waiting is not None:
            return waiting
    apply_volume(core, volume)
    phase = claim_phase(core, volume)
    if phase != "Bound":
        return Progress.waiting(f"{volume.name} {phase or 'claim missing'}")
    if volume.state != StorageState.AVAILABLE:
        volume.state, volume.last_error = StorageState.AVAILABLE, ""
        volume.save(update_fields=["state", "last_error", "updated_at"])
        ctx.log(f"Volume {volume.name} is bound: claim {volume.namespace}/{volume.pvc_name}.")
    return Progress.finished("Bound")


def delete_volume(ctx: StepContext, volume: StorageVolume, core: k8s.CoreV1Api | None) -> Progress:
    """Remove ``volume``'s PVC/PV and (ours only) its file system; ``deleted`` once nothing is left."""
    if volume.state != StorageState.DELETING:
        volume.state = StorageState.DELETING
        volume.save(update_fields=["state", "updated_at"])
    objects_gone = core is None or remove_volume_objects(core, volume)
    fsx_state = _delete_file_system(ctx, volume) if volume.kind == StorageKind.FSX else _FSX_GONE
    if not objects_gone or fsx_state != _FSX_GONE:
        return Progress.waiting(f"{volume.name} {fsx_state if fsx_state != _FSX_GONE else 'objects'}")
    volume.state = StorageState.DELETED
    volume.save(update_fields=["state", "updated_at"])
    ctx.log(f"Volume {volume.name} deleted.")
    return Progress.finished("deleted")


def reachable_core_api(cluster: Cluster) -> k8s.CoreV1Api | None:
    """The cluster's Kubernetes API, or ``None`` when its EKS cluster is gone (its objects went with it)."""
    if not cluster.eks_name:
        return None
    try:
        return core_api(cluster)
    except ApplicationError as error:
        if error.code == "cloud_not_found":
            return None
        raise


# The storage.create / storage.delete pipelines ---------------------------------------------------------------------


def _volume_of(ctx: StepContext) -> StorageVolume:
    return StorageVolume.objects.select_related("cluster__team", "cluster__network").get(
        pk=ctx.params["volume_id"], cluster_id=ctx.params["cluster_id"])


def _submit_create(ctx: StepContext) -> None:
    volume = _volume_of(ctx)
    if volume.kind == StorageKind.S3 and volume.managed:
        try:
            ctx.client("s3").head_bucket(Bucket=volume.bucket)
        except ClientError as error:
            if aws.error_is(error, "404", "NoSuchBucket", "NotFound"):
                raise PhaseFailed(f"The bucket {volume.bucket} does not exist.", code="bucket_not_found") from error
            raise
    submit_volume(ctx, volume, core_api(cluster_of(ctx)))


def _poll_create(ctx: StepContext) -> Progress:
    return poll_volume(ctx, _volume_of(ctx), core_api(cluster_of(ctx)))


def _submit_delete(ctx: StepContext) -> None:
    volume = _volume_of(ctx)
    delete_volume(ctx, volume, reachable_core_api(volume.cluster))


def _poll_delete(ctx: StepContext) -> Progress:
    volume = _volume_of(ctx)
    if volume.state == StorageState.DELETED:
        return Progress.finished("deleted")
    return delete_volume(ctx, volume, reachable_core_api(volume.cluster))


def _volume_finished(operation: Operation) -> None:
    """A failed create or delete leaves the volume ``failed`` with the operation's error."""
    if operation.state != OperationState.SUCCEEDED:
        StorageVolume.objects.filter(pk=operation.params["volume_id"]).exclude(state=StorageState.DELETED).update(
            state=StorageState.FAILED, last_error=operation.error_message or operation.state)


def _volume_retried(working: StorageState):
    """A retried create or delete makes the failed volume ``working`` again (refused unless it is ``failed``)."""

    def update(operation: Operation) -> None:
        volume = StorageVolume.objects.select_for_update().get(pk=operation.params["volume_id"])
        if volume.state != StorageState.FAILED:
            raise Conflict(f"Volume {volume.name} is {volume.state}; this operation cannot resume.",
                           code="volume_busy")
        volume.state, volume.last_error = working, ""
        volume.save(update_fields=["state", "last_error", "updated_at"])

    return update


CREATE = Pipeline(kind=CREATE_KIND, on_finished=_volume_finished,
                           on_retried=_volume_retried(StorageState.CREATING), phases=(
    Phase(slug="volume", title="Volume", submit=_submit_create, poll=_poll_create, timeout=timedelta(hours=1),
          poll_interval=10),))
DELETE = Pipeline(kind=DELETE_KIND, on_finished=_volume_finished,
                           on_retried=_volume_retried(StorageState.DELETING), phases=(
    Phase(slug="volume", title="Volume", submit=_submit_delete, poll=_poll_delete, timeout=timedelta(hours=1),
          poll_interval=10),))
