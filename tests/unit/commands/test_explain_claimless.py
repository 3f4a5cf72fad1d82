"""`explain IP` and `render`'s no-route listing for the addresses of VMs without an IPAMClaim.

Scope: the two places such an address comes from (`bgpadv.commands.reported`): a guest agent's report of an
interface on an IPAM-less secondary CUDN (rule 9 of `planner.vms`) and OVN-K's assignment on the launcher pod of a
primary CUDN (rule 10). For each case — running, stopped, pending, stopping, a network not selected, an address
outside the network, link-local, a second interface, the pod network's own report, a report that is not the guest
agent's, a NAD of no CUDN, a leftover launcher pod, a forged pod, `podNetworkAddresses` off — `explain IP` gives the
verdict, says where the address came from and why, and `render` lists every such address that yields neither a route
nor a refusal, with the same why (and never lists one that is routed or refused). Objects are what OVN-K and KubeVirt
write (`bgpadv_lab.objects`).
"""

from __future__ import annotations

import pytest

from bgpadv.commands.explain_engine import Explainer
from bgpadv.commands.explain_query import parse_query
from bgpadv.commands.outcome import instances, unrouted
from bgpadv.core import reasons
from bgpadv_lab import objects as k8s
from bgpadv_lab.objects import STATIC_VM_NAMESPACE as NS

W1, W2 = "worker-1", "worker-2"
NODES = [k8s.node(W1, "10.0.0.11", "fd00::11"), k8s.node(W2, "10.0.0.12", "fd00::12")]
SELECTOR = {"matchLabels": {"network.example.com/guests": "static"}}
NAMESPACE = k8s.namespace(NS, {"network.example.com/guests": "static"})
SECONDARY = {"secondary": [{"name": "static", "allowedPrefixes": ["10.70.0.0/24"], "maxAddressesPerInterface": 4}]}
VMI = f"VirtualMachineInstance {NS}/db"
GUEST = "status.interfaces data, reported by the guest agent"
POD = f"launcher pod virt-launcher-db-a1b2c: k8s.ovn.org/pod-networks {NS}/vmnet-p (OVN-K's assignment)"


def static(labels: dict[str, str] | None = k8s.ADVERTISED) -> dict:
    """An IPAM-less secondary Layer2 CUDN (the CRD as it stands: no subnet; the allowed prefixes bound it)."""
    return k8s.cudn_layer2(
        "static", None, labels=labels, role="Secondary", ipam_mode="Disabled", namespace_selector=SELECTOR
    )


def guest(ips, *, phase="Running", nad="static", info="domain, guest-agent, multus-status", more=(), **kw) -> dict:
    """VMI db on worker-2 with a bridged interface `data` on NAD `nad`, its guest agent reporting `ips`; `more`:
    further (interface, NAD, ips) attachments."""
    ifaces = [k8s.interface(ips, name="data", pod_interface="pod6c6a4b6e0f1", info_source=info)]
    secondary = [("data", nad)]
    for i, (name, other, addresses) in enumerate(more):
        mac = f"02:7b:4c:00:01:{i:02x}"
        ifaces.append(k8s.interface(addresses, name=name, pod_interface=f"pod{i}", mac=mac, info_source=info))
        secondary.append((name, other))
    node = W2 if phase in ("Running", "Scheduled") else None
    return k8s.vmi(NS, "db", node, phase, interfaces=ifaces, secondary=secondary, **kw)


def primary(labels: dict[str, str] | None = k8s.ADVERTISED) -> dict:
    """A primary Layer2 CUDN without persistent IPs: OVN-K assigns, no IPAMClaim exists."""
    return k8s.cudn_layer2("vmnet-p", ["192.168.110.0/24"], labels=labels, namespaces=[NS], persistent=False)


def pod(ips=("192.168.110.30/24",), *, runs_for: str | None = None, phase: str = "Running") -> dict:
    return k8s.launcher_pod(NS, "db", W1, suffix="a1b2c", ips=ips, nad="vmnet-p", runs_for=runs_for, phase=phase)


def deleting(obj: dict) -> dict:
    obj["metadata"]["deletionTimestamp"] = "2025-03-02T10:00:00Z"
    return obj


