"""Planner, IPAM-less secondary Layer2 networks: routed ingress to guest-configured addresses.

Scope: which CUDNs (role Secondary, `ipam.mode: Disabled`, with a subnet as the epic describes or without one as
the CRD stands today, then bounded by `networks.secondary[].allowedPrefixes`), which VMIs (`spec.networks[].multus
.networkName` naming the CUDN's NAD, in a namespace its `namespaceSelector` selects by real labels), which addresses
(the `status.interfaces[]` entry of the same name, reported by the guest agent), hostile guest reports (1,000
addresses, link-local, another VM's address, an address of the primary network, the gateway, outside the allowed
prefixes), the next hop following the VMI's node (live migration at target-ready), and the guard letting the routes
through. Every object is what OVN-K / KubeVirt write.
"""

from __future__ import annotations

import pytest

from bgpadv.planner import plan
from bgpadv.safety.guard import Guard
from bgpadv_lab import objects as k8s
from bgpadv_lab.objects import STATIC_VM_NAMESPACE as NS
from tests.unit.planner.facts import refused

ADV = k8s.ADVERTISED
W1, W2 = "worker-1", "worker-2"
NODES = [k8s.node(W1, "10.0.0.11", "fd00::11"), k8s.node(W2, "10.0.0.12", "fd00::12")]
SELECTOR = {"matchLabels": {"network.example.com/guests": "static"}}
NAMESPACE = k8s.namespace(NS, {"network.example.com/guests": "static"})
PRIMARY = k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=ADV, namespaces=[NS])
ALLOWED = {"secondary": [{"name": "static", "allowedPrefixes": ["10.70.0.0/24"], "maxAddressesPerInterface": 4}]}
VMI = "VirtualMachineInstance static-vms/db"


def today(**kw):
    """The CRD as it stands: Secondary, IPAM disabled, no subnet."""
    return k8s.cudn_layer2("static", None, labels=ADV, role="Secondary", ipam_mode="Disabled",
                           namespace_selector=SELECTOR, **kw)  # fmt: skip


def epic(**kw):
    """The epic's form: a subnet and a default gateway, OVN-K assigning nothing."""
    return k8s.cudn_layer2("static", ["10.70.0.0/16"], labels=ADV, role="Secondary", ipam_mode="Disabled",
                           default_gateway_ips=["10.70.0.1"], namespace_selector=SELECTOR, **kw)  # fmt: skip


def guest(ips, name="db", node=W2, *, ns=NS, nad="static", info="domain, guest-agent, multus-status", **kw):
    """A Running VMI with a bridged interface `data` on the CUDN's NAD, reporting `ips`."""
    iface = k8s.interface(ips, name="data", pod_interface="pod6c6a4b6e0f1", info_source=info)
    return k8s.vmi(ns, name, node, interfaces=[iface], secondary=[("data", nad)], **kw)


def run(*objects, networks=ALLOWED, **config):
    return plan(k8s.state(NODES, NAMESPACE, *objects), k8s.config(networks=networks, **config))


def hosts(p):
    return {(str(r.prefix), str(r.next_hop) if r.next_hop else "self", str(r.source)) for r in p.routes
            if r.kind.value == "host"}  # fmt: skip


# --- which networks -----------------------------------------------------------------------------------------------


def test_todays_form_announces_guest_addresses_inside_the_allowed_prefixes_and_no_subnet_route():
    p = run(today(), guest(["10.70.0.20"]))
    assert {str(r.prefix) for r in p.routes} == {"10.70.0.20/32"}
    assert hosts(p) == {("10.70.0.20/32", "10.0.0.12", VMI)}
    assert p.rejected == ()


def test_todays_form_without_allowed_prefixes_announces_nothing():
    p = run(today(), guest(["10.70.0.20"]), networks={})
    assert p.routes == ()
    assert refused(p) == {(VMI, "10.70.0.20", "outside-network-subnets")}


