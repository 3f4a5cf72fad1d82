"""What `bgpadv explain` is asked about, parsed and checked: an address, a prefix, a VM or a network."""

from __future__ import annotations

from dataclasses import dataclass

from bgpadv.core.prefix import Address, Prefix
from bgpadv.planner.networks import CUDN_PREFIX


@dataclass(frozen=True, slots=True)
class Query:
    """What `explain` was asked about: an address, a prefix, a VM (namespace, name) or a network (CUDN name)."""

    text: str
    kind: str  # "address", "prefix", "vm" or "network"
    address: Address | None = None
    prefix: Prefix | None = None
    vm: tuple[str, str] | None = None
    network: str | None = None


def parse_query(text: str) -> Query:
    """`IP`, `CIDR`, `NAMESPACE/VM` or `NETWORK` (a CUDN name, `cluster_udn_` prefix allowed). ValueError when empty
    or shaped like none of them."""
    value = text.strip()
    if not value:
        raise ValueError("give an IP address, a CIDR, NAMESPACE/VM or a network (CUDN) name")
    try:
        address = Address.parse(value)
        return Query(value, "address", address=address, prefix=address.prefix())
    except ValueError:
        pass
    try:
        prefix = Prefix.parse(value, strict=False)
        if prefix.is_host:
            host = prefix.network_address
            return Query(value, "address", address=host, prefix=prefix)
        return Query(value, "prefix", prefix=prefix)
    except ValueError:
        pass
    if "/" in value:
        namespace, _, name = value.partition("/")
        if not namespace or not name or "/" in name:
            raise ValueError(f"{value!r}: a VM is NAMESPACE/NAME")
        return Query(value, "vm", vm=(namespace, name))
    return Query(value, "network", network=value.removeprefix(CUDN_PREFIX))
