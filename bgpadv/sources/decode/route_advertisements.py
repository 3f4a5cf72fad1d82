"""RouteAdvertisements → `views.RouteAdvertisement`: the CUDNs and nodes it selects, whether OVN-K accepted it."""

from __future__ import annotations

from collections.abc import Mapping

from bgpadv.core import selectors
from bgpadv.core.bounded import describe
from bgpadv.core.model import ObjectRef
from bgpadv.core.selectors import LabelSelector
from bgpadv.core.views import RouteAdvertisement
from bgpadv.sources.decode.fields import _condition, _key_name, _list, _map, _str, _version, selector_problem

RA_KIND = "RouteAdvertisements"


def _accepted(raw: Mapping, meta: Mapping) -> bool:
    """`Accepted=True` for the current generation (or, without conditions, the legacy `status.status`)."""
    status = _map(raw.get("status"))
    accepted = _condition(status, "Accepted")
    if accepted is None:
        return not _list(status.get("conditions")) and status.get("status") == "Accepted"
    if accepted.get("status") != "True":
        return False
    observed, generation = accepted.get("observedGeneration"), meta.get("generation")
    return observed is None or generation is None or observed == generation


def decode_route_advertisement(obj: object, key: object = None) -> RouteAdvertisement:
    raw = _map(obj)
    meta = _map(raw.get("metadata"))
    spec = _map(raw.get("spec"))
    found: list[LabelSelector] = []
    malformed: list[tuple[str, str]] = []
    for i, entry in enumerate(_list(spec.get("networkSelectors"))):
        if not isinstance(entry, dict) or entry.get("networkSelectionType") != "ClusterUserDefinedNetworks":
            continue
        inner = _map(entry.get("clusterUserDefinedNetworkSelector"))
        if inner.get("networkSelector") is None:  # required by the CRD: absent or null selects no CUDN
            continue
        selector, bad = selectors.parse(inner.get("networkSelector"))
        if selector is not None:
            found.append(selector)
        else:
            field = f"spec.networkSelectors[{i}].clusterUserDefinedNetworkSelector.networkSelector"
            malformed.append(selector_problem(field, bad))
    node_selector, bad = selectors.parse(spec.get("nodeSelector"))
    if bad:
        malformed.append(selector_problem("spec.nodeSelector", bad))
    elif node_selector is None:  # absent or null: Go's zero value, the empty selector (every node)
        node_selector = LabelSelector()
    name = _str(meta.get("name")) or _key_name(key)
    advertisements = tuple(describe(a) for a in _list(spec.get("advertisements")))
    vrf = spec.get("targetVRF")
    return RouteAdvertisement(
        name=name,
        resource_version=_version(meta),
        pod_network="PodNetwork" in advertisements,
        accepted=_accepted(raw, meta),
        network_selectors=tuple(found),
        ref=ObjectRef(RA_KIND, name, "", _str(meta.get("uid")), _str(meta.get("creationTimestamp"))),
        target_vrf=vrf if isinstance(vrf, str) else describe(vrf) if vrf is not None else "",
        node_selector=node_selector,
        advertisements=advertisements,
        malformed_selectors=tuple(malformed),
    )
