"""What a HyperPod instance type offers a Kubernetes node: vCPUs, memory, accelerators, EFA, pod slots.

Facts come from the EC2 instance-type data moto ships offline (``ml.p5.48xlarge`` is EC2's ``p5.48xlarge``:
8 H100, 192 vCPUs, 2 TiB, 32 EFA interfaces). A type EC2's data lacks gets ``FALLBACK`` (4 vCPUs, 16 GiB, no
accelerators). Capacity and allocatable follow the EKS AMI's bootstrap: max pods from ENIs × IPs (capped at
110 below 30 vCPUs, else 250), kube-reserved CPU and memory, and a 100 Mi eviction threshold.
"""

from __future__ import annotations

import dataclasses
import functools
import gzip
import json
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import moto

GPU = "nvidia.com/gpu"
EFA = "vpc.amazonaws.com/efa"
NEURON = "aws.amazon.com/neuron"
NEURON_CORE = "aws.amazon.com/neuroncore"
EPHEMERAL_STORAGE_KI = 104_845_292  # the 100 GiB root volume HyperPod gives EKS nodes


@dataclass(frozen=True)
class InstanceFacts:
    instance_type: str
    vcpus: int
    memory_mib: int
    gpus: int = 0
    neuron_devices: int = 0
    neuron_cores: int = 0
    efa: int = 0
    enis: int = 4
    ips_per_eni: int = 15
    architecture: str = "amd64"

    @property
    def max_pods(self) -> int:
        return min(self.enis * (self.ips_per_eni - 1) + 2, 110 if self.vcpus < 30 else 250)

    def capacity(self, devices: Collection[str] | None = None) -> dict[str, str]:
        """``status.capacity`` of a node of this type. ``devices`` limits the extended resources (GPUs, EFA, Neuron)
        to those named — a node advertises one only while its device plugin runs there; ``None``: all of them (what
        the hardware has, as a capacity planner sees it)."""
        resources = {"cpu": str(self.vcpus), "memory": f"{self.memory_mib * 1024}Ki",
                     "ephemeral-storage": f"{EPHEMERAL_STORAGE_KI}Ki", "hugepages-1Gi": "0", "hugepages-2Mi": "0",
                     "pods": str(self.max_pods)}
        extended = {GPU: self.gpus, NEURON: self.neuron_devices, NEURON_CORE: self.neuron_cores, EFA: self.efa}
        resources.update({key: str(value) for key, value in extended.items()
                          if value and (devices is None or key in devices)})
        return resources

    def allocatable(self, devices: Collection[str] | None = None) -> dict[str, str]:
        """``status.allocatable``: capacity minus kube-reserved and the eviction threshold (``devices`` as for
        :meth:`capacity`)."""
        reserved_mib = 255 + 11 * self.max_pods + 100
        allocatable = self.capacity(devices)
        allocatable["cpu"] = f"{self.vcpus * 1000 - _reserved_millicores(self.vcpus)}m"
        allocatable["memory"] = f"{(self.memory_mib - reserved_mib) * 1024}Ki"
        allocatable["ephemeral-storage"] = str(EPHEMERAL_STORAGE_KI * 1024 * 9 // 10)
        return allocatable


FALLBACK = InstanceFacts(instance_type="", vcpus=4, memory_mib=16384)


def _reserved_millicores(vcpus: int) -> int:
    """EKS kube-reserved CPU: 6% of the first core, 1% of the second, 0.5% of the next two, 0.25% beyond."""
    shares = [60, 10, 5, 5]
    return sum(shares[:vcpus]) + max(vcpus - 4, 0) * 25 // 10


@functools.cache
def _ec2_types() -> dict[str, Any]:
    path = Path(moto.__file__).parent / "ec2" / "resources" / "instance_types.json.gz"
    with gzip.open(path) as data:
        return json.load(data)


def _facts(instance_type: str, data: dict[str, Any]) -> InstanceFacts:
    gpu_info = data.get("GpuInfo") or {}
    gpus = [gpu for gpu in gpu_info.get("Gpus") or [] if gpu.get("Manufacturer") == "NVIDIA"]
    neuron = (data.get("NeuronInfo") or {}).get("NeuronDevices") or []
    network = data.get("NetworkInfo") or {}
    architectures = (data.get("ProcessorInfo") or {}).get("SupportedArchitectures") or ["x86_64"]
    return InstanceFacts(
        instance_type=instance_type, vcpus=int(data["VCpuInfo"]["DefaultVCpus"]),
        memory_mib=int(data["MemoryInfo"]["SizeInMiB"]),
        gpus=sum(int(gpu.get("Count", 0)) for gpu in gpus),
        neuron_devices=sum(int(device.get("Count", 0)) for device in neuron),
        neuron_cores=sum(int(device.get("Count", 0)) * int((device.get("CoreInfo") or {}).get("Count", 0))
                         for device in neuron),
        efa=int((network.get("EfaInfo") or {}).get("MaximumEfaInterfaces", 0)) if network.get("EfaSupported")
        else 0,
        enis=int(network.get("MaximumNetworkInterfaces", 4)),
        ips_per_eni=int(network.get("Ipv4AddressesPerInterface", 15)),
        architecture="arm64" if architectures[0] == "arm64" else "amd64",
    )


@functools.cache
def facts(instance_type: str) -> InstanceFacts:
    """The facts of a SageMaker (``ml.…``) or EC2 instance type."""
    data = _ec2_types().get(instance_type.removeprefix("ml."))
    if data is None:
        return dataclasses.replace(FALLBACK, instance_type=instance_type)
    return _facts(instance_type, data)
