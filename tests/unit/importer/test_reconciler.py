"""The import's lifecycle (bgpadv.importer.reconciler + learned), against a fake kernel: what is installed in which
table after UPDATEs, withdrawals, a session loss, a controller restart, a VRF appearing and netlink errors.

The fake kernel holds tables of (prefix → next hops, protocol); the importer may only ever replace or delete
protocol-186 routes of the tables of selected networks. Time is an explicit number (no clock, no sleeps)."""

from __future__ import annotations

import pytest

from bgpadv.config import AcceptRule, parse
from bgpadv.core.prefix import Address, Prefix
from bgpadv.importer.learned import SETTLE_SECONDS
from bgpadv.importer.reconciler import Importer, SelectedNetwork
from bgpadv.speaker.protocol import NeighborList, PeerState, RibInDone, RibRoute
from tests.unit.importer.kernel import DEFAULT, FABRIC, SELECTED, TOR, VIA_TOR, FakeKernel, config, started, update


def test_received_routes_are_installed_and_a_withdrawal_removes_at_once():
    kernel = FakeKernel()
    imp = started(kernel)
    imp.handle(update(DEFAULT, FABRIC), 1.0)
    assert kernel.tables[1001] == {DEFAULT: VIA_TOR, FABRIC: VIA_TOR}
    imp.handle(update(withdrawn=[FABRIC]), 1.1)
    assert kernel.tables[1001] == {DEFAULT: VIA_TOR}


def test_a_lost_session_keeps_its_routes_for_the_graceful_restart_time_then_removes_them():
    kernel = FakeKernel()
    imp = started(kernel, config(gr=30))
    imp.handle(update(DEFAULT, FABRIC), 1.0)
    imp.handle(PeerState(TOR, "down"), 10.0)
    imp.tick(39.9)
    assert kernel.tables[1001] == {DEFAULT: VIA_TOR, FABRIC: VIA_TOR}
    imp.tick(40.0)
    assert kernel.tables[1001] == {}


def test_after_a_session_comes_back_the_routes_not_resent_go_a_settle_time_after_its_end_of_rib():
    kernel = FakeKernel()
    imp = started(kernel, config(gr=120))
    imp.handle(update(DEFAULT, FABRIC), 1.0)
    imp.handle(PeerState(TOR, "down"), 10.0)
    imp.handle(PeerState(TOR, "up"), 12.0)
    imp.handle(update(eor=["ipv4 unicast"]), 12.1)  # FRR may send its End-of-RIB before the routes
    imp.handle(update(DEFAULT), 12.2)
    assert kernel.tables[1001] == {DEFAULT: VIA_TOR, FABRIC: VIA_TOR}
    imp.tick(12.1 + SETTLE_SECONDS)
    assert kernel.tables[1001] == {DEFAULT: VIA_TOR}


def test_a_restarted_importer_keeps_what_is_installed_until_the_peers_routes_are_complete():
    kernel = FakeKernel()
    kernel.tables[1001] = {DEFAULT: VIA_TOR, FABRIC: VIA_TOR}  # left by the previous instance
    imp = started(kernel, peer_up=False)  # the session is not up yet: the dump says nothing
    assert kernel.tables[1001] == {DEFAULT: VIA_TOR, FABRIC: VIA_TOR}
    imp.handle(PeerState(TOR, "up"), 1.0)
    imp.handle(update(DEFAULT), 1.1)
    imp.handle(update(eor=["ipv4 unicast"]), 1.2)
    assert kernel.tables[1001] == {DEFAULT: VIA_TOR, FABRIC: VIA_TOR}
    imp.tick(1.2 + SETTLE_SECONDS)
    assert kernel.tables[1001] == {DEFAULT: VIA_TOR}


