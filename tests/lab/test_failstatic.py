"""Fail static against a real router: faults that used to withdraw every VM route leave the ToR untouched.

Chain: fake Kubernetes API → `bgpadv run` (controller + ExaBGP) in worker-1 → FRR ToR. The hold is shortened to
`HOLD` seconds for this module (the lab's entry point `bgpadv_lab.short_hold`; the configuration refuses less than
60 s and the shipped command has no way around it), so the confirmation path can be watched too. Every assertion
reads FRR's BGP table or the ToR kernel's FIB.

- a CRD uninstalled (404) or RBAC withdrawn (403) after the resource was listed: every route stays, in bgpd and in
  the FIB, sample after sample, and nothing moves when the resource is readable again;
- an empty relist (every claim deleted behind the watch's back, history compacted: 410, relist, zero claims): every
  route stays for at least the hold, then a confirming LIST that still finds no claim withdraws the host routes;
  recreated claims are announced at once (announcements are never held);
- a CRD that stays uninstalled past the hold: its routes go after a LIST begun `HOLD` seconds after the first 404.

The tests run in file order and each but the last leaves the cluster as it found it.
"""

from __future__ import annotations

import sys
import time

import pytest

from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import BgpadvInLab, wait_for_routes
from bgpadv_lab.frr import FrrRouter
from bgpadv_lab.objects import VM_NAMESPACE as NS
from bgpadv_lab.topology import Lab

pytestmark = pytest.mark.lab

HOLD = 6.0
NET = "cluster_udn_vmnet-a"
CLAIM_API = "k8s.cni.cncf.io/v1alpha1"
W1, W2 = "10.0.0.11", "10.0.0.12"
SUBNET = "192.168.100.0/24"
VMS = {f"vm-{i}": (f"192.168.100.{i}", "worker-1" if i % 2 else "worker-2") for i in range(10, 18)}
HOSTS = {f"{ip}/32": [W1 if node == "worker-1" else W2] for ip, node in VMS.values()}
EVERY_ROUTE = {SUBNET: [W1], **HOSTS}  # the subnet's next hop is nextHopSelf: worker-1


def claim(vm: str) -> dict:
    return k8s.ipam_claim(NS, f"{vm}.default", vm, NET, [f"{VMS[vm][0]}/24"])


def cluster() -> list[dict]:
    objs = [
        k8s.node("worker-1", W1),
        k8s.node("worker-2", W2),
        k8s.cudn_layer2("vmnet-a", [SUBNET], labels={"bgpadv.io/advertise": "true"}),
    ]
    for vm, (ip, node) in VMS.items():
        objs += [claim(vm), k8s.vmi(NS, vm, node, interfaces=[k8s.interface([ip])])]
    return objs


def vm_routes(table: dict[str, list[str]]) -> dict[str, list[str]]:
    return {prefix: hops for prefix, hops in table.items() if prefix.startswith("192.168.100.")}


def watch_tor(frr: FrrRouter, seconds: float) -> list[tuple[float, dict, dict]]:
    """Sample FRR's IPv4 BGP table and the ToR's FIB (VM routes only) for `seconds`: (time, rib, fib) samples."""
    samples = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        samples.append((time.monotonic(), vm_routes(frr.bgp_routes("ipv4")), vm_routes(frr.fib_routes(4))))
        time.sleep(0.2)
    return samples


def refused(chain: BgpadvInLab, plural: str, status: int) -> int:
    """How many requests for `plural` the fake API answered with `status` (the fault reached bgpadv)."""
    return sum(1 for _, path, code in chain.api.request_log if code == status and f"/{plural}" in path)


def assert_every_route_held(samples: list[tuple[float, dict, dict]], seconds: float) -> None:
    """Every sample shows every route in bgpd and in the FIB, and the samples span `seconds` (within one sample)."""
    assert len(samples) >= 3 and samples[-1][0] - samples[0][0] >= seconds - 1.0, [round(s[0], 2) for s in samples]
    for at, rib, fib in samples:
        assert rib == EVERY_ROUTE, f"bgpd at +{at - samples[0][0]:.1f}s: {rib}"
        assert fib == EVERY_ROUTE, f"FIB at +{at - samples[0][0]:.1f}s: {fib}"


@pytest.fixture(scope="module")
def chain():
    if sys.platform != "linux":
        pytest.skip("needs Linux network namespaces")
    with Lab("bgpfs") as lab, BgpadvInLab(lab, cluster(), hold=HOLD) as running:
        wait_for_routes(running.frr, EVERY_ROUTE, timeout=60)
        yield running


