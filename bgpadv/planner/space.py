"""Node and infrastructure space, built from the configuration and the Node views (the rule is
`bgpadv.core.space`; `networks` refuses a network that meets it, the guard applies it to every route).

In priority order (the first that a subnet meets gives the reason code):

1. `contains-peer-address`: the address of each configured BGP peer, each session's `localAddress`, each
   `nextHopSelf` address; and each session's connected subnet: a node's connected network (`k8s.ovn.org/host-cidrs`
   prefix) that holds one of those addresses.
2. `overlaps-node-network`: every address of every node (`views.Node.addresses`: InternalIP, ExternalIP,
   `node-primary-ifaddr`, `host-cidrs`) and every node's connected networks (`views.Node.connected`).
3. `overlaps-cluster-network`: the default pod network, every node's `k8s.ovn.org/node-subnets` "default" entries
   (`views.Node.pod_subnets`).
4. `overlaps-ovn-internal`: OVN-K's join, transit and masquerade ranges (`ovnKubernetes` in the configuration).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, NamedTuple

from bgpadv.config import Config, PeerConfig
from bgpadv.core import reasons, views
from bgpadv.core.space import Entry, InfrastructureSpace

__all__ = ["SessionAddress", "infrastructure_space", "next_hop_exclusions", "session_addresses"]


class SessionAddress(NamedTuple):
    """An address of bgpadv's own BGP sessions, and what it is (in refusal messages)."""

    version: int
    value: int
    what: str
    role: Literal["peer", "local", "self"]  # the peer's address, or one of this host's (local, next hop self)


def _peer_label(peer: PeerConfig) -> str:
    return f"BGP peer {peer.address}" if peer.name == str(peer.address) else f"BGP peer {peer.name} ({peer.address})"


def session_addresses(config: Config) -> list[SessionAddress]:
    """The addresses of bgpadv's own BGP sessions: each peer's, each session's local and next-hop-self addresses, the
    global nextHopSelf ones. The one list the planner's space, its next-hop exclusions and the guard read."""
    out: list[SessionAddress] = []
    for peer in config.peers:
        label = _peer_label(peer)
        out.append(SessionAddress(peer.address.version, peer.address.value, label, "peer"))
        if peer.local_address is not None:
            a = peer.local_address
            what = f"the local address {a} of the session with {label}"
            out.append(SessionAddress(a.version, a.value, what, "local"))
        out.extend(  # derived from this node's own addresses (bgpadv.runtime.peering)
            SessionAddress(a.version, a.value, f"the next-hop-self address {a} of the session with {label}", "self")
            for a in peer.self_addresses
        )
    out.extend(SessionAddress(a.version, a.value, f"the nextHopSelf address {a}", "self") for a in config.next_hop_self)
    return out


def next_hop_exclusions(config: Config) -> tuple[list[tuple[int, int, str]], list[tuple[int, int, str]]]:
    """(peer addresses, the local and nextHopSelf addresses) as (version, value, what), for `nodes.index_nodes`.

    A peer's address is never a next hop (RFC 4271 §5.1.3: the receiving router's own address). A local or
    nextHopSelf address is the address of the host bgpadv runs on: a valid next hop as the address of that node only
    (bgpadv on a node peering from the node's address is the usual set-up, and per-node mode always is). Cluster mode
    cannot tell which node that is, so the one node that reports it keeps it (two nodes: `duplicate-node-address`);
    per-node mode accepts it only on its own node (`nodeName`)."""
    rows = session_addresses(config)
    peers = [(r.version, r.value, r.what) for r in rows if r.role == "peer"]
    own = [(r.version, r.value, r.what) for r in rows if r.role != "peer"]
    return peers, own


def infrastructure_space(nodes: Mapping[str, views.Node], config: Config) -> InfrastructureSpace:
    """The infrastructure space of a cluster and a configuration (see the module)."""
    sessions = session_addresses(config)
    peer: list[Entry] = [(v, value, value, what) for v, value, what, _ in sessions]
    node: list[Entry] = []
    connected: list[Entry] = []
    pods: list[Entry] = []
    for n in sorted(nodes.values(), key=lambda n: n.name):
        for a in n.addresses:
            node.append((a.version, a.value, a.value, f"the address {a} of node {n.name}"))
        for p in n.connected:
            connected.append((p.version, p.first, p.last, f"the network {p} node {n.name} is connected to"))
            held = next((what for v, value, what, _ in sessions if v == p.version and p.first <= value <= p.last), None)
            if held is not None:
                peer.append((p.version, p.first, p.last, f"the session subnet {p} of {held}"))
        for p in n.pod_subnets:
            pods.append((p.version, p.first, p.last, f"the default pod subnet {p} of node {n.name}"))
    internal: list[Entry] = [
        (net.version, net.first, net.last, f"{what} {net}") for net, what in config.ovn_kubernetes.internal()
    ]
    return InfrastructureSpace.of(
        (
            (reasons.CONTAINS_PEER_ADDRESS, peer),
            (reasons.OVERLAPS_NODE_NETWORK, node),  # an address names what is hit best: looked at first
            (reasons.OVERLAPS_NODE_NETWORK, connected),
            (reasons.OVERLAPS_CLUSTER_NETWORK, pods),
            (reasons.OVERLAPS_OVN_INTERNAL, internal),
        )
    )
