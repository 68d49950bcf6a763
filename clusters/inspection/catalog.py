"""Where a cluster can go: regions, availability zones, and the HyperPod instance types each zone offers.

The instance types come from botocore's own SageMaker model (the ``ClusterInstanceType`` enum HyperPod's
``CreateCluster`` validates against), narrowed to those EC2's ``DescribeInstanceTypeOfferings`` offers in a zone of
the region, with the hardware facts of ``DescribeInstanceTypes``. A region's catalog is static for hours, so each
process keeps it for :data:`CATALOG_TTL` seconds, per AWS endpoint and region (reading it costs a few seconds of
EC2 calls; keeping it in process also spares every wizard step unpickling it from the shared cache).
"""

from __future__ import annotations

import functools
import os
import re
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from cloud import aws

#: Values per EC2 filter and instance types per ``DescribeInstanceTypes`` call (EC2's limit is 100).
EC2_BATCH = 100
CATALOG_TTL = 3600
#: (AWS endpoint, region) → (monotonic expiry, catalog).
_catalogs: dict[tuple[str, str], tuple[float, dict[str, InstanceTypeOffer]]] = {}
_catalogs_lock = threading.Lock()
HYPERPOD_PREFIX = "ml."


@dataclass(frozen=True)
class Zone:
    """An availability zone: its name in this account (``us-west-2a``), its id everywhere (``usw2-az2``), state."""

    name: str
    zone_id: str
    state: str


@dataclass(frozen=True)
class InstanceTypeOffer:
    """A HyperPod instance type offered in the region: the zones that offer it and its hardware.

    ``accelerator_type`` is the maker and model (``NVIDIA H100``, ``AWS Trainium``; empty without accelerators) and
    ``accelerator_memory_gib`` the memory of *one* accelerator."""

    name: str
    ec2_type: str
    zones: tuple[str, ...]
    vcpus: int
    memory_gib: float
    accelerator_count: int
    accelerator_type: str
    accelerator_memory_gib: float
    efa_supported: bool
    max_efa_interfaces: int
    #: The ``ThreadsPerCore`` values the type accepts (1 turns simultaneous multithreading off).
    threads_per_core: tuple[int, ...] = (1,)


def regions() -> list[str]:
    """The regions the product offers: every region of the AWS partition where SageMaker runs (botocore's
    endpoint data), sorted."""
    return list(aws.service_regions("sagemaker"))


def availability_zones(region: str) -> list[Zone]:
    """The region's availability zones (not Local or Wavelength zones) the account can use, by name."""
    with aws.translated("ec2", "DescribeAvailabilityZones"):
        answer = aws.client("ec2", region=region).describe_availability_zones(
            Filters=[{"Name": "zone-type", "Values": ["availability-zone"]}])
    return sorted((Zone(name=zone["ZoneName"], zone_id=zone.get("ZoneId", ""), state=zone.get("State", ""))
                   for zone in answer["AvailabilityZones"]), key=lambda zone: zone.name)


@functools.cache
def hyperpod_instance_types() -> tuple[str, ...]:
    """Every instance type HyperPod accepts (``ml.p5.48xlarge``…), from botocore's SageMaker service model."""
    model = aws.client("sagemaker", region=aws.default_region()).meta.service_model
    return tuple(model.shape_for("ClusterInstanceType").enum)


def ec2_type(instance_type: str) -> str:
    """``ml.p5.48xlarge`` → ``p5.48xlarge``."""
    return instance_type.removeprefix(HYPERPOD_PREFIX)


#: Sizes named by a word, smallest first, before ``xlarge`` (1) and ``<n>xlarge`` (n).
_NAMED_SIZES = {"nano": 0.1, "micro": 0.2, "small": 0.3, "medium": 0.4, "large": 0.5}
_XLARGE = re.compile(r"^(\d*)xlarge$")


def name_order(name: str) -> tuple[str, float, str]:
    """Sort key of an instance type: by family, then by size as a number (``2xlarge`` before ``12xlarge``);
    sizes it does not know (``metal``…) come last in their family."""
    family, _, size = ec2_type(name).rpartition(".")
    times = _XLARGE.match(size)
    rank = int(times.group(1) or 1) if times else _NAMED_SIZES.get(size, float("inf"))
    return family, rank, size


def instance_types(region: str, zone: str | None = None) -> list[InstanceTypeOffer]:
    """The HyperPod instance types offered in ``region`` (in ``zone`` when given), by family and size
    (:func:`name_order`)."""
    offers = catalog(region).values()
    return sorted((offer for offer in offers if zone is None or zone in offer.zones),
                  key=lambda offer: name_order(offer.name))


