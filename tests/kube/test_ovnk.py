"""OVN-Kubernetes produces what bgpadv reads: its own cluster manager (`ovnkube --init-cluster-manager`, built from
the pinned go-controller module) runs against the real apiserver, and every address, condition and NAD the routes
come from is OVN-K's, not a fixture's.

Scope: a primary-UDN namespace and a dual-stack Layer2 primary CUDN with persistent IPs → OVN-K's NetworkCreated
condition and NAD; an IPAMClaim in kubevirt/ipam-extensions' shape (`spec.network` read from the real NAD) and a
virt-launcher pod bound to worker-1 → OVN-K fills the claim's `status.ips` and the pod's `k8s.ovn.org/pod-networks`
→ bgpadv (cluster mode, the shipped ServiceAccount) puts the /32 and the /128 at the FRR ToR via worker-1. A live
migration: the target pod on worker-2 names the same claim and gets the same address from OVN-K, the VMI is moved
as KubeVirt moves it, the next hop moves without a gap. OVN-K's own refusals — `SubnetExhausted` (a /29) and
`IPAddressConflict` (a static address already another VM's) — never reach the ToR and `bgpadv explain` gives OVN-K's
words. A claimless VM's /32 comes from OVN-K's pod-networks. Last, the fixture builders of `bgpadv_lab.objects` are
compared field by field with what OVN-K wrote.

The module runs once per way a launcher pod names its claim: the `ipam-claim-reference` of
`v1.multus-cni.io/default-network` (what OVN-K reads first) and the deprecated `k8s.ovn.org/primary-udn-ipamclaim`.
kubevirt/ipam-extensions (which creates the claims and sets the pod's reference) is not part of the tier: its claim
and the pod's reference are built here from its documented shapes; virt-controller's VMI and pod likewise.
"""

from __future__ import annotations

import ipaddress
import json
import subprocess
import sys
import time
from typing import Any

import pytest

from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import METRICS_PORT, BgpadvInLab, lab_config
from bgpadv_lab.kubeapi import AsServiceAccount
from bgpadv_lab.ovnk import wait_written
from bgpadv_lab.topology import WORKERS

pytestmark = [pytest.mark.kube, pytest.mark.lab]
W1, W2 = WORKERS["w1"][0], WORKERS["w2"][0]
W1_6, W2_6 = WORKERS["w1"][1], WORKERS["w2"][1]
SELECTED = {"bgpadv.test/tier": "ovnk"}
CLAIM = ("k8s.cni.cncf.io/v1alpha1", "IPAMClaim")
VMI = ("kubevirt.io/v1", "VirtualMachineInstance")
CUDN = ("k8s.ovn.org/v1", "ClusterUserDefinedNetwork")
NAD = ("k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition")
PRIMARY_LABEL = "k8s.ovn.org/primary-user-defined-network"
REFERENCES = [k8s.DEFAULT_NETWORK_ANNOTATION, k8s.CLAIM_ANNOTATION]


def unstatused(obj: dict) -> dict:
    """The object as its creator writes it: the status is OVN-K's (or KubeVirt's) to write."""
    return {k: v for k, v in obj.items() if k != "status"}


