"""The whole chain against the real Kubernetes API: kubectl → kube-apiserver (upstream CRDs, schema + CEL) → `bgpadv
run` (with the shipped ServiceAccount's token) → ExaBGP → FRR ToR.

Scope: what the fabric sees when the cluster is driven the way its controllers drive it. Objects from
`bgpadv_lab.objects` are applied with kubectl (server-side apply: the real OpenAPI schema, CEL rules and strict field
validation run); statuses behind a status subresource are written through it (Node, CUDN, IPAMClaim), KubeVirt's
VMI status with the object (its CRD has no status subresource). Every route assertion reads FRR's BGP table.
One bgpadv instance runs in worker-1 for the module, selecting only this module's network.
"""

from __future__ import annotations

import time

import pytest

from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import BgpadvInLab, lab_config, wait_for_routes
from bgpadv_lab.frr import FrrRouter
from bgpadv_lab.kubeapi import AsServiceAccount
from bgpadv_lab.topology import WORKERS

pytestmark = [pytest.mark.kube, pytest.mark.lab]
W1, W2 = WORKERS["w1"][0], WORKERS["w2"][0]
W1_6 = WORKERS["w1"][1]

NS = "kube-chain"
SELECTED = {"bgpadv.test/tier": "chain"}
NETWORK = "cluster_udn_vmnet-k"


def cluster() -> list[dict]:
    return [
        k8s.cudn_layer2(
            "vmnet-k",
            ["192.168.110.0/24", "fd10:110::/64"],
            labels=SELECTED,
            namespaces=[NS],
            infrastructure_subnets=["192.168.110.0/30", "fd10:110::/125"],
            default_gateway_ips=["192.168.110.1", "fd10:110::1"],
        ),
        *vm("vm-a", "worker-1", ["192.168.110.10/24", "fd10:110::10/64"]),
        *vm("vm-b", "worker-2", ["192.168.110.11/24"]),
    ]


def vm(name: str, node: str | None, ips: list[str]) -> list[dict]:
    objs = [k8s.ipam_claim(NS, f"{name}.default", name, NETWORK, ips)]
    if node is not None:
        objs.append(k8s.vmi(NS, name, node, interfaces=[k8s.interface([ip.split("/")[0] for ip in ips])]))
    return objs


def route(frr: FrrRouter, prefix: str) -> list[str] | None:
    return frr.bgp_routes("ipv6" if ":" in prefix else "ipv4").get(prefix)


def wait_route(frr: FrrRouter, prefix: str, next_hops: list[str] | None, timeout: float = 20.0) -> None:
    frr.wait_for(
        lambda: route(frr, prefix) == next_hops, timeout, f"{prefix} -> {next_hops} (FRR has {route(frr, prefix)})"
    )


@pytest.fixture(scope="module")
def chain(kube):
    lab, api = kube
    api.ensure_namespaces(NS)
    api.apply(cluster())
    bgpadv = BgpadvInLab(
        lab,
        api=AsServiceAccount(api, "bgpadv", "bgpadv"),
        config=lab_config(
            lab.workdir / "bgpadv-w1" / "kubeconfig", networks={"selector": {"matchLabels": dict(SELECTED)}}
        ),
    )
    with bgpadv as running:
        wait_route(running.frr, "192.168.110.10/32", [W1], timeout=60)
        yield running, api


def test_the_selected_network_and_its_running_vms_reach_the_tor_exactly(chain):
    running, _ = chain
    wait_for_routes(
        running.frr, {"192.168.110.0/24": [W1], "192.168.110.10/32": [W1], "192.168.110.11/32": [W2]}, "ipv4"
    )
    wait_for_routes(running.frr, {"fd10:110::/64": [W1_6], "fd10:110::10/128": [W1_6]}, "ipv6")


def test_a_live_migration_written_as_kubevirt_writes_it_moves_the_next_hop_without_a_withdrawal(chain):
    running, api = chain
    frr = running.frr
    api.apply(vm("vm-m", "worker-1", ["192.168.110.13/24"]))
    wait_route(frr, "192.168.110.13/32", [W1])
    vmi = ("kubevirt.io/v1", "VirtualMachineInstance", "vm-m", NS)
    api.patch_status(*vmi, {"status": {"migrationState": k8s.migration_state("worker-1", "worker-2", vmi="vm-m")}})
    time.sleep(1.0)
    assert route(frr, "192.168.110.13/32") == [W1], "the target is not live yet: stay on the source"

    seen: list[list[str] | None] = []
    ready = k8s.migration_state("worker-1", "worker-2", target_ready="2026-11-30T12:00:00Z", vmi="vm-m")
    api.patch_status(*vmi, {"status": {"migrationState": ready}})
    frr.wait_for(lambda: seen.append(route(frr, "192.168.110.13/32")) or seen[-1] == [W2], 20, "next hop W2")
    done = k8s.migration_state("worker-1", "worker-2", target_ready="2026-11-30T12:00:00Z", completed=True, vmi="vm-m")
    api.patch_status(*vmi, {"status": {"migrationState": done, "nodeName": "worker-2"}})
    api.patch(*vmi, {"metadata": {"labels": {"kubevirt.io/nodeName": "worker-2"}}})
    time.sleep(1.0)
    seen.append(route(frr, "192.168.110.13/32"))
    assert None not in seen, "the route must move, not disappear and come back"
    assert seen[-1] == [W2]


def test_a_stopped_vm_is_withdrawn_when_its_vmi_starts_deleting_and_others_stay(chain):
    running, api = chain
    frr = running.frr
    api.apply(vm("vm-s", "worker-2", ["192.168.110.14/24"]))
    wait_route(frr, "192.168.110.14/32", [W2])
    vmi = ("kubevirt.io/v1", "VirtualMachineInstance", "vm-s", NS)
    api.delete(*vmi)  # the finalizers keep it, with a deletionTimestamp, while virt-handler stops the domain
    assert api.get(*vmi)["metadata"].get("deletionTimestamp")
    wait_route(frr, "192.168.110.14/32", None)
    api.finalize(*vmi)  # virt-controller is done: the VMI goes away
    assert api.get(*vmi) is None
    assert route(frr, "192.168.110.10/32") == [W1]
    assert route(frr, "192.168.110.0/24") == [W1]


def test_an_address_outside_the_network_gets_a_warning_event_readable_with_kubectl(chain):
    running, api = chain
    api.apply(vm("vm-hostile", "worker-1", ["10.66.0.1/24"]))

    def event() -> dict | None:
        for e in api.events():
            involved = e.get("involvedObject") or {}
            if involved.get("kind") == "IPAMClaim" and involved.get("name") == "vm-hostile.default":
                return e
        return None

    found = running.frr.wait_for(event, 20, "an Event on the hostile claim")
    assert found["type"] == "Warning"
    assert "10.66.0.1" in found["message"]
    assert found["metadata"]["namespace"] == NS
    described = api.kubectl("get", "events", "-n", NS, "--field-selector", "involvedObject.name=vm-hostile.default")
    assert "10.66.0.1" in described.stdout
    assert "10.66.0.1/32" not in running.frr.bgp_routes("ipv4")


def test_the_shipped_role_is_enough_every_list_watch_and_event_write_succeeds(chain):
    running, _ = chain
    assert running.get("/readyz")[0] == 200
    log = running.log_path.read_text(errors="replace")
    assert "Forbidden" not in log and " 403" not in log, log[-3000:]
    metrics = running.get("/metrics")[1]
    held = [
        line for line in metrics.splitlines() if line.startswith("bgpadv_resource_held{") and not line.endswith(" 0.0")
    ]
    assert held == []
