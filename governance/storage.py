"""The team's shared volume in its task-governance namespace.

Queued workloads run in ``hyperpod-ns-<team>`` (the namespace task governance makes for a compute quota), and they
mount the team's ``shared`` claim as every workload does. Claims are namespaced, so once the quota is in force the
quota's *team-storage* phase gives that namespace a claim of the same name on the same storage: a second static
PersistentVolume (the shared volume's, renamed ``<pv>-gov``, pre-bound to the new claim; an S3 volume's handle gets the
same suffix, as each PV's must be unique) and its claim, labelled as the volume's. Another team's quota gets the
cluster's shared S3 volume at that team's prefix. Deleting the quota deletes that claim and PV again
(:func:`remove_claim`): task governance leaves the namespace, and a static PV would outlive it.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from clusters import storage
from clusters.models import StorageKind, StorageState, StorageVolume
from clusters.shared_bucket import team_prefix
from governance.models import ComputeQuota
from governance.names import team_namespace


def shared_volume(quota: ComputeQuota) -> StorageVolume | None:
    """What the quota's team mounts as ``shared`` on the cluster: the cluster team's shared volume, and for another
    team the same S3 bucket at that team's prefix (an unsaved copy; ``None`` when the cluster has no shared S3 volume
    yet)."""
    volume = StorageVolume.objects.select_related("cluster", "cluster__team").filter(
        cluster=quota.cluster, shared=True, state=StorageState.AVAILABLE).first()
    if volume is None or quota.for_team_id == quota.cluster.team_id:
        return volume
    if volume.kind != StorageKind.S3:
        return None
    volume.prefix = team_prefix(quota.for_team.slug).rstrip("/")
    return volume


def objects(volume: StorageVolume, namespace: str) -> tuple[k8s.V1PersistentVolume, k8s.V1PersistentVolumeClaim]:
    """The PV and claim of ``volume`` in ``namespace``, built from the volume's own (``clusters.storage``): the PV
    named after the namespace, an S3 volume's handle too (each PV's must be unique)."""
    volume_object = storage.persistent_volume(volume)
    claim = storage.persistent_volume_claim(volume)
    meta, spec, claim_meta, claim_spec = volume_object.metadata, volume_object.spec, claim.metadata, claim.spec
    assert meta and spec and spec.claim_ref and spec.csi and claim_meta and claim_spec  # the builders set them all
    meta.name = f"instantstart-{volume.cluster_id}-{namespace}"  # what claim_pv_name names
    spec.claim_ref.namespace = namespace
    if spec.csi.driver == storage.S3_DRIVER:
        spec.csi.volume_handle = f"{spec.csi.volume_handle}-{namespace}"
    claim_meta.namespace = namespace
    claim_spec.volume_name = meta.name
    return volume_object, claim


def _create(create, body: Any) -> None:
    try:
        create(body)
    except ApiException as error:
        if error.status != 409:
            raise


def ensure_claim(quota: ComputeQuota) -> str:
    """Make the shared claim in the quota's namespace; returns its phase (``""``: nothing to do, ``waiting``: the
    namespace is not there yet)."""
    volume = shared_volume(quota)
    if volume is None:
        return ""
    namespace = team_namespace(quota.for_team)
    core = storage.core_api(quota.cluster)
    try:
        core.read_namespace(namespace)
    except ApiException as error:
        if error.status == 404:
            return "waiting"
        raise
    volume_object, claim = objects(volume, namespace)
    _create(core.create_persistent_volume, volume_object)
    _create(lambda body: core.create_namespaced_persistent_volume_claim(namespace, body), claim)
    found = core.read_namespaced_persistent_volume_claim(volume.pvc_name, namespace)
    return (found.status.phase if found.status else "") or "Pending"


def claim_pv_name(quota: ComputeQuota) -> str:
    """The name of the PV :func:`ensure_claim` makes for ``quota``'s namespace (:func:`objects`)."""
    return f"instantstart-{quota.cluster_id}-{team_namespace(quota.for_team)}"


def remove_claim(quota: ComputeQuota) -> list[str]:
    """Delete the PV :func:`ensure_claim` made for ``quota`` (found by its name, ours by construction) and the claim
    it is bound to in the quota's namespace; what it deleted (``[]`` when neither is there). Kubernetes removes them
    once no pod uses the claim (its ``pvc-protection`` finalizer); the data behind them is not touched (a static
    PV's reclaim policy is ``Retain``). The API server answers these deletes with a Status, not the object the
    client's models expect: the answers are read raw and dropped."""
    core = storage.core_api(quota.cluster)
    namespace = team_namespace(quota.for_team)
    try:
        volume_object = core.read_persistent_volume(claim_pv_name(quota))
    except ApiException as error:
        if error.status == 404:
            return []
        raise
    deleted = []
    claim = volume_object.spec.claim_ref if volume_object.spec else None
    if claim is not None and claim.namespace == namespace and claim.name:
        try:
            core.delete_namespaced_persistent_volume_claim(claim.name, namespace,
                                                           _preload_content=False).read()  # type: ignore[attr-defined]
            deleted.append(f"PersistentVolumeClaim {namespace}/{claim.name}")
        except ApiException as error:
            if error.status != 404:
                raise
    try:
        core.delete_persistent_volume(claim_pv_name(quota), _preload_content=False).read()  # type: ignore[attr-defined]
        deleted.append(f"PersistentVolume {claim_pv_name(quota)}")
    except ApiException as error:
        if error.status != 404:
            raise
    return deleted
