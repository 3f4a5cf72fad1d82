"""Planner, checks: every value bgpadv refuses to announce, with its stable reason code.

Scope: address parsing (strict, injection-proof), address validation against a network (outside the subnets,
gateway, infrastructure, network/broadcast, link-local, loopback/multicast, unspecified; reserved subnets allowed),
implied gateway and management addresses, claims on networks that cannot be announced, duplicate addresses (oldest
claim wins) and malformed objects. Every refusal is asserted with its source, its value and its reason.
"""

from __future__ import annotations

import pytest

from bgpadv.planner import checks, plan
from bgpadv_lab import objects as k8s
from bgpadv_lab.objects import VM_NAMESPACE as NS
from tests.unit.planner.facts import refused

NET = "cluster_udn_vmnet-a"
ADV = k8s.ADVERTISED
NODES = [k8s.node("worker-1", "10.0.0.11", "fd00::11"), k8s.node("worker-2", "10.0.0.12", "fd00::12")]
VMNET_A = k8s.cudn_layer2(
    "vmnet-a",
    ["192.168.100.0/24", "fd10:100::/64"],
    labels=ADV,
    infrastructure_subnets=["192.168.100.0/30", "fd10:100::/126"],
    reserved_subnets=["192.168.100.200/29"],
    default_gateway_ips=["192.168.100.1", "fd10:100::1"],
)
VMNET_B = k8s.cudn_layer2("vmnet-b", ["192.168.200.0/24", "fd10:200::/64"], labels=ADV, namespaces=["tenant-b"])


def announced(p) -> set[str]:
    return {str(r.prefix) for r in p.routes if str(r.kind) == "host"}


def vm(name: str, ips, ns: str = NS, network: str = NET, **kw) -> list[dict]:
    """A running VM on worker-1 with its claim."""
    return [k8s.ipam_claim(ns, f"{name}.default", name, network, ips, **kw), k8s.vmi(ns, name, "worker-1")]


# --- parsing ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("192.168.100.5", (4, 0xC0A86405, None), id="bare-ipv4"),
        pytest.param("192.168.100.5/24", (4, 0xC0A86405, 24), id="ipv4-with-subnet-mask"),
        pytest.param("fd10:100::cd/64", (6, (0xFD100100 << 96) | 0xCD, 64), id="ipv6-with-mask"),
        pytest.param("::ffff:192.168.100.5", (6, 0xFFFFC0A86405, None), id="ipv4-mapped-ipv6"),
        pytest.param("10.0.0.1/32 next-hop 203.0.113.9", None, id="injection-trailing-words"),
        pytest.param("192.168.100.5\nannounce route 0.0.0.0/0", None, id="injection-newline"),
        pytest.param(" 192.168.100.5", None, id="leading-space"),
        pytest.param("192.168.100.5/", None, id="empty-prefix-length"),
        pytest.param("192.168.100.5/33", None, id="prefix-length-too-long"),
        pytest.param("fd10::1/129", None, id="ipv6-prefix-length-too-long"),
        pytest.param("192.168.100.5/+24", None, id="signed-prefix-length"),
        pytest.param("192.168.100.5/２４", None, id="non-ascii-digits"),
        pytest.param("192.168.100.5/24/24", None, id="two-slashes"),
        pytest.param("192.168.1", None, id="short-ipv4"),
        pytest.param("0x7f.1", None, id="hex-ipv4"),
        pytest.param("fe80::1%eth0", None, id="zone-index"),
        pytest.param("192.168.100.05", None, id="leading-zero-octet"),
        pytest.param("", None, id="empty"),
        pytest.param(None, None, id="none"),
        pytest.param(3232261125, None, id="integer"),
        pytest.param(["192.168.100.5"], None, id="list"),
        pytest.param("192.168.100.5\x00", None, id="nul"),
    ],
)
def test_parse_address_is_strict(value, expected):
    assert checks.parse_address(value) == expected


