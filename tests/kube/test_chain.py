"""The whole chain against the real Kubernetes API: kubectl → kube-apiserver (upstream CRDs, schema + CEL) → `bgpadv
run` (with the shipped ServiceAccount's token) → ExaBGP → FRR ToR.

Scope: what the fabric sees when the cluster is driven the way its controllers drive it. Objects from
`bgpadv_lab.objects` are applied with kubectl (server-side apply: the real OpenAPI schema, CEL rules and strict field
validation run); statuses behind a status subresource are written through it (Node, CUDN, IPAMClaim), KubeVirt's
VMI status with the object (its CRD has no status subresource). Every route assertion reads FRR's BGP table.
One bgpadv instance runs in worker-1 for the module, selecting only this module's network, as the shipped Deployment
runs it: the shipped ServiceAccount's token, exactly the shipped RBAC, its pod name and namespace in the environment
(`BGPADV_POD_NAME`, `BGPADV_POD_NAMESPACE`, `BGPADV_POD_NODE_NAME`, the downward API's; there is no pod, so no
owner reference).

Session status in the API: the BGPSessionState object bgpadv writes for its one peer was accepted
by the real apiserver against the shipped CRD (schema, status subresource, nothing pruned), says what FRR's own
`show bgp neighbors json` says of the session (state, prefixes FRR accepted from bgpadv), and is what
`kubectl get bgpsessionstates` (printer columns) and `bgpadv status --all` show.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import datetime

import pytest

from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import BgpadvInLab, lab_config, wait_for_routes
from bgpadv_lab.frr import FrrRouter
from bgpadv_lab.kubeapi import AsServiceAccount
from bgpadv_lab.topology import TOR_V4, WORKERS

pytestmark = [pytest.mark.kube, pytest.mark.lab]
W1, W2 = WORKERS["w1"][0], WORKERS["w2"][0]
W1_6 = WORKERS["w1"][1]

NS = "kube-chain"
SELECTED = {"bgpadv.test/tier": "chain"}
NETWORK = "cluster_udn_vmnet-k"
INSTANCE = "bgpadv-w1"  # the pod name the downward API would give (BGPADV_POD_NAME)
HOME = "bgpadv"  # the namespace of the shipped ServiceAccount, Role and RoleBinding (kustomize's `namespace:`)
SESSION_STATE = ("bgpadv.io/v1alpha1", "BGPSessionState", f"{INSTANCE}.{TOR_V4}", HOME)


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


@pytest.fixture(scope="module")
def chain(kube):
    lab, api = kube
    api.ensure_namespaces(NS)
    api.apply(cluster())
    bgpadv = BgpadvInLab(
        lab,
        api=AsServiceAccount(api, "bgpadv", "bgpadv"),
        config=lab_config(
            lab.workdir / "bgpadv-w1" / "kubeconfig",
            networks={"selector": {"matchLabels": dict(SELECTED)}},
            sessionState={"intervalSeconds": 1},  # route counters written within a second (default 30 s)
        ),
        env={"BGPADV_POD_NAME": INSTANCE, "BGPADV_POD_NAMESPACE": HOME, "BGPADV_POD_NODE_NAME": "worker-1"},
    )
    with bgpadv as running:
        running.frr.wait_route("192.168.110.10/32", [W1], timeout=60)
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
    frr.wait_route("192.168.110.13/32", [W1], timeout=20.0)
    vmi = ("kubevirt.io/v1", "VirtualMachineInstance", "vm-m", NS)
    api.patch_status(*vmi, {"status": {"migrationState": k8s.migration_state("worker-1", "worker-2", vmi="vm-m")}})
    time.sleep(1.0)
    assert frr.best_next_hops("192.168.110.13/32") == [W1], "the target is not live yet: stay on the source"

    seen: list[list[str] | None] = []
    ready = k8s.migration_state("worker-1", "worker-2", target_ready="2026-11-30T12:00:00Z", vmi="vm-m")
    api.patch_status(*vmi, {"status": {"migrationState": ready}})
    frr.wait_for(lambda: seen.append(frr.best_next_hops("192.168.110.13/32")) or seen[-1] == [W2], 20, "next hop W2")
    done = k8s.migration_state("worker-1", "worker-2", target_ready="2026-11-30T12:00:00Z", completed=True, vmi="vm-m")
    api.patch_status(*vmi, {"status": {"migrationState": done, "nodeName": "worker-2"}})
    api.patch(*vmi, {"metadata": {"labels": {"kubevirt.io/nodeName": "worker-2"}}})
    time.sleep(1.0)
    seen.append(frr.best_next_hops("192.168.110.13/32"))
    assert None not in seen, "the route must move, not disappear and come back"
    assert seen[-1] == [W2]


def test_a_stopped_vm_is_withdrawn_when_its_vmi_starts_deleting_and_others_stay(chain):
    running, api = chain
    frr = running.frr
    api.apply(vm("vm-s", "worker-2", ["192.168.110.14/24"]))
    frr.wait_route("192.168.110.14/32", [W2], timeout=20.0)
    vmi = ("kubevirt.io/v1", "VirtualMachineInstance", "vm-s", NS)
    api.delete(*vmi)  # the finalizers keep it, with a deletionTimestamp, while virt-handler stops the domain
    assert api.get(*vmi)["metadata"].get("deletionTimestamp")
    frr.wait_route("192.168.110.14/32", None, timeout=20.0)
    api.finalize(*vmi)  # virt-controller is done: the VMI goes away
    assert api.get(*vmi) is None
    assert frr.best_next_hops("192.168.110.10/32") == [W1]
    assert frr.best_next_hops("192.168.110.0/24") == [W1]


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


# --- session status in the API: BGPSessionState against FRR's view --------------------------------------------------


def frr_view(frr: FrrRouter, address: str) -> tuple[str, int]:
    """FRR's state of its neighbor `address` and how many prefixes it accepted from it, all families together."""
    neighbor = frr.neighbor(address)
    families = neighbor.get("addressFamilyInfo") or {}
    return neighbor.get("bgpState", ""), sum(int(f.get("acceptedPrefixCounter", 0)) for f in families.values())


