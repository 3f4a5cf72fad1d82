"""Which peers this instance serves, and what `next-hop self` stands for on each session.

An instance peers with the configured peers whose `nodeSelector` matches the labels of the node it runs on
(`Config.speaker_node`: per-node mode's node, or the node a cluster-mode replica runs on, `BGPADV_POD_NODE_NAME`);
a peer without a selector is served by every instance. The controller reads its Node once when it starts (one LIST
by name, `bgpadv.sources.nodes.read_node`), runs the configuration `effective()` makes of it, and watches the Node
afterwards: when its labels change the served set (`Served.moved`), it rewrites ExaBGP's configuration with the new
set and reloads ExaBGP (a neighbor whose block is unchanged keeps its session), then ends for a new controller
(`bgpadv.runtime.reload`: the same path as a changed `peers` list). `bgpadv run` starts ExaBGP with the peers
without selector only: it does not talk to the API (the supervisor never loads the Kubernetes client); the first
controller adds the rest within its start-up.

`next-hop self` for a family other than the session's (IPv6 routes over an IPv4 session) cannot be resolved by
ExaBGP; without `nextHopSelf` for that family, the session gets the node's global address of the family on the
interface the session leaves by (the kernel's route to the peer, over netlink), else the Node's first InternalIP of
the family; never a link-local, loopback or other special address (`bgpadv.core.addressing.NEXT_HOP_RANGES`). When
none exists the guard refuses those routes `family-not-carried`, as before. The address is found when the controller
starts (an address added later is used after the next controller restart).
"""

from __future__ import annotations

import dataclasses
import logging
import socket
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from bgpadv.config import Config, PeerConfig
from bgpadv.core.addressing import special_address_reason
from bgpadv.core.prefix import Address
from bgpadv.core.views import Node

log = logging.getLogger(__name__)

InterfaceAddresses = Callable[[Address, int], Sequence[Address]]
"""(peer address, IP version) → the global addresses of that version on the interface the session to the peer uses."""


def is_global(address: Address) -> bool:
    """A unicast address a router can use as a next hop: in no special range a next hop may not lie in (link-local,
    loopback, documentation, ...: `bgpadv.core.addressing.NEXT_HOP_RANGES`)."""
    return special_address_reason(address.version, address.value) is None


def pick_self_address(version: int, on_interface: Iterable[Address], of_node: Iterable[Address]) -> Address | None:
    """The first global address of `version` on the session's interface, else among the Node's InternalIPs."""
    for candidates in (on_interface, of_node):
        for a in candidates:
            if a.version == version and is_global(a):
                return a
    return None


def _versions(peer: PeerConfig) -> list[int]:
    return [v for v, family in ((4, "ipv4 unicast"), (6, "ipv6 unicast")) if family in peer.families]


def with_self_addresses(config: Config, node: Node | None, on_interface: InterfaceAddresses) -> Config:
    """`config` with each peer's `self_addresses`: for every family of the session other than the session's own and
    without a `nextHopSelf` address, the node's global address of that family (see the module)."""
    peers = []
    for peer in config.peers:
        session = (peer.local_address or peer.address).version
        derived: list[Address] = []
        for version in _versions(peer):
            if version == session or config.self_address(version) is not None:
                continue
            try:
                local = on_interface(peer.address, version)
            except OSError as e:
                log.warning("cannot read the session's interface addresses: %s", e, extra={"peer": peer.name})
                local = ()
            chosen = pick_self_address(version, local, node.next_hop_candidates if node is not None else ())
            if chosen is None:
                log.warning(
                    "no global address of the node for next-hop self: these routes are refused family-not-carried",
                    extra={"peer": peer.name, "family": f"ipv{version} unicast"},
                )
                continue
            if peer.interface is None:  # an interface peer's routes leave via its link-local (runtime.unnumbered)
                log.info("next-hop self on this session", extra={"peer": peer.name, "address": str(chosen)})
            derived.append(chosen)
        peers.append(dataclasses.replace(peer, self_addresses=tuple(derived)) if derived else peer)
    return dataclasses.replace(config, peers=tuple(peers))