# --- address validation -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ips", "reason"),
    [
        pytest.param(["10.9.9.9/24"], "outside-network-subnets", id="outside-ipv4"),
        pytest.param(["fd99::5/64"], "outside-network-subnets", id="outside-ipv6"),
        pytest.param(["192.168.200.5/24"], "outside-network-subnets", id="another-cudns-subnet"),
        pytest.param(["192.168.100.1/24"], "default-gateway-address", id="gateway-ipv4"),
        pytest.param(["fd10:100::1/64"], "default-gateway-address", id="gateway-ipv6"),
        pytest.param(["192.168.100.2/24"], "infrastructure-address", id="infrastructure-ipv4"),
        pytest.param(["192.168.100.3/24"], "infrastructure-address", id="infrastructure-ipv4-last"),
        pytest.param(["fd10:100::3/64"], "infrastructure-address", id="infrastructure-ipv6"),
        pytest.param(["192.168.100.255/24"], "network-or-broadcast-address", id="broadcast"),
        pytest.param(["192.168.100.0/24"], "network-or-broadcast-address", id="network-address"),
        pytest.param(["fd10:100::/64"], "network-or-broadcast-address", id="ipv6-subnet-router-anycast"),
        pytest.param(["169.254.10.10/16"], "link-local", id="link-local-ipv4"),
        pytest.param(["fe80::5054:ff:fe12:3456/64"], "link-local", id="link-local-ipv6"),
        pytest.param(["127.0.0.1/8"], "loopback-or-multicast", id="loopback-ipv4"),
        pytest.param(["::1/128"], "loopback-or-multicast", id="loopback-ipv6"),
        pytest.param(["224.0.0.5"], "loopback-or-multicast", id="multicast-ipv4"),
        pytest.param(["ff02::1"], "loopback-or-multicast", id="multicast-ipv6"),
        pytest.param(["0.0.0.0/0"], "unspecified-address", id="unspecified-ipv4"),
        pytest.param(["::/0"], "unspecified-address", id="unspecified-ipv6"),
        pytest.param(["10.0.0.1/32 next-hop 203.0.113.9"], "malformed-address", id="injection"),
        pytest.param(["192.168.100.80/24\nannounce route 0.0.0.0/0"], "malformed-address", id="injection-newline"),
        pytest.param([42], "malformed-address", id="integer"),
        pytest.param([None], "malformed-address", id="null"),
        pytest.param([{"ip": "192.168.100.5"}], "malformed-address", id="mapping"),
    ],
)
def test_claimed_address_is_refused_with_its_reason(ips, reason):
    p = plan(k8s.state(NODES, VMNET_A, VMNET_B, vm("vm-x", ips)), k8s.config())
    assert announced(p) == set()
    assert {(x.reason, x.network) for x in p.rejected} == {(reason, "vmnet-a")}
    assert {str(x.source) for x in p.rejected} == {"IPAMClaim imported-vms/vm-x.default"}
    assert {x.value for x in p.rejected} == {checks.describe(ips[0])}


@pytest.mark.parametrize(
    "ip",
    [
        pytest.param("192.168.100.4/24", id="first-after-infrastructure"),
        pytest.param("192.168.100.200/24", id="reserved-first"),
        pytest.param("192.168.100.207/24", id="reserved-last"),
        pytest.param("192.168.100.254/24", id="last-host"),
        pytest.param("192.168.100.77", id="bare-ip"),
        pytest.param("192.168.100.77/32", id="host-mask"),
        pytest.param("fd10:100::ffff:1/64", id="ipv6"),
    ],
)
def test_valid_addresses_are_announced(ip):
    p = plan(k8s.state(NODES, VMNET_A, vm("vm-x", [ip])), k8s.config())
    assert p.rejected == ()
    assert len(announced(p)) == 1


@pytest.mark.parametrize(
    ("ip", "reason"),
    [
        pytest.param("192.168.200.1/24", "default-gateway-address", id="implied-gateway-ipv4"),
        pytest.param("fd10:200::1/64", "default-gateway-address", id="implied-gateway-ipv6"),
        pytest.param("192.168.200.2/24", "infrastructure-address", id="implied-management-port-ipv4"),
        pytest.param("fd10:200::2/64", "infrastructure-address", id="implied-management-port-ipv6"),
        pytest.param("192.168.200.3/24", None, id="first-vm-address"),
    ],
)
def test_without_gateway_and_infrastructure_fields_ovnk_reserves_first_two_hosts(ip, reason):
    objects = vm("web", [ip], ns="tenant-b", network="cluster_udn_vmnet-b")
    p = plan(k8s.state(NODES, VMNET_B, objects), k8s.config())
    assert {x.reason for x in p.rejected} == ({reason} if reason else set())