def session_state(api) -> dict | None:
    return api.get(*SESSION_STATE)


def matches_frr(api, frr: FrrRouter) -> tuple[dict, tuple[str, int]] | None:
    """(the object, FRR's view) once the object says what FRR says, else None."""
    obj = session_state(api)
    state, accepted = frr_view(frr, W1)
    if obj is None or state != "Established":
        return None
    status = obj.get("status") or {}
    if status.get("state") != "up" or (status.get("routes") or {}).get("sent") != accepted:
        return None
    return obj, (state, accepted)


@pytest.fixture(scope="module")
def settled(chain):
    """The BGPSessionState object once it agrees with FRR (the module's other tests leave the table settled)."""
    running, api = chain
    running.frr.wait_route("192.168.110.14/32", None, timeout=20.0)  # nothing of the other tests is still moving
    obj, view = running.frr.wait_for(
        lambda: matches_frr(api, running.frr),
        30,
        f"the BGPSessionState to match FRR (object {session_state(api)}, FRR {frr_view(running.frr, W1)})",
    )
    return running, api, obj, view


def test_bgpadv_writes_one_session_state_per_peer_in_its_namespace_accepted_by_the_shipped_crd(settled):
    _, api, obj, _ = settled
    mine = api.list("bgpadv.io/v1alpha1", "BGPSessionState", HOME, label_selector=f"bgpadv.io/instance={INSTANCE}")
    assert [o["metadata"]["name"] for o in mine] == [f"{INSTANCE}.{TOR_V4}"], "one object per configured peer"
    assert obj["metadata"]["labels"]["bgpadv.io/peer"] == TOR_V4
    assert obj["spec"] == {
        "instance": INSTANCE,
        "peer": TOR_V4,
        "peerAddress": TOR_V4,
        "peerASN": 64512,
        "localASN": 64513,
        "node": "worker-1",
    }, "the apiserver stored the spec whole (a structural schema prunes unknown fields)"
    status = obj["status"]
    assert set(status) >= {"state", "lastTransitionTime", "establishedTime", "routes", "bfd", "updateTime"}
    assert status["bfd"] == "disabled"
    # the stored object passes the shipped CRD's schema again with strict field validation (no unknown field)
    api.kubectl(
        "apply",
        "--server-side",
        "--dry-run=server",
        "--validate=strict",
        "--field-manager=bgpadv-tests-dry-run",
        "-f",
        "-",
        input=json.dumps(
            {k: v for k, v in obj.items() if k != "metadata"}
            | {"metadata": {"name": obj["metadata"]["name"], "namespace": HOME}}
        ),
    )


