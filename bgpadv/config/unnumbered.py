"""Unnumbered peers (`peers[].interface`): a BGP session over an interface's IPv6 link-local addresses.

Leaf-spine fabrics peer over each link's link-local addresses and carry IPv4 routes with IPv6 next hops (RFC 8950,
the Extended Next Hop capability). A peer given by `interface: eth1` is such a session, per node: the node's uplink
toward its ToR. Its address is the ToR's link-local address on that link, written in the file (`address: fe80::1`)
or, when omitted, discovered when the controller starts (a Router Solicitation on the interface, the source of the
Router Advertisement that answers it: `bgpadv.speaker.ndp`). Every route this session carries, IPv4 and IPv6,
goes out with the node's own link-local address on the interface as its next hop (a link-local next hop is valid
only toward a peer on that same link), and ExaBGP advertises Extended Next Hop for IPv4 unicast. Its BFD session
(`bfd.enabled`) runs over the same link-local addresses (`bgpadv.speaker.bfd`, `bgpadv.speaker.bfd_routes`).

This module holds the rules of the file's side only; the schema calls them (`PeerConfig`).
"""

from __future__ import annotations

import re
from typing import Any

from bgpadv.core.prefix import Address

INTERFACE_RULE = "a Linux interface name: 1 to 15 characters, none of them '/', ':', whitespace or quotes"
_INTERFACE = re.compile(r"[A-Za-z0-9_.@-][A-Za-z0-9_.@+-]{0,14}")

UNDISCOVERED = Address(6, 0)
"""The address of an interface peer whose address the file leaves to discovery, until the controller finds it."""

Loc = tuple[str | int, ...]


def valid_interface(name: str) -> bool:
    """`name` is a Linux interface name ExaBGP's `source-interface` and the kernel accept (IFNAMSIZ 16)."""
    return bool(_INTERFACE.fullmatch(name)) and name not in (".", "..")


def interface_problems(
    interface: str | None,
    address: Address,
    local: Address | None,
    passive: bool,
    multihop: int | None,
) -> list[tuple[Loc, str]]:
    """What is wrong with an interface peer's fields (nothing for a peer without `interface`)."""
    if interface is None:
        return []
    problems: list[tuple[Loc, str]] = []
    if not valid_interface(interface):
        problems.append((("interface",), f"must be {INTERFACE_RULE}, got {interface!r}"))
    if address != UNDISCOVERED and not (address.version == 6 and address.is_link_local()):
        problems.append(
            (
                ("address",),
                f"must be the peer's IPv6 link-local address on {interface} (fe80::/10), or omitted to discover it, "
                f"got {address}",
            )
        )
    if local is not None:
        problems.append(
            (
                ("localAddress",),
                f"is not for an interface peer: the session leaves by {interface} from its link-local address",
            )
        )
    if passive:
        problems.append((("passive",), "is not for an interface peer: bgpadv connects to the ToR on the link"))
    if multihop is not None and multihop > 1:
        problems.append((("ebgpMultihop",), "is not for an interface peer: the peer is on the link (one hop)"))
    return problems


def address_or_interface(schema: dict[str, Any]) -> None:
    """The peer's JSON Schema: `address` is required unless `interface` is given (then discovered at start)."""
    required = [key for key in schema.get("required", []) if key != "address"]
    schema["required"] = required
    schema["if"] = {"not": {"required": ["interface"]}}
    schema["then"] = {"required": ["address"]}
