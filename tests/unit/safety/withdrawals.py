"""Host routes by their last octet, as the withdrawal hold and fail static see them: shared by their tests."""

from __future__ import annotations

from bgpadv.core.model import ObjectRef, Route, RouteKind
from bgpadv.core.prefix import Address, Prefix

H = 120.0
W1, W2 = "10.0.0.11", "10.0.0.12"


def host(last_octet: int, next_hop: str = W1) -> Route:
    ref = ObjectRef("IPAMClaim", f"vm-{last_octet}.default", "imported-vms")
    return Route(
        Prefix.parse(f"192.168.100.{last_octet}/32"),
        Address.parse(next_hop),
        "vmnet-a",
        RouteKind.HOST,
        ref,
        "worker-1",
    )


def hosts(*octets: int) -> tuple[Route, ...]:
    return tuple(host(o) for o in octets)


def octets(routes) -> list[int]:
    return sorted(int(str(r.prefix.network_address).rsplit(".", 1)[1]) for r in routes)