def test_epics_form_announces_its_subnet_and_the_guest_addresses_bounded_by_subnet_and_allowed_prefixes():
    p = run(epic(), guest(["10.70.0.20", "10.70.5.9", "10.70.0.1"]))
    assert {str(r.prefix) for r in p.routes} == {"10.70.0.0/16", "10.70.0.20/32"}
    assert refused(p) == {
        (VMI, "10.70.5.9", "outside-allowed-prefixes"),  # in the subnet, not in the allowed /24
        (VMI, "10.70.0.1", "default-gateway-address"),
    }


def test_epics_form_without_allowed_prefixes_takes_the_whole_subnet():
    p = run(epic(), guest(["10.70.5.9"]), networks={})
    assert hosts(p) == {("10.70.5.9/32", "10.0.0.12", VMI)}


@pytest.mark.parametrize(
    ("role", "ipam", "topology"),
    [("Secondary", "Enabled", "Layer2"), ("Secondary", None, "Localnet")],
    ids=["secondary-with-ipam", "localnet"],
)
def test_other_secondary_networks_stay_not_advertisable(role, ipam, topology):
    if topology == "Layer2":
        cudn = k8s.cudn_layer2("static", ["10.70.0.0/16"], labels=ADV, role=role, namespace_selector=SELECTOR)
    else:
        cudn = k8s.cudn_localnet("static", "physnet", ["10.70.0.0/16"], labels=ADV)
    p = run(cudn, guest(["10.70.0.20"]))
    assert p.routes == ()
    assert {r.reason for r in p.rejected} == {"network-not-advertisable"}


# --- which VMIs and which interface entries ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("info", "taken"),
    [
        ("domain, guest-agent, multus-status", True),
        ("guest-agent", True),
        ("domain, guest-agent", True),
        (None, True),  # KubeVirt before infoSource existed
        ("domain, multus-status", False),  # not from the guest: OVN-K assigns nothing here
        ("domain", False),
    ],
)
def test_addresses_are_taken_only_from_the_guest_agent(info, taken):
    vmi = guest(["10.70.0.20"], info=info)
    if info is None:
        del vmi["status"]["interfaces"][0]["infoSource"]
    p = run(today(), vmi)
    assert bool(hosts(p)) is taken


def test_namespace_qualified_nad_name_is_followed():
    assert hosts(run(today(), guest(["10.70.0.20"], nad=f"{NS}/static"))) == {("10.70.0.20/32", "10.0.0.12", VMI)}


def test_vmi_in_a_namespace_the_selector_does_not_select_is_refused_even_when_named_alike():
    # the selector is evaluated on real labels, not on the namespace name: "other" has no guests label
    other = k8s.namespace("other")
    vmi = guest(["10.70.0.21"], name="web", ns="other")
    p = run(today(), other, vmi)
    assert p.routes == ()
    assert refused(p) == {("VirtualMachineInstance other/web", "static", "namespace-not-selected")}


def test_relabelling_the_namespace_withdraws_its_guests():
    unlabelled = k8s.namespace(NS)
    p = plan(k8s.state(NODES, unlabelled, today(), guest(["10.70.0.20"])), k8s.config(networks=ALLOWED))
    assert p.routes == ()


def test_interface_on_the_pod_network_or_another_nad_is_not_read():
    vmi = guest(["10.70.0.20"], nad="some-other-nad")
    vmi["status"]["interfaces"].append(k8s.interface(["10.70.0.30"]))  # "default": the primary network
    assert run(today(), vmi).routes == ()


def test_one_address_on_two_interfaces_of_one_vm_counts_once():
    vmi = guest(["10.70.0.20"])
    vmi["spec"]["networks"].append({"name": "data2", "multus": {"networkName": "static"}})
    vmi["status"]["interfaces"].append(k8s.interface(["10.70.0.20", "10.70.0.21"], name="data2"))
    p = run(today(), vmi)
    assert {r[0] for r in hosts(p)} == {"10.70.0.20/32", "10.70.0.21/32"}
    assert p.rejected == ()


