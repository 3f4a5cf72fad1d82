"""What people see of the egress import: `bgpadv render --learned FILE` (what would be installed, per network, from
a given set of learned routes) and the import section of `bgpadv status` (learned and installed per network)."""

from __future__ import annotations

import yaml

from bgpadv.commands import render, status
from bgpadv_lab import objects as k8s

CONFIG = """
localASN: 64513
peers: [{address: 10.0.0.1, asn: 64512}, {address: 10.0.0.2, asn: 64512}]
networks: {selector: {matchLabels: {bgpadv.io/advertise: "true"}}}
importRoutes:
  enabled: true
  networks:
    - {name: vmnet-a, table: 1001, accept: [{prefix: 0.0.0.0/0}, {prefix: 198.51.100.0/24}]}
    - {name: tenant-blue-production}
    - {name: unselected}
"""
LEARNED = """
10.0.0.1: {0.0.0.0/0: 10.0.0.1, 198.51.100.0/24: 10.0.0.1, 10.9.0.0/16: 10.0.0.1}
10.0.0.2: {0.0.0.0/0: 10.0.0.2}
"""


def test_render_learned_prints_per_network_table_or_vrf_and_the_routes_it_would_hold(tmp_path, capsys):
    advertised = {"bgpadv.io/advertise": "true"}
    blue = k8s.cudn_layer2("tenant-blue-production", ["192.168.200.0/24"], labels=advertised)
    blue["metadata"].setdefault("annotations", {})["k8s.ovn.org/network-id"] = "7"
    objects = [k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=advertised), blue]
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "cudns.yaml").write_text(yaml.safe_dump_all(objects))
    (tmp_path / "c.yaml").write_text(CONFIG)
    (tmp_path / "l.yaml").write_text(LEARNED)
    assert render.main(str(tmp_path / "c.yaml"), str(tmp_path / "m"), "table", str(tmp_path / "l.yaml")) == 0
    assert capsys.readouterr().out == (
        "vmnet-a (table 1001, protocol 186): 2 routes, refused: 1 policy\n"
        "  0.0.0.0/0 via 10.0.0.1, 10.0.0.2\n"
        "  198.51.100.0/24 via 10.0.0.1\n"
        "tenant-blue-production (VRF mp7-udn-vrf, protocol 186): 1 routes, refused: 2 policy\n"
        "  0.0.0.0/0 via 10.0.0.1, 10.0.0.2\n"
        "unselected: not a selected network, nothing imported\n"
    )


def test_status_lists_learned_routes_and_each_networks_table_with_installed_and_pending_routes():
    imported = {
        "complete": True,
        "learned": {"10.0.0.1": {"0.0.0.0/0": "10.0.0.1", "198.51.100.0/24": "10.0.0.1"}},
        "networks": {
            "vmnet-a": {
                "vrf": "vmnet-a",
                "table": 1001,
                "desired": {"0.0.0.0/0": ["10.0.0.1"], "198.51.100.0/24": ["10.0.0.1"]},
                "installed": {"0.0.0.0/0": ["10.0.0.1"]},
                "refused": {},
            },
            "tenant-blue-production": {"vrf": None, "table": None, "desired": {}, "installed": {}, "refused": {}},
        },
    }
    assert status.render_import(imported) == [
        "LEARNED FROM  PREFIX           NEXT HOP",
        "10.0.0.1      0.0.0.0/0        10.0.0.1",
        "10.0.0.1      198.51.100.0/24  10.0.0.1",
        "",
        "IMPORT NETWORK          TABLE         PREFIX           NEXT HOPS  STATE",
        "tenant-blue-production  VRF ? absent  -                -          -",
        "vmnet-a                 table 1001    0.0.0.0/0        10.0.0.1   installed",
        "vmnet-a                 table 1001    198.51.100.0/24  10.0.0.1   pending",
    ]