def judged(objects, query, **config):
    state = k8s.state(NODES, NAMESPACE, *objects)
    cfg = k8s.config(**{"networks": SECONDARY, **config})
    found = instances(state, cfg)
    result = Explainer(state, cfg, found).explain(parse_query(query))
    silent = {(str(u.source), u.value, u.why) for u in unrouted(state, cfg, found)}
    return result, silent


def met(result) -> set[tuple[str, str]]:
    return {(v.verdict, v.reason or v.message) for v in result.rules if v.verdict != "admitted"}


def stopped_guest(phase: str) -> str:
    return f"{GUEST}: VM stopped: its VirtualMachineInstance is {phase}"


NOT_READ = "the guest's own report is never announced"
POD_NET = (
    f"{GUEST.replace('data', 'default')}: interface default is the pod network's (no Multus attachment): only an "
    "IPAMClaim or OVN-K's assignment on the launcher pod is announced there, never the guest's report"
)

# (objects, query, config, verdict, rules met (not admitted), render's silent rows of the VMI (value, why))
CASES = [
    pytest.param([static(), guest(["10.70.0.20"])], "10.70.0.20", {}, "announced", set(), set(), id="guest-running"),
    pytest.param(
        [static(), guest(["10.70.0.20"], phase="Succeeded")],
        "10.70.0.20",
        {},
        "not announced",
        {("skipped", stopped_guest("Succeeded"))},
        {("10.70.0.20", stopped_guest("Succeeded"))},
        id="guest-vm-stopped",
    ),
    pytest.param(
        [static(), guest(["10.70.0.20"], phase="Scheduled")],
        "10.70.0.20",
        {},
        "not announced",
        {("skipped", f"{GUEST}: VM pending: its VirtualMachineInstance is Scheduled, not Running yet")},
        {("10.70.0.20", f"{GUEST}: VM pending: its VirtualMachineInstance is Scheduled, not Running yet")},
        id="guest-vm-pending",
    ),
    pytest.param(
        [static(), deleting(guest(["10.70.0.20"]))],
        "10.70.0.20",
        {},
        "not announced",
        {("skipped", f"{GUEST}: VM stopping: its VirtualMachineInstance is being deleted")},
        {("10.70.0.20", f"{GUEST}: VM stopping: its VirtualMachineInstance is being deleted")},
        id="guest-vm-stopping",
    ),
    pytest.param(
        [static(labels={}), guest(["10.70.0.20"])],
        "10.70.0.20",
        {},
        "not announced",
        {
            (
                "skipped",
                f"{GUEST}: interface data is on CUDN static, not advertised: {reasons.NETWORK_NOT_SELECTED} "
                "(CUDN static is not selected)",
            )
        },
        {
            (
                "10.70.0.20",
                f"{GUEST}: interface data is on CUDN static, not advertised: {reasons.NETWORK_NOT_SELECTED} "
                "(CUDN static is not selected)",
            )
        },
        id="guest-network-not-selected",
    ),
    pytest.param(
        [static(), guest(["10.71.0.20"])],
        "10.71.0.20",
        {},
        "refused",
        {("refused", reasons.OUTSIDE_NETWORK_SUBNETS)},
        set(),
        id="guest-address-outside-the-network",
    ),
    pytest.param(
        [static(), guest(["10.70.0.20", "fe80::7b:4cff:fe00:22"])],
        "fe80::7b:4cff:fe00:22",
        {},
        "refused",
        {("refused", reasons.LINK_LOCAL)},
        set(),
        id="guest-link-local",
    ),
    pytest.param(
        [static(), guest(["10.70.0.20"], more=[("data2", "static", ["10.70.0.21"])])],
        "10.70.0.21",
        {},
        "announced",
        set(),
        set(),
        id="guest-second-interface",
    ),
    pytest.param(
        [
            static(),
            k8s.namespace("other"),
            k8s.cudn_layer2(
                "other", None, labels=k8s.ADVERTISED, role="Secondary", ipam_mode="Disabled", namespaces=["other"]
            ),
            guest(["10.70.0.20"], more=[("data2", "other", ["10.70.0.40"])]),
        ],
        "10.70.0.40",
        {},
        "refused",
        {("refused", reasons.NAMESPACE_NOT_SELECTED)},
        set(),
        id="guest-second-interface-on-a-network-that-does-not-select-the-namespace",
    ),
    pytest.param(
        [static(), guest(["10.70.0.20"], info="domain, multus-status")],
        "10.70.0.20",
        {},
        "not announced",
        {
            (
                "skipped",
                "status.interfaces data, not from the guest agent (infoSource): only the guest agent's reports "
                "are read (infoSource names no guest-agent)",
            )
        },
        {
            (
                "10.70.0.20",
                "status.interfaces data, not from the guest agent (infoSource): only the guest agent's reports "
                "are read (infoSource names no guest-agent)",
            )
        },
        id="not-the-guest-agents-report",
    ),
    pytest.param(
        [static(), guest(["10.70.0.20"], nad="nosuch")],
        "10.70.0.20",
        {},
        "not announced",
        {
            (
                "skipped",
                f"{GUEST}: interface data is on NAD nosuch, which no ClusterUserDefinedNetwork generates: "
                "not advertised",
            )
        },
        {
            (
                "10.70.0.20",
                f"{GUEST}: interface data is on NAD nosuch, which no ClusterUserDefinedNetwork generates: "
                "not advertised",
            )
        },
        id="guest-nad-of-no-cudn",
    ),
    pytest.param(
        [static(), guest(["10.70.0.20"])],
        "10.70.0.99",
        {},
        "unknown",
        set(),
        set(),
        id="an-address-nothing-reports",
    ),
    # rule 10: OVN-K's assignment on the launcher pod of a claimless VM on a primary CUDN
    pytest.param(
        [primary(), k8s.vmi(NS, "db", W1), pod()], "192.168.110.30", {}, "announced", set(), set(), id="pod-running"
    ),
    pytest.param(
        [primary(), k8s.vmi(NS, "db", None, "Succeeded"), pod(phase="Succeeded")],
        "192.168.110.30",
        {},
        "not announced",
        {("skipped", f"{POD}: VM stopped: its VirtualMachineInstance is Succeeded")},
        {("192.168.110.30/24", f"{POD}: VM stopped: its VirtualMachineInstance is Succeeded")},
        id="pod-vm-stopped",
    ),
    pytest.param(
        [primary(), pod()],
        "192.168.110.30",
        {},
        "not announced",
        {("skipped", f"{POD}: VM stopped: no VirtualMachineInstance")},
        set(),  # the source is the leftover pod, checked below
        id="pod-left-over-after-its-vmi",
    ),
    pytest.param(
        [primary(), k8s.vmi(NS, "db", W1, "Scheduled"), pod()],
        "192.168.110.30",
        {},
        "not announced",
        {("skipped", f"{POD}: VM pending: its VirtualMachineInstance is Scheduled, not Running yet")},
        {("192.168.110.30/24", f"{POD}: VM pending: its VirtualMachineInstance is Scheduled, not Running yet")},
        id="pod-vm-pending",
    ),
    pytest.param(
        [primary(labels={}), k8s.vmi(NS, "db", W1), pod()],
        "192.168.110.30",
        {},
        "not announced",
        {
            (
                "skipped",
                f"{POD}: CUDN vmnet-p is not advertised: {reasons.NETWORK_NOT_SELECTED} (CUDN vmnet-p is not selected)",
            )
        },
        {
            (
                "192.168.110.30/24",
                f"{POD}: CUDN vmnet-p is not advertised: {reasons.NETWORK_NOT_SELECTED} (CUDN vmnet-p is not selected)",
            )
        },
        id="pod-network-not-selected",
    ),
    pytest.param(
        [primary(), k8s.vmi(NS, "db", W1), pod()],
        "192.168.110.30",
        {"networks": {"podNetworkAddresses": False}},
        "not announced",
        {
            (
                "skipped",
                f"{POD}: networks.podNetworkAddresses is off: OVN-K's assignment on the launcher pod is not read",
            )
        },
        {
            (
                "192.168.110.30/24",
                f"{POD}: networks.podNetworkAddresses is off: OVN-K's assignment on the launcher pod is not read",
            )
        },
        id="pod-network-addresses-off",
    ),
    pytest.param(
        [primary(), k8s.vmi(NS, "db", W1), k8s.vmi(NS, "intruder", W1, "Scheduling"), pod(runs_for="intruder")],
        "192.168.110.30",
        {},
        "not announced",
        {
            (
                "skipped",
                f"{POD}: launcher pod virt-launcher-db-a1b2c names the VMI but KubeVirt does not bind it to it "
                "(uids): never read",
            )
        },
        {
            (
                "192.168.110.30/24",
                f"{POD}: launcher pod virt-launcher-db-a1b2c names the VMI but KubeVirt does not bind "
                "it to it (uids): never read",
            )
        },
        id="pod-forged-by-another-vm",
    ),
]


