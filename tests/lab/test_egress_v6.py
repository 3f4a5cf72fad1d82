"""Dual-stack egress over one IPv4 session: the ToR's IPv6 default route lands in the network's table on the node.

Scope (the import's on-link rule per family): the real FRR ToR activates `address-family ipv6 unicast` for its IPv4
neighbors (FRR's default for dual-stack), so it sends its IPv6 routes over the IPv4 session with worker-1 (RFC 4760
MP_REACH), next hop its global IPv6 address on the shared link (fd00::1 on br0, beside 10.0.0.1) and its link-local
one (RFC 2545's pair, which ExaBGP reports as two announcements: the global one is the path's). worker-1 holds
10.0.0.11/24 and fd00::11/64 on the same interface (eth0), so that next hop is on the link of the session: the route
is installed in table 1001 in worker-1's namespace, protocol 186, via fd00::1. When the ToR sets an IPv6 next hop on
no subnet of that link (its outbound route map, `set ipv6 next-hop global`), the path is refused as
`next-hop-off-link` and leaves the kernel table; the IPv4 default route next to it stays.

This kernel has no VRF devices (shared reference lab-kernel.md): table 1001, named in `importRoutes.networks[].
table`, stands in for the VRF's (as in test_egress.py). Assertions read worker-1's kernel table (`ip -j route show
table 1001`); what bgpadv learned and the refusal's reason are read from `/status`.
"""

from __future__ import annotations

import json
import sys

import pytest

from bgpadv.core import reasons
from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import BgpadvInLab, lab_config
from bgpadv_lab.frr import FrrRouter
from bgpadv_lab.netns import sh
from bgpadv_lab.objects import VM_NAMESPACE as NS
from bgpadv_lab.topology import TOR_V4, TOR_V6, Lab

pytestmark = pytest.mark.lab

W1, W1_V6 = "10.0.0.11", "fd00::11"
VM_IP = "192.168.100.10"
TABLE = 1001
DEFAULT4, DEFAULT6 = "0.0.0.0/0", "::/0"
OFF_LINK = "fd99::1"  # a global address on no subnet of worker-1's link with the ToR
ADVERTISED = {"bgpadv.io/advertise": "true"}


def cluster() -> list[dict]:
    return [
        k8s.node("worker-1", W1, W1_V6),
        k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=ADVERTISED),
        k8s.ipam_claim(NS, "vm-a.default", "vm-a", "cluster_udn_vmnet-a", [f"{VM_IP}/24"]),
        k8s.vmi(NS, "vm-a", "worker-1", "Running", interfaces=[k8s.interface([VM_IP])]),
    ]


def imported(ns: str) -> dict[str, list[str]]:
    """The protocol-186 routes of table 1001 in `ns`, both families: destination -> gateways."""
    out = {}
    for family in ("-4", "-6"):
        result = sh(["ip", family, "-j", "route", "show", "table", str(TABLE)], netns=ns, check=False)
        for route in json.loads((result.stdout if result.returncode == 0 else "") or "[]"):
            if str(route.get("protocol")) != "bgp":
                continue
            dst = route["dst"] if route["dst"] != "default" else DEFAULT6 if family == "-6" else DEFAULT4
            hops = [route["gateway"]] if "gateway" in route else [h["gateway"] for h in route.get("nexthops", [])]
            out[dst] = sorted(hops)
    return out


def tentative(ns: str) -> list[str]:
    """The IPv6 addresses of `ns` still in duplicate address detection (`ip -6 addr show tentative`)."""
    links = json.loads(sh(["ip", "-6", "-j", "addr", "show", "tentative"], netns=ns).stdout or "[]")
    return [a["local"] for link in links for a in link.get("addr_info", []) if "local" in a]


@pytest.fixture(scope="module")
def dual_stack():
    if sys.platform != "linux":
        pytest.skip("needs Linux network namespaces")
    with Lab("bgpe6") as lab:
        # FRR chooses a neighbor's IPv6 next hops when the session comes up, from the interface addresses it knows
        # then: both sides' IPv6 addresses past duplicate address detection first, as a ToR's long-configured are
        past_dad = lambda: not tentative(lab.ns("tor")) and not tentative(lab.ns("w1"))  # noqa: E731
        FrrRouter.wait_for(past_dad, 10, "the ToR's and worker-1's IPv6 addresses past DAD")
        config = lab_config(
            lab.workdir / "bgpadv-w1" / "kubeconfig",
            importRoutes={"enabled": True, "networks": [{"name": "vmnet-a", "table": TABLE}]},  # the defaults only
        )
        with BgpadvInLab(lab, cluster(), config=config) as running:
            running.frr.announce_to_cluster(DEFAULT4, DEFAULT6)
            yield running, lab.ns("w1")


def test_the_ipv6_default_route_over_the_ipv4_session_is_installed_via_the_tors_address_on_the_link(dual_stack):
    running, w1 = dual_stack
    assert running.frr.neighbor_state(W1) == "Established"
    assert TOR_V4 in running.status()["import"]["learned"], "one session, with the ToR's IPv4 address"
    running.frr.wait_for(
        lambda: imported(w1) == {DEFAULT4: [TOR_V4], DEFAULT6: [TOR_V6]}, 20, f"both defaults in table {TABLE}"
    )
    learned = running.status()["import"]["learned"][TOR_V4]
    assert learned[DEFAULT6] == TOR_V6, "learned over the IPv4 session, next hop the ToR's global IPv6 address"
    assert running.status()["import"]["networks"]["vmnet-a"]["refusals"] == []


def test_an_ipv6_next_hop_off_the_link_stays_refused(dual_stack):
    running, w1 = dual_stack
    running.frr.wait_for(lambda: imported(w1).get(DEFAULT6) == [TOR_V6], 20, f"{DEFAULT6} via {TOR_V6}")
    running.frr.configure("route-map TO-CLUSTER permit 6", f"set ipv6 next-hop global {OFF_LINK}")
    running.frr.vtysh("clear bgp ipv6 unicast * soft out")
    try:
        running.frr.wait_for(
            lambda: running.status()["import"]["learned"][TOR_V4].get(DEFAULT6) == OFF_LINK,
            20,
            f"bgpadv learning {DEFAULT6} via {OFF_LINK}",
        )
        running.frr.wait_for(lambda: DEFAULT6 not in imported(w1), 10, f"{DEFAULT6} out of table {TABLE}")
        assert imported(w1) == {DEFAULT4: [TOR_V4]}, "the IPv4 default stays"
        network = running.status()["import"]["networks"]["vmnet-a"]
        assert [(r["peer"], r["prefix"], r["nextHop"], r["reason"]) for r in network["refusals"]] == [
            (TOR_V4, DEFAULT6, OFF_LINK, reasons.IMPORT_NEXT_HOP_OFF_LINK)
        ]
    finally:
        running.frr.configure("route-map TO-CLUSTER permit 6", f"no set ipv6 next-hop global {OFF_LINK}")
        running.frr.vtysh("clear bgp ipv6 unicast * soft out")
    running.frr.wait_for(lambda: imported(w1).get(DEFAULT6) == [TOR_V6], 20, f"{DEFAULT6} back via {TOR_V6}")
