"""ExaBGP under both runtimes bgpadv supports (`exabgp.runtime`: cpython, pypy), through the whole chain: fake API →
`bgpadv run` → the real FRR ToR, the same scenario for each.

Scope: PyPy is supported where it wins and CPython is the fallback, so both are tested. Each run
also goes through bgpadv's ExaBGP entry point (`bgpadv/speaker/exabgp_boot.py`, which copies a change per peer
instead of deep-copying it). A bulk load of 600 VMs (bulk `announce attributes ... nlri` commands), a dual-stack
VM, a migration, a stopped VM: every assertion reads FRR's BGP table.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import BgpadvInLab, lab_config
from bgpadv_lab.objects import VM_NAMESPACE as NS
from bgpadv_lab.topology import Lab

pytestmark = pytest.mark.lab

W1, W2 = "10.0.0.11", "10.0.0.12"
W1_6 = "fd00::11"
VMS = 600


def address(i: int) -> str:
    return f"192.168.{100 + i // 200}.{10 + i % 200}"


def vm(name: str, node: str, ips: list[str]) -> list[dict]:
    bare = [ip.split("/")[0] for ip in ips]
    return [
        k8s.ipam_claim(NS, f"{name}.default", name, "cluster_udn_vmnet-a", ips),
        k8s.vmi(NS, name, node, interfaces=[k8s.interface(bare)]),
    ]


def cluster() -> list[dict]:
    objs = [
        k8s.node("worker-1", W1, W1_6),
        k8s.node("worker-2", W2, "fd00::12"),
        k8s.cudn_layer2("vmnet-a", ["192.168.96.0/19", "fd10:100::/64"], labels=k8s.ADVERTISED),
        *vm("vm-dual", "worker-1", ["192.168.99.10/19", "fd10:100::10/64"]),
    ]
    for i in range(VMS):
        objs.extend(vm(f"vm-{i}", "worker-1", [f"{address(i)}/19"]))
    return objs


def host_routes(frr) -> int:
    """How many /32s the ToR has in its BGP table."""
    return sum(1 for p in frr.bgp_routes("ipv4") if p.endswith("/32"))


@pytest.fixture(params=["cpython", "pypy"], scope="module")
def chain(request):
    if sys.platform != "linux":
        pytest.skip("needs Linux network namespaces")
    if request.param == "pypy" and shutil.which("pypy3") is None:
        pytest.fail("pypy3 is missing: scripts/install-system-deps.sh installs it")
    with Lab(f"bgprt{request.param[:2]}") as lab:
        config = lab_config(lab.workdir / "bgpadv-w1" / "kubeconfig", exabgp={"runtime": request.param})
        with BgpadvInLab(lab, cluster(), config=config) as running:
            running.frr.wait_for(lambda: host_routes(running.frr) >= VMS + 1, timeout=120, what="the bulk load")
            yield request.param, running


def test_exabgp_runs_under_the_configured_runtime_through_bgpadvs_entry_point(chain) -> None:
    runtime, running = chain
    [pid] = running.exabgp_pids()
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert Path(argv[0].decode()).name.startswith("pypy" if runtime == "pypy" else "python")
    assert argv[1].endswith(b"exabgp_boot.py")


def test_the_bulk_load_and_a_dual_stack_vm_reach_the_tor_at_their_node(chain) -> None:
    _, running = chain
    frr = running.frr
    assert host_routes(frr) == VMS + 1
    for i in (0, VMS // 2, VMS - 1):
        assert frr.best_next_hops(f"{address(i)}/32") == [W1]
    assert frr.best_next_hops("192.168.96.0/19") == [W1]
    frr.wait_route("fd10:100::10/128", [W1_6])


def test_a_migrated_vm_moves_and_a_stopped_vm_is_withdrawn_leaving_the_rest(chain) -> None:
    _, running = chain
    frr, api = running.frr, running.api
    api.patch_status("kubevirt.io/v1", "VirtualMachineInstance", "vm-7", NS, {"status": {"nodeName": "worker-2"}})
    frr.wait_route(f"{address(7)}/32", [W2])
    api.delete("kubevirt.io/v1", "VirtualMachineInstance", "vm-8", NS)
    frr.wait_route(f"{address(8)}/32", None)
    assert frr.best_next_hops(f"{address(9)}/32") == [W1]
    assert host_routes(frr) == VMS