@pytest.mark.parametrize(("objects", "query", "config", "verdict", "rules", "silent"), CASES)
def test_explain_and_render_of_claimless_addresses(objects, query, config, verdict, rules, silent):
    result, listed = judged(objects, query, **config)
    assert result.verdict == verdict, result.summary
    assert met(result) == rules
    assert {(value, why) for source, value, why in listed if source == VMI} == silent
    if verdict == "not announced":
        [why] = [m for v, m in rules]
        assert result.summary == f"{query} is not announced: {why}"


def test_an_address_a_vmi_reports_is_listed_by_the_vmi_with_where_it_came_from():
    result, _ = judged([static(labels={}), guest(["10.70.0.20"])], "10.70.0.20")
    vmi = next(m for m in result.objects if str(m.ref) == VMI)
    assert "interface data reports it (guest agent)" in vmi.says
    assert "ClusterUserDefinedNetwork static" in {str(m.ref) for m in result.objects}


def test_a_leftover_launcher_pod_is_the_source_of_its_address():
    result, listed = judged([primary(), pod()], "192.168.110.30")
    pod_ref = f"Pod {NS}/virt-launcher-db-a1b2c"
    assert pod_ref in {str(m.ref) for m in result.objects}
    assert listed == {(pod_ref, "192.168.110.30/24", f"{POD}: VM stopped: no VirtualMachineInstance")}


