"""Volumes already on a cluster: PersistentVolumes served by the Mountpoint for S3 CSI driver or the FSx for Lustre
CSI driver, read through the Kubernetes API."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kubernetes import client as k8s

from cloud import kube
from clusters.models import StorageKind

CSI_DRIVERS = {"s3.csi.aws.com": StorageKind.S3, "fsx.csi.aws.com": StorageKind.FSX}
#: Mountpoint's ``prefix`` mount option, as ``prefix data/`` or ``prefix=data/``.
PREFIX_OPTION = re.compile(r"prefix[ =](\S+)")
QUANTITY = re.compile(r"(\d+)(Gi|Ti)?")


@dataclass(frozen=True)
class FoundVolume:
    """One S3 or FSx PersistentVolume; ``namespace``/``pvc_name`` are its claim's (empty when unbound)."""

    pv_name: str
    kind: str
    bucket: str
    prefix: str
    file_system_id: str
    dns_name: str
    mount_name: str
    capacity_gib: int | None
    namespace: str
    pvc_name: str


def _gib(quantity: str | None) -> int | None:
    match = QUANTITY.fullmatch(quantity or "")
    if match is None:
        return None
    return int(match.group(1)) * (1024 if match.group(2) == "Ti" else 1)


def _found(volume: k8s.V1PersistentVolume) -> FoundVolume | None:
    spec, metadata = volume.spec, volume.metadata
    assert spec is not None and metadata is not None  # the API server fills both on every object it lists
    csi = spec.csi
    kind = CSI_DRIVERS.get(csi.driver) if csi is not None else None
    if csi is None or kind is None:
        return None
    attributes = csi.volume_attributes or {}
    prefix = next((match.group(1) for option in spec.mount_options or []
                   if (match := PREFIX_OPTION.fullmatch(option.strip()))), "")
    claim = spec.claim_ref
    return FoundVolume(
        pv_name=metadata.name or "", kind=kind, bucket=attributes.get("bucketName", "") if kind == "s3" else "",
        prefix=prefix, file_system_id=csi.volume_handle if kind == "fsx" else "",
        dns_name=attributes.get("dnsname", ""), mount_name=attributes.get("mountname", ""),
        capacity_gib=_gib((spec.capacity or {}).get("storage")),
        namespace=claim.namespace or "" if claim else "", pvc_name=claim.name or "" if claim else "",
    )


def persistent_volumes(eks_name: str, *, region: str) -> list[FoundVolume]:
    """The S3 and FSx PersistentVolumes of the EKS cluster, by name."""
    api = k8s.CoreV1Api(kube.api_client(eks_name, region=region))
    found = (_found(volume) for volume in api.list_persistent_volume().items)
    return sorted((volume for volume in found if volume is not None), key=lambda volume: volume.pv_name)
