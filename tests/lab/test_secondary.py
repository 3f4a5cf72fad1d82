"""Routed ingress to guest-configured addresses on an IPAM-less secondary Layer2 CUDN, against a real FRR ToR.

Scope: fake Kubernetes API → `bgpadv run` (in worker-1) → FRR ToR. The CUDN is the CRD's form today (role
Secondary, `ipam.mode: Disabled`, no subnets); bgpadv's configuration allows 10.77.0.0/24 on it. The VM runs on
worker-2 and its guest agent reports its own addresses on the secondary interface. Every assertion reads FRR's BGP
table or the ToR's FIB, or pings from the external host behind the ToR; none reads bgpadv's logs. Each test uses
its own VM and addresses. Convergence times are printed (`pytest -s`).
"""

from __future__ import annotations

import sys

import pytest

from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import BgpadvInLab, lab_config
from bgpadv_lab.objects import STATIC_VM_NAMESPACE as NS
from bgpadv_lab.topology import EXT_HOST, Lab

pytestmark = pytest.mark.lab

W1, W2 = "10.0.0.11", "10.0.0.12"
ADVERTISED = {"bgpadv.io/advertise": "true"}
GUESTS = {"network.example.com/guestnet": "attached"}
SECONDARY = [{"name": "guestnet", "allowedPrefixes": ["10.77.0.0/24"], "maxAddressesPerInterface": 4}]
VMI_API = ("kubevirt.io/v1", "VirtualMachineInstance")


def guest_vmi(name: str, node: str, ips: list[str], created: str = k8s.DEFAULT_CREATED) -> dict:
    """A Running VMI with a bridged interface `guest` on the CUDN's NAD; its guest agent reports `ips`."""
    iface = k8s.interface(ips, name="guest", pod_interface="pod9b8a7c6d5e4")
    return k8s.vmi(NS, name, node, interfaces=[iface], secondary=[("guest", "guestnet")], created=created)


def cluster() -> list[dict]:
    return [
        k8s.node("worker-1", W1, "fd00::11"),
        k8s.node("worker-2", W2, "fd00::12"),
        k8s.namespace(NS, GUESTS),
        k8s.namespace("elsewhere"),
        k8s.cudn_layer2(
            "guestnet",
            None,
            labels=ADVERTISED,
            role="Secondary",
            ipam_mode="Disabled",
            namespace_selector={"matchLabels": dict(GUESTS)},
        ),
        # the guest reports one allowed address, one outside the allowed prefixes, one link-local, a node's address
        guest_vmi("db", "worker-2", ["10.77.0.20", "10.88.0.5", "fe80::7b:4cff:fe00:22", W1]),
    ]


def report_interfaces(chain: BgpadvInLab, name: str, ips: list[str]) -> None:
    """What the guest agent would do: rewrite the VMI's status.interfaces with the guest's current addresses."""
    iface = k8s.interface(ips, name="guest", pod_interface="pod9b8a7c6d5e4")
    chain.api.patch_status(*VMI_API, name, NS, {"status": {"interfaces": [iface]}})


@pytest.fixture(scope="module")
def chain():
    if sys.platform != "linux":
        pytest.skip("needs Linux network namespaces")
    with Lab("bgpsec") as lab:
        config = lab_config(
            lab.workdir / "bgpadv-w1" / "kubeconfig",
            networks={"selector": {"matchLabels": dict(ADVERTISED)}, "secondary": SECONDARY},
        )
        with BgpadvInLab(lab, cluster(), config=config) as running:
            took = running.frr.wait_route("10.77.0.20/32", [W2], timeout=60)
            print(f"\nfirst guest route at the ToR {took:.2f}s after the session was up")
            yield running


def test_a_guest_reported_address_is_a_host_route_via_the_vms_node_and_nothing_else_is(chain):
    frr = chain.frr
    assert frr.best_next_hops("10.77.0.20/32") == [W2]
    frr.wait_for(lambda: frr.fib_routes(4).get("10.77.0.20/32") == [W2], 5, "FIB via worker-2")
    v4 = frr.bgp_routes("ipv4")
    assert "10.88.0.5/32" not in v4  # outside the allowed prefixes
    assert f"{W1}/32" not in v4  # a node's address
    assert "10.77.0.0/24" not in v4  # the CUDN has no subnet: only host routes
    assert set(v4) == {"10.77.0.20/32"}
    assert frr.bgp_routes("ipv6") == {}  # the link-local report


