"""The import's world without a kernel: a fake kernel, one ToR, one selected network, and an importer started as
the controller starts it. Shared by the import's tests and the BFD tests that take a peer's routes out."""

from __future__ import annotations

import errno

from bgpadv.config import parse
from bgpadv.core.prefix import Address, Prefix
from bgpadv.importer.reconciler import Importer, SelectedNetwork
from bgpadv.observe.metrics import Metrics
from bgpadv.speaker.protocol import NeighborList, RibInDone, UpdateEvent

TOR = "10.0.0.1"
DEFAULT, FABRIC = Prefix.parse("0.0.0.0/0"), Prefix.parse("198.51.100.0/24")
VIA_TOR = frozenset({Address.parse(TOR)})
SELECTED = {"vmnet-a": SelectedNetwork((Prefix.parse("192.168.100.0/24"),))}


class FakeKernel:
    """Tables of protocol-186 routes plus `others` (routes of other protocols, never to be touched)."""

    def __init__(self) -> None:
        self.vrfs: dict[str, int] = {}
        self.tables: dict[int, dict] = {}
        self.others = {(1001, Prefix.parse("203.0.113.0/24")): "static"}
        self.fail: str | None = None

    def vrf_tables(self):
        return dict(self.vrfs)

    def interfaces(self):
        return [(Address.parse("10.0.0.11"), 24)]  # the node's address on the ToR's subnet

    def installed(self, tables):
        return {t: dict(self.tables.get(t, {})) for t in tables}

    def replace(self, table, prefix, hops):
        if self.fail == "install":
            raise OSError(errno.ENETUNREACH, "unreachable")
        self.tables.setdefault(table, {})[prefix] = frozenset(hops)

    def delete(self, table, prefix):
        if prefix not in self.tables.get(table, {}):
            raise OSError(errno.ESRCH, "no such route")
        del self.tables[table][prefix]


def config(gr: int = 60, **network):
    net = {"name": "vmnet-a", "table": 1001, "accept": [{"prefix": "0.0.0.0/0"}, {"prefix": str(FABRIC)}]}
    net.update(network)
    return parse(
        {
            "localASN": 64513,
            "peers": [{"address": TOR, "asn": 64512, "gracefulRestart": gr}],
            "importRoutes": {"enabled": True, "networks": [net]},
        }
    )


def update(*announced: Prefix, withdrawn=(), eor=()) -> UpdateEvent:
    return UpdateEvent(TOR, "receive", tuple((p, Address.parse(TOR)) for p in announced), tuple(withdrawn), tuple(eor))


def started(kernel: FakeKernel, cfg=None, now: float = 0.0, peer_up: bool = True) -> Importer:
    """An importer after a start-up like the controller's: neighbor list, adj-rib-in dump, selected networks."""
    imp = Importer(cfg or config(), kernel, Metrics(process_collectors=False), now)
    imp.handle(NeighborList(((TOR, "up" if peer_up else "down"),)), now)
    imp.handle(RibInDone(), now)
    imp.set_networks(SELECTED, now)
    return imp
