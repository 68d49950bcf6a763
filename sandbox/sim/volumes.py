"""PersistentVolumeClaims bind to PersistentVolumes, as the PV controller and CSI provisioners do.

A claim naming ``spec.volumeName`` binds to that volume; otherwise to the smallest Available volume of the
same storage class (``""`` for static volumes such as S3 Mountpoint ``s3.csi.aws.com`` or FSx
``fsx.csi.aws.com`` ones) with the requested access modes and at least the requested size. A claim of a
StorageClass (named, or the cluster's default) with no such volume gets one provisioned by the class's
provisioner — ``pvc-<claim uid>`` with the class's reclaim policy and parameters as CSI attributes — after
``PROVISION_SECONDS``, or once a pod uses it when the class says ``WaitForFirstConsumer``. Bound claims and
volumes are ``Bound`` and point at each other. New volumes are ``Available``; a bound volume whose claim is
deleted is ``Released`` (reclaim policy ``Retain``) or deleted (``Delete``).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from kubernetes.utils import parse_quantity

from sandbox import clock
from sandbox.sim import objects
from sandbox.sim.context import Context

PROVISION_SECONDS = 10.0
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
CONTROLLER = "volumes"


def _capacity(volume: dict[str, Any]) -> Decimal:
    return parse_quantity(((volume.get("spec") or {}).get("capacity") or {}).get("storage") or 0)


def _request(claim: dict[str, Any]) -> Decimal:
    return parse_quantity(((claim["spec"].get("resources") or {}).get("requests") or {}).get("storage") or 0)


def _class_of(claim: dict[str, Any], classes: dict[str, dict[str, Any]]) -> str:
    name = claim["spec"].get("storageClassName")
    if name is not None:
        return name
    default = next((c for c in classes.values() if objects.annotation(c, DEFAULT_CLASS) == "true"), None)
    return objects.name(default) if default else ""


def _matches(volume: dict[str, Any], claim: dict[str, Any], class_name: str) -> bool:
    spec = volume.get("spec") or {}
    return ((volume.get("status") or {}).get("phase") == "Available" and not spec.get("claimRef")
            and spec.get("storageClassName", "") == class_name
            and set(claim["spec"].get("accessModes") or []) <= set(spec.get("accessModes") or [])
            and _capacity(volume) >= _request(claim))


def _bind(ctx: Context, claim: dict[str, Any], volume: dict[str, Any], provisioned: bool) -> None:
    claim_ref = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "name": objects.name(claim),
                 "namespace": objects.namespace(claim), "uid": objects.uid(claim),
                 "resourceVersion": claim["metadata"].get("resourceVersion")}
    volume = ctx.store.update("persistentvolumes", {**volume, "spec": {**volume["spec"], "claimRef": claim_ref}})
    ctx.set_status("persistentvolumes", volume, {**(volume.get("status") or {}), "phase": "Bound"})
    annotations = {**(claim["metadata"].get("annotations") or {}), "pv.kubernetes.io/bind-completed": "yes"}
    if not claim["spec"].get("volumeName"):
        annotations["pv.kubernetes.io/bound-by-controller"] = "yes"
    if provisioned:
        annotations["volume.kubernetes.io/storage-provisioner"] = volume["spec"]["csi"]["driver"]
    claim = ctx.store.update("persistentvolumeclaims", {
        **claim, "metadata": {**claim["metadata"], "annotations": annotations},
        "spec": {**claim["spec"], "volumeName": objects.name(volume)}}, objects.namespace(claim))
    ctx.set_status("persistentvolumeclaims", claim, {
        "phase": "Bound", "accessModes": volume["spec"].get("accessModes") or [],
        "capacity": {"storage": (volume["spec"].get("capacity") or {}).get("storage", "0")}})


def _provision(ctx: Context, claim: dict[str, Any], storage_class: dict[str, Any]) -> dict[str, Any]:
    driver = storage_class.get("provisioner", "")
    volume = ctx.store.create("persistentvolumes", {
        "metadata": {"name": f"pvc-{objects.uid(claim)}", "annotations": {"pv.kubernetes.io/provisioned-by": driver}},
        "spec": {"capacity": {"storage": claim["spec"]["resources"]["requests"]["storage"]},
                 "accessModes": claim["spec"].get("accessModes") or ["ReadWriteOnce"],
                 "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy", "Delete"),
                 "storageClassName": objects.name(storage_class),
                 "mountOptions": storage_class.get("mountOptions") or [],
                 "volumeMode": claim["spec"].get("volumeMode", "Filesystem"),
                 "csi": {"driver": driver, "volumeHandle": f"{driver.split('.')[0]}-{objects.uid(claim)[:17]}",
                         "volumeAttributes": dict(storage_class.get("parameters") or {})}},
    })
    return ctx.set_status("persistentvolumes", volume, {"phase": "Available"})


def _used_by_pod(claim: dict[str, Any], all_pods: list[dict[str, Any]]) -> bool:
    return any(objects.namespace(pod) == objects.namespace(claim) and any(
        (volume.get("persistentVolumeClaim") or {}).get("claimName") == objects.name(claim)
        for volume in pod["spec"].get("volumes") or []) for pod in all_pods)


def _sync(ctx: Context, claim: dict[str, Any], volumes: list[dict[str, Any]], classes: dict[str, dict[str, Any]],
          all_pods: list[dict[str, Any]], memory: dict[str, Any]) -> None:
    wanted = claim["spec"].get("volumeName")
    if wanted:
        volume = next((v for v in volumes if objects.name(v) == wanted), None)
        if volume is not None and (volume["spec"].get("claimRef") or {}).get("uid") in (None, objects.uid(claim)):
            _bind(ctx, claim, volume, provisioned=False)
        return
    class_name = _class_of(claim, classes)
    candidates = sorted((v for v in volumes if _matches(v, claim, class_name)), key=_capacity)
    if candidates:
        _bind(ctx, claim, candidates[0], provisioned=False)
        volumes.remove(candidates[0])
        return
    storage_class = classes.get(class_name)
    if storage_class is None:
        return
    if storage_class.get("volumeBindingMode") == "WaitForFirstConsumer" and not _used_by_pod(claim, all_pods):
        return
    since = memory.setdefault(objects.uid(claim), {"since": ctx.now})["since"]
    if clock.due(since, PROVISION_SECONDS):
        _bind(ctx, claim, _provision(ctx, claim, storage_class), provisioned=True)


def _volume_phase(ctx: Context, volume: dict[str, Any], claim_uids: set[str]) -> None:
    """New volumes become Available; a bound volume whose claim is gone is Released, or deleted by its
    ``Delete`` reclaim policy."""
    phase = (volume.get("status") or {}).get("phase")
    claim_uid = (volume["spec"].get("claimRef") or {}).get("uid")
    if phase == "Pending" and not claim_uid:
        ctx.set_status("persistentvolumes", volume, {**(volume.get("status") or {}), "phase": "Available"})
    elif phase == "Bound" and claim_uid not in claim_uids:
        if volume["spec"].get("persistentVolumeReclaimPolicy") == "Delete":
            ctx.delete("persistentvolumes", volume)
        else:
            ctx.set_status("persistentvolumes", volume, {**(volume.get("status") or {}), "phase": "Released"})


def reconcile(ctx: Context) -> None:
    claims = ctx.list("persistentvolumeclaims")
    memory = ctx.remembered(CONTROLLER, claims)
    claim_uids = {objects.uid(claim) for claim in claims}
    for volume in ctx.list("persistentvolumes"):
        with ctx.guard(f"persistentvolume {objects.name(volume)}"):
            _volume_phase(ctx, volume, claim_uids)
    pending = [claim for claim in claims if (claim.get("status") or {}).get("phase") != "Bound"]
    if not pending:
        return
    volumes = ctx.list("persistentvolumes")
    classes = {objects.name(c): c for c in ctx.list("storageclasses")}
    all_pods = ctx.list("pods")
    for claim in pending:
        with ctx.guard(f"persistentvolumeclaim {objects.namespace(claim)}/{objects.name(claim)}"):
            _sync(ctx, claim, volumes, classes, all_pods, memory)
