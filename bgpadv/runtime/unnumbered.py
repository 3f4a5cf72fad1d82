"""Interface peers at controller start: their link found, their address discovered, their link given RAs.

For each served peer with `interface` (`bgpadv.config.unnumbered`), `with_links` finds the node's link-local
address on the interface (the next hop of every route the session carries, `PeerConfig.on_link`) and, when the file
leaves the peer's address to discovery, the ToR's link-local address (`bgpadv.speaker.ndp.discover_router`: a
Router Solicitation, the answering Router Advertisement's source, within `DISCOVERY_SECONDS`). A peer whose link
fails (no such interface, no link-local address, no router answering) is not served, with an error naming the
reason: never a session or a route to a guessed address. Found when the controller starts; a controller restart
looks again (the shim restarts it within a second).

`Advertising` keeps `bgpadv.speaker.router_adverts.RouterAdvertiser` sending on the served interface peers' links,
with its metrics: `bgpadv_router_adverts_sent_total{interface}` and `bgpadv_router_advert_errors_total{interface}`.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Protocol

from bgpadv.config import Config, PeerConfig
from bgpadv.core.prefix import Address
from bgpadv.observe.metrics import Metrics
from bgpadv.speaker import ndp
from bgpadv.speaker.router_adverts import RouterAdvertiser

log = logging.getLogger(__name__)

DISCOVERY_SECONDS = 5.0


class Links(Protocol):
    """What `with_links` reads of the node's links (`KernelLinks` on a node; a table in tests)."""

    def link_local(self, interface: str) -> Address: ...

    def router(self, interface: str, timeout: float) -> Address: ...


class KernelLinks:
    """The node's own links: /proc/net/if_inet6 and a Router Solicitation on a raw socket."""

    def link_local(self, interface: str) -> Address:
        return ndp.link_local(interface)

    def router(self, interface: str, timeout: float) -> Address:
        return ndp.discover_router(interface, timeout)


def resolve(peer: PeerConfig, links: Links, timeout: float = DISCOVERY_SECONDS) -> PeerConfig:
    """`peer` with its link: `on_link` and, when undiscovered, `address`. Raises ndp.LinkError (the reason)."""
    if peer.interface is None:
        return peer
    own = links.link_local(peer.interface)
    address = links.router(peer.interface, timeout) if peer.undiscovered else peer.address
    if not (address.version == 6 and address.is_link_local()):
        raise ndp.LinkError(f"the router on {peer.interface} answered from {address}, not a link-local address")
    if address == own:
        raise ndp.LinkError(f"the peer's address {address} is this node's own on {peer.interface}")
    return dataclasses.replace(peer, address=address, on_link=own)


def with_links(config: Config, links: Links, timeout: float = DISCOVERY_SECONDS) -> Config:
    """`config` with every interface peer resolved (`resolve`); those whose link fails are left out, logged."""
    peers = []
    seen: set[Address] = {p.address for p in config.peers if p.interface is None}
    for i, peer in enumerate(config.peers):
        if peer.interface is None:
            peers.append(peer)
            continue
        try:
            found = resolve(peer, links, timeout)
            if found.address in seen:
                raise ndp.LinkError(f"{found.address} is already the address of another peer")
        except (ndp.LinkError, OSError) as e:
            log.error(
                "interface peer not served: %s",
                e,
                extra={"peer": f"peers[{i}]", "interface": peer.interface},
            )
            continue
        seen.add(found.address)
        if peer.undiscovered:
            log.info(
                "peer discovered on the link",
                extra={"peer": found.name, "interface": peer.interface, "nextHop": str(found.on_link)},
            )
        peers.append(found)
    return dataclasses.replace(config, peers=tuple(peers))


def next_hop_links(config: Config) -> dict[Address, str]:
    """The imported routes' link-local next hops that can be installed: each interface peer's own address → its
    interface (`bgpadv.importer.netlink.Netlink.links`)."""
    return {p.address: p.interface for p in config.peers if p.interface and not p.undiscovered}


def interfaces(config: Config) -> list[str]:
    """The interfaces of the served interface peers, once each, in configuration order."""
    return list(dict.fromkeys(p.interface for p in config.peers if p.interface is not None))


class Advertising:
    """The controller's RA sender and its metrics (see the module)."""

    def __init__(self, metrics: Metrics, advertiser: Callable[..., RouterAdvertiser] | None = None):
        sent, errors = metrics.router_adverts_sent, metrics.router_advert_errors
        make = advertiser or RouterAdvertiser
        self.advertiser: RouterAdvertiser = make(
            on_sent=lambda i: sent.labels(i).inc(), on_error=lambda i, _why: errors.labels(i).inc()
        )

    def serve(self, config: Config) -> None:
        """Send on the links of `config`'s interface peers (started on the first one)."""
        wanted = interfaces(config)
        self.advertiser.update(wanted)
        if wanted:
            self.advertiser.start()

    def stop(self) -> None:
        self.advertiser.stop()
