"""The controller loop: sources → coalesce → planner → guard → hold → speaker, on one thread.

`bgpadv run` renders ExaBGP's configuration and supervises ExaBGP (`bgpadv.runtime.supervisor`); ExaBGP starts
`bgpadv controller` as its API process, a shim that runs and restarts the controller (`bgpadv.runtime.shim`); the
controller process is built in `bgpadv.runtime.wiring`. The controller is where everything happens:

    reflector threads ──WatchEvent──┐
                                    ├──▶ one queue ──▶ main loop: store.apply → plan → guard → speaker.set_desired
    stdin reader thread ──line─────┘                              speaker.handle_line (acks, peer events)

Only the main loop touches the store, the planner's inputs and the speaker, so none of them needs a lock. Bursts
coalesce by construction: the loop drains everything already queued (plus a short window after a watch event)
before it plans once. A controller crash does not drop BGP sessions: ExaBGP keeps its RIB and respawns the
controller, whose speaker relearns what is advertised before it changes anything.

Fail static — a wrong or partial view of the cluster never withdraws routes in bulk:

- the API unreachable (5xx, 429, connection errors): the reflectors keep retrying and the store keeps the last view,
  so the advertised routes stay as they were; nothing is planned from a partial view (before every resource's first
  LIST, or while a relist is half delivered);
- a resource that answers 404 or 403 after it was readable (a CRD uninstalled, RBAC withdrawn) keeps its objects:
  the reflector holds it, retries with backoff, and deletes its objects only when a LIST begun `safety.holdSeconds`
  (default 120 s, at least 60) after the first refusal still refuses (bgpadv/sources/reflector.py). Those deletions
  are then ordinary events. A resource absent from the start (KubeVirt not installed) is synced and empty;
- a relist (410 Gone, any re-LIST) or a full replan (start-up, the periodic resync, a confirmation) that would
  withdraw more than `safety.maxWithdrawFraction` (default 0.5) of a peer's advertised routes withdraws none of them:
  they stay in the speaker's desired set, unchanged (`bgpadv_routes_held{peer}`, a Warning log line with the cause),
  and go only when a full LIST of every resource, which the controller asks for once `safety.holdSeconds` passed,
  still does not have them (`bgpadv.safety.hold`; the LIST tracking in `bgpadv.safety.failstatic`). Announcements
  and next-hop changes in such a plan go out at once; a plan of ordinary watch events (a DELETE included) is applied
  whatever it withdraws, unless it is part of a mass deletion: at least 3 objects and more than that fraction of one
  resource's objects starting to be deleted (DELETED or a deletionTimestamp) within 10 s, as when its CRD is deleted
  (the real apiserver marks every object deleting before it answers 404). Such plans are bulk plans too, and what
  the deletion's first events withdrew is held with the rest (`bgpadv_resource_held{resource}` is 1 while it lasts;
  `bgpadv.safety.failstatic`): every withdrawal caused by deletion events waits until they paused for
  `safety.deletionSettleSeconds` (default 1 s, at most 10 s), so a burst is seen whole before any of it reaches the
  fabric. The loop wakes for that deadline (`_settle`), and hands the speaker its last plan with them withdrawn.

This module only orders the work; the decisions are made elsewhere: what changes reach which peer (planner,
guard), what is held (`bgpadv.safety.failstatic`), how a changed configuration file is applied
(`bgpadv.runtime.reload`), and what the loop still derives beside the plan (`bgpadv.runtime.derive`).
"""

from __future__ import annotations

import gc
import logging
import queue
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from bgpadv.config import Config
from bgpadv.core.model import Cause, Plan, Route
from bgpadv.core.resources import CUDN, NODE, ROUTE_ADVERTISEMENTS, hands_over
from bgpadv.core.state import ClusterState
from bgpadv.core.views import Node
from bgpadv.observe.observers import NullObserver, Observer
from bgpadv.planner.incremental import IncrementalPlanner
from bgpadv.runtime.derive import handovers_of, import_networks, node_addresses
from bgpadv.runtime.peer_moves import MOVE_WITHDRAW_SECONDS, PeerMove, PeerMoves
from bgpadv.runtime.reload import ConfigFileChanged, Reloader, peers_only_moved
from bgpadv.runtime.seams import ControllerSources, ControllerSpeaker
from bgpadv.runtime.unnumbered import LinksFound, next_hop_links
from bgpadv.safety.failstatic import FailStatic
from bgpadv.safety.guard import Guard, Guarded, GuardedDelta, PrefixKey
from bgpadv.sources.reflector import WatchEvent
from bgpadv.sources.store import Store, watched_resources
from bgpadv.speaker.bfd import BfdSessions, sessions_of