def effective(config: Config, node: Node | None, on_interface: InterfaceAddresses) -> Config:
    """The configuration an instance runs on `node` (None: unknown): the served peers, each with its derived
    `next-hop self` addresses."""
    return with_self_addresses(config.serving(node.labels if node is not None else None), node, on_interface)


@dataclass(frozen=True, slots=True)
class Served:
    """The peers served for the node's labels (by name, in configuration order), for the controller to compare."""

    names: tuple[str, ...]

    @staticmethod
    def of(config: Config, labels: Mapping[str, str] | None) -> Served:
        return Served(tuple(p.name for p in config.served_peers(labels)))

    def moved(self, config: Config, labels: Mapping[str, str] | None) -> bool:
        """The labels select another set of peers than this one."""
        return Served.of(config, labels) != self


_IFA_F_DADFAILED, _IFA_F_DEPRECATED, _IFA_F_TENTATIVE = 0x08, 0x20, 0x40


def kernel_interface_addresses(peer: Address, version: int) -> list[Address]:
    """The usable global addresses of `version` on the interface the kernel routes `peer` through (pyroute2).
    Raises OSError when netlink cannot answer."""
    from pyroute2 import IPRoute  # the controller's process only (the supervisor never imports it)
    from pyroute2.netlink.exceptions import NetlinkError

    family = socket.AF_INET if version == 4 else socket.AF_INET6
    try:
        with IPRoute() as ipr:
            routes = ipr.route("get", dst=str(peer))
            oif = routes[0].get_attr("RTA_OIF") if routes else None
            if oif is None:
                return []
            out = []
            for msg in ipr.get_addr(index=oif, family=family):
                flags = msg.get_attr("IFA_FLAGS") or msg["flags"]
                if msg["scope"] != 0 or flags & (_IFA_F_DADFAILED | _IFA_F_DEPRECATED | _IFA_F_TENTATIVE):
                    continue
                text = msg.get_attr("IFA_ADDRESS")
                if text:
                    out.append(Address.parse(str(text)))
            return out
    except NetlinkError as e:
        raise OSError(str(e)) from e


def selector_text(peer: PeerConfig) -> str:
    """`peer.nodeSelector` as kubectl writes a label selector (`rack=a,zone in (z1,z2),!legacy`); "" for none."""
    s = peer.node_selector
    if s is None:
        return ""
    words = [f"{k}={v}" for k, v in s.match_labels]
    for key, op, values in s.match_expressions:
        words.append(
            {
                "In": f"{key} in ({','.join(values)})",
                "NotIn": f"{key} notin ({','.join(values)})",
                "Exists": key,
                "DoesNotExist": f"!{key}",
            }[op]
        )
    return ",".join(words)


def serving_nodes(config: Config, nodes: Mapping[str, Node]) -> list[dict[str, object]]:
    """Per configured peer: its ASN, session kind, selector and the nodes whose instance (per-node mode) or replica
    (cluster mode) peers with it, among `nodes` (in per-node mode only the instance's own node)."""
    candidates = sorted(nodes) if config.node_name is None else [n for n in (config.node_name,) if n in nodes]
    out: list[dict[str, object]] = []
    for peer in config.peers:
        out.append(
            {
                "peer": peer.name,
                "asn": peer.asn,
                "session": "iBGP" if peer.ibgp(config.local_asn) else "eBGP",
                "nodeSelector": selector_text(peer),
                "nodes": [n for n in candidates if peer.serves(nodes[n].labels)],
                **({"interface": peer.interface} if peer.interface is not None else {}),  # unnumbered
            }
        )
    return out


def placement_status(
    configured: Config, running: Config, waiting: list[dict[str, object]] | None = None
) -> dict[str, object]:
    """For `/status`: this instance's node, the peers it serves and the configured ones it does not (with their
    selectors), and the interface peers selected but waiting for their link
    (`bgpadv.runtime.unnumbered.LinkRetry.status`)."""
    served = {p.name for p in running.peers} | {str(w.get("peer")) for w in waiting or ()}
    return {
        "node": running.speaker_node,
        "serves": [p.name for p in running.peers],
        "notServed": [
            {"peer": p.name, "nodeSelector": selector_text(p)} for p in configured.peers if p.name not in served
        ],
        **({"waitingForLink": waiting} if waiting else {}),
    }