def test_the_pod_networks_own_report_is_listed_but_does_not_make_the_vm_unannounced():
    """A VM with a secondary interface: its guest agent also reports the pod network's address (masquerade,
    10.0.2.2). That report is never read (the primary network's addresses are a claim's or the pod's), so explain
    of the address says why, render lists it, and the VM's verdict stays its secondary address's."""
    objects = [
        static(),
        k8s.vmi(
            NS,
            "db",
            W2,
            interfaces=[
                k8s.interface(["10.0.2.2"]),
                k8s.interface(["10.70.0.20"], name="data", pod_interface="pod6c6a4b6e0f1", mac="02:7b:4c:00:00:06"),
            ],
            secondary=[("data", "static")],
        ),
    ]
    result, listed = judged(objects, "10.0.2.2")
    assert (result.verdict, met(result)) == ("not announced", {("skipped", POD_NET)})
    assert (VMI, "10.0.2.2", POD_NET) in listed
    vm, _ = judged(objects, f"{NS}/db")
    assert vm.verdict == "announced", vm.summary
    assert ("skipped", POD_NET) in met(vm)


def test_a_claims_address_reported_by_the_guest_is_the_claims_alone():
    """vm-b has a claim on the primary network and a secondary interface; its guest reports the claim's address on
    the pod interface: one verdict (the claim's route), nothing listed as silent."""
    objects = [
        static(),
        k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=k8s.ADVERTISED, namespaces=[NS]),
        k8s.ipam_claim(NS, "db.default", "db", "cluster_udn_vmnet-a", ["192.168.100.10/24"]),
        k8s.vmi(
            NS,
            "db",
            W2,
            interfaces=[
                k8s.interface(["192.168.100.10"]),
                k8s.interface(["10.70.0.20"], name="data", pod_interface="pod6c6a4b6e0f1", mac="02:7b:4c:00:00:06"),
            ],
            secondary=[("data", "static")],
        ),
    ]
    result, listed = judged(objects, "192.168.100.10")
    assert (result.verdict, met(result)) == ("announced", set())
    assert listed == set()