class Scenario:
    """One run of the module: its namespaces, networks and the way pods reference their claims."""

    def __init__(self, index: int, claim_via: str, lab, api, manager) -> None:
        self.lab, self.api, self.manager = lab, api, manager
        self.claim_via = claim_via
        self.ns = f"ovnk-{index}"
        self.tiny_ns = f"ovnk-{index}-tiny"
        self.net = f"vmnet-o{index}"
        self.tiny = f"tiny-o{index}"
        self.v4, self.v6 = f"192.168.{130 + index}.0/24", f"fd10:{130 + index}::/64"
        self.tiny_v4 = f"192.168.{140 + index}.0/29"
        self.network_name = ""  # from the real NAD
        self.tiny_network_name = ""
        self.uids: dict[tuple[str, str], str] = {}
        self.running: Any = None  # the BgpadvInLab once started

    def wait(self, read, what: str, timeout: float = 30.0):
        return wait_written(read, timeout, what, self.manager)

    # -- networks -------------------------------------------------------------------------------------------------
    def networks(self) -> list[dict]:
        return [
            k8s.cudn_layer2(self.net, [self.v4, self.v6], labels=SELECTED, namespaces=[self.ns]),
            k8s.cudn_layer2(self.tiny, [self.tiny_v4], labels=SELECTED, namespaces=[self.tiny_ns]),
        ]

    def create_networks(self) -> None:
        namespaces = []
        for ns in (self.ns, self.tiny_ns):
            namespaces.append(k8s.namespace(ns, {PRIMARY_LABEL: ""}))
            namespaces.append(
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": ns}}
            )
        self.api.apply([unstatused(o) for o in namespaces])
        self.api.apply([unstatused(o) for o in self.networks()])
        self.network_name = self.network_of_nad(self.ns, self.net)
        self.tiny_network_name = self.network_of_nad(self.tiny_ns, self.tiny)

    def created(self, name: str) -> dict | None:
        cudn = self.api.get(*CUDN, name)
        conditions = {c["type"]: c for c in (cudn or {}).get("status", {}).get("conditions", [])}
        return cudn if (conditions.get("NetworkCreated") or {}).get("status") == "True" else None

    def network_of_nad(self, ns: str, cudn: str) -> str:
        """Wait for OVN-K's NetworkCreated and NAD; the network name its config gives (the claim's spec.network)."""
        self.wait(lambda: self.created(cudn), f"OVN-K's NetworkCreated on CUDN {cudn}")
        nad = self.wait(lambda: self.api.get(*NAD, cudn, ns), f"OVN-K's NAD {ns}/{cudn}")
        return json.loads(nad["spec"]["config"])["name"]

    # -- VMs ------------------------------------------------------------------------------------------------------
    def start_vms(
        self, ns: str, network: str, vms: list[tuple[str, str, bool]], static: dict[str, list[str]] | None = None
    ):
        """Start VMs as KubeVirt and ipam-extensions would: (name, node, with a claim); `static`: VM → the address
        its pod asks for. Returns nothing; OVN-K then writes the claims' status and the pods' pod-networks."""
        static = static or {}
        claims = [k8s.ipam_claim(ns, f"{vm}.default", vm, network, None) for vm, _node, claimed in vms if claimed]
        for claim in claims:
            claim["spec"]["interface"] = "ovn-udn1"  # ipam-extensions names the pod interface
        self.api.apply(claims)
        self.api.apply([unstatused(k8s.vmi(ns, vm, node)) for vm, node, _ in vms])
        for vm, node, _ in vms:
            self.api.patch_status(*VMI, vm, ns, {"status": k8s.vmi(ns, vm, node)["status"] | {"interfaces": []}})
            self.uids[(ns, vm)] = self.api.get(*VMI, vm, ns)["metadata"]["uid"]
        pods = [
            self.launcher(ns, vm, node, claimed=claimed, static_ips=static.get(vm, [])) for vm, node, claimed in vms
        ]
        self.api.apply(pods)

    def launcher(self, ns: str, vm: str, node: str, *, claimed: bool = True, suffix: str = "x7k2p", **extra) -> dict:
        pod = k8s.launcher_pod(
            ns, vm, node, suffix=suffix, claim=f"{vm}.default" if claimed else None, claim_via=self.claim_via, **extra
        )
        return k8s.owned_by(pod, self.uids[(ns, vm)])

    def claim(self, ns: str, vm: str) -> dict:
        return self.api.get(*CLAIM, f"{vm}.default", ns) or {}

    def allocated(self, ns: str, vm: str) -> dict | None:
        """The claim once OVN-K wrote its IPsAllocated condition (either way)."""
        claim = self.claim(ns, vm)
        conditions = (claim.get("status") or {}).get("conditions") or []
        return claim if any(c.get("type") == "IPsAllocated" for c in conditions) else None

    def pod_networks(self, ns: str, vm: str, suffix: str = "x7k2p") -> dict | None:
        pod = self.api.get("v1", "Pod", f"virt-launcher-{vm}-{suffix}", ns) or {}
        raw = (pod.get("metadata", {}).get("annotations") or {}).get("k8s.ovn.org/pod-networks")
        return json.loads(raw) if raw else None

    def addresses(self, ns: str, vm: str) -> list[str]:
        """The claim's `status.ips` once OVN-K allocated them."""
        claim = self.wait(lambda: self.allocated(ns, vm), f"OVN-K's IPsAllocated on {ns}/{vm}.default")
        return claim["status"]["ips"]

    def report_interfaces(self, ns: str, vm: str, ips: list[str]) -> None:
        """What KubeVirt reports once the guest runs (bare addresses)."""
        status = {"interfaces": [k8s.interface([ip.split("/")[0] for ip in ips])]}
        self.api.patch_status(*VMI, vm, ns, {"status": status})


def host(ip: str) -> str:
    iface = ipaddress.ip_interface(ip)
    return f"{iface.ip}/{iface.max_prefixlen}"


