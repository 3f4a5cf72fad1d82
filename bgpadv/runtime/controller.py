"""Wiring and lifecycle: sources → coalesce → planner → speaker, on one thread.

`bgpadv run` renders ExaBGP's configuration and supervises ExaBGP; ExaBGP starts `bgpadv controller` as its API
process, a shim that runs and restarts the controller (`bgpadv.runtime.lifecycle`). The controller is where everything
happens:

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
  still does not have them (bgpadv/hold.py). Announcements and next-hop changes in such a plan go out at once;
  a plan of ordinary watch events (a DELETE included) is applied whatever it withdraws.
"""

from __future__ import annotations

import gc
import logging
import os
import queue
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from bgpadv.config import Config, load_or_report
from bgpadv.core import resources
from bgpadv.core.model import Cause, Plan, Route, RouteKind
from bgpadv.core.resources import CUDN, ROUTE_ADVERTISEMENTS
from bgpadv.core.state import ClusterState
from bgpadv.importer.reconciler import Importer, selected_networks
from bgpadv.observe.observers import Fanout, NullObserver, Observer
from bgpadv.planner.incremental import IncrementalPlanner
from bgpadv.planner.networks import index_networks
from bgpadv.planner.vms import VMI_KIND, claim_vm
from bgpadv.runtime.reload import ConfigFileChanged, Reloader, classify
from bgpadv.runtime.seams import ControllerSources, ControllerSpeaker
from bgpadv.safety.guard import Guard, Guarded, PrefixKey
from bgpadv.safety.hold import WithdrawalHold
from bgpadv.sources.reflector import WatchEvent
from bgpadv.sources.store import Store

log = logging.getLogger("bgpadv.service")


@dataclass(frozen=True, slots=True)
class LoopSettings:
    """Timing of the main loop."""

    coalesce_window: float = 0.002
    """After a watch event, keep collecting events for this long before planning (seconds)."""
    heartbeat: float = 1.0
    """The loop wakes at least this often, to heartbeat the health check and run timers (seconds)."""
    resync_interval: float = 300.0
    """Replan from the full store this often even without events: level-based healing of any drift (seconds)."""


@dataclass(frozen=True, slots=True)
class _ExaBGPLine:
    line: str
    at: float


class _StdinClosed:
    pass


class _Drain:
    """Graceful shutdown asked for (SIGUSR1 from the API shim, see `bgpadv.runtime.lifecycle`)."""


def watched_resources(config: Config) -> tuple[resources.Resource, ...]:
    """The resources a configuration needs: RouteAdvertisements only when it follows them; in per-node mode the
    launcher pods of the instance's node only (`resources.for_node`)."""
    wanted = (
        r
        for r in resources.ALL
        if r is not resources.ROUTE_ADVERTISEMENTS or config.networks.follow_route_advertisements
    )
    node = config.node_name
    return tuple(resources.for_node(r, node) if node else r for r in wanted)


def desired_per_peer(
    guard: Guard,
    plan: Plan,
    state: ClusterState,
    held: Callable[[str], Collection[PrefixKey]] | None = None,
) -> Guarded:
    """What each peer gets: the plan's routes (already the configured node's view in per-node mode) through the
    last guard (`bgpadv.safety.guard`), which refuses what must never reach the fabric or what the peer cannot carry.
    `held(peer)`: the prefixes ExaBGP holds for the peer, so a peer over `safety.maxRoutes` keeps its last good set."""
    return guard.check(plan.routes, guard.context(state), held)


