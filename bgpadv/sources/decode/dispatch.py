"""The entry points: `decode(resource, obj, key)`, the view of one raw object by the decoder of its resource (it never
raises, whatever `obj` holds), and `state_from_objects(objects)`, a list of objects sorted and decoded into a
`ClusterState` (for `bgpadv render`, tests and benchmarks) as the store does event by event."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Mapping

from bgpadv.core import resources
from bgpadv.core.resources import Resource
from bgpadv.core.state import ClusterState
from bgpadv.core.views import View
from bgpadv.sources.decode.claims import decode_claim
from bgpadv.sources.decode.namespaces import decode_namespace
from bgpadv.sources.decode.networks import decode_network
from bgpadv.sources.decode.nodes import decode_node
from bgpadv.sources.decode.pods import decode_launcher_pod
from bgpadv.sources.decode.route_advertisements import decode_route_advertisement
from bgpadv.sources.decode.vmis import decode_vmi


def stored_key(view: View, key: tuple[str, str] | str) -> tuple[str, str] | str:
    """The key to store `view` under: the view's own key object when it equals `key` (one tuple per object, held by
    the view, the reflector's cache and the store alike), else `key`."""
    own = getattr(view, "key", None)
    return own if own is not None and own == key else key


DECODERS: dict[str, Callable[[object, object], View]] = {
    resources.CUDN.field: decode_network,
    resources.ROUTE_ADVERTISEMENTS.field: decode_route_advertisement,
    resources.IPAM_CLAIM.field: decode_claim,
    resources.VMI.field: decode_vmi,
    resources.LAUNCHER_POD.field: decode_launcher_pod,
    resources.NODE.field: decode_node,
    resources.NAMESPACE.field: decode_namespace,
}


def decode(resource: Resource, obj: object, key: object = None) -> View:
    """The view of one raw object of `resource`, stored under `key` (default: `resource.key(obj)`). Never raises."""
    if key is None:
        key = resource.key(obj) if isinstance(obj, dict) else ""
    return DECODERS[resource.field](obj, key)


def decode_state(buckets: Mapping[str, Mapping[object, object]]) -> ClusterState:
    """A ClusterState from raw objects already sorted by ClusterState field and key (tests that need their own
    keys); every object decoded as the store decodes it."""
    by_field = {r.field: r for r in resources.ALL}
    out: dict[str, dict] = {r.field: {} for r in resources.ALL}
    for fld, objects in buckets.items():
        res = by_field[fld]
        out[fld] = {k: decode(res, obj, k) for k, obj in objects.items()}
    return ClusterState(**out)


def state_from_objects(objects: Iterable[object]) -> tuple[ClusterState, list[object]]:
    """Sort objects into a state by apiVersion/kind and decode them; returns the state and the objects it did not
    take (`resources.resource_for`: unwatched kinds, pods that are no virt-launcher, anything but a mapping).

    The cyclic garbage collector waits meanwhile (views hold no cycles; a collection would walk every object)."""
    paused = gc.isenabled()
    gc.disable()
    try:
        return _sorted_and_decoded(objects)
    finally:
        if paused:
            gc.enable()


def _sorted_and_decoded(objects: Iterable[object]) -> tuple[ClusterState, list[object]]:
    buckets: dict[str, dict] = {r.field: {} for r in resources.ALL}
    ignored: list[object] = []
    for obj in objects:
        try:
            res = resources.resource_for(obj) if isinstance(obj, dict) else None
        except (AttributeError, TypeError):
            res = None
        if res is None:
            ignored.append(obj)
            continue
        assert isinstance(obj, dict)  # resource_for answered only for a dict
        key = res.key(obj)
        view = decode(res, obj, key)
        buckets[res.field][stored_key(view, key)] = view
    return ClusterState(**buckets), ignored
