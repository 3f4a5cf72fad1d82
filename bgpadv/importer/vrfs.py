"""What the import names without touching the kernel: OVN-K's VRF name of a network and the shape of a table's
routes (no pyroute2 here: the controller loads `bgpadv.importer.netlink` only where routes are imported).

VRF names follow OVN-K (`util.GetNetworkVRFName`): the CUDN's name when it has at most 15 characters (IFNAMSIZ - 1),
else `mp<networkID>-udn-vrf`, where the network ID is OVN-K's (the `k8s.ovn.org/network-id` annotation it writes on
the network's NetworkAttachmentDefinitions and, in recent releases, the CUDN).
"""

from __future__ import annotations

from bgpadv.core.prefix import Address, Prefix

MAX_IFNAME = 15
Routes = dict[Prefix, frozenset[Address]]
"""One table's BGP routes: prefix -> next hops."""


def vrf_name(network: str, network_id: int | None) -> str | None:
    """OVN-K's VRF name of a CUDN, or None when the name is too long and the network ID is unknown."""
    if len(network) <= MAX_IFNAME:
        return network
    return None if network_id is None else f"mp{network_id}-udn-vrf"