def test_the_session_state_says_what_frr_says_of_the_session(settled):
    running, _, obj, (frr_state, accepted) = settled
    assert frr_state == "Established"
    assert obj["status"]["state"] == "up"
    frr_since = int(running.frr.neighbor(W1)["bgpTimerUpEstablishedEpoch"])
    established = datetime.fromisoformat(obj["status"]["establishedTime"]).timestamp()
    # The session FRR has now, not an earlier one (a stale object would date it before FRR's epoch). No upper bound:
    # bgpadv dates it when ExaBGP reports it up through the API pipe, which lags FRR's own epoch by seconds on a
    # loaded 2-core machine (3 s and 6 s seen); a reset moves FRR's epoch as well, so a bound would only time the lag.
    assert established >= frr_since - 1, f"FRR's session is up since {frr_since}, the object says {established}"
    held = len(settled[0].frr.bgp_routes("ipv4")) + len(settled[0].frr.bgp_routes("ipv6"))
    assert accepted == held, "every route in FRR's tables is one bgpadv sent (the ToR originates none here)"
    assert obj["status"]["routes"]["sent"] == accepted


def test_kubectl_get_shows_the_session_in_the_printer_columns(settled):
    _, api, _, (_, accepted) = settled
    out = api.kubectl("get", "bgpsessionstates", "-n", HOME).stdout
    print(f"\n$ kubectl get bgpsessionstates -n {HOME}\n{out}")
    header, *rows = out.splitlines()
    assert header.split() == ["NAME", "PEER", "ASN", "NODE", "STATE", "UPTIME", "SENT", "RECEIVED", "AGE"]
    (row,) = [r.split() for r in rows if r.startswith(f"{INSTANCE}.")]
    assert row[:3] == [f"{INSTANCE}.{TOR_V4}", TOR_V4, "64512"]
    assert "up" in row and str(accepted) in row
    wide = api.kubectl("get", "bgpss", "-n", HOME, "-o", "wide").stdout
    print(f"$ kubectl get bgpss -n {HOME} -o wide\n{wide}")
    assert wide.splitlines()[0].split()[-5:] == ["REFUSED", "BFD", "LAST", "ERROR", "AGE"]


def test_bgpadv_status_all_lists_the_session_through_the_api(settled):
    running, api, _, (_, accepted) = settled

    def status_all(*extra: str) -> str:
        argv = [sys.executable, "-m", "bgpadv", "status", "--all", "--kubeconfig", str(api.kubeconfig), *extra]
        proc = running.lab.net.spawn(running.ns, argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err.decode()
        return out.decode()

    table = status_all()
    print(f"\n$ bgpadv status --all --kubeconfig admin.kubeconfig\n{table}")
    (row,) = [line.split() for line in table.splitlines() if line.startswith(INSTANCE)]
    assert row[:3] == [INSTANCE, TOR_V4, "64512"] and "up" in row and str(accepted) in row
    (entry,) = [o for o in json.loads(status_all("--json")) if o["metadata"]["name"] == f"{INSTANCE}.{TOR_V4}"]
    assert entry["status"]["routes"]["sent"] == accepted