def test_explicit_gateway_frees_the_implied_first_host():
    cudn = k8s.cudn_layer2("vmnet-c", ["10.80.0.0/24"], labels=ADV, default_gateway_ips=["10.80.0.254"])
    objects = [
        *vm("a", ["10.80.0.1/24"], network="cluster_udn_vmnet-c"),
        *vm("b", ["10.80.0.254/24"], network="cluster_udn_vmnet-c"),
    ]
    p = plan(k8s.state(NODES, cudn, objects), k8s.config())
    assert announced(p) == {"10.80.0.1/32"}
    assert {(x.value, x.reason) for x in p.rejected} == {("10.80.0.254/24", "default-gateway-address")}


def test_one_bad_address_does_not_spoil_the_other():
    p = plan(k8s.state(NODES, VMNET_A, vm("vm-x", ["192.168.100.50/24", "fe80::1/64"])), k8s.config())
    assert announced(p) == {"192.168.100.50/32"}
    assert refused(p) == {("IPAMClaim imported-vms/vm-x.default", "fe80::1/64", "link-local")}


def test_compiled_checker_equals_the_reference_on_the_edges():
    from bgpadv.planner.networks import index_networks

    network = index_networks(k8s.state(VMNET_A, VMNET_B), k8s.config()).advertised["vmnet-a"]
    for version, base in ((4, 0xC0A86400), (6, 0xFD100100 << 96)):
        for value in [0, 1, base - 1, *range(base, base + 8), base + 199, base + 200, base + 255, base + 256]:
            expected = checks.host_address_reason(
                version,
                value,
                network.subnets,
                network.gateways,
                network.infrastructure,
                network.infrastructure_addresses,
            )
            assert network.check(version, value) == expected, (version, hex(value))


# --- networks a claim cannot be announced on ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("network", "reason"),
    [
        pytest.param("imported-vms_tenantnet", "namespaced-udn-not-advertisable", id="namespaced-udn"),
        pytest.param("cluster_udn_vmnet-ghost", "unknown-network", id="missing-cudn"),
        pytest.param("tenantblue", "foreign-network", id="raw-nad-network"),
        pytest.param("cluster_udn_vmnet-lab", "network-not-selected", id="unselected-cudn"),
        pytest.param("cluster_udn_physnet", "network-not-advertisable", id="localnet-cudn"),
    ],
)
def test_claim_on_a_network_that_cannot_be_announced_is_refused(network, reason):
    lab = k8s.cudn_layer2("vmnet-lab", ["192.168.100.0/24"], labels={"team": "lab"})
    physnet = k8s.cudn_localnet("physnet", "physnet-vlan120", ["192.168.100.0/24"], labels=ADV)
    p = plan(k8s.state(NODES, VMNET_A, lab, physnet, vm("vm-x", ["192.168.100.5/24"], network=network)), k8s.config())
    assert announced(p) == set()
    claim_refusals = {(x.value, x.reason) for x in p.rejected if x.source.kind == "IPAMClaim"}
    assert claim_refusals == {(network, reason)}


# --- duplicates ---------------------------------------------------------------------------------------------


def test_duplicate_address_goes_to_the_oldest_claim_and_the_younger_is_refused():
    older = vm("vm-old", ["192.168.100.60/24"], created="2025-02-14T08:00:00Z")
    younger = [
        k8s.ipam_claim(NS, "vm-new.default", "vm-new", NET, ["192.168.100.60/24"], created="2025-02-20T08:00:00Z"),
        k8s.vmi(NS, "vm-new", "worker-2"),
    ]
    for order in ([*younger, *older], [*older, *younger]):  # listing order does not matter
        p = plan(k8s.state(NODES, VMNET_A, order), k8s.config())
        assert {(str(r.prefix), str(r.next_hop)) for r in p.routes if str(r.kind) == "host"} == {
            ("192.168.100.60/32", "10.0.0.11")
        }
        assert refused(p) == {("IPAMClaim imported-vms/vm-new.default", "192.168.100.60/24", "duplicate-address")}
        assert "vm-old.default" in p.rejected[0].message


def test_duplicate_tie_on_creation_time_is_broken_by_namespace_then_name():
    same = "2025-02-14T08:00:00Z"
    objects = [
        *vm("vm-b", ["192.168.100.60/24"], created=same),
        *vm("vm-a", ["192.168.100.60"], created=same),
        *vm("vm-c", ["192.168.100.60/24"], created=same, ns="a-first-namespace"),
    ]
    both = k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=ADV, namespaces=[NS, "a-first-namespace"])
    p = plan(k8s.state(NODES, both, objects), k8s.config())
    assert {str(r.source) for r in p.routes if str(r.kind) == "host"} == {"IPAMClaim a-first-namespace/vm-c.default"}
    assert {str(x.source) for x in p.rejected} == {
        "IPAMClaim imported-vms/vm-a.default",
        "IPAMClaim imported-vms/vm-b.default",
    }


