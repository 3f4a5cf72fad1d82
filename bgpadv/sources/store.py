"""The store: every watched object, decoded once into its view (`bgpadv.sources.decode`), fed by `WatchEvent`s.

Single-threaded by design: the service's loop applies events and runs the planner on the same thread, so the
`ClusterState` it hands out is the store's own mappings (no copies) and is never mutated while a plan runs. A changed
object's view is replaced, never mutated (views are immutable): the planner and the guard cache by identity.
"""

from __future__ import annotations

from collections.abc import Iterable

from bgpadv.config import Config
from bgpadv.core import resources
from bgpadv.core.resources import Resource, resource_version
from bgpadv.core.state import ClusterState
from bgpadv.core.views import View
from bgpadv.sources.decode.dispatch import decode, stored_key
from bgpadv.sources.reflector import WatchEvent

# What the default configuration watches: RouteAdvertisements only when `followRouteAdvertisements` is set.
DEFAULT_RESOURCES: tuple[Resource, ...] = tuple(r for r in resources.ALL if r is not resources.ROUTE_ADVERTISEMENTS)


def watched_resources(config: Config) -> tuple[resources.Resource, ...]:
    """The resources a configuration needs: RouteAdvertisements only when it follows them; in per-node mode the
    launcher pods and the VMIs of the instance's node only (`resources.for_node`)."""
    wanted = (
        r
        for r in resources.ALL
        if r is not resources.ROUTE_ADVERTISEMENTS or config.networks.follow_route_advertisements
    )
    node = config.node_name
    return tuple(scoped for r in wanted for scoped in (resources.for_node(r, node) if node else (r,)))


Key = tuple[str, str] | str  # a store key: name, or (namespace, name)


def _version_order(version: str) -> tuple[int, int]:
    """Order of resourceVersions: etcd revisions compare as numbers (the apiserver's are, though clients are asked
    to treat them as opaque); anything else sorts first."""
    return (1, int(version)) if version.isdigit() else (0, 0)


class Store:
    """Watched objects by resource and key. `expected` are the resources that must sync before `synced` is True:
    pass the resources actually watched (service.watched_resources(config))."""

    def __init__(self, expected: Iterable[Resource] = DEFAULT_RESOURCES) -> None:
        self._maps: dict[str, dict] = {r.field: {} for r in resources.ALL}
        self._state = ClusterState(**self._maps)
        self._expected = frozenset(expected)
        self._synced: set[Resource] = set()
        # a field that several watches fill (per-node VMIs: on the node, migrating to it): which watches hold each
        # object, and the view each last delivered (the store keeps the newest while any of them holds it)
        fields = [r.field for r in self._expected]
        self._holders: dict[str, dict[Key, dict[Resource, View]]] = {f: {} for f in set(fields) if fields.count(f) > 1}

    def apply(self, event: WatchEvent) -> bool:
        """Take one event; True when the store changed: an object added, replaced or removed, or a resource's
        first SYNCED (so the caller knows the view may just have become complete).

        A MODIFIED (or ADDED) carrying the resourceVersion already stored changes nothing; a DELETED for an unknown
        key changes nothing.
        """
        res = event.resource
        if event.type == "SYNCED":
            if res in self._synced:
                return False
            self._synced.add(res)
            return True
        key = event.object_key()
        if key is None:
            return False
        objects = self._maps[res.field]
        holders = self._holders.get(res.field)
        if holders is not None:
            return self._apply_shared(event, key, objects, holders)
        if event.type == "DELETED":
            return objects.pop(key, None) is not None
        old = objects.get(key)
        view, obj = event.view, event.obj
        if view is not None:
            version = view.resource_version
        elif obj is not None:  # an event made by hand (tests, files): its version is read before any decode
            version = resource_version(obj)
        else:
            return False
        if old is not None and version and old.resource_version == version:
            return False
        if view is None:  # an event made by hand; a reflector decoded its objects on its own thread
            view = decode(res, obj, key)
        objects[stored_key(view, key) if old is None else key] = view
        return True

    def _apply_shared(
        self, event: WatchEvent, key: Key, objects: dict, holders: dict[Key, dict[Resource, View]]
    ) -> bool:
        """`apply` for a field several watches fill: an object seen through either is present; a DELETED from one
        (it stopped matching that watch's selector, or was deleted) while another still holds it changes nothing
        but that watch's share; the store keeps the newest view any holder delivered."""
        res = event.resource
        held = holders.get(key)
        if event.type == "DELETED":
            if held is None or held.pop(res, None) is None:
                return False
            if held:  # still watched through another selector: present as it is (that watch brings what follows)
                return False
            del holders[key]
            return objects.pop(key, None) is not None
        view = event.view
        if view is None:
            if event.obj is None:
                return False
            view = decode(res, event.obj, key)
        if held is None:
            held = holders[key] = {}
        held[res] = view
        return self._keep_newest(key, objects, held)

    @staticmethod
    def _keep_newest(key: Key, objects: dict, held: dict[Resource, View]) -> bool:
        newest = max(held.values(), key=lambda v: _version_order(v.resource_version))
        old = objects.get(key)
        if old is newest or (old is not None and old.resource_version == newest.resource_version and old == newest):
            return False
        objects[stored_key(newest, key) if old is None else key] = newest
        return True

    @property
    def state(self) -> ClusterState:
        """The current view; its mappings are the store's own (read them, never mutate them)."""
        return self._state

    @property
    def synced(self) -> bool:
        """Every expected resource finished its first list (or was found not installed)."""
        return self._expected <= self._synced

    def counts(self) -> dict[str, int]:
        """Objects held per ClusterState field, e.g. {"cudns": 2, "vmis": 40, ...}."""
        return {name: len(objects) for name, objects in self._maps.items()}