def test_a_crd_uninstalled_after_it_was_listed_withdraws_nothing(chain: BgpadvInLab) -> None:
    chain.api.set_installed("k8s.cni.cncf.io", False)  # IPAMClaims now answer 404
    assert_every_route_held(watch_tor(chain.frr, HOLD - 2), HOLD - 2)
    assert refused(chain, "ipamclaims", 404) >= 2  # refused, and retried
    chain.api.set_installed("k8s.cni.cncf.io", True)
    assert_every_route_held(watch_tor(chain.frr, 2), 2)


def test_rbac_withdrawn_after_the_resource_was_listed_withdraws_nothing(chain: BgpadvInLab) -> None:
    chain.api.fail_next(100_000, 403, plural="virtualmachineinstances")  # every VMI list and watch: 403 Forbidden
    chain.api.drop_watches()
    try:
        assert_every_route_held(watch_tor(chain.frr, HOLD - 2), HOLD - 2)
        assert refused(chain, "virtualmachineinstances", 403) >= 2
    finally:
        chain.api.fail_next(0)
    assert_every_route_held(watch_tor(chain.frr, 2), 2)


def test_an_empty_relist_holds_every_route_until_a_confirming_list_after_the_hold(chain: BgpadvInLab) -> None:
    api, frr = chain.api, chain.frr
    lists = api.requests[("list", "ipamclaims")]
    api.fail_next(100_000, 500, verb="watch", plural="ipamclaims")  # the claims' watch is away...
    api.drop_watches()
    for vm in VMS:  # ...while every claim goes, finalizer first
        api.patch(CLAIM_API, "IPAMClaim", f"{vm}.default", NS, {"metadata": {"finalizers": None}})
        api.delete(CLAIM_API, "IPAMClaim", f"{vm}.default", NS)
    api.compact()  # and the history with them: the watch comes back to 410 Gone, relists, and finds no claim
    api.fail_next(0)
    fault = time.monotonic()

    relisted: float | None = None  # a time before the fake API served bgpadv the empty LIST (the last check before)
    withdrawn: float | None = None
    held: list[tuple[float, dict, dict]] = []
    checked = fault
    while withdrawn is None and time.monotonic() - fault < HOLD + 20:
        at, rib, fib = time.monotonic(), vm_routes(frr.bgp_routes("ipv4")), vm_routes(frr.fib_routes(4))
        if relisted is None:
            if api.requests[("list", "ipamclaims")] > lists:
                relisted = checked
            checked = time.monotonic()
        if rib == {SUBNET: [W1]}:
            withdrawn = at
        else:
            held.append((at, rib, fib))
        time.sleep(0.1)
    assert relisted is not None and relisted - fault < 3, "bgpadv never relisted the claims"
    assert withdrawn is not None, "the host routes were never withdrawn after the hold"
    assert withdrawn - relisted >= HOLD, f"withdrawn {withdrawn - relisted:.1f}s after the empty LIST: too early"
    assert_every_route_held([s for s in held if s[0] < relisted + HOLD], HOLD)  # partial states only at the end
    frr.wait_for(lambda: vm_routes(frr.fib_routes(4)) == {SUBNET: [W1]}, 5, "the ToR's FIB to follow")
    print(
        f"\nempty relist: LIST served {relisted - fault:.2f}s after the fault; every route held at the ToR; "
        f"host routes withdrawn {withdrawn - relisted:.2f}s after that LIST (hold {HOLD}s)"
    )

    recreated = time.monotonic()
    for vm in VMS:
        api.create(claim(vm))
    wait_for_routes(frr, EVERY_ROUTE, timeout=10)
    print(f"claims recreated: every host route back at the ToR in {time.monotonic() - recreated:.2f}s")


def test_a_crd_gone_for_longer_than_the_hold_is_withdrawn_after_a_confirming_list(chain: BgpadvInLab) -> None:
    frr = chain.frr
    chain.api.set_installed("k8s.cni.cncf.io", False)
    fault = time.monotonic()
    assert_every_route_held(watch_tor(frr, HOLD - 1), HOLD - 1)
    wait_for_routes(frr, {SUBNET: [W1]}, timeout=40)
    print(f"\nCRD uninstalled for good: host routes withdrawn {time.monotonic() - fault:.2f}s after the first 404")
    frr.wait_for(lambda: vm_routes(frr.fib_routes(4)) == {SUBNET: [W1]}, 5, "the ToR's FIB to follow")