def test_external_traffic_reaches_the_guest_address_with_its_source_intact(chain):
    """The host behind the ToR pings the guest's own address; the guest sees the host's address: no NAT."""
    lab = chain.lab
    vm_ns = lab.add_vm("w2", "10.77.0.20", "10.77.0.1")
    ping, out = lab.ping_from_outside(vm_ns, "10.77.0.20")
    assert ping.returncode == 0, ping.stdout + ping.stderr
    assert f"IP {EXT_HOST} > 10.77.0.20" in out


def test_the_guest_changing_its_address_withdraws_the_old_route_and_announces_the_new(chain):
    frr = chain.frr
    chain.api.create(guest_vmi("app", "worker-2", ["10.77.0.30"]))
    frr.wait_route("10.77.0.30/32", [W2])
    report_interfaces(chain, "app", ["10.77.0.31"])
    announced = frr.wait_route("10.77.0.31/32", [W2])
    withdrawn = frr.wait_route("10.77.0.30/32", None)
    print(f"\naddress change: new /32 at the ToR after {announced:.2f}s, old gone {withdrawn:.2f}s later")


def test_a_stopped_vm_is_withdrawn(chain):
    frr = chain.frr
    chain.api.create(guest_vmi("batch", "worker-2", ["10.77.0.40"]))
    frr.wait_route("10.77.0.40/32", [W2])
    chain.api.delete(*VMI_API, "batch", NS)
    took = frr.wait_route("10.77.0.40/32", None)
    print(f"\nVM stopped: /32 withdrawn at the ToR after {took:.2f}s")


def test_live_migration_moves_the_next_hop_at_target_ready(chain):
    frr = chain.frr
    chain.api.create(guest_vmi("mover", "worker-2", ["10.77.0.50"]))
    frr.wait_route("10.77.0.50/32", [W2])
    ready = k8s.migration_state("worker-2", "worker-1", target_ready="2026-11-30T12:00:00Z", vmi="mover")
    chain.api.patch_status(*VMI_API, "mover", NS, {"status": {"migrationState": ready}})
    took = frr.wait_route("10.77.0.50/32", [W1])
    print(f"\nlive migration: next hop moved after {took:.2f}s")


def test_hostile_reports_never_reach_the_tor(chain):
    """Outside the allowed prefixes, another VM's address (younger), a flood beyond the per-interface bound."""
    frr = chain.frr
    flood = [f"10.77.0.{i}" for i in range(100, 200)]
    chain.api.create(
        guest_vmi("thief", "worker-1", ["10.77.0.20", "10.99.0.1", *flood], created="2026-01-01T00:00:00Z")
    )
    chain.api.create(guest_vmi("marker", "worker-1", ["10.77.0.60"]))
    frr.wait_route("10.77.0.60/32", [W1])  # applied after the thief: its outcome is on the ToR too
    v4 = frr.bgp_routes("ipv4")
    assert v4["10.77.0.20/32"] == [W2]  # the older reporter (db) keeps it
    assert "10.99.0.1/32" not in v4
    assert {p for p in v4 if p.startswith("10.77.0.1")} == {"10.77.0.100/32", "10.77.0.101/32", "10.77.0.102/32"}
    # 10.99.0.1 is refused (outside the allowed prefixes) before the bound of 4 counts; of the valid ones in address
    # order 10.77.0.20 (lost to the older db), 10.77.0.100, .101, .102 are taken, the rest refused too-many-addresses
    # the namespace the CUDN does not select: nothing, whatever it reports
    other = guest_vmi("stranger", "worker-1", ["10.77.0.70"])
    other["metadata"]["namespace"] = "elsewhere"
    chain.api.create(other)
    chain.api.create(guest_vmi("marker2", "worker-1", ["10.77.0.61"]))
    frr.wait_route("10.77.0.61/32", [W1])
    assert frr.best_next_hops("10.77.0.70/32") is None