@pytest.fixture(scope="module", params=REFERENCES, ids=["ipam-claim-reference", "primary-udn-ipamclaim"])
def produced(ovnk, request):
    """The scenario with OVN-K's networks created, and bgpadv running in worker-1 on them."""
    lab, api, manager = ovnk
    scenario = Scenario(REFERENCES.index(request.param), request.param, lab, api, manager)
    scenario.create_networks()
    bgpadv = BgpadvInLab(
        lab,
        api=AsServiceAccount(api, "bgpadv", "bgpadv"),
        config=lab_config(lab.workdir / "bgpadv-w1" / "kubeconfig", networks={"selector": {"matchLabels": SELECTED}}),
        env={"BGPADV_POD_NAME": "bgpadv-w1", "BGPADV_POD_NAMESPACE": "bgpadv", "BGPADV_POD_NODE_NAME": "worker-1"},
    )
    with bgpadv as running:
        try:
            running.frr.wait_route(scenario.v4, [W1], timeout=60)
        except TimeoutError as exc:
            cudn = api.get(*CUDN, scenario.net)
            log = running.log_path.read_text(errors="replace")[-3000:]
            raise TimeoutError(f"{exc}\nCUDN as OVN-K left it: {cudn}\nbgpadv's log:\n{log}") from None
        scenario.start_vms(
            scenario.ns, scenario.network_name, [("vm-a", "worker-1", True), ("vm-free", "worker-2", False)]
        )
        scenario.running = running
        yield scenario


