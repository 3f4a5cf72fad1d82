"""The import loop's state: learned routes in, kernel tables made to match, level-based.

`Importer` is driven from the controller's single thread: `handle()` takes every parsed ExaBGP line the speaker
hands on (received UPDATEs, peer states, the start-up neighbor list and adj-rib-in dump), `set_networks()` the
selected CUDNs (name → subnets, network ID) after each plan, `tick()` the clock. After each change it computes the
desired routes per table (`policy.desired_routes`) and applies the difference to what it believes is installed;
every `reconcile_seconds` it re-reads the VRFs and the tables' protocol-186 routes from the kernel and repairs
whatever drifted (a route deleted by hand, a VRF that appeared since: it is filled then).

What it never does: touch a route whose protocol is not 186, touch a table that is not a listed network's (a
CUDN's only while that CUDN is selected), remove an installed route for not being learned before the learned set
is complete (`LearnedRoutes.complete`) unless this instance learned it itself, so a restarted bgpadv never empties
a table and a withdrawal still takes effect at once.
"""

from __future__ import annotations

import errno
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bgpadv.config import Config, ImportNetwork
from bgpadv.core import reasons
from bgpadv.core.model import ObjectRef, PlannedNetwork, Refusal
from bgpadv.core.prefix import Address, Prefix
from bgpadv.importer.guard import ImportContext, Interface, context_of
from bgpadv.importer.learned import LearnedRoutes
from bgpadv.importer.policy import RefusedPath, desired_routes
from bgpadv.importer.vrfs import Routes, vrf_name
from bgpadv.speaker.protocol import NeighborList, PeerState, RibInDone, RibRoute, UpdateEvent

if TYPE_CHECKING:  # pyroute2: loaded by whoever makes the socket
    from bgpadv.importer.netlink import Netlink

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SelectedNetwork:
    subnets: tuple[Prefix, ...]
    network_id: int | None = None


@dataclass(slots=True)
class NetworkStatus:
    table: int | None
    vrf: str | None
    desired: Routes = field(default_factory=dict)
    installed: Routes = field(default_factory=dict)
    refused: dict[str, int] = field(default_factory=dict)
    refusals: list[RefusedPath] = field(default_factory=list)


