"""Planner, VMs without an IPAMClaim: host routes from OVN-K's own assignment (the launcher pod's pod-networks).

Scope (rule 10 of `bgpadv.planner.vms`, `planner/pod_networks.py`): a Running VMI on an advertised primary Layer2 or
Layer3 CUDN without a claim gets its /32 and /128 from the `k8s.ovn.org/pod-networks` entry `<namespace>/<cudn>`
(role `primary`) of its own launcher pod, through the claims' validation, duplicate, placement and next-hop rules;
a claim of the VM on that network wins; `networks.podNetworkAddresses: false` turns the source off. The pods are
what OVN-K writes (`bgpadv_lab.objects.pod_networks`: go-controller/pkg/util/pod_annotation.go), the VMIs and
migration states what KubeVirt writes (kubevirt.io/api core/v1/types.go).
"""

from __future__ import annotations

import json

import pytest

from bgpadv_lab import objects as k8s
from bgpadv_lab.objects import VM_NAMESPACE as NS
from tests.unit.planner.facts import host_routes, planned_both_ways, refused

ADV = k8s.ADVERTISED
W1, W2 = "worker-1", "worker-2"
NODES = [  # with their host subnets of the Layer3 CUDN `apps` (k8s.ovn.org/node-subnets)
    k8s.node(W1, "10.0.0.11", "fd00::11", node_subnets={"cluster_udn_apps": ["10.132.1.0/24", "fd10:132:0:1::/64"]}),
    k8s.node(W2, "10.0.0.12", "fd00::12", node_subnets={"cluster_udn_apps": ["10.132.2.0/24", "fd10:132:0:2::/64"]}),
]
L2 = k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24", "fd10:100::/64"], labels=ADV, namespaces=[NS])
L3 = k8s.cudn_layer3("apps", [("10.132.0.0/16", 24), ("fd10:132::/48", 64)], labels=ADV, namespaces=[NS])
VMI = f"VirtualMachineInstance {NS}/vm-a"
DUAL = ["192.168.100.10/24", "fd10:100::a/64"]


def pod(ips=DUAL, node=W1, *, vm="vm-a", nad="vmnet-a", **kw):
    return k8s.launcher_pod(NS, vm, node, ips=ips, nad=nad, **kw)


def run(*objects, **config):
    state = k8s.state(NODES, *objects)
    return planned_both_ways(state, k8s.config(**config))


# --- the source ---------------------------------------------------------------------------------------------------


def test_a_vm_without_a_claim_gets_its_host_routes_from_its_launcher_pod_at_its_node():
    p = run(L2, k8s.vmi(NS, "vm-a", W1), pod())
    assert host_routes(p) == {("192.168.100.10/32", "10.0.0.11", VMI), ("fd10:100::a/128", "fd00::11", VMI)}
    assert p.rejected == ()


def test_a_layer3_vm_gets_the_address_ovnk_gave_it_from_its_nodes_host_subnet():
    p = run(L3, k8s.vmi(NS, "vm-a", W2), pod(["10.132.2.5/24", "fd10:132:0:2::5/64"], W2, nad="apps"))
    assert host_routes(p) == {("10.132.2.5/32", "10.0.0.12", VMI), ("fd10:132:0:2::5/128", "fd00::12", VMI)}


def test_the_deprecated_single_ip_address_form_is_read_too():
    annotation = {f"{NS}/vmnet-a": {"ip_address": "192.168.100.10/24", "mac_address": "0a:58:c0:a8:64:0a",
                                    "gateway_ip": "192.168.100.1", "role": "primary"}}  # fmt: skip
    launcher = pod()
    launcher["metadata"]["annotations"]["k8s.ovn.org/pod-networks"] = json.dumps(annotation)
    assert host_routes(run(L2, k8s.vmi(NS, "vm-a", W1), launcher)) == {("192.168.100.10/32", "10.0.0.11", VMI)}


@pytest.mark.parametrize(
    ("objects", "config"),
    [
        pytest.param([k8s.vmi(NS, "vm-a", W1), pod()], {"networks": {"podNetworkAddresses": False}}, id="switched-off"),
        pytest.param([k8s.vmi(NS, "vm-a", W1, phase="Succeeded"), pod(phase="Succeeded")], {}, id="vm-stopped"),
        pytest.param([k8s.vmi(NS, "vm-a", W1), pod(phase="Failed")], {}, id="pod-finished"),
        pytest.param([k8s.vmi(NS, "vm-a", W1), pod(nad="vmnet-z")], {}, id="another-network"),
        pytest.param([k8s.vmi(NS, "vm-a", W1), k8s.launcher_pod(NS, "vm-a", W1)], {}, id="no-annotation"),
        pytest.param([k8s.vmi(NS, "vm-a", W1), pod(runs_for="vm-b")], {}, id="another-vmis-pod-with-this-domain"),
        pytest.param([k8s.vmi(NS, "vm-a", W1), pod(created_by=False, runs_for="vm-b")], {}, id="owner-names-another"),
    ],
)
def test_no_route_and_no_refusal_where_there_is_no_such_assignment(objects, config):
    p = run(L2, *objects, **config)
    assert host_routes(p) == set()
    assert p.rejected == ()


