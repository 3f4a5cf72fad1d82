"""Node addresses: the next hop of every route that points at a node.

A node's address of one family is its first `status.addresses[]` entry of type `InternalIP` in that family; when it
has none, the address in the OVN-K annotation `k8s.ovn.org/node-primary-ifaddr` (`{"ipv4": "a.b.c.d/len", "ipv6":
...}`, mask stripped) — the address OVN-K's own RouteAdvertisements controller uses.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from netaddr import IPAddress

from bgpadv.model import ObjectRef
from bgpadv.planner.checks import parse_address

PRIMARY_IFADDR_ANNOTATION = "k8s.ovn.org/node-primary-ifaddr"


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """One node: its reference (for route sources) and its next-hop address per family (4, 6)."""

    name: str
    ref: ObjectRef
    addresses: Mapping[int, IPAddress] = field(default_factory=dict)

    def address(self, version: int) -> IPAddress | None:
        return self.addresses.get(version)


def _host(value: object) -> tuple[int, int] | None:
    parsed = parse_address(value)
    return None if parsed is None else (parsed[0], parsed[1])


def node_addresses(node: Mapping) -> dict[int, IPAddress]:
    """The next-hop address per family of one Node object (an empty dict when it has none)."""
    found: dict[int, int] = {}
    status = node.get("status")
    addresses = status.get("addresses") if isinstance(status, dict) else None
    if isinstance(addresses, list):
        for entry in addresses:
            if isinstance(entry, dict) and entry.get("type") == "InternalIP":
                parsed = _host(entry.get("address"))
                if parsed is not None and parsed[1] != 0:
                    found.setdefault(parsed[0], parsed[1])
    if len(found) < 2:
        meta = node.get("metadata")
        annotations = meta.get("annotations") if isinstance(meta, dict) else None
        raw = annotations.get(PRIMARY_IFADDR_ANNOTATION) if isinstance(annotations, dict) else None
        if isinstance(raw, str):
            try:
                decoded = json.loads(raw)
            except ValueError:
                decoded = None
            if isinstance(decoded, dict):
                for key, version in (("ipv4", 4), ("ipv6", 6)):
                    parsed = _host(decoded.get(key))
                    if parsed is not None and parsed[0] == version and parsed[1] != 0:
                        found.setdefault(version, parsed[1])
    return {version: IPAddress(value, version) for version, value in found.items()}


def index_nodes(nodes: Mapping[str, dict]) -> dict[str, NodeInfo]:
    """Every node by name, with its addresses. Objects that are not mappings are skipped."""
    out: dict[str, NodeInfo] = {}
    for key, node in nodes.items():
        if not isinstance(node, dict):
            continue
        meta = node.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        if not isinstance(name, str) or not name:
            name = key if isinstance(key, str) else ""
        if not name:
            continue
        uid = meta.get("uid") if isinstance(meta, dict) else ""
        created = meta.get("creationTimestamp") if isinstance(meta, dict) else ""
        ref = ObjectRef(
            "Node", name, "", uid if isinstance(uid, str) else "", created if isinstance(created, str) else ""
        )
        out[name] = NodeInfo(name, ref, node_addresses(node))
    return out