class Controller:
    """The API process: owns the store, runs the planner and drives the speaker from one loop.

    `run()` repeats `step()`; tests call `step()` themselves, with `clock` (monotonic seconds) driving the timers.
    The speaker, the sources and the observer must implement their seams (`bgpadv.runtime.seams`,
    `bgpadv.observe.observers`).
    """

    def __init__(
        self,
        config: Config,
        *,
        speaker: ControllerSpeaker,
        sources_factory: Callable[[Callable[[WatchEvent], None]], ControllerSources],
        observer: Observer | None = None,
        settings: LoopSettings | None = None,
        clock: Callable[[], float] = time.monotonic,
        importer: Importer | None = None,
        reloader: Reloader | None = None,
    ) -> None:
        self.config = config
        self.importer = importer  # egress import (bgpadv.importer), fed by the speaker's on_received hook
        self.reloader = reloader  # live configuration reload (bgpadv.runtime.reload); None: the file is not watched
        self.restart_requested = False  # the loop ended for a configuration change a new controller must apply
        self.settings = settings or LoopSettings()
        self.clock = clock
        self.observer: Observer = observer if observer is not None else NullObserver()
        _require(self.observer, Observer, "observer")
        _require(speaker, ControllerSpeaker, "speaker")
        self.store = Store(watched_resources(config))
        # equal to planner.plan(store.state, config), at the cost of what changed since the previous plan
        self.incremental = IncrementalPlanner(config)
        self.guard = Guard(config)  # every route passes it on its way to the speaker
        self._changed: set[tuple[str, object]] | None = None  # (field, key) applied since the last plan; None: all
        self.speaker = speaker
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.sources = sources_factory(self.queue.put)
        _require(self.sources, ControllerSources, "sources")
        self.plan: Plan | None = None
        self._stop = threading.Event()
        self._pending_since: float | None = None  # first unplanned watch event
        self._kinds: set[str] = set()
        self._last_plan_at = 0.0
        # fail static (bgpadv.safety.hold): a relist or full replan never withdraws most of a peer's routes at once
        self.hold = WithdrawalHold(config.safety.max_withdraw_fraction, config.safety.hold_seconds)
        self._bulk = False  # the unplanned changes include events of a (re)LIST
        self._relisting: set[resources.Resource] = set()  # a LIST's events arrived, its SYNCED not yet
        self._listed: dict[resources.Resource, float] = {}  # when each resource's latest completed LIST began
        self._relist_asked_at: float | None = None

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

    def stop(self) -> None:
        self._stop.set()
        self.queue.put(_StdinClosed())

    # -- the loop --------------------------------------------------------------------------------------------------
    def run(self) -> int:
        self.speaker.start()
        self.sources.start()
        try:
            while not self._stop.is_set():
                if not self.step(wait=self.settings.heartbeat):
                    break
        finally:
            self.sources.stop()
        return 0

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
            self._maybe_resync()
            return True
        if not self._handle(item) or not self._drain():
            return False
        self._maybe_plan()
        self._maybe_resync()  # timers run under a steady stream of events too
        if self.speaker.closed:
            log.info("ExaBGP is shutting down: exiting")
            return False
        return True

    def _drain(self) -> bool:
        """Take everything already queued; after a watch event, wait out the coalescing window."""
        deadline = None
        while True:
            if self._pending_since is not None and deadline is None:
                deadline = time.monotonic() + self.settings.coalesce_window
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
            return True
        if isinstance(item, _StdinClosed):
            log.info("ExaBGP closed our input: exiting")
            return False
        if isinstance(item, _Drain):
            self.speaker.drain()
            return True
        if isinstance(item, ConfigFileChanged):
            return self._reload()
        if isinstance(item, WatchEvent):
            self.observer.watch_event(item.resource.plural, item.type, item.received_at, item.object_wall_time)
            if item.type == "SYNCED":
                self.observer.initial_sync(item.resource.plural, item.received_at)
            self._note_list(item)
            if self.store.apply(item):
                if item.type == "SYNCED" or item.obj is None:
                    self._changed = None  # a (re)list completed: compare everything
                elif self._changed is not None:
                    self._changed.add((item.resource.field, item.resource.key(item.obj)))
                if self._pending_since is None:
                    self._pending_since = item.received_at
                self._kinds.add(item.resource.kind)
            return True
        log.warning("ignoring unexpected queue item %r", type(item).__name__)
        return True

    # -- live configuration reload (bgpadv.runtime.reload) -------------------------------------------------------------
    def _reload(self) -> bool:
        """Apply a changed configuration file: live, or by ending the loop for a new controller (after reloading
        ExaBGP when its own configuration changed). False ends the loop."""
        r = self.reloader
        if r is None:
            return True
        new = r.load()
        if new is None:
            return True
        kind = classify(self.config, new, r.render if r.render(self.config) is not None else None)
        if kind == "unchanged":
            return True
        if kind == "live":
            self.apply_live(new)
            r.counted("applied")
            r.applied_at()
            log.info("configuration change applied live", extra={"path": r.config_path})
            return True
        if kind == "exabgp" and not r.reload_exabgp(new):
            r.counted("refused")
            return True
        log.info(
            "configuration change applied by a new controller: exiting, the API shim starts one on the new file",
            extra={"change": kind, "path": r.config_path},
        )
        self.restart_requested = True
        return False

    def apply_live(self, new: Config) -> None:
        """Swap the configuration, planner, guard and (if its settings changed) the withdrawal hold, and make the next
        plan compare everything. A deliberate edit is not a bulk view change: what it withdraws goes at once."""
        old, self.config = self.config, new
        self.incremental = IncrementalPlanner(new)
        self.guard = Guard(new)
        if (old.safety.max_withdraw_fraction, old.safety.hold_seconds) != (
            new.safety.max_withdraw_fraction,
            new.safety.hold_seconds,
        ):
            self.hold = WithdrawalHold(new.safety.max_withdraw_fraction, new.safety.hold_seconds)
        self._changed = None
        if self._pending_since is None:
            self._pending_since = time.monotonic()

    def _maybe_plan(self) -> None:
        """Plan when something changed, or for the first time, once every resource is listed and the speaker knows
        what ExaBGP already advertises (never from a partial view)."""
        if not self.store.synced or not self.speaker.ready or self._relisting:
            return
        if self._pending_since is None and self.plan is not None:
            return
        cause_start = self._pending_since
        self._pending_since = None
        self._plan_and_send(cause_start, full=self.plan is None)

    def _maybe_resync(self) -> None:
        now = self.clock()
        if self.speaker.needs_retry:
            self.speaker.resync()  # ExaBGP refused a command: diff the last desired set again
        if self.plan is None:
            self._maybe_plan()
        elif self._relisting or self._confirm_held():
            pass
        elif now - self._last_plan_at >= self.settings.resync_interval:
            self._plan_and_send(None, full=True)

    def _plan_and_send(self, received_at: float | None, *, full: bool) -> None:
        started = time.monotonic()
        # the selected networks may have moved: a CUDN/RA event, a (re)list or a live configuration change
        networks_moved = (
            full
            or self.plan is None
            or self._changed is None
            or bool({CUDN.kind, ROUTE_ADVERTISEMENTS.kind} & self._kinds)
        )
        changed, self._changed = (None if full else self._changed), set()
        try:
            plan = self.incremental.plan(self.store.state, changed)
            guarded = desired_per_peer(self.guard, plan, self.store.state, self.speaker.held)
        except Exception:  # planner and guard are pure and tested not to raise; never let a bug take the sessions down
            log.exception("planner or guard failed; keeping the current advertisements")
            return
        bulk, origin = full or self._bulk, "relist" if self._bulk else "full replan"
        self._bulk = False
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
        self.speaker.set_desired(self._hold_withdrawals(guarded.per_peer, bulk, origin), cause)
        if self.importer is not None and networks_moved:
            advertised = index_networks(self.store.state, self.config).advertised
            self.importer.set_networks(selected_networks(advertised, self.store.state.cudns), self.clock())
        # Observation after the commands are written: metrics never delay an UPDATE. ExaBGP's echo of what it sent
        # is read by this same loop later, so the handover start is recorded before its end can arrive.
        self._note_migrations(previous, plan, changed)
        # guard refusals are counted and get Events exactly like the planner's
        self.observer.planned(guarded.observed(plan), cause, planned_at - started, full)
        if first:
            # The initial list is most of what this process will ever hold: move it out of the cyclic collector's
            # sight, or every later collection walks the whole cluster (half of a 100k LIST's cost, measured).
            gc.collect()
            gc.freeze()

    # -- fail static: held withdrawals (bgpadv.safety.hold) ------------------------------------------------------------
    def _note_list(self, event: WatchEvent) -> None:
        """Follow (re)LISTs: a plan that includes a LIST's events is bulk, none is made while a LIST is half
        delivered, and `_listed` keeps when each resource's latest completed LIST began."""
        if event.type == "SYNCED":
            self._relisting.discard(event.resource)
            self._listed[event.resource] = event.listed_at if event.listed_at is not None else event.received_at
        elif event.from_list:
            self._relisting.add(event.resource)
            self._bulk = True

    def _listed_since(self) -> float | None:
        """When the oldest of the latest LISTs of every watched resource began; None if one never completed."""
        times = [self._listed.get(r) for r in watched_resources(self.config)]
        return None if None in times else min(t for t in times if t is not None)

    def _hold_withdrawals(
        self, desired: dict[str, tuple[Route, ...]], bulk: bool, origin: str
    ) -> dict[str, tuple[Route, ...]]:
        """The desired set per peer with the withdrawals the hold keeps back added again (see bgpadv.safety.hold)."""
        decision = self.hold.apply(desired, bulk=bulk, listed_since=self._listed_since(), origin=origin)
        self.observer.routes_held(decision.held)
        return decision.desired

    def _confirm_held(self) -> bool:
        """While withdrawals are held: once their deadline passed, ask every reflector for a fresh LIST; when a LIST
        of every resource begun after the deadline has completed, replan in full (it withdraws what it still
        withdraws). True when it planned."""
        hold = self.hold
        if not hold.active or not self.store.synced or not self.speaker.ready:
            return False
        if hold.confirmable(self._listed_since()):
            self._plan_and_send(None, full=True)
            return True
        deadline, now, asked = hold.deadline(), hold.clock(), self._relist_asked_at
        if hold.relist_due() and (
            asked is None or (deadline is not None and asked < deadline) or now - asked >= hold.hold_seconds
        ):
            log.warning("held withdrawals are past their deadline: asking every resource for a confirming LIST")
            self.sources.relist()
            self._relist_asked_at = now
        return False

    def _note_migrations(self, old: Plan | None, new: Plan, changed: set[tuple[str, object]] | None) -> None:
        """Tell the observer when a host route moved because a live migration's target became ready.

        Only VMIs changed in this batch that carry a target-ready time are candidates, so a plan without such a VMI
        costs nothing here; a full plan (start-up, resync, relist) attributes no handover.
        """
        started = self.observer.migration_handover_started
        if old is None or not changed:
            return
        vmis = self.store.state.vmis
        ready = {key: wall for field, key in changed if field == "vmis" and (wall := target_ready_wall(vmis.get(key)))}
        if not ready:
            return
        claims = self.store.state.ipam_claims
        # keyed by integers: hashing 100k netaddr objects costs more than this whole comparison
        before = {(r.prefix.version, r.prefix.value): r.node for r in old.routes if r.kind is RouteKind.HOST}
        for route in new.routes:
            if route.kind is not RouteKind.HOST or route.node is None:
                continue
            if before.get((route.prefix.version, route.prefix.value), route.node) == route.node:
                continue
            src = route.source
            if src.kind == VMI_KIND:  # an IPAM-disabled network: the route's source is the VMI itself
                vm: str | None = src.name
            else:
                claim = claims.get((src.namespace, src.name))
                meta = claim.get("metadata") if isinstance(claim, dict) else None
                vm = claim_vm(meta)[0] if isinstance(meta, dict) else None
            wall = ready.get((src.namespace, vm))
            if wall is not None:
                started(str(route.prefix), wall)


