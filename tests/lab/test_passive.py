"""A passive peer, with its TCP MD5 password from a Secret-style file: the FRR ToR connects to bgpadv.

Scope (the installation options: passive sessions, a high port, MD5 from a file): `bgpadv run` in worker-1 with one
peer, the ToR, `passive: true`, `localAddress` 10.0.0.11, `exabgp.listenPort: 1790` (a high port, the non-root option)
and `md5PasswordFile` pointing at a file that ends in a newline, as a mounted Secret key usually does. The ToR has no
dynamic neighbor for worker-1: it is configured with `neighbor 10.0.0.11 port 1790` and the same password, and opens the
session itself. The metrics listener is `${BGPADV_NODE_IP}:9179`, with the variable set to the worker's address as the
pod's downward API does.

What the ToR shows proves it: the session is Established with the ToR's end on an ephemeral port and bgpadv's end on
1790 (so the ToR connected, to the configured port, on the configured address), the password matched (FRR refuses
an MD5 mismatch; the kernel drops the segments), and the VM's host route and the network's subnet are in the ToR's
BGP table and FIB with the worker as next hop. The metrics listener answers on the worker's address and not on its
loopback.
"""

from __future__ import annotations

import http.client
import sys

import pytest

from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import METRICS_PORT, BgpadvInLab, lab_config, wait_for_routes
from bgpadv_lab.frr import ActiveNeighbor, TorSettings
from bgpadv_lab.netns import in_netns
from bgpadv_lab.topology import TOR_V4, WORKERS, Lab

pytestmark = pytest.mark.lab

W1, W1_6 = WORKERS["w1"]
PORT = 1790
PASSWORD = "Tor1-md5!secret"
ADVERTISED = {"bgpadv.io/advertise": "true"}


def cluster() -> list[dict]:
    return [
        k8s.node("worker-1", W1, W1_6),
        k8s.cudn_layer2(
            "vmnet-a",
            ["192.168.100.0/24"],
            labels=ADVERTISED,
            infrastructure_subnets=["192.168.100.0/30"],
            default_gateway_ips=["192.168.100.1"],
        ),
        k8s.ipam_claim("imported-vms", "vm-a.default", "vm-a", "cluster_udn_vmnet-a", ["192.168.100.10/24"]),
        k8s.vmi("imported-vms", "vm-a", "worker-1", "Running", interfaces=[k8s.interface(["192.168.100.10"])]),
    ]


def _get(ns: str, host: str, path: str) -> int:
    with in_netns(ns):
        conn = http.client.HTTPConnection(host, METRICS_PORT, timeout=3)
        conn.connect()
    try:
        conn.request("GET", path)
        return conn.getresponse().status
    finally:
        conn.close()


@pytest.fixture(scope="module")
def passive(tmp_path_factory):
    if sys.platform != "linux":
        pytest.skip("needs Linux network namespaces")
    secret = tmp_path_factory.mktemp("secret") / "tor-1"
    secret.write_text(PASSWORD + "\n")  # as `kubectl create secret generic --from-file` of an echo-ed file holds it
    tor = TorSettings(active_neighbors=(ActiveNeighbor(W1, PORT, PASSWORD),))
    mp = pytest.MonkeyPatch()
    mp.setenv("BGPADV_NODE_IP", W1)  # what the pod's downward API (status.hostIP) sets
    try:
        with Lab("bgppv", tor=tor) as lab:
            config = lab_config(
                lab.workdir / "bgpadv-w1" / "kubeconfig",
                "w1",
                peers=[
                    {
                        "address": TOR_V4,
                        "asn": 64512,
                        "localAddress": W1,
                        "passive": True,
                        "md5PasswordFile": str(secret),
                        "holdTime": 9,
                        "gracefulRestart": 60,
                        "families": ["ipv4 unicast"],
                    }
                ],
                exabgp={"listenPort": PORT},
                metrics={"listen": "${BGPADV_NODE_IP}:" + str(METRICS_PORT)},
            )
            with BgpadvInLab(lab, cluster(), config=config) as running:
                yield running
    finally:
        mp.undo()


def test_the_tor_connects_to_the_configured_address_and_port(passive):
    neighbor = passive.frr.neighbor(W1)
    assert neighbor["bgpState"] == "Established"
    assert (neighbor["hostForeign"], neighbor["portForeign"]) == (W1, PORT)  # bgpadv's end: where it listens
    assert neighbor["hostLocal"] == TOR_V4
    assert neighbor["portLocal"] != 179  # the ToR's end is an ephemeral port: the ToR opened the connection


def test_routes_arrive_at_the_tor_over_the_passive_md5_session(passive):
    expected = {"192.168.100.0/24": [W1], "192.168.100.10/32": [W1]}
    assert wait_for_routes(passive.frr, expected, timeout=30) == expected
    passive.frr.wait_for(lambda: passive.frr.fib_routes(4) == expected, 15, f"the ToR's FIB to be {expected}")
    assert passive.frr.fib_routes(4) == expected


def test_the_metrics_listener_answers_on_the_node_address_only(passive):
    def healthy() -> bool:
        try:
            return _get(passive.ns, W1, "/healthz") == 200
        except OSError:
            return False

    assert passive.frr.wait_for(healthy, 15, "/healthz on the node address")
    with pytest.raises(ConnectionRefusedError):
        _get(passive.ns, "127.0.0.1", "/healthz")
