"""Guest-reported addresses on IPAM-less secondary Layer2 networks (rule 9 of `vms`), read from `views.Vmi`."""

from __future__ import annotations

from collections.abc import Mapping

from bgpadv.core import reasons
from bgpadv.core.bounded import describe
from bgpadv.core.views import VmAddress, Vmi
from bgpadv.planner import checks
from bgpadv.planner.advertised import Network
from bgpadv.planner.candidates import GUEST_REPORT, Collector, Record
from bgpadv.planner.networks import Networks


def namespace_networks(networks: Networks) -> list[Network]:
    """The advertised IPAM-less secondary networks, whose addresses come from VMI interfaces (guest reports)."""
    return [n for n in networks.advertised.values() if n.guest_reports]


def _attached(vmi: Vmi, secondary: Mapping[str, Network], out: Collector) -> dict[str, Network]:
    """VMI interface name → the secondary network its NAD names, where both the NAD's namespace (the VMI's when the
    NAD names none) and the VMI's own are namespaces the network's `namespaceSelector` selects; an attachment to
    such a network from elsewhere is refused `namespace-not-selected` (its guest reports never count)."""
    attached: dict[str, Network] = {}
    namespace = vmi.key[0]
    for iface, nad_namespace, nad_name in vmi.attachments:
        network = secondary.get(nad_name)
        if network is None:
            continue
        outside = next(
            (ns for ns in (namespace, nad_namespace or namespace) if not network.selects_namespace(ns)), None
        )
        if outside is None:
            attached[iface] = network
            continue
        nad = f"{nad_namespace}/{nad_name}" if nad_namespace else nad_name
        message = f"CUDN {network.name} does not select namespace {describe(outside)}: interface {describe(iface)}"
        message += " is not on the network"
        out.refuse(vmi.ref, describe(nad), reasons.NAMESPACE_NOT_SELECTED, message, network.name)
    return attached


def _usable(network: Network, a: VmAddress) -> bool:
    return a.address is not None and network.check(a.address.version, a.address.value) is None


def _reported(vmi: Vmi, attached: dict[str, Network], out: Collector) -> dict[str, tuple[Network, list[VmAddress]]]:
    """Network name → (network, addresses of all its interfaces).

    Per interface: the addresses that can never be announced on the network (malformed, link-local, loopback, outside
    its ranges, ...) go on to be refused one by one and count for nothing; of the others, in address order (IPv4
    before IPv6, then numerically: KubeVirt's `ipAddresses` carries no stable/temporary flag, and the guest agent's
    order may change from one report to the next), the first `maxAddressesPerInterface` are taken and the rest is
    refused `too-many-addresses`."""
    ref = vmi.ref
    taken: dict[str, tuple[Network, list[VmAddress]]] = {}
    for iface in vmi.interfaces:
        network = attached.pop(iface.name, None)
        if network is None or not iface.guest:
            continue  # not on such a network, listed twice, or not from the guest
        if iface.malformed is not None:
            p = iface.malformed
            out.refuse(ref, p.value, p.reason, p.message, network.name)
            continue
        if iface.addresses is None:
            continue
        usable = sorted((a for a in iface.addresses if _usable(network, a)), key=lambda a: a.key)
        refused = [a for a in iface.addresses if not _usable(network, a)]
        limit = network.max_addresses
        unread = iface.count - len(iface.addresses)  # beyond what the decoder keeps (views.MAX_GUEST_ADDRESSES)
        if len(usable) > limit or unread > 0:
            over = usable[limit:]
            what = f"{len(over)} more valid" + (f" and {unread} unread" if unread > 0 else "")
            message = (
                f"interface {iface.name} reports {iface.count} addresses; the first {limit} valid ones in address "
                f"order are taken, {what} refused (networks.secondary[].maxAddressesPerInterface)"
            )
            value = describe([a.text for a in over]) if over else iface.tail_text(len(iface.addresses))
            out.refuse(ref, value, checks.TOO_MANY_ADDRESSES, message, network.name)
            usable = usable[:limit]
        taken.setdefault(network.name, (network, []))[1].extend([*usable, *refused])
    return taken


def _distinct(addresses: list[VmAddress]) -> tuple[VmAddress, ...]:
    """Each address once (an address reported on two interfaces of one VM counts once, not as a conflict);
    malformed entries kept, each refused alone."""
    seen: set[int] = set()
    out: list[VmAddress] = []
    for a in addresses:
        if a.address is not None:
            if a.key in seen:
                continue
            seen.add(a.key)
        out.append(a)
    return tuple(out)


def read_vmi_interfaces(vmis: Mapping[tuple[str, str], Vmi], networks: Networks, out: Collector) -> None:
    """Read the guest-reported addresses of Running VMIs (`ClusterState.vmis`, or any part of it) on IPAM-less
    secondary networks into `out` (rule 9 of `vms`)."""
    secondary = {n.name: n for n in namespace_networks(networks)}
    if not secondary:
        return
    for vmi in vmis.values():
        if not vmi.identified or not vmi.running or not vmi.attachments:
            continue
        attached = _attached(vmi, secondary, out)
        if not attached:
            continue
        for network, addresses in _reported(vmi, attached, out).values():
            out.records.append(Record(_distinct(addresses), network, vmi.ref, vmi.key, vmi.age, GUEST_REPORT))