def explain(scenario: Scenario, target: str) -> tuple[int, dict, str]:
    """`bgpadv explain TARGET` in worker-1, live, with the instance's kubeconfig and /status."""
    running = scenario.running
    argv = [sys.executable, "-m", "bgpadv", "explain", target, "--config", str(running.config_path)]
    argv += ["--kubeconfig", str(running.dir / "kubeconfig"), "--status-url", f"http://127.0.0.1:{METRICS_PORT}"]
    proc = running.lab.net.spawn(
        running.ns, [*argv, "--output", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = proc.communicate(timeout=120)
    return proc.returncode, json.loads(out or b"{}"), err.decode()


def test_ovnk_allocates_the_claim_and_bgpadv_puts_both_families_at_the_tor_via_worker_1(produced):
    s = produced
    ips = s.addresses(s.ns, "vm-a")
    assert sorted(ipaddress.ip_interface(ip).version for ip in ips) == [4, 6], f"dual stack: {ips}"
    networks = s.wait(lambda: s.pod_networks(s.ns, "vm-a"), "OVN-K's pod-networks on vm-a's launcher pod")
    entry = networks[f"{s.ns}/{s.net}"]
    assert entry["role"] == "primary" and sorted(entry["ip_addresses"]) == sorted(ips), "the claim's address"
    s.report_interfaces(s.ns, "vm-a", ips)
    v4, v6 = sorted(ips, key=lambda ip: ipaddress.ip_interface(ip).version)
    s.running.frr.wait_route(host(v4), [W1], timeout=30)
    s.running.frr.wait_route(host(v6), [W1_6], timeout=30)
    code, doc, err = explain(s, f"{s.ns}/vm-a")
    assert (code, doc["verdict"]) == (0, "announced"), err
    (pod,) = [o["says"] for o in doc["objects"] if o["object"].startswith("Pod ")]
    assert pod.endswith("OVN-K allocates its address from IPAMClaim vm-a.default"), "the reference OVN-K followed"


def test_a_live_migration_gets_the_same_address_from_ovnk_and_the_next_hop_moves_without_a_gap(produced):
    s = produced
    frr = s.running.frr
    s.start_vms(s.ns, s.network_name, [("vm-m", "worker-1", True)])
    ips = s.addresses(s.ns, "vm-m")
    v4 = host(next(ip for ip in ips if ipaddress.ip_interface(ip).version == 4))
    frr.wait_route(v4, [W1], timeout=30)
    source = s.wait(lambda: s.pod_networks(s.ns, "vm-m"), "pod-networks of the source pod")[f"{s.ns}/{s.net}"]

    job = k8s.uid("VirtualMachineInstanceMigration", "vm-m", s.ns)
    s.api.apply(s.launcher(s.ns, "vm-m", "worker-2", suffix="tgt01", migration_job=job))
    target = s.wait(lambda: s.pod_networks(s.ns, "vm-m", "tgt01"), "pod-networks of the target pod")[f"{s.ns}/{s.net}"]
    assert (target["ip_addresses"], target["mac_address"]) == (source["ip_addresses"], source["mac_address"])
    migrating = k8s.migration_state("worker-1", "worker-2", vmi="vm-m", ns=s.ns)
    s.api.patch_status(*VMI, "vm-m", s.ns, {"status": {"migrationState": migrating}})
    time.sleep(1.0)
    assert frr.best_next_hops(v4) == [W1], "the target is not live yet"

    seen: list[list[str] | None] = []
    ready = k8s.migration_state("worker-1", "worker-2", target_ready="2026-12-06T12:00:00Z", vmi="vm-m", ns=s.ns)
    s.api.patch_status(*VMI, "vm-m", s.ns, {"status": {"migrationState": ready}})
    frr.wait_for(lambda: seen.append(frr.best_next_hops(v4)) or seen[-1] == [W2], 20, "the next hop W2")
    done = k8s.migration_state(
        "worker-1", "worker-2", target_ready="2026-12-06T12:00:00Z", completed=True, vmi="vm-m", ns=s.ns
    )
    s.api.patch_status(*VMI, "vm-m", s.ns, {"status": {"migrationState": done, "nodeName": "worker-2"}})
    s.api.patch(*VMI, "vm-m", s.ns, {"metadata": {"labels": {"kubevirt.io/nodeName": "worker-2"}}})
    time.sleep(1.0)
    seen.append(frr.best_next_hops(v4))
    assert None not in seen, f"the route must move, not disappear and come back: {seen}"
    assert seen[-1] == [W2]


def refused_rules(doc: dict) -> list[tuple[str, str]]:
    return [(r["reason"], r["message"]) for r in doc["rules"] if r["verdict"] == "refused"]


def test_a_claim_ovnk_could_not_fill_subnet_exhausted_is_never_routed_and_explain_gives_ovnks_words(produced):
    s = produced
    vms = [(f"vm-t{i}", "worker-1", True) for i in range(6)]
    s.start_vms(s.tiny_ns, s.tiny_network_name, vms)
    claims = [s.wait(lambda vm=vm: s.allocated(s.tiny_ns, vm), f"IPsAllocated on {vm}") for vm, _, _ in vms]
    exhausted = [c for c in claims if not c["status"]["ips"]]
    allocated = [c for c in claims if c["status"]["ips"]]
    assert exhausted and allocated, "a /29 holds fewer VMs than six"
    print(f"\nOVN-K's status of an exhausted claim: {json.dumps(exhausted[0]['status'])}")
    for claim in exhausted:
        (condition,) = claim["status"]["conditions"]
        assert (condition["type"], condition["status"], condition["reason"]) == (
            "IPsAllocated",
            "False",
            "SubnetExhausted",
        )
    for claim in allocated:
        s.running.frr.wait_route(host(claim["status"]["ips"][0]), [W1], timeout=30)
    vm = exhausted[0]["metadata"]["labels"]["kubevirt.io/vm"]
    code, doc, err = explain(s, f"{s.tiny_ns}/{vm}")
    assert code == 1, err
    assert doc["verdict"] == "refused"
    ((reason, message),) = refused_rules(doc)
    assert reason == "allocation-refused"
    assert "SubnetExhausted" in message and exhausted[0]["status"]["conditions"][0]["message"][:40] in message
    routes = s.running.frr.bgp_routes("ipv4")
    assert len([p for p in routes if p.endswith("/32") and p.startswith(s.tiny_v4.rsplit(".", 1)[0])]) == len(allocated)


def test_a_static_address_already_taken_is_refused_by_ovnk_never_routed_and_explained(produced):
    s = produced
    taken = next(ip for ip in s.addresses(s.ns, "vm-a") if ipaddress.ip_interface(ip).version == 4)
    free6 = f"{s.v6.split('::')[0]}::99/64"  # OVN-K wants one address per family of a dual-stack network
    s.start_vms(s.ns, s.network_name, [("vm-dup", "worker-2", True)], static={"vm-dup": [taken, free6]})
    claim = s.wait(lambda: s.allocated(s.ns, "vm-dup"), "IPsAllocated on vm-dup")
    print(f"\nOVN-K's status of a conflicting claim: {json.dumps(claim['status'])}")
    (condition,) = claim["status"]["conditions"]
    assert (condition["status"], condition["reason"]) == ("False", "IPAddressConflict"), condition
    assert claim["status"]["ips"] == []
    s.running.frr.wait_route(host(taken), [W1], timeout=30)
    time.sleep(1.0)
    assert s.running.frr.best_next_hops(host(taken)) == [W1], "vm-a keeps its address; nothing points at worker-2"
    code, doc, err = explain(s, f"{s.ns}/vm-dup")
    assert code == 1, err
    ((reason, message),) = refused_rules(doc)
    assert reason == "allocation-refused" and "IPAddressConflict" in message


def test_a_claimless_vm_gets_its_host_route_from_ovnks_pod_networks(produced):
    s = produced
    networks = s.wait(lambda: s.pod_networks(s.ns, "vm-free"), "OVN-K's pod-networks on vm-free's launcher pod")
    entry = networks[f"{s.ns}/{s.net}"]
    assert s.claim(s.ns, "vm-free") == {}, "no claim"
    for ip in entry["ip_addresses"]:
        hop = W2 if ipaddress.ip_interface(ip).version == 4 else W2_6
        s.running.frr.wait_route(host(ip), [hop], timeout=30)


# -- fixture drift: bgpadv_lab.objects against what OVN-K wrote -------------------------------------------------------


def shape(value: Any) -> Any:
    """The keys (recursively) and value types of a document: what the builders must agree on with OVN-K."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return type(value).__name__


# Differences known and explained: the builders' side is deliberate.
TIME_FIELDS = {"lastTransitionTime"}


def test_the_fixture_builders_say_what_ovnk_wrote(produced):
    s = produced
    claim = s.wait(lambda: s.allocated(s.ns, "vm-a"), "vm-a's claim")
    print(f"\nOVN-K's claim status: {json.dumps(claim['status'])}")
    built = k8s.ipam_claim(
        s.ns, "vm-a.default", "vm-a", s.network_name, claim["status"]["ips"], owner_pod="virt-launcher-vm-a-x7k2p"
    )
    # status: the same keys and types, and the same condition in OVN-K's words
    assert shape(built["status"]) == shape(claim["status"])
    ours, theirs = built["status"]["conditions"][0], claim["status"]["conditions"][0]
    assert {k: v for k, v in ours.items() if k not in TIME_FIELDS} == {
        k: v for k, v in theirs.items() if k not in TIME_FIELDS
    }
    assert built["status"]["ownerPod"] == claim["status"]["ownerPod"]

    # pod-networks: the primary entry OVN-K wrote has the builder's keys and value types (the builder once lacked
    # `routes`, `ipv6_lla_gateway_ip` and `tunnel_id`, and its MAC was not derived from the address); the builder
    # adds the default network's entry (infrastructure-locked), which OVN-K's per-node controller writes, not the
    # cluster manager this tier runs.
    written = s.pod_networks(s.ns, "vm-a")
    print(f"OVN-K's pod-networks: {json.dumps(written)}")
    entry = written[f"{s.ns}/{s.net}"]
    built_entry = k8s.pod_networks(s.ns, s.net, entry["ip_addresses"])[f"{s.ns}/{s.net}"]
    missing = set(shape(entry)) - set(shape(built_entry))
    extra = set(shape(built_entry)) - set(shape(entry))
    assert (missing, extra) == (set(), set()), f"OVN-K wrote {entry}"
    assert shape(entry) == shape(built_entry)
    assert entry["mac_address"] == built_entry["mac_address"], "OVN-K's MAC is 0a:58 + the address"
    assert (entry["gateway_ips"], entry["routes"]) == (built_entry["gateway_ips"], built_entry["routes"])
    assert "default" not in written, "the cluster manager writes the primary network's entry only"

    # CUDN conditions: the builder's two conditions, with OVN-K's types, statuses and reasons
    cudn = s.api.get(*CUDN, s.net)
    print(f"OVN-K's CUDN status: {json.dumps(cudn['status'])}")
    theirs_c = {c["type"]: (c["status"], c["reason"]) for c in cudn["status"]["conditions"]}
    ours_c = {c["type"]: (c["status"], c["reason"]) for c in k8s.cudn_layer2(s.net, [s.v4])["status"]["conditions"]}
    assert ours_c == theirs_c
    assert cudn["metadata"]["finalizers"] == k8s.cudn_layer2(s.net, [s.v4])["metadata"]["finalizers"]

    # NAD: named after the CUDN in the namespace; its network name is what claims name
    nad = s.api.get(*NAD, s.net, s.ns)
    print(f"OVN-K's NAD: {json.dumps({k: nad[k] for k in ('metadata', 'spec')})}")
    config = json.loads(nad["spec"]["config"])
    assert config["name"] == f"cluster_udn_{s.net}" == s.network_name
    assert config["netAttachDefName"] == f"{s.ns}/{s.net}"
    assert config["role"] == "primary" and config["topology"] == "layer2"
    assert config["allowPersistentIPs"] is True