def _require(part: object, seam: type, role: str) -> None:
    """Refuse a part that lacks something its seam declares, instead of probing for it later."""
    if not isinstance(part, seam):
        declared = {n for c in seam.__mro__ if getattr(c, "_is_protocol", False) for n in vars(c) if n[0] != "_"}
        missing = sorted(n for n in declared if not hasattr(part, n))
        raise TypeError(f"the {role} {type(part).__name__} does not implement {seam.__name__}: lacks {missing}")


def target_ready_wall(vmi: dict | None) -> float | None:
    """The wall time a VMI's live-migration target domain became ready (migrationState), if it says so."""
    from datetime import datetime

    status = (vmi or {}).get("status")
    state = status.get("migrationState") if isinstance(status, dict) else None
    stamp = state.get("targetNodeDomainReadyTimestamp") if isinstance(state, dict) else None
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


# -- process entry points ------------------------------------------------------------------------------------------


def run(config_path: str, runtime_dir: str | None = None) -> int:
    """`bgpadv run`: render ExaBGP's configuration, then run ExaBGP under the supervisor of `bgpadv.runtime.lifecycle`
    (graceful shutdown on SIGTERM; ExaBGP's API process is the shim that restarts the controller)."""
    from bgpadv.speaker.exabgp_config import (
        controller_argv,
        exabgp_argv,
        exabgp_environment,
        render_exabgp_config,
        write_private,
    )

    config = load_or_report(config_path)
    if config is None:
        return 2
    rdir = Path(runtime_dir or tempfile.mkdtemp(prefix="bgpadv-"))
    rdir.mkdir(parents=True, exist_ok=True)
    api_argv = controller_argv(config_path)  # the path as given: a ConfigMap update must not make it vanish
    conf = rdir / "exabgp.conf"
    write_private(conf, render_exabgp_config(config, api_argv))  # 0600: it holds the MD5 passwords
    env = {**os.environ, **exabgp_environment(config, str(rdir))}
    argv = exabgp_argv(str(conf))
    from bgpadv.observe.logs import setup_logging
    from bgpadv.runtime.lifecycle import supervise

    setup_logging(os.environ.get("BGPADV_LOG_LEVEL", "INFO"))
    return supervise(argv, env, rdir, config.safety.drain_seconds)