def test_claim_without_creation_time_never_wins_a_conflict():
    dated = vm("vm-z", ["192.168.100.60/24"], created="2025-02-14T08:00:00Z")
    undated = vm("vm-a", ["192.168.100.60/24"])
    del undated[0]["metadata"]["creationTimestamp"]
    p = plan(k8s.state(NODES, VMNET_A, dated, undated), k8s.config())
    assert {x.source.name for x in p.rejected} == {"vm-a.default"}


def test_a_stopped_vm_keeps_its_address_reserved_against_a_younger_claim():
    stopped = k8s.ipam_claim(NS, "vm-old.default", "vm-old", NET, ["192.168.100.60/24"], created="2025-01-01T00:00:00Z")
    p = plan(k8s.state(NODES, VMNET_A, stopped, vm("vm-new", ["192.168.100.60/24"])), k8s.config())
    assert announced(p) == set()
    assert {(x.source.name, x.reason) for x in p.rejected} == {("vm-new.default", "duplicate-address")}


def test_one_claim_listing_the_same_address_twice_is_not_a_duplicate():
    p = plan(
        k8s.state(NODES, VMNET_A, vm("vm-x", ["192.168.100.60/24", "192.168.100.60", "192.168.100.60/24"])),
        k8s.config(),
    )
    assert announced(p) == {"192.168.100.60/32"}
    assert p.rejected == ()


def test_same_address_on_two_overlapping_networks_goes_to_the_older_network_whatever_the_claims_age():
    # the CUDNs are as old as each other: the name breaks the tie, vmnet-a keeps 192.168.100.0/24
    other = k8s.cudn_layer2("vmnet-z", ["192.168.100.0/24"], labels=ADV, namespaces=["tenant-z"])
    objects = [
        *vm("vm-a", ["192.168.100.60/24"], created="2025-02-01T00:00:00Z"),
        *vm(
            "vm-z", ["192.168.100.60/24"], ns="tenant-z", network="cluster_udn_vmnet-z", created="2025-01-01T00:00:00Z"
        ),
    ]
    p = plan(k8s.state(NODES, VMNET_A, other, objects), k8s.config())
    assert announced(p) == {"192.168.100.60/32"}
    assert refused(p) == {
        ("ClusterUserDefinedNetwork vmnet-z", "192.168.100.0/24", "network-overlap"),
        ("IPAMClaim tenant-z/vm-z.default", "cluster_udn_vmnet-z", "network-overlap"),
    }


# --- malformed objects --------------------------------------------------------------------------------------


def _claim(**changes) -> dict:
    c = k8s.ipam_claim(NS, "vm-x.default", "vm-x", NET, ["192.168.100.5/24"])
    for path, value in changes.items():
        target = c
        keys = path.split("__")
        for k in keys[:-1]:
            target = target[k]
        target[keys[-1]] = value
    return c


@pytest.mark.parametrize(
    ("claim", "expected"),
    [
        pytest.param(_claim(spec__network=None), {("None", "malformed-object")}, id="network-null"),
        pytest.param(_claim(spec__network=7), {("7", "malformed-object")}, id="network-integer"),
        pytest.param(_claim(spec="cluster_udn_vmnet-a"), {("None", "malformed-object")}, id="spec-string"),
        pytest.param(
            _claim(status__ips="192.168.100.5/24"), {("192.168.100.5/24", "malformed-object")}, id="ips-string"
        ),
        pytest.param(_claim(status__ips={"a": 1}), {("{'a': 1}", "malformed-object")}, id="ips-mapping"),
        pytest.param(_claim(status=["x"]), set(), id="status-list"),
        pytest.param(_claim(metadata__name=None), {("metadata", "malformed-object")}, id="no-name"),
        pytest.param(_claim(metadata=None), {("metadata", "malformed-object")}, id="no-metadata"),
    ],
)
def test_malformed_claims_are_refused_never_raised(claim, expected):
    p = plan(k8s.state(NODES, VMNET_A, claim, k8s.vmi(NS, "vm-x", "worker-1")), k8s.config())
    assert announced(p) == set()
    assert {(x.value, x.reason) for x in p.rejected} == expected


def test_long_hostile_values_are_truncated_in_refusals():
    p = plan(k8s.state(NODES, VMNET_A, vm("vm-x", ["1" * 5000])), k8s.config())
    assert len(p.rejected[0].value) <= 257
