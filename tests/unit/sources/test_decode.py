"""The decoder (`bgpadv.sources.decode`): raw objects become typed, immutable views once, at the edge.

Scope: realistic objects (`bgpadv_lab.objects`) decode into the views the planner reads (networks with their
definition, RouteAdvertisements, nodes with one rule for their addresses, claims with parsed addresses and their VM,
VMIs with their migration and guest reports, launcher pods, namespaces); malformed objects become views that carry
their problem with the reason code the planner refuses them with; hostile shapes (wrong types everywhere, missing
fields, huge lists, deep JSON in annotations) never raise and cost what they show; `state_from_objects` sorts and
decodes like the store.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from bgpadv.core import reasons, resources
from bgpadv.core.prefix import Address, Prefix
from bgpadv.core.views import MAX_GUEST_ADDRESSES, Claim, Network, Node, Vmi
from bgpadv.sources.decode.dispatch import decode, state_from_objects
from bgpadv.sources.decode.vmis import decode_migration
from bgpadv_lab import objects as k8s
from bgpadv_lab.objects import VM_NAMESPACE as NS


def _network(obj: dict) -> Network:
    return decode(resources.CUDN, obj)  # type: ignore[return-value]


def _node(obj: dict) -> Node:
    return decode(resources.NODE, obj)  # type: ignore[return-value]


def _claim(obj: dict) -> Claim:
    return decode(resources.IPAM_CLAIM, obj)  # type: ignore[return-value]


def _vmi(obj: dict) -> Vmi:
    return decode(resources.VMI, obj)  # type: ignore[return-value]


# -- networks ---------------------------------------------------------------------------------------------------------


def test_a_layer2_network_carries_its_definition_and_implied_gateways():
    view = _network(k8s.cudn_layer2("vmnet-a", ["10.100.0.0/24", "fd10:100::/64"], labels=k8s.ADVERTISED))
    assert view.valid and view.name == "vmnet-a" and view.topology == "Layer2" and view.role == "Primary"
    assert view.subnets == (Prefix.parse("10.100.0.0/24"), Prefix.parse("fd10:100::/64"))
    assert view.gateways == {Address.parse("10.100.0.1"), Address.parse("fd10:100::1")}
    assert view.infrastructure_addresses == {Address.parse("10.100.0.2"), Address.parse("fd10:100::2")}
    assert dict(view.labels) == k8s.ADVERTISED
    assert view.ref.kind == "ClusterUserDefinedNetwork" and view.ref.created == k8s.DEFAULT_CREATED


def test_a_layer3_network_carries_its_host_subnet_lengths():
    view = _network(k8s.cudn_layer3("l3", [("10.132.0.0/16", 24), ("fd10:132::/48", None)]))
    assert view.valid and view.topology == "Layer3"
    assert view.host_subnet_lengths == ((Prefix.parse("10.132.0.0/16"), 24), (Prefix.parse("fd10:132::/48"), 64))


def test_a_secondary_ipamless_network_carries_its_namespace_selector():
    view = _network(k8s.cudn_layer2("flat", None, role="Secondary", ipam_mode="Disabled", namespaces=("tenant-a",)))
    assert view.valid and view.secondary and view.subnets == ()
    assert view.namespace_selector is not None
    assert view.namespace_selector.matches({"kubernetes.io/metadata.name": "tenant-a"})


def _with_ipam(ipam: object, role: str = "Primary") -> dict:
    obj = k8s.cudn_layer2("vmnet-a", ["10.100.0.0/24"] if role == "Primary" else None, role=role)
    obj["spec"]["network"]["layer2"]["ipam"] = ipam
    return obj


@pytest.mark.parametrize(
    ("obj", "persistent"),
    [
        pytest.param(k8s.cudn_layer2("vmnet-a", ["10.100.0.0/24"]), True, id="layer2-lifecycle-persistent"),
        pytest.param(k8s.cudn_layer2("vmnet-a", ["10.100.0.0/24"], persistent=False), False, id="layer2-no-lifecycle"),
        pytest.param(k8s.cudn_layer3("l3", [("10.132.0.0/16", 24)]), False, id="layer3-has-no-ipam-block"),
        pytest.param(k8s.cudn_localnet("legacy", "physnet", ["10.200.0.0/24"]), True, id="localnet-persistent"),
        # an older CRD lets these through: each is read as OVN-K renders the NAD (allowPersistentIPs only for
        # `Persistent` with IPAM enabled), the CRD's default, and the network stays valid
        pytest.param(
            _with_ipam({"mode": "Disabled", "lifecycle": "Persistent"}, "Secondary"),
            False,
            id="persistent-without-ipam",
        ),
        pytest.param(_with_ipam({"lifecycle": "persistent"}), False, id="unknown-value-lowercase"),
        pytest.param(_with_ipam({"lifecycle": ["Persistent"]}), False, id="wrong-type"),
        pytest.param(_with_ipam("Persistent"), False, id="ipam-not-an-object"),
    ],
)
def test_a_network_says_whether_its_vms_addresses_are_persistent_ips(obj, persistent):
    """`ipam.lifecycle: Persistent` (IPAMClaims hold the VMs' addresses) decides `claim-required` in per-node mode."""
    view = _network(obj)
    assert view.persistent_ips is persistent
    assert view.problems == () or view.topology == "Localnet"


@pytest.mark.parametrize(
    ("obj", "reason", "claim_reason"),
    [
        pytest.param(
            k8s.cudn_localnet("legacy", "physnet"),
            reasons.NETWORK_NOT_ADVERTISABLE,
            reasons.NETWORK_NOT_ADVERTISABLE,
            id="localnet",
        ),
        pytest.param(
            k8s.cudn_layer2("p", ["10.1.0.0/24"], ipam_mode="Disabled"),
            reasons.INVALID_NETWORK_DEFINITION,
            reasons.INVALID_NETWORK_DEFINITION,
            id="primary-without-ipam",
        ),
        pytest.param(
            k8s.cudn_layer2("v", ["10.1.0.0/24", "10.2.0.0/24"]),
            reasons.INVALID_NETWORK_DEFINITION,
            reasons.INVALID_NETWORK_DEFINITION,
            id="two-subnets-of-one-family",
        ),
        pytest.param(
            k8s.cudn_layer2("m", ["10.1.0.0/24 next-hop 203.0.113.9"]),
            reasons.MALFORMED_ADDRESS,
            reasons.INVALID_NETWORK_DEFINITION,
            id="trailing-words",
        ),
        pytest.param(
            k8s.cudn_layer2("lo", ["127.0.0.0/24"]), reasons.INVALID_NETWORK_DEFINITION, None, id="loopback-subnet"
        ),
        pytest.param(
            k8s.cudn_layer3("h", [("10.132.0.0/16", "24")]), reasons.INVALID_NETWORK_DEFINITION, None, id="host-text"
        ),
    ],
)
def test_a_network_that_cannot_be_advertised_carries_its_refusals(obj, reason, claim_reason):
    view = _network(obj)
    assert not view.valid and view.subnets == ()
    assert view.problems[0].reason == reason
    assert view.claim_problem is not None
    assert view.claim_problem[0] == (claim_reason or reasons.INVALID_NETWORK_DEFINITION)


def test_a_network_being_deleted_or_not_created_is_withdrawn():
    assert _network(k8s.cudn_layer2("a", ["10.1.0.0/24"], deleting=True)).withdrawn
    assert _network(k8s.cudn_layer2("b", ["10.1.0.0/24"], created=False)).withdrawn
    assert not _network(k8s.cudn_layer2("c", ["10.1.0.0/24"])).withdrawn


def test_route_advertisements_selectors_count_only_when_accepted_for_podnetwork():
    ra = decode(resources.ROUTE_ADVERTISEMENTS, k8s.route_advertisements("ra", {"matchLabels": {"a": "b"}}))
    assert ra.pod_network and ra.accepted and len(ra.selectors) == 1  # type: ignore[union-attr]
    stale = k8s.route_advertisements("ra", {}, generation=2, observed_generation=1)
    assert decode(resources.ROUTE_ADVERTISEMENTS, stale).selectors == ()  # type: ignore[union-attr]
    refused = k8s.route_advertisements("ra", {}, accepted=False)
    assert decode(resources.ROUTE_ADVERTISEMENTS, refused).selectors == ()  # type: ignore[union-attr]


# -- nodes ----------------------------------------------------------------------------------------------------------


def test_a_node_carries_its_next_hop_candidates_and_every_address_once():
    obj = k8s.node("worker-1", "10.0.0.11", "fd00::11", node_subnets={"cluster_udn_l3": ["10.132.1.0/24"]})
    obj["status"]["addresses"].append({"type": "ExternalIP", "address": "198.51.100.11"})
    view = _node(obj)
    v4, v6 = Address.parse("10.0.0.11"), Address.parse("fd00::11")
    # InternalIPs first, then node-primary-ifaddr (the same addresses here)
    assert view.next_hop_candidates == (v4, v6, v4, v6)
    # InternalIP, ExternalIP, node-primary-ifaddr and host-cidrs: the planner's and the guard's node addresses
    assert set(view.addresses) == {v4, v6, Address.parse("198.51.100.11")}
    assert len(view.addresses) == len(set(view.addresses))
    assert [h.prefix for h in view.host_subnets["l3"]] == [Prefix.parse("10.132.1.0/24")]
    assert view.host_subnets_problem is None


def test_a_node_without_internal_ip_falls_back_to_the_primary_ifaddr_annotation():
    view = _node(k8s.node("worker-2", "10.0.0.12", internal_ip=False))
    assert view.next_hop_candidates == (Address.parse("10.0.0.12"),)


@pytest.mark.parametrize(
    "annotation",
    [pytest.param("not json", id="not-json"), pytest.param("[1, 2]", id="a-list"), pytest.param("[" * 5000, id="deep")],
)
def test_a_malformed_node_subnets_annotation_is_the_nodes_problem(annotation):
    obj = k8s.node("worker-1", "10.0.0.11")
    obj["metadata"]["annotations"]["k8s.ovn.org/node-subnets"] = annotation
    view = _node(obj)
    assert view.host_subnets_problem is not None
    assert view.host_subnets_problem.reason == reasons.MALFORMED_OBJECT
    assert len(view.host_subnets_problem.value) <= 257


# -- claims ---------------------------------------------------------------------------------------------------------


def test_a_claim_carries_its_network_vm_and_parsed_addresses():
    view = _claim(k8s.ipam_claim(NS, "vm-a.default", "vm-a", "cluster_udn_vmnet-a", ["10.100.0.10/24", "fd10::a/64"]))
    assert view.identified and view.key == (NS, "vm-a.default") and view.network == "cluster_udn_vmnet-a"
    assert view.vm == "vm-a" and view.vm_problem is None and not view.ips_pending
    assert [a.text for a in view.ips] == ["10.100.0.10/24", "fd10::a/64"]
    assert [a.address for a in view.ips] == [Address.parse("10.100.0.10"), Address.parse("fd10::a")]


def test_a_claim_keeps_no_owner_list_and_a_vmi_holds_its_name_once():
    """The planner reads a claim's owners only as its `vm`: an owner list of its own would cost 96 B a claim. A VMI's
    age names it with the very string of its key (a second copy from the document would cost 53 B a VMI)."""
    claim = _claim(k8s.ipam_claim(NS, "vm-a.default", "vm-a", "cluster_udn_vmnet-a", ["10.100.0.10/24"]))
    assert not hasattr(claim, "owners") and claim.vm == "vm-a"
    vmi = _vmi(json.loads(json.dumps(k8s.vmi(NS, "vm-a", "worker-1"))))  # fresh strings, as a LIST page brings
    assert vmi.age[1:] == (NS, "vm-a") and vmi.age[2] is vmi.key[1]


@pytest.mark.parametrize(
    ("ips", "field", "reason"),
    [
        pytest.param(["10.100.0.10/24", "10.100.0.11/24"], "ips_refused", reasons.MALFORMED_OBJECT, id="two-v4"),
        pytest.param(
            [f"10.100.{i // 250}.{i % 250}" for i in range(40_000)], "ips_refused", reasons.MALFORMED_OBJECT, id="40k"
        ),
        pytest.param("10.100.0.10/24", "ips_malformed", reasons.MALFORMED_OBJECT, id="a-string-not-a-list"),
    ],
)
def test_a_claim_refused_whole_carries_its_problem(ips, field, reason):
    view = _claim(k8s.ipam_claim(NS, "vm-a.default", "vm-a", "cluster_udn_vmnet-a", ips))
    problem = getattr(view, field)
    assert problem is not None and problem.reason == reason and view.ips == ()


def test_a_claim_keeps_malformed_entries_one_by_one_and_each_address_once():
    ips = ["10.100.0.10/24", "10.100.0.10", 42, "10.100.0.1 next-hop 203.0.113.9"]
    view = _claim(k8s.ipam_claim(NS, "vm-a.default", "vm-a", "cluster_udn_vmnet-a", ips))
    assert view.ips_refused is None
    assert [(a.text, a.address is None) for a in view.ips] == [
        ("10.100.0.10/24", False),
        ("42", True),
        ("10.100.0.1 next-hop 203.0.113.9", True),
    ]


def test_a_claim_whose_label_and_owner_disagree_has_a_vm_problem():
    obj = k8s.ipam_claim(NS, "vm-a.default", "vm-a", "cluster_udn_vmnet-a", ["10.100.0.10/24"])
    obj["metadata"]["ownerReferences"][0]["name"] = "vm-b"
    view = _claim(obj)
    assert view.vm is None and view.vm_problem is not None and "vm-b" in view.vm_problem.message


def test_a_claim_without_name_is_refused_under_its_store_key():
    view = decode(resources.IPAM_CLAIM, {"kind": "IPAMClaim", "metadata": "broken"}, ("ns", "k"))
    assert isinstance(view, Claim) and not view.identified and view.ref.name == "k" and view.ref.namespace == "ns"


# -- VMIs and pods --------------------------------------------------------------------------------------------------


def test_a_migrating_vmi_carries_its_migration_parsed_once():
    ms = k8s.migration_state("worker-1", "worker-2", target_ready="2025-03-01T10:00:05Z", vmi="vm-a")
    view = _vmi(k8s.vmi(NS, "vm-a", "worker-1", migration_state=ms))
    assert view.running and view.node_name == "worker-1" and view.migration is not None
    m = view.migration
    assert (m.source_node, m.target_node, m.target_pod) == ("worker-1", "worker-2", "virt-launcher-vm-a-tgt01")
    assert m.target_ready and not m.needs_pods and not m.completed and not m.given_up
    assert m.target_ready_at == pytest.approx(1740823205.0)
    assert "2025-03-01T10:00:00Z" in m.timestamps


@pytest.mark.parametrize(
    ("kwargs", "given_up", "needs_pods"),
    [
        pytest.param({}, False, True, id="in-progress"),
        pytest.param({"failed": True}, True, False, id="failed"),
        pytest.param({"abort_status": "Succeeded"}, True, False, id="aborted"),
        pytest.param({"abort_requested": True, "abort_status": "Failed"}, False, True, id="abort-failed"),
        pytest.param({"completed": True}, False, False, id="completed"),
    ],
)
def test_migration_outcomes(kwargs, given_up, needs_pods):
    m = decode_migration(k8s.migration_state("worker-1", "worker-2", **kwargs))
    assert m is not None and m.given_up == given_up and m.needs_pods == needs_pods


def test_a_vmi_on_a_secondary_network_carries_its_attachments_and_guest_reports():
    iface = k8s.interface(["10.150.0.10", "fe80::1", "10.150.0.11"], name="flat0")
    view = _vmi(k8s.vmi(NS, "vm-a", "worker-1", interfaces=[iface], secondary=[("flat0", "tenant/flat")]))
    assert [tuple(a) for a in view.attachments] == [("flat0", "tenant", "flat")]
    (guest,) = view.interfaces
    assert guest.name == "flat0" and guest.guest and guest.count == 3
    assert [a.text for a in guest.addresses or ()] == ["10.150.0.10", "fe80::1", "10.150.0.11"]


def test_a_guest_reporting_thousands_of_addresses_is_kept_bounded():
    ips = [f"10.150.{i // 250}.{i % 250}" for i in range(5000)]
    view = _vmi(k8s.vmi(NS, "vm-a", "worker-1", interfaces=[k8s.interface(ips, name="f")], secondary=[("f", "f")]))
    (guest,) = view.interfaces
    assert guest.count == 5000 and len(guest.addresses or ()) == MAX_GUEST_ADDRESSES
    assert guest.tail_text(4).endswith("...]") and len(guest.tail_text(4)) <= 257


def test_a_launcher_pod_says_where_it_runs_and_whether_the_target_is_ready():
    pod = k8s.launcher_pod(NS, "vm-a", "worker-2", target_ready="2025-03-01T10:00:05Z", migration_job="j")
    view = decode(resources.LAUNCHER_POD, pod)
    vmi_uid = k8s.uid("VirtualMachineInstance", "vm-a", NS)
    assert view.runs(vmi_uid) and not view.runs("") and not view.runs(k8s.uid("VirtualMachineInstance", "vm-b", NS))  # type: ignore[union-attr]
    assert view.live_on("worker-2") and not view.live_on("worker-1")  # type: ignore[union-attr]


# -- hostile shapes -------------------------------------------------------------------------------------------------

GARBAGE = [None, 0, -1, 2**70, 1.5, True, "", "x" * 100_000, [], [None] * 50_000, {}, {"a": {"b": {"c": []}}}]


def _realistic() -> list[tuple[resources.Resource, dict]]:
    ms = k8s.migration_state("worker-1", "worker-2", target_ready="2025-03-01T10:00:05Z")
    return [
        (resources.CUDN, k8s.cudn_layer2("vmnet-a", ["10.100.0.0/24"], infrastructure_subnets=["10.100.0.0/30"])),
        (resources.CUDN, k8s.cudn_layer3("l3", [("10.132.0.0/16", 24)])),
        (resources.ROUTE_ADVERTISEMENTS, k8s.route_advertisements("ra", {"matchLabels": {"a": "b"}})),
        (resources.NODE, k8s.node("worker-1", "10.0.0.11", "fd00::11", node_subnets={"cluster_udn_l3": "10.1.0/24"})),
        (resources.IPAM_CLAIM, k8s.ipam_claim(NS, "vm-a.default", "vm-a", "cluster_udn_vmnet-a", ["10.100.0.10/24"])),
        (resources.VMI, k8s.vmi(NS, "vm-a", "worker-1", migration_state=ms, secondary=[("f", "f")])),
        (resources.LAUNCHER_POD, k8s.launcher_pod(NS, "vm-a", "worker-2")),
        (resources.NAMESPACE, k8s.namespace(NS)),
    ]


def _paths(obj: object, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value inside a realistic object (dict keys and list indexes), depth first."""
    out = [prefix] if prefix else []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:3]):
            out.extend(_paths(v, (*prefix, i)))
    return out


def _replaced(obj: dict, path: tuple, value: object) -> dict:
    copy = json.loads(json.dumps(obj))
    target = copy
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return copy


@pytest.mark.parametrize(("resource", "obj"), [pytest.param(r, o, id=r.kind) for r, o in _realistic()])
def test_garbage_anywhere_never_raises_and_stays_bounded(resource, obj):
    for path in _paths(obj):
        for value in GARBAGE:
            view = decode(resource, _replaced(obj, path, value))
            assert dataclasses.is_dataclass(view)
            for problem in getattr(view, "problems", ()) or ():
                assert len(problem.value) <= 257 and len(problem.message) < 2000


@pytest.mark.parametrize("obj", [None, 0, "text", [], {}, {"metadata": None}, {"metadata": [1]}, {"spec": "x"}])
@pytest.mark.parametrize("resource", resources.ALL, ids=lambda r: r.kind)
def test_objects_of_the_wrong_shape_become_views(resource, obj):
    view = decode(resource, obj, ("ns", "key") if resource.namespaced else "key")
    assert dataclasses.is_dataclass(view)


def test_views_are_immutable():
    view = _node(k8s.node("worker-1", "10.0.0.11"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        view.name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        view.labels["x"] = "y"  # type: ignore[index]


def test_state_from_objects_sorts_and_decodes_and_returns_what_it_did_not_take():
    node = k8s.node("worker-1", "10.0.0.11")
    stranger = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    plain_pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n"}}
    state, ignored = state_from_objects([node, stranger, plain_pod, "not even a dict"])
    assert isinstance(state.nodes["worker-1"], Node)
    assert ignored == [stranger, plain_pod, "not even a dict"]