def catalog(region: str) -> dict[str, InstanceTypeOffer]:
    """Every HyperPod instance type some zone of ``region`` offers, by name (kept for :data:`CATALOG_TTL`)."""
    key = (os.environ.get("AWS_ENDPOINT_URL", ""), region)
    with _catalogs_lock:
        kept = _catalogs.get(key)
    if kept is not None and kept[0] > time.monotonic():
        return kept[1]
    found = _read_catalog(region)
    with _catalogs_lock:
        _catalogs[key] = (time.monotonic() + CATALOG_TTL, found)
    return found


def _batches(items: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(items), EC2_BATCH):
        yield items[start:start + EC2_BATCH]


def _offered_zones(region: str, ec2_types: list[str]) -> dict[str, set[str]]:
    ec2 = aws.client("ec2", region=region)
    zones: dict[str, set[str]] = {}
    with aws.translated("ec2", "DescribeInstanceTypeOfferings"):
        for batch in _batches(ec2_types):
            for page in ec2.get_paginator("describe_instance_type_offerings").paginate(
                    LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": batch}]):
                for offering in page["InstanceTypeOfferings"]:
                    zones.setdefault(offering["InstanceType"], set()).add(offering["Location"])
    return zones


def _hardware(region: str, ec2_types: Iterable[str]) -> dict[str, dict]:
    ec2 = aws.client("ec2", region=region)
    facts: dict[str, dict] = {}
    with aws.translated("ec2", "DescribeInstanceTypes"):
        for batch in _batches(sorted(ec2_types)):
            for page in ec2.get_paginator("describe_instance_types").paginate(InstanceTypes=batch):
                facts.update((item["InstanceType"], item) for item in page["InstanceTypes"])
    return facts


def _accelerators(facts: dict) -> tuple[int, str, float]:
    """(count, maker and model, GiB per accelerator) from ``GpuInfo`` or ``NeuronInfo``."""
    gpus = (facts.get("GpuInfo") or {}).get("Gpus") or []
    if gpus:
        first = gpus[0]
        return (sum(gpu.get("Count", 0) for gpu in gpus), f"{first.get('Manufacturer', '')} {first['Name']}".strip(),
                round(first.get("MemoryInfo", {}).get("SizeInMiB", 0) / 1024, 1))
    devices = (facts.get("NeuronInfo") or {}).get("NeuronDevices") or []
    if devices:
        first = devices[0]
        return (sum(device.get("Count", 0) for device in devices), f"AWS {first['Name']}",
                round(first.get("MemoryInfo", {}).get("SizeInMiB", 0) / 1024, 1))
    return 0, "", 0.0


def _offer(name: str, zones: set[str], facts: dict) -> InstanceTypeOffer:
    count, kind, memory = _accelerators(facts)
    network = facts.get("NetworkInfo") or {}
    return InstanceTypeOffer(
        name=name, ec2_type=ec2_type(name), zones=tuple(sorted(zones)),
        vcpus=int((facts.get("VCpuInfo") or {}).get("DefaultVCpus", 0)),
        memory_gib=round((facts.get("MemoryInfo") or {}).get("SizeInMiB", 0) / 1024, 1),
        accelerator_count=count, accelerator_type=kind, accelerator_memory_gib=memory,
        efa_supported=bool(network.get("EfaSupported")),
        max_efa_interfaces=int((network.get("EfaInfo") or {}).get("MaximumEfaInterfaces", 0)),
        threads_per_core=_threads_per_core(facts.get("VCpuInfo") or {}),
    )


def _threads_per_core(cpu: dict) -> tuple[int, ...]:
    """EC2's ``ValidThreadsPerCore`` when it lists them, else 1 and the type's default."""
    valid = cpu.get("ValidThreadsPerCore") or {1, int(cpu.get("DefaultThreadsPerCore", 1))}
    return tuple(sorted(int(value) for value in valid))


def _read_catalog(region: str) -> dict[str, InstanceTypeOffer]:
    by_ec2_type = {ec2_type(name): name for name in hyperpod_instance_types()}
    zones = _offered_zones(region, sorted(by_ec2_type))
    hardware = _hardware(region, zones)
    return {by_ec2_type[kind]: _offer(by_ec2_type[kind], zones[kind], hardware[kind])
            for kind in zones if kind in hardware and kind in by_ec2_type}
