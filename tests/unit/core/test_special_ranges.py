"""Special-purpose ranges as network space: refused by default, allowed by name (`networks.allowSpecialRanges`).

Scope: a CUDN subnet in documentation space (RFC 5737 192.0.2.0/24, RFC 3849 2001:db8::/32, RFC 9637 3fff::/20)
or benchmarking space (RFC 2544 198.18.0.0/15, RFC 5180 2001:2::/48) is refused `special-prefix` with a message
that names the key; listed in `networks.allowSpecialRanges`, the network and its VMs' host routes are announced,
through the planner and the last guard alike (`commands.outcome.guarded`, what `render` shows). The other ranges
(loopback, link-local, Teredo, ...) are never allowed. A dual-stack network with one refused subnet says plainly
that its other family is not announced either, and why. The opt-in is for network space only: a node address or
`nextHopSelf` in documentation space stays refused as a next hop.

Fixture shapes: CUDNs and claims as `bgpadv_lab.objects` writes them, with the documentation prefixes upstream's own
examples use (OVN-K docs/features/bgp-integration, kubevirt/ipam-extensions README).
"""

from __future__ import annotations

from typing import get_args

import pytest

from bgpadv.commands.outcome import guarded
from bgpadv.config import ConfigError
from bgpadv.config.schema import SpecialRangeGroup
from bgpadv.core import reasons
from bgpadv.core.addressing import OPT_IN_GROUPS, SPECIAL_PURPOSE, special_range_reason
from bgpadv.core.prefix import Prefix
from bgpadv_lab import objects as k8s

NS = "vms"
NODES = [k8s.node("worker-1", "10.0.0.11", "fd00::11")]
ALLOW_DOCS = {"allowSpecialRanges": ["documentation"]}


def network(*subnets: str) -> list[dict]:
    return [k8s.cudn_layer2("vmnet-a", list(subnets), labels=k8s.ADVERTISED, namespaces=[NS])]


def vm(*addresses: str) -> list[dict]:
    return [
        k8s.ipam_claim(NS, "vm-a.vmnet-a", "vm-a", "cluster_udn_vmnet-a", list(addresses)),
        k8s.vmi(NS, "vm-a", "worker-1"),
    ]


SELF = {"ipv6": "fd00::11"}  # next hop self for IPv6 subnets on the IPv4 session


def outcome(objects: list[dict], **networks):
    config = k8s.config(networks=networks or None, nextHopSelf=SELF)
    instance = guarded(k8s.state(NODES, *objects), config)
    announced = {str(r.prefix) for r in instance.plan.routes}
    return announced, list(instance.plan.rejected)


@pytest.mark.parametrize(
    ("subnet", "address", "group"),
    [
        pytest.param("192.0.2.0/24", "192.0.2.10/24", "documentation", id="TEST-NET-1"),
        pytest.param("198.51.100.0/24", "198.51.100.10/24", "documentation", id="TEST-NET-2"),
        pytest.param("203.0.113.0/24", "203.0.113.10/24", "documentation", id="TEST-NET-3"),
        pytest.param("2001:db8:1::/64", "2001:db8:1::10/64", "documentation", id="2001-db8"),
        pytest.param("3fff:1::/64", "3fff:1::10/64", "documentation", id="3fff"),
        pytest.param("198.18.0.0/24", "198.18.0.10/24", "benchmarking", id="benchmarking-v4"),
        pytest.param("2001:2::/64", "2001:2::10/64", "benchmarking", id="benchmarking-v6-inside-2001-23"),
    ],
)
def test_a_named_special_range_is_refused_by_default_and_announced_when_allowed(subnet, address, group):
    objects = network(subnet) + vm(address)
    announced, rejected = outcome(objects)
    assert announced == set()
    cudn = next(r for r in rejected if r.source.kind == "ClusterUserDefinedNetwork")
    assert cudn.reason == reasons.SPECIAL_PREFIX
    assert f"not a VM network unless networks.allowSpecialRanges lists {group}" in cudn.message
    host = str(Prefix.parse(address.split("/")[0] + ("/32" if "." in address else "/128")))
    announced, rejected = outcome(objects, allowSpecialRanges=[group])
    assert announced == {subnet, host} and rejected == []


def test_allowing_one_group_does_not_allow_the_other():
    announced, rejected = outcome(network("198.18.0.0/24") + vm("198.18.0.10/24"), **ALLOW_DOCS)
    assert announced == set()
    assert {r.reason for r in rejected} == {reasons.SPECIAL_PREFIX}


