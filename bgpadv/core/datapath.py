"""The node-side data path per network kind: which OVN-Kubernetes release routes what bgpadv announces.

bgpadv only tells the fabric where a VM is; the packets then need OVN-K to route them between the node's uplink and
the network (ingress: the fabric → a VM's address; egress: a VM → the fabric without SNAT). That is OVN-K's BGP
integration (RouteAdvertisements), and it covers some network kinds only. The table is the one place bgpadv states
it (the guide's compatibility matrix in docs/concepts.md is written from it, `check-config` and `render` warn from
it); versions are the first upstream release tag (github.com/ovn-kubernetes/ovn-kubernetes) that ships the path,
as read on 2026-12-02 from these sources:

- docs/features/bgp-integration/route-advertisements.md (first in v1.1.0-beta/v1.1.0 with the RouteAdvertisements
  CRD, go-controller/pkg/crd/routeadvertisements): primary Layer3 and Layer2 CUDNs advertised with `PodNetwork`,
  ingress through the network's gateway router (shared and local gateway mode), egress unSNATed; VRF-Lite
  (`targetVRF: auto`) in local gateway mode only.
- go-controller/pkg/clustermanager/routeadvertisements/controller.go (v1.1.0 through master of 2026-08): a selected
  network that is neither the default nor a primary one is refused ("is not the default nor a primary network"), and
  so is any topology but Layer3/Layer2: no release routes an IPAM-less secondary Layer2 network or a Localnet one.
- docs/features/bgp-integration/evpn.md (first in v1.3.0): `transport: EVPN` (MAC-VRF/IP-VRF), local gateway mode.
"""

from __future__ import annotations

from dataclasses import dataclass

KNOWN_RELEASES = ("v1.0.0", "v1.1.0", "v1.2.0", "v1.3.0")
"""The OVN-K releases this table was checked against (newest last)."""


@dataclass(frozen=True, slots=True)
class DataPath:
    """One network kind: the first OVN-K release with the node-side path for routed ingress and for unSNATed egress
    (None: no known release has it), and what people must know."""

    kind: str
    title: str
    ingress: str | None
    egress: str | None
    notes: str


PRIMARY_LAYER3 = "primary-layer3"
PRIMARY_LAYER2 = "primary-layer2"
SECONDARY_LAYER2 = "secondary-layer2"
EVPN = "evpn"
VRF_LITE = "vrf-lite"
LOCALNET = "localnet"

MATRIX: dict[str, DataPath] = {
    d.kind: d
    for d in (
        DataPath(
            PRIMARY_LAYER3,
            "primary Layer3 CUDN",
            "v1.1.0",
            "v1.1.0",
            "RouteAdvertisements with PodNetwork; shared or local gateway mode",
        ),
        DataPath(
            PRIMARY_LAYER2,
            "primary Layer2 CUDN",
            "v1.1.0",
            "v1.1.0",
            "RouteAdvertisements with PodNetwork; shared or local gateway mode; no EgressIP advertisement",
        ),
        DataPath(
            SECONDARY_LAYER2,
            "IPAM-less secondary Layer2 CUDN",
            None,
            None,
            "RouteAdvertisements refuses secondary networks in every known release: announced routes have no "
            "node-side path until OVN-K ships routed ingress for them",
        ),
        DataPath(EVPN, "EVPN transport (MAC-VRF/IP-VRF)", "v1.3.0", "v1.3.0", "local gateway mode; in the VRF only"),
        DataPath(
            VRF_LITE,
            "VRF-Lite (`targetVRF` not `default`)",
            "v1.1.0",
            "v1.1.0",
            "local gateway mode only; sessions in the network's VRF",
        ),
        DataPath(
            LOCALNET,
            "Localnet CUDN",
            None,
            None,
            "bridged to a physical network, never routed by OVN-K (bgpadv refuses it: network-not-advertisable)",
        ),
    )
}


def unsupported(kind: str) -> str | None:
    """The warning for a network kind that no known OVN-K release routes in both directions, or None."""
    path = MATRIX[kind]
    if path.ingress is not None and path.egress is not None:
        return None
    missing = " and ".join(what for what, v in (("ingress", path.ingress), ("egress", path.egress)) if v is None)
    return (
        f"{path.title}: no OVN-Kubernetes release bgpadv knows ({', '.join(KNOWN_RELEASES)}) provides the node-side "
        f"path for routed {missing}; {path.notes}"
    )


def kind_of(topology: str | None, secondary: bool, ipam_disabled: bool) -> str | None:
    """The table's kind of a CUDN as its view reads (`views.Network`): None when not one of the kinds."""
    if topology == "Localnet":
        return LOCALNET
    if secondary:
        return SECONDARY_LAYER2 if topology == "Layer2" and ipam_disabled else None
    return {"Layer3": PRIMARY_LAYER3, "Layer2": PRIMARY_LAYER2}.get(topology or "")
