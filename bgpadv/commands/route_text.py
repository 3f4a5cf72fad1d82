"""A route as `render` and `explain` print it: its next hop and path attributes for people, its fields for scripts
(the JSON keys both commands keep as a contract)."""

from __future__ import annotations

from typing import Any

from bgpadv.core.model import DEFAULT_ATTRIBUTES, Attributes, Route


def next_hop_text(route: Route) -> str:
    """The next hop as printed: `self` for next-hop self."""
    return "self" if route.next_hop is None else str(route.next_hop)


def attributes_text(attributes: Attributes) -> str:
    """Path attributes as `local-pref 200 med 10 community 64513:100 ...`, "-" for none."""
    if attributes == DEFAULT_ATTRIBUTES:
        return "-"
    parts = []
    if attributes.local_preference is not None:
        parts.append(f"local-pref {attributes.local_preference}")
    if attributes.med is not None:
        parts.append(f"med {attributes.med}")
    if attributes.communities:
        parts.append("community " + ",".join(attributes.communities))
    if attributes.large_communities:
        parts.append("large-community " + ",".join(attributes.large_communities))
    if attributes.as_path_prepend:
        parts.append(f"prepend {attributes.as_path_prepend}")
    return " ".join(parts)


def attributes_json(attributes: Attributes) -> dict[str, Any]:
    return {
        "localPreference": attributes.local_preference,
        "med": attributes.med,
        "communities": list(attributes.communities),
        "largeCommunities": list(attributes.large_communities),
        "asPathPrepend": attributes.as_path_prepend,
    }


def route_fields(route: Route) -> dict[str, Any]:
    """The route's JSON fields, in their order: `nextHop` "self" for next-hop self, `node` null for a network-wide
    route. The caller adds where the route goes (`instance`, `peers`)."""
    return {
        "prefix": str(route.prefix),
        "nextHop": next_hop_text(route),
        "network": route.network,
        "kind": str(route.kind),
        "source": str(route.source),
        "node": route.node,
        "family": route.family,
        "attributes": attributes_json(route.attributes),
    }