def test_a_nad_of_another_namespace_in_the_annotation_is_not_this_vms_network():
    launcher = pod()
    annotation = json.loads(launcher["metadata"]["annotations"]["k8s.ovn.org/pod-networks"])
    annotation["other-ns/vmnet-a"] = annotation.pop(f"{NS}/vmnet-a")
    launcher["metadata"]["annotations"]["k8s.ovn.org/pod-networks"] = json.dumps(annotation)
    assert host_routes(run(L2, k8s.vmi(NS, "vm-a", W1), launcher)) == set()


def test_a_role_secondary_entry_is_not_the_primary_assignment():
    launcher = pod()
    annotation = json.loads(launcher["metadata"]["annotations"]["k8s.ovn.org/pod-networks"])
    annotation[f"{NS}/vmnet-a"]["role"] = "secondary"
    launcher["metadata"]["annotations"]["k8s.ovn.org/pod-networks"] = json.dumps(annotation)
    assert host_routes(run(L2, k8s.vmi(NS, "vm-a", W1), launcher)) == set()


# --- claims win, the same validation and duplicate rules -----------------------------------------------------------


def test_a_claim_of_the_vm_on_that_network_wins_over_the_pod_annotation():
    claim = k8s.ipam_claim(NS, "vm-a.default", "vm-a", "cluster_udn_vmnet-a", ["192.168.100.20/24"])
    p = run(L2, claim, k8s.vmi(NS, "vm-a", W1), pod())
    assert host_routes(p) == {("192.168.100.20/32", "10.0.0.11", f"IPAMClaim {NS}/vm-a.default")}
    assert p.rejected == ()


def test_a_pending_claim_still_wins_nothing_is_announced_until_it_is_allocated():
    claim = k8s.ipam_claim(NS, "vm-a.default", "vm-a", "cluster_udn_vmnet-a", None)
    assert host_routes(run(L2, claim, k8s.vmi(NS, "vm-a", W1), pod())) == set()


@pytest.mark.parametrize(
    ("ips", "reason"),
    [
        pytest.param(["192.168.100.1/24"], "default-gateway-address", id="gateway"),
        pytest.param(["192.168.100.255/24"], "network-or-broadcast-address", id="broadcast"),
        pytest.param(["10.9.9.9/24"], "outside-network-subnets", id="outside"),
        pytest.param(["192.168.100.10/24 next-hop 1.2.3.4"], "malformed-address", id="injection"),
        pytest.param(["192.168.100.10/24", "192.168.100.11/24"], "malformed-object", id="two-of-one-family"),
    ],
)
def test_pod_addresses_go_through_the_claims_validation(ips, reason):
    p = run(L2, k8s.vmi(NS, "vm-a", W1), pod(ips))
    assert host_routes(p) == set()
    assert {(src, why) for src, _value, why in refused(p)} == {(VMI, reason)}


def test_a_claim_holding_the_address_outranks_the_pod_annotation():
    claim = k8s.ipam_claim(NS, "vm-b.default", "vm-b", "cluster_udn_vmnet-a", ["192.168.100.10/24"])
    p = run(L2, claim, k8s.vmi(NS, "vm-b", W2), k8s.vmi(NS, "vm-a", W1), pod(["192.168.100.10/24"]))
    assert host_routes(p) == {("192.168.100.10/32", "10.0.0.12", f"IPAMClaim {NS}/vm-b.default")}
    assert refused(p) == {(VMI, "192.168.100.10/24", "outranked-address")}


def test_a_malformed_annotation_is_refused_visibly():
    launcher = pod()
    launcher["metadata"]["annotations"]["k8s.ovn.org/pod-networks"] = "{not json"
    p = run(L2, k8s.vmi(NS, "vm-a", W1), launcher)
    assert {why for _src, _value, why in refused(p)} == {"malformed-object"}


# --- migration: two launcher pods, the route follows placement (rule 6) --------------------------------------------


def _migrating(**state):
    ms = k8s.migration_state(W1, W2, vmi="vm-a", **state)
    return k8s.vmi(NS, "vm-a", W1, migration_state=ms)


@pytest.mark.parametrize(
    ("vmi", "target_ready", "node"),
    [
        pytest.param(_migrating(), False, "10.0.0.11", id="in-progress"),
        pytest.param(_migrating(), True, "10.0.0.12", id="target-pod-ready"),
        pytest.param(_migrating(target_ready="2025-03-01T10:00:05Z"), False, "10.0.0.12", id="vmi-says-ready"),
        pytest.param(_migrating(failed=True), True, "10.0.0.11", id="failed"),
    ],
)
def test_during_a_live_migration_the_route_follows_the_claims_rules(vmi, target_ready, node):
    source = pod(suffix="src01")
    ready = "2025-03-01T10:00:05Z" if target_ready else None
    target = pod(node=W2, suffix="tgt01", target_ready=ready, migration_job="job")  # OVN-K copied the annotation
    p = run(L2, vmi, source, target)
    v6 = node.replace("10.0.0.", "fd00::")
    assert {(prefix, hop) for prefix, hop, _src in host_routes(p)} == {
        ("192.168.100.10/32", node),
        ("fd10:100::a/128", v6),
    }
