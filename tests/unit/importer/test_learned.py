"""An IPv6 path's two next hops (RFC 2545) as the import learns them (bgpadv.importer.learned).

Scope: over a shared link FRR sends an IPv6 path with a 32-byte next hop, its global address and its link-local
one; ExaBGP reports that as the same prefix announced twice in one UPDATE (one NLRI per next hop), in either order,
and lists it twice in its adj-rib-in dump. The learned path's next hop is the global address whatever the order
(a link-local one would be refused as `next-hop-special`: it is only valid with its interface), so the IPv6
default route over an IPv4 session is installed via the router's global address. A lone link-local next hop stays
what was learned (and is refused by the guard); separate UPDATEs still replace the path, the later one winning.
"""

from __future__ import annotations

import json

import pytest

from bgpadv.config import parse
from bgpadv.core.prefix import Address, Prefix
from bgpadv.importer.learned import LearnedRoutes, preferred
from bgpadv.speaker import protocol

TOR = "10.0.0.1"
GLOBAL, LINK_LOCAL = "fd00::1", "fe80::e04e:11ff:fe3d:f223"
DEFAULT6 = Prefix.parse("::/0")
RAW = {"localASN": 64513, "peers": [{"address": TOR, "asn": 64512, "localAddress": "10.0.0.11"}]}


def a(text: str) -> Address:
    return Address.parse(text)


def echo(*hops: str) -> protocol.UpdateEvent:
    """ExaBGP's JSON echo of one UPDATE announcing ::/0 with `hops` (in this order) over the IPv4 session."""
    family = {hop: [{"nlri": "::/0"}] for hop in hops}
    neighbor = {
        "address": {"peer": TOR},
        "direction": "receive",
        "message": {"update": {"announce": {"ipv6 unicast": family}}},
    }
    reply = protocol.parse_reply(json.dumps({"exabgp": "5.0.0", "type": "update", "neighbor": neighbor}))
    assert isinstance(reply, protocol.UpdateEvent)
    return reply


def learned_from(*updates: protocol.UpdateEvent) -> Address | None:
    routes = LearnedRoutes(parse(RAW, {}).peers, 0.0)
    for update in updates:
        routes.update(update.peer, update.announced, update.withdrawn, update.eor, 1.0)
    return routes.routes[TOR][DEFAULT6]


@pytest.mark.parametrize(
    ("updates", "learned"),
    [
        pytest.param([echo(GLOBAL, LINK_LOCAL)], GLOBAL, id="global-then-link-local"),
        pytest.param([echo(LINK_LOCAL, GLOBAL)], GLOBAL, id="link-local-then-global"),
        pytest.param([echo(LINK_LOCAL)], LINK_LOCAL, id="link-local-alone"),
        pytest.param([echo(GLOBAL), echo(LINK_LOCAL)], LINK_LOCAL, id="a-later-update-replaces-the-path"),
        pytest.param([echo(GLOBAL, "fd00::2")], "fd00::2", id="two-globals-the-later"),
    ],
)
def test_the_global_next_hop_of_an_rfc2545_pair_is_the_paths_whatever_the_order(updates, learned):
    assert learned_from(*updates) == a(learned)


@pytest.mark.parametrize(
    "order", [(GLOBAL, LINK_LOCAL), (LINK_LOCAL, GLOBAL)], ids=["global-first", "link-local-first"]
)
def test_the_adj_rib_in_dump_listing_both_next_hops_keeps_the_global_one(order):
    routes = LearnedRoutes(parse(RAW, {}).peers, 0.0)
    routes.begin_dump({TOR: "up"})
    for hop in order:
        routes.dump_route(TOR, DEFAULT6, a(hop))
    routes.end_dump(1.0)
    assert routes.routes[TOR][DEFAULT6] == a(GLOBAL)


@pytest.mark.parametrize(
    ("old", "new", "kept"),
    [
        pytest.param(None, LINK_LOCAL, LINK_LOCAL, id="an-address-over-none"),
        pytest.param(LINK_LOCAL, None, LINK_LOCAL, id="none-never-replaces-an-address"),
        pytest.param("10.0.0.1", "10.0.0.2", "10.0.0.2", id="ipv4-the-later"),
    ],
)
def test_preferred(old, new, kept):
    assert preferred(a(old) if old else None, a(new) if new else None) == (a(kept) if kept else None)
