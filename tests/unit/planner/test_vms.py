"""Planner, VMs: one /32 or /128 per address of every running VM, pointing at the node where the VM runs now.

Scope: claim → VMI linking (label `kubevirt.io/vm`, ownerReference; never the claim name), Running only, pending
and stopped VMs, next hop (node InternalIP of the route's family, the node-primary-ifaddr fallback, `self`), live
migration (target live by VMI timestamp or by the target pod's annotation; failed, aborted and completed
migrations), per-node views, the hostRoutes switch, and claims on Layer3
networks (no persistent IPs there). Node addresses as next hops are in test_nodes.py; guest-reported
addresses on IPAM-less secondary networks in test_secondary.py.
"""

from __future__ import annotations

import pytest

from bgpadv.planner import plan
from bgpadv_lab import objects as k8s
from bgpadv_lab.objects import VM_NAMESPACE as NS
from tests.unit.planner.facts import refused

NET = "cluster_udn_vmnet-a"
ADV = k8s.ADVERTISED
W1, W2, W3 = "worker-1", "worker-2", "worker-3"
NODES = [
    k8s.node(W1, "10.0.0.11", "fd00::11"),
    k8s.node(W2, "10.0.0.12", "fd00::12"),
    k8s.node(W3, "10.0.0.13"),
]
VMNET_A = k8s.cudn_layer2(
    "vmnet-a",
    ["192.168.100.0/24", "fd10:100::/64"],
    labels=ADV,
    infrastructure_subnets=["192.168.100.0/30", "fd10:100::/126"],
    reserved_subnets=["192.168.100.200/29"],
    default_gateway_ips=["192.168.100.1", "fd10:100::1"],
)
DUAL = ["192.168.100.205/24", "fd10:100::cd/64"]


def host_routes(p) -> set[tuple[str, str, str | None, str]]:
    """(prefix, next hop or "self", node, source) of every host route."""
    return {
        (str(r.prefix), str(r.next_hop) if r.next_hop else "self", r.node, str(r.source))
        for r in p.routes
        if str(r.kind) == "host"
    }


def run(*objects, **config) -> object:
    return plan(k8s.state(NODES, VMNET_A, *objects), k8s.config(**config))


def claim(vm="vm-a", ips=DUAL, **kw):
    return k8s.ipam_claim(NS, kw.pop("name", f"{vm}.default"), vm, kw.pop("network", NET), ips, **kw)


def test_running_dual_stack_vm_gets_one_host_route_per_family_to_its_node():
    p = run(claim(), k8s.vmi(NS, "vm-a", W1))
    assert host_routes(p) == {
        ("192.168.100.205/32", "10.0.0.11", W1, "IPAMClaim imported-vms/vm-a.default"),
        ("fd10:100::cd/128", "fd00::11", W1, "IPAMClaim imported-vms/vm-a.default"),
    }
    assert p.rejected == ()
    route = next(r for r in p.routes if str(r.prefix) == "192.168.100.205/32")
    assert route.network == "vmnet-a"
    assert route.source.uid == k8s.uid("IPAMClaim", "vm-a.default", NS)


def test_reserved_subnets_are_announced_imported_vms_live_there():
    p = run(claim(ips=["192.168.100.203/24"]), k8s.vmi(NS, "vm-a", W1))
    assert host_routes(p) == {("192.168.100.203/32", "10.0.0.11", W1, "IPAMClaim imported-vms/vm-a.default")}


@pytest.mark.parametrize(
    ("claim_obj", "vmi_name"),
    [
        pytest.param(claim(vm="vm-a"), "vm-a", id="label-kubevirt-io-vm"),
        pytest.param(claim(vm="vm-a", vm_label=False), "vm-a", id="owner-virtualmachine"),
        pytest.param(
            claim(vm="vm-a", vm_label=False, owner_kind="VirtualMachineInstance"), "vm-a", id="owner-vmi-no-vm"
        ),
        # the claim name says vm-b but the label says vm-a: the label wins, the name is never parsed
        pytest.param(claim(vm="vm-a", name="vm-b.default"), "vm-a", id="claim-name-is-not-parsed"),
    ],
)
def test_claim_is_linked_to_its_vmi_by_label_or_owner_reference(claim_obj, vmi_name):
    decoy = k8s.vmi(NS, "vm-b", W2)
    p = run(claim_obj, k8s.vmi(NS, vmi_name, W1), decoy)
    assert {r[1] for r in host_routes(p)} == {"10.0.0.11", "fd00::11"}