class Importer:
    def __init__(
        self,
        config: Config,
        netlink: Netlink,
        metrics: object | None,
        now: float,
        *,
        on_refusals: Callable[[list[Refusal]], None] | None = None,
    ) -> None:
        self.config = config
        self.settings = config.import_routes
        self.netlink = netlink
        self.metrics = metrics
        self.learned = LearnedRoutes(config.peers, now)
        self._selected: dict[str, SelectedNetwork] = {}
        self._vrfs: dict[str, int] = {}
        self._installed: dict[int, Routes] = {}  # table → what this process believes is there
        self._status: dict[str, NetworkStatus] = {}
        self._next_full = now  # the first tick reads the kernel
        self._neighbors: dict[str, str] = {}
        self._applied_version = -1
        self._was_complete = False
        self._snapshot: dict = {}
        self._nodes: frozenset[Address] = frozenset()
        self._interfaces: list[Interface] | None = None
        self._context = context_of(config)
        self._events: tuple[Refusal, ...] = ()
        self.on_refusals = on_refusals  # Events for the guard's refusals
        self._bfd_failed: set[str] = set()  # peers whose BFD session went down: their routes are not installed

    # -- inputs ----------------------------------------------------------------------------------------------------
    def handle(self, reply: object, at: float) -> None:
        """One parsed ExaBGP line the speaker hands on."""
        if isinstance(reply, UpdateEvent):
            if reply.direction == "receive":
                if reply.peer not in self.learned.routes:
                    self.handle_malformed(1, "peer")  # no address, or no configured peer: nothing is learned
                self.handle_malformed(reply.malformed)
                self.learned.update(reply.peer, reply.announced, reply.withdrawn, reply.eor, at)
        elif isinstance(reply, PeerState):
            self.learned.peer_state(reply.peer, reply.state, at)
        elif isinstance(reply, NeighborList):
            self._neighbors = dict(reply.peers)
            self.learned.begin_dump(self._neighbors)
        elif isinstance(reply, RibRoute):
            self.learned.dump_route(reply.peer, reply.prefix, reply.next_hop)
        elif isinstance(reply, RibInDone):
            self.learned.end_dump(at)
        self.tick(at)

    def set_peers(self, config: Config, links: Mapping[Address, str]) -> None:
        """The running configuration's peers changed live (`config`, a live peer move): their learned routes follow
        (`LearnedRoutes.set_peers`), and `links` are the interfaces of their link-local next hops
        (`Netlink.links`)."""
        self.config = config
        self.learned.set_peers(config.peers)
        self.netlink.links = dict(links)
        self._refresh_context()

    def set_networks(
        self, selected: Mapping[str, SelectedNetwork], at: float, node_addresses: Iterable[Address] | None = None
    ) -> None:
        """The selected networks (and, when given, every node's addresses: next hops the guard refuses)."""
        nodes = self._nodes if node_addresses is None else frozenset(node_addresses)
        if dict(selected) != self._selected:
            self._selected = dict(selected)
            self._nodes = nodes
            self._refresh_context()
            self.tick(at, full=True)  # new tables: read what they hold first
        elif nodes != self._nodes:
            self._nodes = nodes
            self._refresh_context()
            self._applied_version = -1
            self.tick(at)

    def bfd_failed(self, peer: str, failed: bool, at: float) -> None:
        """The peer's BFD session went down after having been up (`failed`), or came back: while it is down the
        peer's learned routes leave the tables at once (no graceful-restart wait: BFD says the path is gone) and
        come back with it. What the peer sends meanwhile is still learned, so nothing is lost if the BGP session
        survived."""
        if failed == (peer in self._bfd_failed):
            return
        if failed:
            self._bfd_failed.add(peer)
            log.warning("import: BFD down: the peer's routes leave the tables", extra={"peer": peer})
        else:
            self._bfd_failed.discard(peer)
            log.info("import: BFD up: the peer's routes are installed again", extra={"peer": peer})
        self._applied_version = -1
        self.tick(at)

    def handle_malformed(self, count: int, what: str = "update") -> None:
        """ExaBGP's echo carried `count` parts that cannot be read (`what`: peer, prefix, next-hop, update):
        dropped by the parser, counted here (`bgpadv_import_malformed_total`)."""
        if count <= 0:
            return
        log.warning("import: a learned route cannot be read: refused", extra={"count": count, "part": what})
        if self.metrics is not None:
            self.metrics.import_malformed.labels(part=what).inc(count)  # type: ignore[attr-defined]

    def _refresh_context(self) -> None:
        subnets = tuple(dict.fromkeys(s for sel in self._selected.values() for s in sel.subnets))
        self._context = context_of(self.config, subnets, self._nodes, self._interfaces)

    @property
    def context(self) -> ImportContext:
        return self._context

    def tick(self, now: float, *, full: bool = False) -> None:
        self.learned.expire(now)
        if full or now >= self._next_full:
            self._next_full = now + self.settings.reconcile_seconds
            self._read_kernel()
        elif self.learned.version == self._applied_version:
            return
        if self.learned.complete and not self._was_complete:
            log.info("import: the learned routes are complete; installed routes no longer learned may now go")
        self._was_complete = self.learned.complete
        self._applied_version = self.learned.version
        self._apply()

    # -- the work --------------------------------------------------------------------------------------------------
    def _targets(self) -> dict[str, tuple[ImportNetwork, int | None, str | None, tuple[Prefix, ...]]]:
        out: dict[str, tuple[ImportNetwork, int | None, str | None, tuple[Prefix, ...]]] = {}
        for net in self.settings.networks:
            if net.external:
                out[net.name] = (net, net.table, None, ())
                continue
            selected = self._selected.get(net.name)
            if selected is None:
                continue  # not a selected CUDN: its table is never touched
            vrf = vrf_name(net.name, net.network_id if net.network_id is not None else selected.network_id)
            table = net.table if net.table is not None else self._vrfs.get(vrf) if vrf is not None else None
            out[net.name] = (net, table, vrf, selected.subnets)
        return out

    def _read_kernel(self) -> None:
        try:
            self._vrfs = self.netlink.vrf_tables()
        except OSError as e:
            self._error("vrf-lookup", e)
        tables = {t for _, t, _, _ in self._targets().values() if t is not None}
        try:
            self._installed = self.netlink.installed(tables)
        except OSError as e:
            self._error("dump", e)
        try:
            interfaces: list[Interface] | None = self.netlink.interfaces()
        except OSError as e:
            interfaces = None  # unknown: only a configured peer's own address is on the link
            self._error("address-dump", e)
        if interfaces != self._interfaces:
            self._interfaces = interfaces
            self._refresh_context()

    def _apply(self) -> None:
        status: dict[str, NetworkStatus] = {}
        learned = self.learned.routes
        if self._bfd_failed:
            learned = {peer: ({} if peer in self._bfd_failed else routes) for peer, routes in learned.items()}
        complete = self.learned.complete
        for name, (net, table, vrf, subnets) in self._targets().items():
            desired = desired_routes(learned, net, subnets, self.settings.max_routes, self._context)
            st = NetworkStatus(table, vrf, desired.routes, refused=desired.refused, refusals=desired.refusals)
            status[name] = st
            if table is None:
                continue
            installed = self._installed.setdefault(table, {})
            for prefix, hops in desired.routes.items():
                if installed.get(prefix) != hops:
                    self._install(table, prefix, hops, installed)
            seen = self.learned.seen
            for prefix in [p for p in installed if p not in desired.routes and (complete or p in seen)]:
                self._remove(table, prefix, installed)
            st.installed = dict(installed)
        self._status = status
        self._snapshot = self.status()  # read by the HTTP thread: a new dict each time, swapped whole
        self._export_metrics()
        self._report_refusals()

    def refusals(self) -> list[Refusal]:
        """The guard's refusals of the selected CUDNs' imports, as the planner's refusals are (an Event on the CUDN
        each, reason the import code); external networks have no object to carry them."""
        external = {n.name for n in self.settings.networks if n.external}
        out = []
        for name, st in self._status.items():
            if name in external:
                continue
            ref = ObjectRef("ClusterUserDefinedNetwork", name)
            for r in st.refusals:
                value = f"{r.prefix} via {r.next_hop if r.next_hop is not None else '-'} from {r.peer}"
                out.append(Refusal(ref, value, r.reason, r.message, name))
        return out

    def _report_refusals(self) -> None:
        if self.on_refusals is None:
            return
        current = tuple(self.refusals())
        if current != self._events:
            self._events = current
            try:
                self.on_refusals(list(current))
            except Exception:
                log.exception("import: reporting refusals failed")

    def _install(self, table: int, prefix: Prefix, hops: frozenset[Address], installed: Routes) -> None:
        try:
            self.netlink.replace(table, prefix, hops)
            installed[prefix] = hops
        except OSError as e:
            self._error("install", e, table=table, prefix=str(prefix))
            self._applied_version = -1  # retry on the next tick

    def _remove(self, table: int, prefix: Prefix, installed: Routes) -> None:
        try:
            self.netlink.delete(table, prefix)
        except OSError as e:
            if e.errno != errno.ESRCH:  # already gone is what a delete wants
                self._error("delete", e, table=table, prefix=str(prefix))
                self._applied_version = -1
                return
        installed.pop(prefix, None)

    def _error(self, operation: str, error: Exception, **extra: object) -> None:
        log.warning("netlink %s failed: %s", operation, error, extra=extra)
        if self.metrics is not None:
            self.metrics.netlink_errors.labels(operation=operation).inc()  # type: ignore[attr-defined]

    def _export_metrics(self) -> None:
        if self.metrics is None:
            return
        for name, st in self._status.items():
            for reason in reasons.IMPORT_REASONS:
                self.metrics.import_refused.labels(network=name, reason=reason).set(st.refused.get(reason, 0))  # type: ignore[attr-defined]
            for version, family in ((4, "ipv4"), (6, "ipv6")):
                count = sum(1 for p in st.installed if p.version == version)
                self.metrics.routes_imported.labels(network=name, family=family).set(count)  # type: ignore[attr-defined]

    def snapshot(self) -> dict:
        """The latest `status()`, safe to call from another thread."""
        return self._snapshot

    # -- status ----------------------------------------------------------------------------------------------------
    def status(self) -> dict:
        """`bgpadv status`'s `import` section: learned routes per peer, desired and installed per network."""

        def routes(r: Routes) -> dict[str, list[str]]:
            return {str(p): sorted(str(h) for h in hops) for p, hops in sorted(r.items(), key=lambda i: i[0].key)}

        return {
            "complete": self.learned.complete,
            "learned": {
                peer: {str(p): str(nh) if nh is not None else None for p, nh in rs.items()}
                for peer, rs in self.learned.routes.items()
            },
            "networks": {
                name: {
                    "vrf": st.vrf,
                    "table": st.table,
                    "desired": routes(st.desired),
                    "installed": routes(st.installed),
                    "refused": dict(st.refused),
                    "refusals": [r.as_json() for r in st.refusals],
                }
                for name, st in self._status.items()
            },
        }


def selected_networks(networks: Mapping[str, PlannedNetwork]) -> dict[str, SelectedNetwork]:
    """name → SelectedNetwork for the networks a plan advertises (`Plan.context.networks`), with OVN-K's network ID
    (the CUDN's `k8s.ovn.org/network-id` annotation, decoded once) when it carries one."""
    return {name: SelectedNetwork(n.subnets, n.network_id) for name, n in networks.items()}