__all__ = ["MOVE_WITHDRAW_SECONDS", "BfdChanged", "Controller", "LoopSettings", "desired_per_peer", "watched_resources"]

if TYPE_CHECKING:  # the importer (pyroute2) is loaded only where routes are imported (bgpadv.runtime.wiring)
    from bgpadv.importer.reconciler import Importer

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LoopSettings:
    """Timing of the main loop."""

    coalesce_window: float = 0.002
    """After a watch event, keep collecting events for this long before planning (seconds), while the loop is busy:
    the first event after a quiet spell (no plan within this window) is planned at once, with whatever is already
    queued, so a single change never waits; the events that follow it within the window are collected."""
    coalesce_limit: float = 0.005
    """Stop collecting this long after the loop turn began, even while events keep coming (seconds), once at least
    `coalesce_min_items` were taken: a flood of events never holds back the plan of what already arrived; the rest
    is taken by the next turn."""
    coalesce_min_items: int = 256
    """A loop turn takes at least this many queued items before `coalesce_limit` can end it (a short burst is
    always planned in one go, however slow the machine)."""
    heartbeat: float = 1.0
    """The loop wakes at least this often, to heartbeat the health check and run timers (seconds)."""
    resync_interval: float = 300.0
    """Replan from the full store this often even without events: level-based healing of any drift (seconds)."""
    startup_gc_pause: float = 60.0
    """`bgpadv controller` starts with Python's cyclic garbage collector off. Nearly everything the start-up
    allocates is kept: the imported modules and the listed cluster, hundreds of thousands of objects. Each automatic
    collection meanwhile walks all of them and frees nothing (planning 10k listed VMs in-process: 2.6 s with the
    collector on, 1.5 s off, measured); reference counting frees the rest as always. The first plan freezes what is
    held (`gc.freeze`) and turns the collector on again; so does this long after the loop's start without a first
    plan (an API that keeps refusing the LIST: the garbage of its retries must not pile up) (seconds)."""


@dataclass(frozen=True, slots=True)
class _ExaBGPLine:
    line: str
    at: float


class _StdinClosed:
    pass


class _Drain:
    """Graceful shutdown asked for (SIGUSR1 from the API shim, see `bgpadv.runtime.shim`)."""


@dataclass(frozen=True, slots=True)
class BfdChanged:
    """A peer's BFD session changed (`bgpadv.speaker.bfd`): `state` as bfdd says it, `failed` a down after up,
    `diagnostic` RFC 5880's code of the change."""

    peer: str
    failed: bool
    state: str = "unknown"
    diagnostic: int = 0


def desired_per_peer(
    guard: Guard,
    plan: Plan,
    state: ClusterState,
    held: Callable[[str], Collection[PrefixKey]] | None = None,
) -> Guarded:
    """What each peer gets: the plan's routes (already the configured node's view in per-node mode) through the
    last guard (`bgpadv.safety.guard`), which refuses what must never reach the fabric or what the peer cannot carry.
    `held(peer)`: the prefixes ExaBGP holds for the peer, so a peer over `safety.maxRoutes` keeps its last good set."""
    return guard.check(plan.routes, guard.context(plan), held)


