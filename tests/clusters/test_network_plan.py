"""The network plan is pure: a free /16, two zones with the requested one first, four base subnets, and room left
for fifteen per-zone /20 compute subnets."""

from __future__ import annotations

import ipaddress

import pytest

from clusters.network_plan import (
    PRIVATE,
    PUBLIC,
    NetworkPlanError,
    Zone,
    cluster_zones,
    free_vpc_cidr,
    network_layout,
)

ZONES = [Zone("us-west-2a", "usw2-az2"), Zone("us-west-2b", "usw2-az1"), Zone("us-west-2c", "usw2-az3")]


def overlaps(a: str, b: str) -> bool:
    return ipaddress.ip_network(a).overlaps(ipaddress.ip_network(b))


def test_the_vpc_cidr_is_the_first_slash_16_of_ten_that_overlaps_no_vpc():
    assert free_vpc_cidr([]) == "10.0.0.0/16"
    assert free_vpc_cidr(["172.31.0.0/16"]) == "10.0.0.0/16"
    taken = ["10.0.0.0/16", "10.1.128.0/20", "10.2.0.0/15", "172.31.0.0/16"]
    chosen = free_vpc_cidr(taken)
    assert chosen == "10.4.0.0/16"
    assert not any(overlaps(chosen, cidr) for cidr in taken)


def test_a_vpc_wider_than_a_slash_16_blocks_every_slash_16_inside_it():
    assert free_vpc_cidr(["10.0.0.0/9"]) == "10.128.0.0/16"
    with pytest.raises(NetworkPlanError) as error:
        free_vpc_cidr(["10.0.0.0/8"])
    assert error.value.code == "vpc_space_exhausted"


def test_the_requested_zone_comes_first_and_a_second_available_zone_follows():
    assert cluster_zones("us-west-2c", ZONES) == (ZONES[2], ZONES[0])
    assert cluster_zones("us-west-2a", ZONES) == (ZONES[0], ZONES[1])


@pytest.mark.parametrize(("zone", "available", "code"), [
    ("us-west-2d", ZONES, "zone_unavailable"),
    ("us-west-2a", ZONES[:1], "second_zone_unavailable"),
])
def test_zones_that_cannot_host_eks_are_refused(zone, available, code):
    with pytest.raises(NetworkPlanError) as error:
        cluster_zones(zone, available)
    assert error.value.code == code


def test_the_layout_has_small_public_and_private_subnets_in_two_zones_inside_the_vpc():
    layout = network_layout("10.7.0.0/16", (ZONES[1], ZONES[0]))

    assert [(s.role, s.zone.name, s.cidr) for s in layout.subnets] == [
        (PUBLIC, "us-west-2b", "10.7.0.0/22"), (PUBLIC, "us-west-2a", "10.7.4.0/22"),
        (PRIVATE, "us-west-2b", "10.7.8.0/22"), (PRIVATE, "us-west-2a", "10.7.12.0/22")]
    assert [s.zone for s in layout.of_role(PRIVATE)] == [ZONES[1], ZONES[0]]
    vpc = ipaddress.ip_network(layout.vpc_cidr)
    cidrs = [s.cidr for s in layout.subnets]
    assert all(ipaddress.ip_network(cidr).subnet_of(vpc) for cidr in cidrs)
    assert not any(overlaps(a, b) for i, a in enumerate(cidrs) for b in cidrs[i + 1:])


def test_the_base_subnets_fit_in_the_first_slash_20_and_leave_fifteen_for_compute_subnets():
    layout = network_layout("10.9.0.0/16", (ZONES[0], ZONES[1]))
    blocks = list(ipaddress.ip_network(layout.vpc_cidr).subnets(new_prefix=20))

    assert all(ipaddress.ip_network(s.cidr).subnet_of(blocks[0]) for s in layout.subnets)
    free = [block for block in blocks if not any(block.overlaps(ipaddress.ip_network(s.cidr)) for s in layout.subnets)]
    assert free == blocks[1:] and len(free) == 15