def test_vmi_in_another_namespace_is_not_the_claims_vm():
    p = run(claim(), k8s.vmi("other-ns", "vm-a", W1))
    assert host_routes(p) == set()
    assert p.rejected == ()


@pytest.mark.parametrize(
    "owner_kind",
    [pytest.param("VirtualMachine", id="owner-vm"), pytest.param("VirtualMachineInstance", id="owner-vmi")],
)
def test_claim_whose_label_and_owner_name_different_vms_is_refused_not_guessed(owner_kind):
    c = claim(vm="vm-a", owner_kind=owner_kind)
    c["metadata"]["ownerReferences"][0]["name"] = "vm-b"
    p = run(c, k8s.vmi(NS, "vm-a", W1), k8s.vmi(NS, "vm-b", W2))
    assert host_routes(p) == set()
    assert refused(p) == {("IPAMClaim imported-vms/vm-a.default", "vm-a", "malformed-object")}


def test_two_claims_of_one_vm_two_interfaces_are_both_announced():
    second = claim(name="vm-a.podnet", ips=["192.168.100.9/24"])
    p = run(claim(), second, k8s.vmi(NS, "vm-a", W1))
    assert {(r[0], r[1]) for r in host_routes(p)} == {
        ("192.168.100.205/32", "10.0.0.11"),
        ("fd10:100::cd/128", "fd00::11"),
        ("192.168.100.9/32", "10.0.0.11"),
    }
    assert p.rejected == ()


def test_claim_without_any_vm_link_is_a_malformed_object():
    p = run(k8s.ipam_claim(NS, "orphan.default", None, NET, ["192.168.100.9/24"]), k8s.vmi(NS, "orphan", W1))
    assert refused(p) == {("IPAMClaim imported-vms/orphan.default", NET, "malformed-object")}


def _deleting(obj: dict) -> dict:
    """The object after a DELETE while its finalizers still hold it (a VM being stopped: phase still Running)."""
    obj["metadata"]["deletionTimestamp"] = "2025-03-01T10:00:00Z"
    obj["metadata"]["deletionGracePeriodSeconds"] = 0
    return obj


@pytest.mark.parametrize(
    "objects",
    [
        pytest.param([claim()], id="stopped-no-vmi"),
        pytest.param([claim(), k8s.vmi(NS, "vm-a", W1, phase="Succeeded")], id="vmi-succeeded"),
        pytest.param([claim(), k8s.vmi(NS, "vm-a", None, phase="Scheduling")], id="vmi-scheduling"),
        pytest.param([claim(), k8s.vmi(NS, "vm-a", W1, phase="Failed")], id="vmi-failed"),
        pytest.param([claim(ips=[]), k8s.vmi(NS, "vm-a", None, phase="Pending")], id="allocation-pending"),
        pytest.param([claim(ips=None), k8s.vmi(NS, "vm-a", W1)], id="no-status-old-crd"),
        pytest.param([claim(deleting=True), k8s.vmi(NS, "vm-a", W1)], id="claim-being-deleted"),
        pytest.param([claim(), _deleting(k8s.vmi(NS, "vm-a", W1))], id="vmi-being-deleted-still-running"),
    ],
)
def test_no_host_route_and_no_refusal_unless_the_vmi_is_running_with_addresses(objects):
    p = run(*objects)
    assert host_routes(p) == set()
    assert p.rejected == ()


def test_next_hop_self_announces_host_routes_with_the_speakers_address():
    p = run(claim(), k8s.vmi(NS, "vm-a", W1), nextHop="self")
    assert host_routes(p) == {
        ("192.168.100.205/32", "self", W1, "IPAMClaim imported-vms/vm-a.default"),
        ("fd10:100::cd/128", "self", W1, "IPAMClaim imported-vms/vm-a.default"),
    }


def test_node_without_internal_ip_falls_back_to_the_primary_ifaddr_annotation():
    nodes = [k8s.node(W1, "10.0.0.11", "fd00::11", internal_ip=False)]
    p = plan(k8s.state(nodes, VMNET_A, claim(), k8s.vmi(NS, "vm-a", W1)), k8s.config())
    assert {r[1] for r in host_routes(p)} == {"10.0.0.11", "fd00::11"}