class Controller:
    """The API process: owns the store, runs the planner and drives the speaker from one loop.

    `run()` repeats `step()`; tests put items on `queue` and call `step()` themselves, with `clock` (monotonic
    seconds) driving the timers and the withdrawal hold. `held` is what the hold keeps back per peer. The speaker,
    the sources and the observer must implement their seams (`bgpadv.runtime.seams`, `bgpadv.observe.observers`).

    Every collaborator is given here: `sources` emit their watch events into `events`, which becomes the loop's
    `queue` (a new queue when None: the test puts the events there itself); `on_peers` is called with the running
    configuration after each live peer move (the per-peer gauges, bfdd wanted or not).
    """

    def __init__(
        self,
        config: Config,
        *,
        speaker: ControllerSpeaker,
        sources: ControllerSources,
        events: queue.SimpleQueue | None = None,
        observer: Observer | None = None,
        settings: LoopSettings | None = None,
        clock: Callable[[], float] = time.monotonic,
        importer: Importer | None = None,
        reloader: Reloader | None = None,
        configured: Config | None = None,
        placement: Callable[[Config, Node | None], Config] | None = None,
        node: Node | None = None,
        bfd: BfdSessions | None = None,
        on_peers: Callable[[Config], None] | None = None,
    ) -> None:
        self.config = config
        self.bfd = bfd  # bfdd's sessions (bgpadv.speaker.bfd.BfdControl); None: BFD not wired
        # peers per node (bgpadv.runtime.peering): `configured` is the file's configuration, `config` what this
        # instance runs of it on `node` (`placement(configured, node)`); a label change of the node that selects
        # other peers reloads ExaBGP with them and swaps the peers live (`_move_peers`, bgpadv.runtime.peer_moves)
        self.configured = configured if configured is not None else config
        self.moves = PeerMoves(config, node=node, placement=placement, clock=clock, configured=self.configured)
        self.on_peers = on_peers
        self._last_desired: Mapping[str, Iterable[Route]] | None = None
        self.importer = importer  # egress import (bgpadv.importer), fed by the speaker's on_received hook
        self.reloader = reloader  # live configuration reload (bgpadv.runtime.reload); None: the file is not watched
        self.restart_requested = False  # the loop ended for a configuration change a new controller must apply
        self.settings = settings or LoopSettings()
        self.clock = clock
        self.observer: Observer = observer if observer is not None else NullObserver()
        _require(self.observer, Observer, "observer")
        _require(speaker, ControllerSpeaker, "speaker")
        watched = watched_resources(config)
        self.store = Store(watched)
        # equal to planner.plan(store.state, config), at the cost of what changed since the previous plan
        self.incremental = IncrementalPlanner(config)
        self.guard = Guard(config)  # every route passes it on its way to the speaker
        self.guard.no_extended_next_hop = speaker.no_extended_next_hop  # sessions' facts (`_follow_sessions`)
        self._changed: set[tuple[str, object]] | None = None  # (field, key) applied since the last plan; None: all
        self.speaker = speaker
        # the loop's queue; `events`: the one `sources`, started before the controller existed, already fill (the
        # first LIST runs while the process finishes starting, bgpadv.runtime.wiring)
        self.queue: queue.SimpleQueue = events if events is not None else queue.SimpleQueue()
        _require(sources, ControllerSources, "sources")
        self.sources = sources
        self.plan: Plan | None = None
        self._stop = threading.Event()
        self._pending_since: float | None = None  # first unplanned watch event
        self._kinds: set[str] = set()
        self._last_plan_at = 0.0
        self._planned_mono = float("-inf")  # time.monotonic() of the last plan (the coalescing window's busy test)
        self._started_at = clock()
        # fail static: a relist or full replan never withdraws most of a peer's routes at once
        safety = config.safety
        self.failstatic = FailStatic(
            watched,
            safety.max_withdraw_fraction,
            safety.hold_seconds,
            clock,
            safety.deletion_settle_seconds,
            # a mass deletion (a CRD deleted: every object marked deleting by ordinary events) shows as its resource
            # held
            on_mass_deletion=lambda res, on: self.observer.resource_held(res.plural, on),
        )
        self._whole_next = False  # the next plan takes the whole path (a failure left the delta chain unsure)
        self._settle_cause: Cause | None = None  # the first cause of the withdrawals settling now

    @property
    def held(self) -> Mapping[str, int]:
        """Withdrawals held back per peer (peers planned for so far, zeros included)."""
        return self.failstatic.held_counts()

    # -- inputs from other threads -------------------------------------------------------------------------------
    def feed_exabgp(self, stream: TextIO) -> threading.Thread:
        """Start the reader thread: it only reads ExaBGP's lines and queues them, so the pipe never fills."""

        def read() -> None:
            try:
                for line in stream:
                    self.queue.put(_ExaBGPLine(line.rstrip("\n"), time.monotonic()))
            except (OSError, ValueError) as e:
                log.warning("reading from ExaBGP failed: %s", e)
            self.queue.put(_StdinClosed())

        t = threading.Thread(target=read, name="exabgp-reader", daemon=True)
        t.start()
        return t

    def request_drain(self) -> None:
        """Ask the loop to re-announce every route with GRACEFUL_SHUTDOWN. Safe from a signal handler."""
        self.queue.put(_Drain())

    def bfd_changed(self, peer: str, failed: bool, state: str = "unknown", diagnostic: int = 0) -> None:
        """A peer's BFD session changed, e.g. failed or recovered (from the BFD client's thread)."""
        self.queue.put(BfdChanged(peer, failed, state, diagnostic))

    def stop(self) -> None:
        self._stop.set()
        self.queue.put(_StdinClosed())

    # -- the loop --------------------------------------------------------------------------------------------------
    def run(self) -> int:
        self.speaker.start()
        self.sources.start()
        try:
            while not self._stop.is_set():
                if not self.step(wait=self._wait()):
                    break
        finally:
            self.sources.stop()
        return 0

    def _wait(self) -> float:
        """How long the loop may wait for an item: the heartbeat, or less when settling withdrawals are due sooner."""
        wait = self.settings.heartbeat
        deadline = self.failstatic.settle_deadline()
        if deadline is not None:
            wait = min(wait, max(deadline - self.clock(), 0.001))
        return wait

    def step(self, wait: float = 0.0) -> bool:
        """One iteration of the loop: heartbeat; take the first queued item (waiting at most `wait` seconds for
        one) and everything queued behind it (plus the coalescing window after a watch event); apply it; plan if
        something changed and the view is complete; run the timers (retry, held withdrawals, periodic resync) on
        `clock`. False when the loop must end (ExaBGP closed our input or is shutting down).

        With `wait=0` and nothing queued it only runs the timers, so a test drives the loop exactly, without
        threads or sleeps."""
        self.observer.heartbeat()
        if self.importer is not None:
            self.importer.tick(self.clock())  # graceful-restart expiry, the periodic kernel reconcile
        try:
            item = self.queue.get(timeout=wait) if wait > 0 else self.queue.get_nowait()
        except queue.Empty:
            self._timers()
            return self._moved_when_withdrawn()
        if not self._handle(item) or not self._drain():
            return False
        self._maybe_plan()
        self._timers()  # timers run under a steady stream of events too
        if not self._moved_when_withdrawn():
            return False
        if self.speaker.closed:
            log.info("ExaBGP is shutting down: exiting")
            return False
        return True

    def _drain(self) -> bool:
        """Take everything already queued; after a watch event, wait out the coalescing window if the loop is busy
        (`LoopSettings.coalesce_window`); never longer than `coalesce_limit` in all (a flood: what is still queued
        waits for the next turn, after this plan)."""
        deadline = None
        now = time.monotonic()
        stop = now + self.settings.coalesce_limit
        window = self.settings.coalesce_window
        busy = now - self._planned_mono < window  # a quiet loop plans the first event at once
        floor = self.settings.coalesce_min_items
        taken = 0
        while True:
            if self._pending_since is not None and deadline is None:
                deadline = min(time.monotonic() + window, stop) if busy else time.monotonic()
            if taken >= floor and time.monotonic() >= stop:
                return True
            taken += 1
            try:
                if deadline is None:
                    item = self.queue.get_nowait()
                else:
                    remaining = deadline - time.monotonic()
                    item = self.queue.get(timeout=remaining) if remaining > 0 else self.queue.get_nowait()
            except queue.Empty:
                return True
            if not self._handle(item):
                return False

    def _handle(self, item: object) -> bool:
        if isinstance(item, _ExaBGPLine):
            self.speaker.handle_line(item.line, item.at)
            if self._follow_sessions():
                # at once, before the next line: ExaBGP says what a session negotiated before its `up`, which makes
                # the speaker send End-of-RIB; the IPv4 routes must be queued ahead of it (a ToR under graceful
                # restart drops the stale routes the End-of-RIB finds not re-announced)
                self._maybe_plan()
            return self._moved_when_withdrawn()
        if isinstance(item, _StdinClosed):
            log.info("ExaBGP closed our input: exiting")
            return False
        if isinstance(item, _Drain):
            self.speaker.drain()
            return True
        if isinstance(item, BfdChanged):
            # a BFD failure ends the peer for bgpadv: its imported routes leave the tables, and it is reported down
            if self.importer is not None:
                self.importer.bfd_failed(item.peer, item.failed, self.clock())
            self.observer.bfd_changed(item.peer, item.state, item.failed, item.diagnostic, time.monotonic())
            return True
        if isinstance(item, ConfigFileChanged):
            return self._reload()
        if isinstance(item, LinksFound):
            return self._links_found()
        if isinstance(item, WatchEvent):
            self._apply(item)
            return self._follow_node(item)
        log.warning("ignoring unexpected queue item %r", type(item).__name__)
        return True

    def _follow_sessions(self) -> bool:
        """An interface peer's session negotiated Extended Next Hop or lost it (or went down): the guard's context
        changes, and the next plan (the whole guard check) announces or withdraws that peer's IPv4 routes. True when
        it changed."""
        missing = self.speaker.no_extended_next_hop
        if missing == self.guard.no_extended_next_hop:
            return False
        log.info("Extended Next Hop changed on interface peers", extra={"without": sorted(missing)})
        self.guard.no_extended_next_hop = missing
        if self._pending_since is None:
            self._pending_since = time.monotonic()
        return True

    def _apply(self, event: WatchEvent) -> None:
        """A watch event: tell the observer, follow (re)LISTs for fail static, apply it to the store and note what
        changed for the next plan."""
        res = event.resource
        self.observer.watch_event(res.plural, event.type, event.received_at, event.object_wall_time)
        synced = event.type == "SYNCED"
        if synced:
            self.observer.initial_sync(res.plural, event.received_at)
        self.failstatic.list_event(
            res, synced=synced, from_list=event.from_list, listed_at=event.listed_at, received_at=event.received_at
        )
        if not self.store.apply(event):
            return
        key = event.object_key()
        if not synced and not event.from_list and key is not None and _moved(event):
            if hands_over(res):
                self.failstatic.moved()
        elif not synced and not event.from_list and key is not None and _deletes(event):
            self.failstatic.deletion(
                res,
                key,
                removed=event.type == "DELETED",
                objects=len(getattr(self.store.state, res.field)),
                received_at=self.clock(),
            )
        if synced or key is None:
            self._changed = None  # a (re)list completed: compare everything
        elif self._changed is not None:
            self._changed.add((res.field, key))
        if self._pending_since is None:
            self._pending_since = event.received_at
        self._kinds.add(res.kind)

    # -- peers per node (bgpadv.runtime.peering), moved live (bgpadv.runtime.peer_moves) -------------------------------
    def _follow_node(self, event: WatchEvent) -> bool:
        """This instance's Node changed: when its labels select other peers, move to them (`_move_peers`). A deleted
        Node changes nothing (its VMs leave with it)."""
        name = self.config.speaker_node
        if event.resource is not NODE or name is None or not self.configured.peer_selection:
            return True
        node = self.store.state.nodes.get(name)
        new = self.moves.node_changed(self.configured, node) if node is not None else None
        return self._move_peers(new, self.configured, from_file=False) if new is not None else True

    def _links_found(self) -> bool:
        """The link of an interface peer left out answered (`bgpadv.runtime.unnumbered.LinkRetry`, off this thread):
        place the peers again, which takes it as found, and move to them (`_move_peers`: the other sessions kept)."""
        if self.moves.placement is None:
            return True
        new = self.moves.narrow(self.configured)
        if new.peers == self.config.peers:
            return True
        log.info("an interface peer's link answered: adding it", extra={"peers": [p.name for p in new.peers]})
        return self._move_peers(new, self.configured, from_file=False)

    def _move_peers(self, new: Config, configured: Config, *, from_file: bool) -> bool:
        """Serve `new`'s peers (narrowed from the file's `configured`): withdraw every route from the leaving peers
        first, then reload ExaBGP with the new neighbors and swap the configuration live (`_reload_peers`)."""
        withdraw = self.speaker.ready and self.plan is not None
        move = self.moves.begin(self.config, new, configured, from_file=from_file, withdraw=withdraw)
        if self.moves.moving is None:
            return self._reload_peers(move)
        if self._last_desired is not None:  # desire nothing for the leaving peers: withdrawn before ExaBGP drops them
            self.speaker.set_desired(self.moves.without_leaving(self._last_desired), None)
        return self._moved_when_withdrawn()

    def _reload_peers(self, move: PeerMove) -> bool:
        """Reload ExaBGP with the move's neighbors (a neighbor whose block is unchanged keeps its session), then take
        them on live (`_swap_peers`); only when a kept peer's own session settings changed, or the local AS or router
        ID, does the loop end for a new controller (False), whose speaker relearns ExaBGP's RIB."""
        new = move.config
        if self.reloader is None or not self.reloader.reload_exabgp(new):
            log.error("cannot reload ExaBGP with the new peers: the running peers stay")
            if move.from_file and self.reloader is not None:
                self.reloader.counted("refused")
            return True
        if not peers_only_moved(self.config, new):
            self.restart_requested = True
            return False
        self._swap_peers(move)
        return True

    def _swap_peers(self, move: PeerMove) -> None:
        """ExaBGP has the new neighbors: the speaker learns the peer set (new peers start empty and get the whole
        desired set from the next plan, queued by ExaBGP until their session is up), so does the import, then the
        configuration, planner, guard and BFD sessions are swapped (`apply_live`) and the next plan compares
        everything."""
        before = [p.name for p in self.config.peers]
        self.speaker.set_peers(move.config.peers)
        if self.importer is not None:  # what the new peers send is imported, the removed ones' forgotten
            self.importer.set_peers(move.config, next_hop_links(move.config))
        self.apply_live(move.config, move.configured)
        self._maybe_plan()  # now: the move may complete in the timers, after this step's plan
        if self.on_peers is not None:
            self.on_peers(move.config)
        if move.from_file and self.reloader is not None:
            self.reloader.applied_live()
        log.info(
            "peers changed live: ExaBGP reloaded, untouched sessions kept",
            extra={"peers": [p.name for p in move.config.peers], "previous": before},
        )

    def _moved_when_withdrawn(self) -> bool:
        """The waiting peer move is carried out once ExaBGP acknowledged the leaving peers' withdrawals (or after
        `MOVE_WITHDRAW_SECONDS`). False ends the loop (a move a new controller must finish)."""
        move = self.moves.due(self.speaker.held)
        return self._reload_peers(move) if move is not None else True

    # -- live configuration reload (bgpadv.runtime.reload) -------------------------------------------------------------
    def _reload(self) -> bool:
        """Apply a changed configuration file: live, by moving peers live (`_move_peers`), or by ending the loop for a
        new controller (after reloading ExaBGP when its own configuration changed). False ends the loop."""
        if self.reloader is None:
            return True
        decision = self.reloader.decide(self.config, self.moves.narrow)
        if decision.action == "restart":
            self.restart_requested = True
            return False
        configured = self.reloader.last_loaded
        if decision.action == "keep" and decision.config is not None and configured is not None:
            # what runs is unchanged, what the file configures may not be (peers for other nodes' labels): keep it,
            # or a later label change of this node would move to the file's earlier peers
            self.configured = configured
            return True
        if decision.action == "peers" and decision.config is not None:
            return self._move_peers(decision.config, configured or decision.config, from_file=True)
        if decision.action == "live" and decision.config is not None:
            self.apply_live(decision.config, configured)
            self.reloader.applied_live()
        return True

    def apply_live(self, new: Config, configured: Config | None = None) -> None:
        """Swap the configuration, planner, guard, BFD sessions and (if its settings changed) the withdrawal hold, and
        make the next plan compare everything. A deliberate edit is not a bulk view change: what it withdraws goes at
        once. `configured`: the file's configuration `new` was narrowed from (default: `new`). The speaker's peer set
        is `_swap_peers`' (the peers must be ExaBGP's first)."""
        self.config = new
        self.configured = configured if configured is not None else new
        if self.bfd is not None:
            self.bfd.set_desired(sessions_of(new.peers))
        self.incremental = IncrementalPlanner(new)
        self.guard = Guard(new)
        self.guard.no_extended_next_hop = self.speaker.no_extended_next_hop
        self.failstatic.reconfigure(
            new.safety.max_withdraw_fraction, new.safety.hold_seconds, new.safety.deletion_settle_seconds
        )
        self.failstatic.set_peers({p.name for p in new.peers})  # a removed peer's withdrawals are not held
        self._changed = None
        if self._pending_since is None:
            self._pending_since = time.monotonic()

    # -- planning ------------------------------------------------------------------------------------------------------
    def _maybe_plan(self) -> None:
        """Plan when something changed, or for the first time, once every resource is listed and the speaker knows
        what ExaBGP already advertises (never from a partial view)."""
        if not self.store.synced or not self.speaker.ready or self.failstatic.relisting:
            return
        if self._pending_since is None and self.plan is not None:
            return
        cause_start = self._pending_since
        self._pending_since = None
        self._plan_and_send(cause_start, full=self.plan is None)

    def _timers(self) -> None:
        """The speaker's retry, the first plan, settled withdrawals, the confirmation of held withdrawals, the
        periodic full resync."""
        now = self.clock()
        if self.plan is None and not gc.isenabled() and now - self._started_at >= self.settings.startup_gc_pause:
            log.warning(
                "no first plan %.0f s after the start: the cyclic garbage collector resumes", now - self._started_at
            )
            gc.enable()
        if self.reloader is not None:
            self.reloader.tick()  # ExaBGP may have dropped the last reload signal: it is repeated a few times
        if self.speaker.needs_retry:
            self.speaker.resync()  # ExaBGP refused a command: diff the last desired set again
        self.failstatic.mass_deletions()  # notes the end of a mass deletion (its resource_held gauge)
        self._settle()
        if self.plan is None:
            self._maybe_plan()
        elif self.failstatic.relisting or self._confirm_held():
            pass
        elif now - self._last_plan_at >= self.settings.resync_interval:
            self._plan_and_send(None, full=True)

    def _settle(self) -> None:
        """Deletion events paused long enough: the withdrawals they caused go out (the last plan handed again, with
        them withdrawn), timed from the first of their events. Not while a LIST is half delivered or an unplanned
        change waits: the next plan carries them out then."""
        if (
            self.plan is None
            or not self.failstatic.settle_due()
            or self._pending_since is not None
            or self.failstatic.relisting
            or not self.speaker.ready
        ):
            return
        decision = self.failstatic.settled_delta()  # = settled(the last plan's routes): only the settled change
        cause, self._settle_cause = self._settle_cause, None
        self._hand_delta(decision.changes, decision.held, cause)

    def _hand(self, desired: Mapping[str, tuple[Route, ...]], held: Mapping[str, int], cause: Cause | None) -> None:
        """Give the speaker the hold's routes per peer (none for peers being removed)."""
        self.observer.routes_held(held)
        self._last_desired = self.moves.without_leaving(desired)  # peers being removed keep getting nothing
        self.speaker.set_desired(self._last_desired, cause)

    def _hand_delta(
        self, changes: Mapping[str, Mapping[PrefixKey, Route | None]], held: Mapping[str, int], cause: Cause | None
    ) -> None:
        """`_hand` of a change: the hold's per-peer changes (none for peers being removed)."""
        self.observer.routes_held(held)
        if self.moves.moving is not None:  # peers being removed keep getting nothing
            changes = {peer: change for peer, change in changes.items() if not self.moves.leaving(peer)}
        self._last_desired = self.moves.without_leaving(self.failstatic.hold.handed())
        self.speaker.apply_delta(changes, cause)

    def _note_settling(self, cause: Cause | None) -> None:
        """The cause the settling withdrawals are timed from: the first plan's since nothing settled."""
        if self.failstatic.settle_deadline() is None:
            self._settle_cause = None
        elif self._settle_cause is None:
            self._settle_cause = cause

    def _confirm_held(self) -> bool:
        """Carry out what fail static asks while withdrawals are held (a confirming LIST of every resource, then a
        full replan), with a complete view and a ready speaker. True when it planned."""
        if not self.failstatic.holding or not self.store.synced or not self.speaker.ready:
            return False
        action = self.failstatic.confirmation()
        if action == "relist":
            self.sources.relist()
        elif action == "replan":
            self._plan_and_send(None, full=True)
            return True
        return False

    def _plan_and_send(self, received_at: float | None, *, full: bool) -> None:
        """Plan, guard, hold and hand to the speaker. The delta path (planner delta -> `Guard.check_delta` ->
        `FailStatic.withhold_delta` -> `Speaker.apply_delta`) costs the change; the whole path runs for a full plan
        (start-up, the periodic resync, a fail-static confirmation), a plan without a known delta (a (re)LIST
        completed, a live configuration change), a bulk plan for the hold (LIST events, a mass deletion), after a
        planner or guard failure, and when the guard declines the delta (duplicate prefixes, a peer at
        `safety.maxRoutes`, a new context: networks or nodes changed)."""
        started = time.monotonic()
        # the selected networks (or the nodes, whose addresses the import refuses as next hops) may have moved: a
        # CUDN/RA/Node event, a (re)list or a live configuration change
        networks_moved = (
            full
            or self.plan is None
            or self._changed is None
            or bool({CUDN.kind, ROUTE_ADVERTISEMENTS.kind, NODE.kind} & self._kinds)
        )
        changed, self._changed = (None if full else self._changed), set()
        whole = changed is None or self._whole_next or self.plan is None or self.failstatic.wants_whole
        state = self.store.state
        try:
            plan = self.incremental.plan(state, changed)
            delta = self.incremental.last_delta
            guarded: Guarded | GuardedDelta | None = None
            if not whole and delta is not None:
                guarded = self.guard.check_delta(delta, self.guard.context(plan))
            if guarded is None:
                guarded = desired_per_peer(self.guard, plan, state, self.speaker.held)
        except Exception:  # planner and guard are pure and tested not to raise; never let a bug take the sessions down
            log.exception("planner or guard failed; keeping the current advertisements")
            self._whole_next = True  # what the planner and the guard continue from may not be what was sent
            return
        self._whole_next = False
        planned_at = time.monotonic()
        cause = (
            Cause(received_at=received_at, planned_at=planned_at, kinds=tuple(sorted(self._kinds)))
            if received_at is not None
            else None
        )
        self._kinds.clear()
        first, previous = self.plan is None, self.plan
        self.plan = plan
        self._last_plan_at = self.clock()
        self._planned_mono = time.monotonic()
        if isinstance(guarded, GuardedDelta):
            change = self.failstatic.withhold_delta(guarded.changes)
            self._note_settling(cause)
            self._hand_delta(change.changes, change.held, cause)
        else:
            decision = self.failstatic.withhold(guarded.per_peer, full=full)
            self._note_settling(cause)
            self._hand(decision.desired, decision.held, cause)
        if self.importer is not None and networks_moved:
            self.importer.set_networks(import_networks(plan), self.clock(), node_addresses(plan))
        # Observation after the commands are written: metrics never delay an UPDATE. ExaBGP's echo of what it sent
        # is read by this same loop later, so the handover start is recorded before its end can arrive.
        for prefix, ready_wall in handovers_of(previous, plan, changed, self.config):
            self.observer.migration_handover_started(prefix, ready_wall)
        # guard refusals are counted and get Events exactly like the planner's
        self.observer.planned(guarded.outcome(plan), cause, planned_at - started, full)
        if first:
            # The initial list is most of what this process will ever hold: move it out of the cyclic collector's
            # sight, or every later collection walks the whole cluster (half of a 100k LIST's cost, measured). No
            # collection first: the start-up makes no cyclic garbage worth one (a collection here found 0 objects at
            # 10k VMs, in 0.15-0.34 s of the loop's time, measured), so the collector simply resumes.
            gc.freeze()
            gc.enable()