def controller_main(config_path: str) -> int:
    """`bgpadv controller --no-shim`: the controller. stdout is the command pipe to ExaBGP (through the shim), so
    nothing else may write to it."""
    from bgpadv.observe.events import EventRecorder
    from bgpadv.observe.health import HealthServer
    from bgpadv.observe.logs import setup_logging
    from bgpadv.observe.metrics_observer import MetricsObserver
    from bgpadv.runtime import lifecycle
    from bgpadv.sources.client import make_api_client
    from bgpadv.sources.reflector import ReflectorSettings, Sources
    from bgpadv.speaker.session import Speaker

    commands = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # a stray print() must never reach ExaBGP as a command
    setup_logging(os.environ.get("BGPADV_LOG_LEVEL", "INFO"))
    from bgpadv.runtime.reload import ConfigFileWatch, fingerprint
    from bgpadv.speaker.exabgp_config import controller_argv

    metrics = MetricsObserver()
    runtime = os.environ.get(lifecycle.RUNTIME_DIR_ENV)
    reloader = Reloader(
        config_path,
        controller_argv(config_path),
        Path(runtime) if runtime else None,
        counted=metrics.config_reload,
        applied_at=metrics.config_applied,
    )
    seen = fingerprint(config_path)  # before reading it: a change made while starting is seen by the watch
    config = reloader.start_config()  # the file, or the last good one while the file is invalid (bgpadv.runtime.reload)
    if config is None:
        log.error("invalid configuration %s and no earlier valid one: cannot start", config_path)
        return 2
    metrics.set_peers(p.name for p in config.peers)
    try:
        api_client = make_api_client(config.kubernetes)
    except Exception as e:  # no kubeconfig, no in-cluster environment: a configuration problem, said plainly
        log.error("cannot configure the Kubernetes client: %s", e)
        return 2
    events = EventRecorder(api_client, metrics=metrics.metrics)
    observer = Fanout(metrics, events)

    def write(line: str) -> None:
        commands.write(line + "\n")
        commands.flush()

    speaker = Speaker.from_config(config, write, observer)
    importer = None
    if config.import_routes.enabled:
        from bgpadv.importer.netlink import Netlink

        importer = Importer(config, Netlink(), metrics.metrics, time.monotonic())
        speaker.on_received = importer.handle
        metrics.import_status = importer.snapshot

    def sources_factory(emit: Callable[[WatchEvent], None]) -> Sources:
        settings = ReflectorSettings(hold_seconds=config.safety.hold_seconds)
        return Sources(api_client, watched_resources(config), emit, settings, observer)

    metrics.config_applied()
    controller = Controller(
        config,
        speaker=speaker,
        sources_factory=sources_factory,
        observer=observer,
        importer=importer,
        reloader=reloader,
    )
    watch = ConfigFileWatch(config_path, controller.queue.put, seen=seen).start()
    # the API shim forwards the supervisor's drain request as SIGUSR1 (ignored until here); a request made before
    # the handler existed is in the environment or the runtime directory's drain file (bgpadv.runtime.lifecycle)
    signal.signal(signal.SIGUSR1, lambda _signum, _frame: controller.request_drain())
    if lifecycle.drain_requested():
        controller.request_drain()
    health = HealthServer(config.metrics.host_port, metrics)
    health.start()
    events.start()
    controller.feed_exabgp(sys.stdin)
    try:
        return controller.run()
    finally:
        watch.stop()
        events.stop()
        health.stop()