def test_internal_ip_wins_over_the_annotation():
    node = k8s.node(W1, "10.0.0.11", "fd00::11")
    node["metadata"]["annotations"]["k8s.ovn.org/node-primary-ifaddr"] = '{"ipv4": "10.9.9.9/24"}'
    p = plan(k8s.state(node, VMNET_A, claim(), k8s.vmi(NS, "vm-a", W1)), k8s.config())
    assert {r[1] for r in host_routes(p)} == {"10.0.0.11", "fd00::11"}


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        pytest.param(W3, {("fd10:100::cd/64", "no-node-address")}, id="node-without-ipv6"),
        pytest.param("worker-9", {(a, "no-node-address") for a in DUAL}, id="unknown-node"),
    ],
)
def test_a_route_whose_node_has_no_address_of_its_family_is_refused(node, expected):
    p = run(claim(), k8s.vmi(NS, "vm-a", node))
    assert {(x.value, x.reason) for x in p.rejected} == expected
    assert len(host_routes(p)) == 2 - len(expected)


# --- live migration -----------------------------------------------------------------------------------------


def migrating(ms: dict, *pods: dict) -> list[dict]:
    return [claim(), k8s.vmi(NS, "vm-a", ms["sourceNode"], migration_state=ms), *pods]


def target_pod(**kw) -> dict:
    return k8s.launcher_pod(NS, "vm-a", kw.pop("node", W2), suffix="tgt01", migration_job="job-1", **kw)


READY = "2025-03-01T10:00:12Z"


@pytest.mark.parametrize(
    ("objects", "node"),
    [
        pytest.param(migrating(k8s.migration_state(W1, W2, vmi="vm-a")), W1, id="target-not-live-stays-on-source"),
        pytest.param(
            migrating(k8s.migration_state(W1, W2, target_ready=READY, vmi="vm-a")), W2, id="vmi-target-ready-timestamp"
        ),
        pytest.param(
            migrating(k8s.migration_state(W1, W2, vmi="vm-a"), target_pod(target_ready=READY)),
            W2,
            id="target-pod-ready-annotation",
        ),
        pytest.param(
            migrating(k8s.migration_state(W1, W2, vmi="vm-a"), target_pod(target_ready=READY, domain_annotation=False)),
            W2,
            id="target-pod-found-by-created-by-uid",
        ),
        pytest.param(
            migrating(k8s.migration_state(W1, W2, vmi="vm-a"), target_pod()), W1, id="target-pod-without-annotation"
        ),
        pytest.param(
            migrating(k8s.migration_state(W1, W2, vmi="vm-a"), target_pod(target_ready=READY, node=W3)),
            W1,
            id="ready-pod-on-another-node",
        ),
        pytest.param(
            migrating(k8s.migration_state(W1, W2, vmi="vm-a"), target_pod(target_ready=READY, phase="Failed")),
            W1,
            id="ready-pod-failed",
        ),
        pytest.param(
            migrating(k8s.migration_state(W1, W2, target_ready=READY, failed=True, vmi="vm-a")),
            W1,
            id="failed-returns-to-source",
        ),
        pytest.param(
            migrating(k8s.migration_state(W1, W2, abort_requested=True, vmi="vm-a")), W1, id="abort-requested"
        ),
        # once the target domain runs, the abort cannot succeed: the VM is on the target
        pytest.param(
            migrating(k8s.migration_state(W1, W2, target_ready=READY, abort_requested=True, vmi="vm-a")),
            W2,
            id="abort-requested-after-target-live",
        ),
        pytest.param(
            migrating(
                k8s.migration_state(W1, W2, target_ready=READY, abort_requested=True, abort_status="Failed", vmi="vm-a")
            ),
            W2,
            id="abort-failed",
        ),
        pytest.param(
            migrating(k8s.migration_state(W1, W2, abort_requested=True, abort_status="Aborting", vmi="vm-a")),
            W1,
            id="aborting-target-not-live",
        ),
        # completed, but status.nodeName still names the source for a moment: the VM runs on the target
        pytest.param(
            migrating(k8s.migration_state(W1, W2, target_ready=READY, completed=True, vmi="vm-a")),
            W2,
            id="completed-node-name-not-flipped-yet",
        ),
        pytest.param(
            migrating(k8s.migration_state(W1, W2, target_ready=READY, abort_status="Succeeded", vmi="vm-a")),
            W1,
            id="aborted",
        ),
    ],
)
def test_live_migration_moves_the_route_once_the_target_is_live(objects, node):
    p = run(*objects)
    assert {r[2] for r in host_routes(p)} == {node}
    assert p.rejected == ()


