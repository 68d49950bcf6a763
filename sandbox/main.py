"""The whole sandbox in one process: the AWS side, the Kubernetes emulator fed by it, and the simulator.

``start_world(aws_port=..., kube_port=...)`` starts, in this process and on background threads:

1. the Kubernetes emulator (``sandbox.kube.server``) on ``https://host:kube_port``, serving one API server per
   EKS cluster that the AWS side reports (``cluster_refs``: each cluster with its installed add-ons, so the
   CRDs of an add-on appear once it is ACTIVE, and its access entries, so EKS's authorization applies), with the
   AWS side's credentials (``aws.caller``) to verify tokens;
2. the AWS sandbox (``sandbox.aws.server``) on ``http://host:aws_port`` with its control API under
   ``/_sandbox/``;
3. the simulator (``sandbox.sim.runtime``), which keeps the stores in sync with the AWS world and runs the
   controllers.

The emulator starts first, so once the AWS port answers (the readiness signal of ``python -m sandbox``) both
do. Port 0 picks a free port. The chosen ports are exported as ``INSTANTSTART_SANDBOX_AWS_PORT`` and
``INSTANTSTART_SANDBOX_KUBE_PORT`` for the life of the world (``sandbox.endpoints`` reads them, so
``eks.describe_cluster`` reports endpoints on the emulator's port); ``World.stop()`` stops everything and
restores the previous values. One world runs per process at a time: the emulator's clusters and the
simulator's view of them are process-wide, so a second ``start_world`` raises ``RuntimeError``.
"""

from __future__ import annotations

import os
import socket
import threading
from dataclasses import dataclass, field

from sandbox.aws import server as aws_server
from sandbox.aws import world as aws
from sandbox.kube import server as kube_server
from sandbox.kube.world import ClusterRef
from sandbox.sim.runtime import Simulator

#: Add-on statuses whose CRDs are installed (an UPDATING or DEGRADED add-on keeps them).
INSTALLED_ADDON_STATUSES = frozenset({"ACTIVE", "UPDATING", "DEGRADED"})
PORT_VARIABLES = ("INSTANTSTART_SANDBOX_AWS_PORT", "INSTANTSTART_SANDBOX_KUBE_PORT")

_lock = threading.Lock()
_running: list[World] = []


def cluster_refs() -> list[ClusterRef]:
    """Every EKS cluster of the AWS world as the emulator sees it: status, version, installed add-ons and who may
    use its API."""
    return [ClusterRef(name=view.name, region=view.region, status=view.status, kubernetes_version=view.version,
                       addons=frozenset(addon.name for addon in aws.eks_addons(view.region, view.name)
                                        if addon.status in INSTALLED_ADDON_STATUSES),
                       access=aws.eks_access(view.region, view.name))
            for view in aws.eks_clusters()]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


@dataclass
class World:
    """A running sandbox (see the module docstring)."""

    aws: aws_server.AwsSandbox
    kube: kube_server.KubeSandbox
    simulator: Simulator
    saved_environment: dict[str, str | None] = field(default_factory=dict)

    @property
    def aws_url(self) -> str:
        """``AWS_ENDPOINT_URL`` for clients of this world."""
        return self.aws.url

    @property
    def kube_url(self) -> str:
        """The root under which each EKS cluster's API server lives (``/clusters/<region>/<name>``)."""
        return f"https://{self.kube.host}:{self.kube.port}/clusters"

    def stop(self) -> None:
        """Stop the simulator, the emulator and the AWS side; restore the port variables."""
        self.simulator.stop()
        self.kube.stop()
        self.aws.stop()
        _restore(self.saved_environment)
        with _lock:
            _running[:] = [world for world in _running if world is not self]


def _restore(saved: dict[str, str | None]) -> None:
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def start_world(*, aws_port: int, kube_port: int, host: str = "127.0.0.1") -> World:
    """Start the sandbox on ``host`` (see the module docstring); raises ``OSError``/``RuntimeError`` when a
    port is taken, ``RuntimeError`` when a world already runs in this process."""
    with _lock:
        if _running:
            raise RuntimeError(f"a sandbox world already runs in this process ({_running[0].aws_url}); stop it first")
        world = _start(aws_port, kube_port, host)
        _running.append(world)
        return world


def _start(aws_port: int, kube_port: int, host: str) -> World:
    saved = {name: os.environ.get(name) for name in PORT_VARIABLES}
    kube_port = kube_port or free_port(host)
    os.environ["INSTANTSTART_SANDBOX_KUBE_PORT"] = str(kube_port)
    try:
        kube = kube_server.start(host, kube_port, cluster_refs, aws.caller)
    except BaseException:
        _restore(saved)
        raise
    try:
        aws_side = aws_server.start(host, aws_port)
    except BaseException:
        kube.stop()
        _restore(saved)
        raise
    os.environ["INSTANTSTART_SANDBOX_AWS_PORT"] = str(aws_side.port)
    simulator = Simulator(cluster_refs)
    simulator.start()
    return World(aws=aws_side, kube=kube, simulator=simulator, saved_environment=saved)
