"""`policies[]` and per-peer export filters across an eBGP and an iBGP ToR, IPv4 and IPv6, two replicas
(test_policy.py covers the single-ToR basics: per-network tags, asPathPrepend, an exact deny).

Scope, asserted on FRR's own tables (`show bgp ipv4|ipv6 unicast PREFIX json`, `show bgp neighbors json`), never on
bgpadv's logs. Two bgpadv replicas (cluster mode, AS 64513) on worker-1 and worker-2 watch one fake API; each peers
with ToR A (eBGP AS 64512: one IPv4 session for IPv4, one IPv6 session for IPv6) and ToR B (iBGP, AS 64513, IPv4):

- local preference per policy reaches the iBGP ToR: `locPrf` 300 on vmnet-b's subnet, 150 on the wave-3 VM's /32.
- a VMI label (`bgpadv.io/wave: "3"`) sets MED 50 and community 64513:3 on that VM's /32 and /128; a Namespace label
  (`tier: gold`, `namespaceSelector`) sets community 64513:77, large community 64513:7:7 and MED 70 on the /32 and
  /128 of the VM in that namespace; nothing else carries them.
- IPv6: vmnet-a's communities on its IPv6 subnet and /128s over the IPv6 session.
- export filters per peer with ge/le: ToR B's denies 192.168.200.0/24 ge 25 le 32 (the subnet stays, its /32 goes,
  ToR A keeps both); ToR A's IPv6 session allows fd10:100::/64 le 128 only (vmnet-b's IPv6 subnet and /128 are
  denied by the default).
- relabelling a VMI, then a Namespace, re-tags exactly their VM's routes on every ToR (every other path's attributes
  unchanged) and resets no session (FRR's `connectionsEstablished`/`connectionsDropped` unchanged, the
  `bgpTimerUpEstablishedEpoch` the same within FRR's one-second rounding, the uptime grown).
- every replica sends identical attributes: each prefix's paths from worker-1 and worker-2 agree on every check.
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import Any, NamedTuple

import pytest

from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import BgpadvInLab, shared_api
from bgpadv_lab.frr import FrrRouter, TorSettings
from bgpadv_lab.objects import VM_NAMESPACE as NS
from bgpadv_lab.topology import TOR_V4, TOR_V6, WORKERS, Lab

pytestmark = pytest.mark.lab

W1, W1_6 = WORKERS["w1"]
W2, W2_6 = WORKERS["w2"]
REPLICAS = {W1, W2}
TOR_B = "10.0.0.2"
LOCAL_AS, TOR_A_AS = 64513, 64512
WAVE, TIER = "bgpadv.io/wave", "tier"
GOLD_NS = "gold-vms"
SUBNET_A, SUBNET_A6 = "192.168.100.0/24", "fd10:100::/64"
SUBNET_B, SUBNET_B6 = "192.168.200.0/24", "fd10:200::/64"
# name → (namespace, network, IPv4, IPv6, VMI labels)
VMS: dict[str, tuple[str, str, str, str, dict[str, str]]] = {
    "vm-a": (NS, "vmnet-a", "192.168.100.10", "fd10:100::10", {WAVE: "1"}),
    "vm-a2": (NS, "vmnet-a", "192.168.100.11", "fd10:100::11", {WAVE: "3"}),
    "vm-g": (GOLD_NS, "vmnet-a", "192.168.100.12", "fd10:100::12", {}),
    "vm-b": (NS, "vmnet-b", "192.168.200.20", "fd10:200::20", {}),
}


def host(name: str, version: int = 4) -> str:
    v4, v6 = VMS[name][2:4]
    return f"{v4}/32" if version == 4 else f"{v6}/128"


VMS_G = {host("vm-g"), host("vm-g", 6)}  # the routes of the VM in the gold namespace

POLICIES: list[dict[str, Any]] = [
    {
        "name": "vmnet-a",
        "match": {"networks": ["vmnet-a"]},
        "set": {"communities": ["64513:100"], "largeCommunities": ["64513:1:100"]},
    },
    {
        "name": "vmnet-b",
        "match": {"networks": ["vmnet-b"]},
        "set": {"communities": ["64513:200"], "localPreference": 300},
    },
    {
        "name": "wave-3",
        "match": {"kinds": ["host"], "vmSelector": {"matchLabels": {WAVE: "3"}}},
        "set": {"med": 50, "communities": ["64513:3"], "localPreference": 150},
    },
    {
        "name": "gold",
        "match": {"namespaceSelector": {"matchLabels": {TIER: "gold"}}},
        "set": {"med": 70, "communities": ["64513:77"], "largeCommunities": ["64513:7:7"]},
    },
]


def config(role: str) -> dict[str, Any]:
    v4, v6 = WORKERS[role]
    return {
        "localASN": LOCAL_AS,
        "routerID": v4,
        "peers": [
            {"address": TOR_V4, "asn": TOR_A_AS, "localAddress": v4, "holdTime": 9, "families": ["ipv4 unicast"]},
            {
                "address": TOR_V6,
                "asn": TOR_A_AS,
                "localAddress": v6,
                "holdTime": 9,
                "families": ["ipv6 unicast"],
                "exportFilter": {"rules": [{"prefix": SUBNET_A6, "le": 128}]},  # defaultAction: deny
            },
            {
                "address": TOR_B,
                "asn": LOCAL_AS,
                "localAddress": v4,
                "holdTime": 9,
                "families": ["ipv4 unicast"],
                "exportFilter": {
                    "rules": [{"prefix": SUBNET_B, "ge": 25, "le": 32, "action": "deny"}],
                    "defaultAction": "allow",
                },
            },
        ],
        "networks": {"selector": {"matchLabels": dict(k8s.ADVERTISED)}},
        "nextHop": "node",
        "policies": POLICIES,
        "kubernetes": {"kubeconfig": f"/nonexistent-{role}"},  # replaced with the instance's own
        "metrics": {"listen": "127.0.0.1:9179"},
    }


def cluster() -> list[dict]:
    objs = [
        k8s.node("worker-1", W1, W1_6),
        k8s.node("worker-2", W2, W2_6),
        k8s.namespace(NS),
        k8s.namespace(GOLD_NS, {TIER: "gold"}),
        k8s.cudn_layer2("vmnet-a", [SUBNET_A, SUBNET_A6], labels=k8s.ADVERTISED, namespaces=[NS, GOLD_NS]),
        k8s.cudn_layer2("vmnet-b", [SUBNET_B, SUBNET_B6], labels=k8s.ADVERTISED),
    ]
    for name, (ns, network, v4, v6, labels) in VMS.items():
        objs += [
            k8s.ipam_claim(ns, f"{name}.default", name, f"cluster_udn_{network}", [f"{v4}/24", f"{v6}/64"]),
            k8s.vmi(ns, name, "worker-1", interfaces=[k8s.interface([v4, v6])], labels=labels or None),
            k8s.launcher_pod(ns, name, "worker-1", suffix="src01"),
        ]
    return objs


class Tags(NamedTuple):
    """The attributes of one FRR path that policies set."""

    communities: tuple[str, ...]
    large: tuple[str, ...]
    med: int | None
    local_pref: int | None
    as_path: str


def paths(frr: FrrRouter, prefix: str) -> dict[str, Tags]:
    """replica (the path's peer, by its IPv4 router id) → the tags of its path to `prefix` at `frr`."""
    afi = "ipv6" if ":" in prefix else "ipv4"
    out: dict[str, Tags] = {}
    for p in frr.vtysh_json(f"show bgp {afi} unicast {prefix} json").get("paths") or []:
        out[str((p.get("peer") or {}).get("routerId", "?"))] = Tags(
            tuple(sorted((p.get("community") or {}).get("list", []))),
            tuple(sorted((p.get("largeCommunity") or {}).get("list", []))),
            p.get("metric"),
            p.get("locPrf"),
            _as_path(p),
        )
    return out


def _as_path(path: dict[str, Any]) -> str:
    """The path's AS_PATH as text, "" when empty (FRR's per-prefix view writes an empty one as "Local")."""
    text = str((path.get("aspath") or {}).get("string", ""))
    return "" if text == "Local" else text


def tags(frr: FrrRouter, prefix: str) -> Tags | None:
    """The one set of tags both replicas send for `prefix` (asserted identical), None when `frr` has no path."""
    got = paths(frr, prefix)
    if not got:
        return None
    assert set(got) == REPLICAS, f"{prefix}: paths from {sorted(got)}, expected one from each replica"
    assert len(set(got.values())) == 1, f"{prefix}: the replicas send different attributes: {got}"
    return next(iter(got.values()))


class Session(NamedTuple):
    state: str
    established: int
    dropped: int
    epoch: int
    up_msec: int


def session(frr: FrrRouter, address: str) -> Session:
    n = frr.neighbor(address)
    return Session(
        str(n.get("bgpState", "")),
        int(n.get("connectionsEstablished", 0)),
        int(n.get("connectionsDropped", 0)),
        int(n.get("bgpTimerUpEstablishedEpoch", 0)),
        int(n.get("bgpTimerUpMsec", 0)),
    )


@pytest.fixture(scope="module")
def fabric():
    if sys.platform != "linux":
        pytest.skip("needs Linux network namespaces")
    ranges = ("10.0.0.0/24", "fd00::/64")
    tor_a = TorSettings(asn=TOR_A_AS, cluster_asn=LOCAL_AS, cluster_ranges=ranges, listen_also=(TOR_V6,))
    with Lab("policylab", tor=tor_a) as lab, contextlib.ExitStack() as stack:
        settings_b = TorSettings(
            asn=LOCAL_AS, router_id=TOR_B, listen=TOR_B, cluster_asn=LOCAL_AS, cluster_ranges=("10.0.0.0/24",)
        )
        tor_b = lab.add_tor("torb", (f"{TOR_B}/24",), settings_b)
        api = shared_api(lab)
        stack.enter_context(api)
        api.load(cluster())
        instances = {}
        for role in ("w1", "w2"):
            conf = config(role)
            conf["kubernetes"] = {"kubeconfig": str(lab.workdir / f"bgpadv-{role}" / "kubeconfig")}
            b = BgpadvInLab(lab, node=role, config=conf, api=api)
            stack.callback(b.stop)
            instances[role] = b.start(wait_established=False)
        assert lab.frr is not None
        tor_a = lab.frr
        wanted = [
            (tor_a, "ipv4", {SUBNET_A, SUBNET_B, *(host(n) for n in VMS)}),
            (tor_a, "ipv6", {SUBNET_A6, *(host(n, 6) for n in VMS if VMS[n][1] == "vmnet-a")}),
            (tor_b, "ipv4", {SUBNET_A, SUBNET_B, *(host(n) for n in VMS if VMS[n][1] == "vmnet-a")}),
        ]

        def converged() -> bool:
            return all(
                set(frr.bgp_routes(afi)) == want and all(set(paths(frr, p)) == REPLICAS for p in want)
                for frr, afi, want in wanted
            )

        try:
            tor_a.wait_for(converged, 90, "both ToRs to hold every route from both replicas", every=0.5)
        except TimeoutError as e:
            have = {f"{frr.ns} {afi}": sorted(frr.bgp_routes(afi)) for frr, afi, _ in wanted}
            logs = "\n".join(f"--- {role}:\n{b.log_tail(40)}" for role, b in instances.items())
            raise TimeoutError(f"{e}; FRR has {have}\n{logs}") from None
        yield lab, api, tor_a, tor_b


def everything(tor_a: FrrRouter, tor_b: FrrRouter) -> dict[tuple[str, str], Tags | None]:
    """(ToR, prefix) → tags, for every prefix either ToR might hold."""
    v4 = [SUBNET_A, SUBNET_B, *(host(n) for n in VMS)]
    v6 = [SUBNET_A6, SUBNET_B6, *(host(n, 6) for n in VMS)]
    out = {("A", p): tags(tor_a, p) for p in v4 + v6}
    out.update({("B", p): tags(tor_b, p) for p in v4})
    return out


def sessions(tor_a: FrrRouter, tor_b: FrrRouter) -> dict[str, Session]:
    got = {f"A {a}": session(tor_a, a) for a in (W1, W2, W1_6, W2_6)}
    got.update({f"B {a}": session(tor_b, a) for a in (W1, W2)})
    return got


def assert_not_reset(before: dict[str, Session], after: dict[str, Session]) -> None:
    for name, b in before.items():
        a = after[name]
        assert a.state == "Established", f"{name}: {a}"
        assert (a.established, a.dropped) == (b.established, b.dropped), f"{name} was reset: {b} → {a}"
        # the epoch is wall clock minus uptime, both in whole seconds: it may read one second off, never more
        assert abs(a.epoch - b.epoch) <= 1, f"{name} was re-established: {b} → {a}"
        assert a.up_msec >= b.up_msec, f"{name}'s uptime went back: {b} → {a}"


def settled_sessions(tor_a: FrrRouter, tor_b: FrrRouter) -> dict[str, Session]:
    """The sessions, once each has been up for 3 s (a reset then moves its epoch by more than the rounding)."""
    got = sessions(tor_a, tor_b)
    assert all(s.state == "Established" and s.epoch for s in got.values()), got
    while min(s.up_msec for s in got.values()) < 3000:
        time.sleep(0.5)
        got = sessions(tor_a, tor_b)
    return got


# --- what the ToRs hold ---------------------------------------------------------------------------------------------


def test_the_ibgp_tor_sees_each_policys_local_preference(fabric):
    _, _, _, tor_b = fabric
    assert tags(tor_b, SUBNET_B).local_pref == 300  # vmnet-b
    assert tags(tor_b, host("vm-a2")).local_pref == 150  # wave 3: the later policy's value
    for prefix in (SUBNET_A, host("vm-a"), host("vm-g")):
        assert tags(tor_b, prefix).local_pref == 100, prefix  # none set: the default
    assert {tags(tor_b, p).as_path for p in (SUBNET_A, SUBNET_B, host("vm-a2"))} == {""}  # iBGP: no AS added


def test_a_vmi_label_sets_med_and_a_community_on_that_vms_host_routes_only(fabric):
    _, _, tor_a, tor_b = fabric
    a2 = ("64513:100", "64513:3"), ("64513:1:100",), 50
    assert tags(tor_a, host("vm-a2"))[:3] == a2
    assert tags(tor_a, host("vm-a2", 6))[:3] == a2
    assert tags(tor_b, host("vm-a2"))[:3] == a2
    for prefix in (host("vm-a"), host("vm-a", 6), SUBNET_A, SUBNET_A6):
        assert tags(tor_a, prefix)[:3] == (("64513:100",), ("64513:1:100",), None), prefix


def test_a_namespace_label_tags_the_host_routes_of_the_vms_in_it(fabric):
    _, _, tor_a, tor_b = fabric
    gold = ("64513:100", "64513:77"), ("64513:1:100", "64513:7:7"), 70
    assert tags(tor_a, host("vm-g"))[:3] == gold
    assert tags(tor_a, host("vm-g", 6))[:3] == gold
    assert tags(tor_b, host("vm-g"))[:3] == gold
    elsewhere = [t for (_, p), t in everything(tor_a, tor_b).items() if t is not None and p not in VMS_G]
    assert elsewhere and not any("64513:77" in t.communities or t.med == 70 for t in elsewhere)


def test_ipv6_subnet_and_128s_carry_their_networks_communities_over_the_ipv6_session(fabric):
    _, _, tor_a, _ = fabric
    for prefix in (SUBNET_A6, host("vm-a", 6)):
        t = tags(tor_a, prefix)
        assert (t.communities, t.large, t.as_path) == (("64513:100",), ("64513:1:100",), str(LOCAL_AS)), prefix
    routes = tor_a.vtysh_json(f"show bgp ipv6 unicast {SUBNET_A6} json")["paths"]
    assert {p["peer"]["peerId"] for p in routes} == {W1_6, W2_6}  # learned over the IPv6 sessions


def test_export_filters_per_peer_with_ge_and_le(fabric):
    _, _, tor_a, tor_b = fabric
    # ToR B: 192.168.200.0/24 ge 25 le 32 deny, default allow: vmnet-b's subnet stays, its /32 does not
    assert tags(tor_b, SUBNET_B) is not None
    assert tags(tor_b, host("vm-b")) is None
    assert tags(tor_a, host("vm-b")) is not None  # ToR A's IPv4 session has no filter
    # ToR A over IPv6: fd10:100::/64 le 128 allow, default deny: vmnet-a's IPv6 routes only
    v6 = set(tor_a.bgp_routes("ipv6"))
    assert {SUBNET_A6, host("vm-a", 6), host("vm-a2", 6), host("vm-g", 6)} == v6
    assert SUBNET_B6 not in v6 and host("vm-b", 6) not in v6


# --- changes: run last (they relabel) ---------------------------------------------------------------------------------


def _retag(fabric, change, target: set[str], done) -> None:
    _, api, tor_a, tor_b = fabric
    before_sessions = settled_sessions(tor_a, tor_b)
    before = everything(tor_a, tor_b)
    change(api)
    tor_a.wait_for(lambda: all(done(p, tags(t, p)) for t, p in _at(tor_a, tor_b, target)), 30, f"{target} re-tagged")
    after = everything(tor_a, tor_b)
    changed = {key for key in before if before[key] != after[key]}
    assert {p for _, p in changed} == target, f"re-tagged {sorted(changed)}, expected {sorted(target)} only"
    assert_not_reset(before_sessions, sessions(tor_a, tor_b))


def _at(tor_a: FrrRouter, tor_b: FrrRouter, prefixes: set[str]) -> list[tuple[FrrRouter, str]]:
    out = [(tor_a, p) for p in prefixes]
    return out + [(tor_b, p) for p in prefixes if ":" not in p]


def test_relabelling_a_vmi_retags_exactly_its_routes_on_every_tor_and_resets_no_session(fabric):
    def relabel(api) -> None:
        api.patch("kubevirt.io/v1", "VirtualMachineInstance", "vm-a", NS, {"metadata": {"labels": {WAVE: "3"}}})

    def done(prefix: str, t: Tags | None) -> bool:
        return t is not None and t.med == 50 and "64513:3" in t.communities and (":" in prefix or t.local_pref != 100)

    _retag(fabric, relabel, {host("vm-a"), host("vm-a", 6)}, done)
    tor_b = fabric[3]
    assert tags(tor_b, host("vm-a")).local_pref == 150  # the iBGP ToR: wave 3's local preference


def test_relabelling_a_namespace_retags_exactly_its_vms_routes_and_resets_no_session(fabric):
    def relabel(api) -> None:
        api.patch("v1", "Namespace", GOLD_NS, None, {"metadata": {"labels": {TIER: "silver"}}})

    def done(_prefix: str, t: Tags | None) -> bool:
        return t is not None and "64513:77" not in t.communities and t.med is None

    _retag(fabric, relabel, VMS_G, done)
    _, _, tor_a, _ = fabric
    assert tags(tor_a, host("vm-g"))[:3] == (("64513:100",), ("64513:1:100",), None)