def test_previous_completed_migration_still_in_status_keeps_the_vm_where_it_is():
    ms = k8s.migration_state(W3, W2, target_ready=READY, completed=True, vmi="vm-a")
    p = run(claim(), k8s.vmi(NS, "vm-a", W2, migration_state=ms))
    assert {r[2] for r in host_routes(p)} == {W2}


def test_completed_migration_follows_status_node_name():
    ms = k8s.migration_state(W1, W2, target_ready=READY, completed=True, vmi="vm-a")
    p = run(claim(), k8s.vmi(NS, "vm-a", W2, migration_state=ms))
    assert {r[2] for r in host_routes(p)} == {W2}


def test_failed_migration_without_node_name_uses_the_source_node():
    ms = k8s.migration_state(W1, W2, target_ready=READY, failed=True, vmi="vm-a")
    vmi = k8s.vmi(NS, "vm-a", W1, migration_state=ms)
    del vmi["status"]["nodeName"]
    assert {r[2] for r in host_routes(run(claim(), vmi))} == {W1}


def test_owner_pod_of_the_claim_is_never_used_for_placement():
    stale = claim(owner_pod="virt-launcher-vm-a-old01")
    pods = [k8s.launcher_pod(NS, "vm-a", W2, suffix="old01")]  # the first pod, still listed on worker-2
    p = run(stale, k8s.vmi(NS, "vm-a", W1), *pods)
    assert {r[2] for r in host_routes(p)} == {W1}


# --- views and switches -------------------------------------------------------------------------------------


def test_per_node_view_keeps_the_layer2_subnets_and_the_host_routes_of_that_nodes_vms():
    """The full table of per-node rules is in test_pernode.py."""
    objects = [claim(), k8s.vmi(NS, "vm-a", W1), claim(vm="vm-b", ips=["192.168.100.10/24"]), k8s.vmi(NS, "vm-b", W2)]
    subnets = {"192.168.100.0/24", "fd10:100::/64"}
    p = plan(k8s.state(NODES, VMNET_A, *objects), k8s.config(), node=W2)
    assert {str(r.prefix) for r in p.routes} == {*subnets, "192.168.100.10/32"}
    p = plan(k8s.state(NODES, VMNET_A, *objects), k8s.config(nodeName=W1))
    assert {str(r.prefix) for r in p.routes} == {*subnets, "192.168.100.205/32", "fd10:100::cd/128"}


def test_host_routes_switch_off_announces_only_subnets():
    p = run(claim(), k8s.vmi(NS, "vm-a", W1), networks={"hostRoutes": False})
    assert host_routes(p) == set()
    assert {str(r.prefix) for r in p.routes} == {"192.168.100.0/24", "fd10:100::/64"}


# --- claims only on topologies with persistent IPs ----------------------------------------------------------------


def test_claim_on_a_layer3_network_is_refused_persistent_ips_not_supported():
    # OVN-K ignores persistent IPs on Layer3: such a claim's addresses are the host subnet's .0/.1/.2 of some node
    l3 = k8s.cudn_layer3("vmnet-l3", [("10.132.0.0/16", 24)], labels=ADV)
    node = k8s.node(W1, "10.0.0.11", node_subnets={"cluster_udn_vmnet-l3": "10.132.1.0/24"})
    claim_l3 = k8s.ipam_claim(NS, "vm-a.default", "vm-a", "cluster_udn_vmnet-l3", ["10.132.1.2/24", "10.132.1.0/24"])
    p = plan(k8s.state(node, l3, claim_l3, k8s.vmi(NS, "vm-a", W1)), k8s.config())
    assert host_routes(p) == set()
    assert refused(p) == {
        ("IPAMClaim imported-vms/vm-a.default", "cluster_udn_vmnet-l3", "persistent-ips-not-supported")
    }