def _deleting(event: WatchEvent) -> bool:
    meta = event.obj.get("metadata") if isinstance(event.obj, dict) else None
    return isinstance(meta, dict) and bool(meta.get("deletionTimestamp"))


def _deletes(event: WatchEvent) -> bool:
    """The event deletes its object: DELETED, or the object carries a deletionTimestamp (being deleted)."""
    return event.type == "DELETED" or _deleting(event)


def _moved(event: WatchEvent) -> bool:
    """The object left a watch objects leave when they move (`Resource.moves`: per-node VMIs) without being deleted:
    a DELETED without a deletionTimestamp, sent when it stopped matching the node's selector (a migration). KubeVirt's
    finalizers give every deleted VMI a deletionTimestamp first, and so does a deleted CRD, so a real deletion is
    still seen as one."""
    return event.type == "DELETED" and event.resource.moves and not _deleting(event)


def _require(part: object, seam: type, role: str) -> None:
    """Refuse a part that lacks something its seam declares, instead of probing for it later."""
    if not isinstance(part, seam):
        declared = {n for c in seam.__mro__ if getattr(c, "_is_protocol", False) for n in vars(c) if n[0] != "_"}
        missing = sorted(n for n in declared if not hasattr(part, n))
        raise TypeError(f"the {role} {type(part).__name__} does not implement {seam.__name__}: lacks {missing}")