def test_stopped_or_stopping_vmis_announce_nothing():
    stopped = guest(["10.70.0.20"], phase="Succeeded")
    stopping = guest(["10.70.0.21"], name="web")
    stopping["metadata"]["deletionTimestamp"] = "2025-03-02T10:00:00Z"
    assert run(today(), stopped, stopping).routes == ()


# --- hostile guest reports -----------------------------------------------------------------------------------------


def test_a_thousand_addresses_take_only_the_configured_number_and_refuse_the_rest_once():
    flood = [f"10.70.0.{i % 250 + 3}" if i < 250 else f"10.70.{i // 250}.{i % 250 + 3}" for i in range(1000)]
    p = run(today(), guest(flood))
    assert {r[0] for r in hosts(p)} == {"10.70.0.3/32", "10.70.0.4/32", "10.70.0.5/32", "10.70.0.6/32"}
    assert [r.reason for r in p.rejected] == ["too-many-addresses"]
    assert "reports 1000 addresses; the first 4 valid ones in address order are taken" in p.rejected[0].message


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("fe80::5054:ff:fe12:3456", "link-local"),
        ("169.254.10.1", "link-local"),
        ("127.0.0.1", "loopback-or-multicast"),
        ("0.0.0.0", "unspecified-address"),
        ("10.70.0.0", "network-or-broadcast-address"),
        ("10.70.0.255", "network-or-broadcast-address"),
        ("192.168.100.10", "outside-network-subnets"),  # an address of the primary network
        ("8.8.8.8", "outside-network-subnets"),
        ("10.70.0.21 next-hop 1.2.3.4", "malformed-address"),
    ],
)
def test_hostile_reports_are_refused_with_their_reason(address, reason):
    p = run(today(), PRIMARY, guest(["10.70.0.20", address]))
    assert hosts(p) == {("10.70.0.20/32", "10.0.0.12", VMI)}
    assert refused(p) == {(VMI, address, reason)}


def test_another_vms_address_goes_to_the_oldest_reporter():
    old = guest(["10.70.0.20"], name="db", created="2025-01-01T00:00:00Z")
    young = guest(["10.70.0.20"], name="thief", node=W1, created="2025-02-01T00:00:00Z")
    p = run(today(), old, young)
    assert hosts(p) == {("10.70.0.20/32", "10.0.0.12", VMI)}
    assert {(s, v, r) for s, v, r in refused(p)} == {
        ("VirtualMachineInstance static-vms/thief", "10.70.0.20", "duplicate-address")
    }


def test_a_claimed_address_reported_by_a_younger_guest_stays_with_the_claim():
    # the epic's form: a subnet shared with nothing else; an IPAMClaim on it (hand-written) is older
    claim = k8s.ipam_claim(NS, "db.data", "db", "cluster_udn_static", ["10.70.0.20/16"], created="2024-01-01T00:00:00Z")
    thief = guest(["10.70.0.20"], name="thief", node=W1, created="2025-02-01T00:00:00Z")
    p = run(epic(), claim, thief, k8s.vmi(NS, "db", W2))
    assert hosts(p) == {("10.70.0.20/32", "10.0.0.12", "IPAMClaim static-vms/db.data")}
    assert ("VirtualMachineInstance static-vms/thief", "10.70.0.20", "outranked-address") in refused(p)


def test_allowed_prefixes_overlapping_the_primary_network_lose_to_the_older_network():
    cfg = {"secondary": [{"name": "static", "allowedPrefixes": ["192.168.100.0/25"]}]}
    p = run(today(created_at="2025-06-01T00:00:00Z"), PRIMARY, guest(["192.168.100.10"]), networks=cfg)
    assert ("ClusterUserDefinedNetwork static", "192.168.100.0/25", "network-overlap") in refused(p)
    assert hosts(p) == set()


# --- moves and the guard --------------------------------------------------------------------------------------------


