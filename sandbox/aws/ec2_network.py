"""EC2 networking as AWS times and refuses it, on moto's own models (``apply()``, once, before serving).

**NAT gateways take time.** moto makes a NAT gateway ``available`` at once and ``deleted`` at once. Here its state
follows the sandbox clock: ``pending`` for :data:`NAT_CREATE_SECONDS` of AWS time, then ``available``;
``DeleteNatGateway`` makes it ``deleting`` for :data:`NAT_DELETE_SECONDS`, then ``deleted``.

**What a NAT gateway holds cannot go first.** While a NAT gateway that is not ``deleted`` holds an Elastic IP,
``ReleaseAddress`` of that address is ``InvalidIPAddress.InUse``, and ``DetachInternetGateway`` from its VPC is
``DependencyViolation`` (the VPC "has some mapped public address(es)"), as EC2 answers — so a teardown must delete
the NAT gateway and wait for ``deleted`` before it releases the address and detaches the gateway.

"""

from __future__ import annotations

from typing import Any

from moto.ec2.exceptions import DependencyViolationError, EC2ClientError
from moto.ec2.models.elastic_ip_addresses import ElasticAddressBackend
from moto.ec2.models.internet_gateways import InternetGatewayBackend
from moto.ec2.models.nat_gateways import NatGateway, NatGatewayBackend

from sandbox import clock

#: Nominal seconds (AWS time) a NAT gateway is ``pending`` and ``deleting``.
NAT_CREATE_SECONDS = 120.0
NAT_DELETE_SECONDS = 60.0


class AddressInUse(EC2ClientError):
    def __init__(self, allocation_id: str) -> None:
        super().__init__("InvalidIPAddress.InUse", f"Address {allocation_id} is in use.")


def _state(gateway: Any) -> str:
    deleting_since = getattr(gateway, "_sandbox_deleting_since", None)
    if deleting_since is not None:
        return "deleted" if clock.due(deleting_since, NAT_DELETE_SECONDS) else "deleting"
    return "available" if clock.due(gateway._sandbox_created, NAT_CREATE_SECONDS) else "pending"


def _set_state(gateway: Any, value: str) -> None:
    """moto writes ``available`` when it makes the gateway and ``deleted`` when it deletes it: each starts the
    clock of the transition instead."""
    if value == "deleted":
        if getattr(gateway, "_sandbox_deleting_since", None) is None:
            gateway._sandbox_deleting_since = clock.now()
    else:
        gateway._sandbox_created = clock.now()


def _holding(backend: Any) -> list[Any]:
    """NAT gateways of ``backend`` that still hold their addresses (not yet ``deleted``)."""
    return [gateway for gateway in backend.nat_gateways.values() if gateway.state != "deleted"]


def _release_address(original: Any) -> Any:
    def release_address(self: Any, address: str | None = None, allocation_id: str | None = None) -> None:
        for gateway in _holding(self):
            for held in gateway.address_set:
                if (allocation_id and held.get("allocationId") == allocation_id) or (
                        address and held.get("publicIp") == address):
                    raise AddressInUse(allocation_id or address or "")
        original(self, address=address, allocation_id=allocation_id)

    return release_address


def _detach_internet_gateway(original: Any) -> Any:
    def detach_internet_gateway(self: Any, internet_gateway_id: str, vpc_id: str) -> None:
        if any(gateway.vpc_id == vpc_id and gateway.connectivity_type != "private" for gateway in _holding(self)):
            raise DependencyViolationError(f"Network {vpc_id} has some mapped public address(es). Please unmap "
                                           "those public address(es) before detaching the gateway.")
        original(self, internet_gateway_id, vpc_id)

    return detach_internet_gateway


def apply() -> None:
    """Install the behaviours (idempotent: a second call changes nothing)."""
    if getattr(NatGatewayBackend, "_sandbox_applied", False):
        return
    NatGateway.state = property(_state, _set_state)  # type: ignore[assignment]
    ElasticAddressBackend.release_address = _release_address(  # type: ignore[method-assign]
        ElasticAddressBackend.release_address)
    InternetGatewayBackend.detach_internet_gateway = _detach_internet_gateway(  # type: ignore[method-assign]
        InternetGatewayBackend.detach_internet_gateway)
    NatGatewayBackend._sandbox_applied = True  # type: ignore[attr-defined]