def test_a_restart_with_the_session_up_relearns_from_exabgps_adj_rib_in():
    kernel = FakeKernel()
    kernel.tables[1001] = {DEFAULT: VIA_TOR, FABRIC: VIA_TOR}
    imp = Importer(config(), kernel, None, 0.0)
    imp.handle(NeighborList(((TOR, "up"),)), 0.0)
    imp.handle(RibRoute(TOR, DEFAULT, Address.parse(TOR)), 0.0)
    imp.handle(update(withdrawn=[FABRIC]), 0.0)  # an UPDATE during the dump is newer than the dump
    imp.handle(RibRoute(TOR, FABRIC, Address.parse(TOR)), 0.0)
    imp.handle(RibInDone(), 0.0)
    imp.set_networks(SELECTED, 0.1)
    assert kernel.tables[1001] == {DEFAULT: VIA_TOR, FABRIC: VIA_TOR}  # the dump may precede the routes: settle
    imp.tick(SETTLE_SECONDS)
    assert kernel.tables[1001] == {DEFAULT: VIA_TOR}
    assert imp.status()["networks"]["vmnet-a"]["installed"] == {"0.0.0.0/0": [TOR]}


def test_no_learned_route_reaches_a_table_of_a_network_that_is_not_selected():
    kernel = FakeKernel()
    imp = Importer(config(), kernel, None, 0.0)
    imp.handle(update(DEFAULT), 0.0)
    imp.set_networks({"other": SelectedNetwork(())}, 0.0)
    assert kernel.tables == {}


def test_a_vrf_that_appears_later_is_filled_at_the_next_periodic_reconcile():
    kernel = FakeKernel()
    cfg = parse(
        {
            "localASN": 64513,
            "peers": [{"address": TOR, "asn": 64512}],
            "importRoutes": {
                "enabled": True,
                "reconcileSeconds": 5,
                "networks": [{"name": "tenant-blue-production", "networkID": 7}],
            },
        }
    )
    imp = Importer(cfg, kernel, None, 0.0)
    imp.set_networks({"tenant-blue-production": SelectedNetwork(())}, 0.0)
    imp.handle(update(DEFAULT), 0.1)
    assert kernel.tables == {}
    kernel.vrfs["mp7-udn-vrf"] = 1007
    imp.tick(5.0)
    assert kernel.tables == {1007: {DEFAULT: VIA_TOR}}


def test_the_periodic_reconcile_repairs_a_route_deleted_behind_its_back():
    kernel = FakeKernel()
    imp = started(kernel)
    imp.handle(update(DEFAULT), 1.0)
    del kernel.tables[1001][DEFAULT]
    imp.tick(1.0 + 10.0)
    assert kernel.tables[1001] == {DEFAULT: VIA_TOR}


def test_a_failed_install_is_counted_and_retried():
    kernel = FakeKernel()
    imp = started(kernel)
    kernel.fail = "install"
    imp.handle(update(DEFAULT), 1.0)
    assert imp.metrics.registry.get_sample_value("bgpadv_netlink_errors_total", {"operation": "install"}) == 1  # type: ignore[union-attr]
    kernel.fail = None
    imp.tick(1.5)
    assert kernel.tables[1001] == {DEFAULT: VIA_TOR}
    imported = {"network": "vmnet-a", "family": "ipv4"}
    assert imp.metrics.registry.get_sample_value("bgpadv_routes_imported", imported) == 1  # type: ignore[union-attr]


@pytest.mark.parametrize("accept", [None, [{"prefix": "0.0.0.0/0", "maxLength": 32}]])
def test_own_subnet_routes_never_reach_the_table(accept):
    kernel = FakeKernel()
    cfg = config() if accept is None else config(accept=accept)
    imp = started(kernel, cfg)
    imp.handle(update(DEFAULT, Prefix.parse("192.168.100.0/24"), Prefix.parse("192.168.100.10/32")), 1.0)
    assert kernel.tables[1001] == {DEFAULT: VIA_TOR}
    assert AcceptRule(DEFAULT) in cfg.import_routes.networks[0].accept or accept is not None
    reason = "policy" if accept is None else "own-subnet"
    refused = imp.metrics.registry.get_sample_value(  # type: ignore[union-attr]
        "bgpadv_import_refused", {"network": "vmnet-a", "reason": reason}
    )
    assert refused == 2