def test_next_hop_follows_a_live_migration_at_target_ready():
    moving = k8s.migration_state(W2, W1, vmi="db")
    live = k8s.migration_state(W2, W1, vmi="db", target_ready="2025-03-01T10:00:10Z")
    assert hosts(run(today(), guest(["10.70.0.20"], migration_state=moving))) == {("10.70.0.20/32", "10.0.0.12", VMI)}
    assert hosts(run(today(), guest(["10.70.0.20"], migration_state=live))) == {("10.70.0.20/32", "10.0.0.11", VMI)}


def test_the_guard_lets_guest_routes_of_a_network_with_only_allowed_prefixes_through():
    config = k8s.config(networks=ALLOWED)
    state = k8s.state(NODES, NAMESPACE, today(), guest(["10.70.0.20"]))
    p = plan(state, config)
    guard = Guard(config)
    guarded = guard.check(p.routes, guard.context(p))
    assert {str(r.prefix) for peer in guarded.per_peer.values() for r in peer} == {"10.70.0.20/32"}
    assert guarded.rejected == ()


# --- refused addresses never count against the per-interface bound ---------------------------------------------

V6 = {"secondary": [{"name": "static", "allowedPrefixes": ["10.70.0.0/24", "fd10:70::/64"],
                     "maxAddressesPerInterface": 3}]}  # fmt: skip
LINK_LOCAL = "fe80::7b:4cff:fe00:22"
STABLE = "fd10:70::22"
TEMPORARY = ["fd10:70::9c3e:41d0:77a1:2b10", "fd10:70::e0f4:1a2b:3c4d:5e6f"]  # RFC 8981 privacy addresses


@pytest.mark.parametrize(
    "reported",
    [
        pytest.param([LINK_LOCAL, *TEMPORARY, STABLE], id="link-local-first-as-a-bridge-binding-reports-it"),
        pytest.param([*TEMPORARY, LINK_LOCAL, STABLE], id="link-local-between"),
        pytest.param([STABLE, *TEMPORARY, LINK_LOCAL], id="stable-first"),
    ],
)
def test_a_link_local_report_never_crowds_out_the_stable_address(reported):
    p = run(today(), guest(reported), networks=V6)
    assert {r[0] for r in hosts(p)} == {f"{STABLE}/128", *(f"{t}/128" for t in TEMPORARY)}
    assert refused(p) == {(VMI, LINK_LOCAL, "link-local")}


def test_invalid_reports_are_refused_one_by_one_and_the_bound_counts_only_valid_ones():
    reported = ["127.0.0.1", "169.254.10.1", "10.70.0.0", "8.8.8.8", "10.70.0.23", "10.70.0.20", "10.70.0.22",
                "10.70.0.21", "10.70.0.24"]  # fmt: skip
    p = run(today(), guest(reported))  # maxAddressesPerInterface 4
    assert {r[0] for r in hosts(p)} == {"10.70.0.20/32", "10.70.0.21/32", "10.70.0.22/32", "10.70.0.23/32"}
    assert {(value, reason) for _src, value, reason in refused(p)} == {
        ("127.0.0.1", "loopback-or-multicast"),
        ("169.254.10.1", "link-local"),
        ("10.70.0.0", "network-or-broadcast-address"),
        ("8.8.8.8", "outside-network-subnets"),
        ("['10.70.0.24']", "too-many-addresses"),  # the fifth valid one in address order
    }


def test_the_choice_among_valid_reports_does_not_depend_on_the_guests_order():
    reported = [f"10.70.0.{i}" for i in (40, 12, 33, 7, 25, 19)]
    first = run(today(), guest(reported))
    again = run(today(), guest(list(reversed(reported))))
    assert hosts(first) == hosts(again) == {(f"10.70.0.{i}/32", "10.0.0.12", VMI) for i in (7, 12, 19, 25)}
    assert first.rejected == again.rejected


def test_a_real_address_after_a_hundred_garbage_reports_is_still_read():
    reported = [f"fe80::{i:x}" for i in range(1, 101)] + ["10.70.0.20"]
    p = run(today(), guest(reported))
    assert hosts(p) == {("10.70.0.20/32", "10.0.0.12", VMI)}
    assert all(reason in ("link-local", "too-many-addresses") for _s, _v, reason in refused(p))