@pytest.mark.parametrize(
    "subnet",
    [
        pytest.param("2001::/32", id="teredo"),
        pytest.param("192.0.0.0/24", id="ietf-protocol-assignments"),
        pytest.param("192.0.0.0/16", id="wider-than-documentation"),
        pytest.param("fec0::/64", id="site-local"),
    ],
)
def test_ranges_that_are_never_network_space_stay_refused_whatever_is_allowed(subnet):
    announced, rejected = outcome(network(subnet), allowSpecialRanges=list(OPT_IN_GROUPS))
    assert announced == set() and rejected
    assert all("allowSpecialRanges" not in r.message for r in rejected)


def test_a_dual_stack_network_says_plainly_that_its_other_family_is_not_announced_either():
    objects = network("192.168.100.0/24", "2001:db8:1::/64") + vm("192.168.100.10/24", "2001:db8:1::10/64")
    announced, rejected = outcome(objects)
    assert announced == set()
    cudn = next(r for r in rejected if r.source.kind == "ClusterUserDefinedNetwork")
    assert cudn.value == "2001:db8:1::/64"
    assert "its IPv4 subnet 192.168.100.0/24 and its VMs' IPv4 addresses are not announced either" in cudn.message
    assert "a network is announced in every family or in none" in cudn.message
    claim = next(r for r in rejected if r.source.kind == "IPAMClaim")
    assert "IPv4 subnet 192.168.100.0/24" in claim.message  # the claim's refusal says it too (explain, Events)
    announced, rejected = outcome(objects, **ALLOW_DOCS)
    assert announced == {"192.168.100.0/24", "192.168.100.10/32", "2001:db8:1::/64", "2001:db8:1::10/128"}


def test_a_single_family_network_refusal_says_nothing_of_another_family():
    _, rejected = outcome(network("2001:db8:1::/64"))
    assert all("not announced either" not in r.message for r in rejected)


def test_allowing_documentation_space_as_network_space_keeps_it_refused_as_a_next_hop():
    nodes = [k8s.node("worker-1", "192.0.2.11")]
    objects = network("192.168.100.0/24") + vm("192.168.100.10/24")
    instance = guarded(k8s.state(nodes, *objects), k8s.config(networks=ALLOW_DOCS))
    assert "192.168.100.10/32" not in {str(r.prefix) for r in instance.plan.routes}
    assert reasons.INVALID_NODE_ADDRESS in {r.reason for r in instance.plan.rejected}
    with pytest.raises(ConfigError) as err:
        k8s.config(networks=ALLOW_DOCS, nextHopSelf={"ipv4": "192.0.2.1"})
    assert any(p.startswith("nextHopSelf.ipv4: ") and "documentation" in p for p in err.value.problems)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        pytest.param(["loopback"], "networks.allowSpecialRanges[0]: ", id="never-allowed-name"),
        pytest.param(["Documentation"], "networks.allowSpecialRanges[0]: ", id="case"),
        pytest.param(["documentation", "documentation"], "networks.allowSpecialRanges[1]: ", id="twice"),
        pytest.param("documentation", "networks.allowSpecialRanges: ", id="not-a-list"),
    ],
)
def test_the_key_takes_only_the_named_groups(value, problem):
    with pytest.raises(ConfigError) as err:
        k8s.config(networks={"allowSpecialRanges": value})
    assert any(p.startswith(problem) for p in err.value.problems), err.value.problems


def test_the_configuration_names_are_the_tables_groups():
    assert get_args(SpecialRangeGroup) == OPT_IN_GROUPS
    grouped = {e.group for e in SPECIAL_PURPOSE if e.group}
    assert grouped == set(OPT_IN_GROUPS)
    for e in SPECIAL_PURPOSE:
        if e.group:  # an opt-in range: refused as network space and as next hop by default
            assert e.subnet == e.next_hop == "refuse"
            assert special_range_reason(e.version, e.first, e.last, frozenset({e.group})) is None


def test_a_dual_stack_network_refused_for_a_range_never_allowed_says_so_too():
    objects = network("192.168.100.0/24", "2001::/32") + vm("192.168.100.10/24")
    announced, rejected = outcome(objects, allowSpecialRanges=list(OPT_IN_GROUPS))
    assert announced == set()
    cudn = next(r for r in rejected if r.source.kind == "ClusterUserDefinedNetwork")
    assert cudn.reason == reasons.INVALID_NETWORK_DEFINITION and "Teredo" in cudn.message
    assert "its IPv4 subnet 192.168.100.0/24 and its VMs' IPv4 addresses are not announced either" in cudn.message
    claim = next(r for r in rejected if r.source.kind == "IPAMClaim")
    assert "IPv4 subnet 192.168.100.0/24" in claim.message
