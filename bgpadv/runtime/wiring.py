"""The wiring of the real processes: `bgpadv run` (ExaBGP's configuration, then the supervisor) and
`bgpadv controller --no-shim` (the controller with its sources, speaker, observers, HTTP server, configuration watch
and egress importer).

`bgpadv run` imports this module, so what only the controller needs is imported inside `controller_main`: the
supervisor (the pod's PID 1) never loads the Kubernetes client, prometheus_client or pyroute2.
"""

from __future__ import annotations

import logging
import os
import queue
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bgpadv.config import Config, load_or_report
from bgpadv.core.printable import write_line
from bgpadv.core.runfiles import ENTRY_POINT, controller_argv
from bgpadv.core.views import Node
from bgpadv.observe.logs import setup_logging
from bgpadv.observe.observers import Fanout
from bgpadv.runtime.lifecycle import (
    EXABGP_CONF,
    RUNTIME_DIR_ENV,
    clean_runtime_dir,
    drain_requested,
    runtime_directory,
)
from bgpadv.runtime.reload import ConfigFileWatch, Reloader, fingerprint
from bgpadv.runtime.supervisor import supervise
from bgpadv.speaker.exabgp_config import (
    exabgp_argv,
    exabgp_environment,
    render_exabgp_config,
    resolve_runtime,
    write_private,
)
from bgpadv.speaker.session import Speaker

if TYPE_CHECKING:
    from bgpadv.importer.reconciler import Importer
    from bgpadv.observe.events import EventRecorder
    from bgpadv.observe.metrics_observer import MetricsObserver
    from bgpadv.runtime.controller import Controller
    from bgpadv.runtime.handover import EarlyController
    from bgpadv.runtime.unnumbered import Advertising, LinkRetry
    from bgpadv.sources.sessionstate import SessionStateWriter
    from bgpadv.sources.watches import Sources
    from bgpadv.speaker.bfd import BfdControl

log = logging.getLogger(__name__)

ApiClient = Any
"""The Kubernetes client's `ApiClient` (`bgpadv.sources.client.make_api_client`): only the sources and the Event
writer import the client."""

PER_NODE_RELIST_SPREAD = 5.0
"""Seconds over which a per-node instance spreads a relist forced by 410 Gone (`ReflectorSettings.relist_spread`):
a DaemonSet's instances lose their watches together when the apiserver restarts, and would otherwise LIST at once."""


def run(
    config_path: str,
    runtime_dir: str | Path | None = None,
    *,
    owned: bool | None = None,
    early: EarlyController | None = None,
    entry_point: Sequence[str] = ENTRY_POINT,
) -> int:
    """`bgpadv run`: render ExaBGP's configuration, then run ExaBGP under the supervisor (`bgpadv.runtime.supervisor`:
    graceful shutdown on SIGTERM; ExaBGP's API process is the shim that restarts the controller).

    Without `runtime_dir` the runtime files go to a private temporary directory (0700) that is removed when the run
    ends; a configured one keeps only the last good configuration (`lifecycle.clean_runtime_dir`). `owned`: whether
    `runtime_dir` is such a private directory, made by the caller. `early`: the controller the caller started before
    this module was even imported (`bgpadv.runtime.handover`, from `bgpadv run`): the supervisor hands it to the
    shim, and it is stopped here whenever ExaBGP is not run. `entry_point`: how ExaBGP's API process runs bgpadv
    (`runfiles.ENTRY_POINT`)."""
    if runtime_dir is None:
        rdir, owned = runtime_directory(None)
    else:
        rdir, owned = Path(str(runtime_dir)), bool(owned)
    try:
        config = load_or_report(config_path)
        if config is None:
            return 2
        rdir.mkdir(parents=True, exist_ok=True)
        # the path as given: a ConfigMap update must not make it vanish
        api_argv = controller_argv(config_path, entry_point=entry_point)
        conf = rdir / EXABGP_CONF
        # the peers without nodeSelector: the controller adds those its node's labels select (bgpadv.runtime.peering)
        write_private(conf, render_exabgp_config(config.serving(None), api_argv))  # 0600: it holds the MD5 passwords
        env = {**os.environ, **exabgp_environment(config, str(rdir))}
        try:
            runtime = resolve_runtime(config.exabgp.runtime)
        except ValueError as e:
            write_line(sys.stderr, f"bgpadv: {e}")
            return 2
        argv = exabgp_argv(str(conf), runtime=runtime)
        setup_logging(os.environ.get("BGPADV_LOG_LEVEL", "INFO"))
        return supervise(argv, env, rdir, config.safety.drain_seconds, early=early)
    finally:
        if early is not None:
            early.stop()
        clean_runtime_dir(rdir, owned=owned)


def session_info(config: Config, negotiated: Mapping[str, bool] | None = None) -> dict[str, dict[str, object]]:
    """What the configuration says of each served peer's session, for /status and the BGPSessionState objects; an
    interface peer's with what its session negotiated (`negotiated`: peer → Extended Next Hop for IPv4 unicast, from
    the speaker; None when not known)."""
    node = config.speaker_node or config.node_name
    return {
        p.name: {
            "asn": p.asn,
            "address": str(p.address),
            "localASN": config.local_asn,
            "node": node,
            **(
                {"interface": p.interface, "extendedNextHop": (negotiated or {}).get(p.name)}  # unnumbered
                if p.interface is not None
                else {}
            ),
        }
        for p in config.peers
    }


def controller_main(
    config_path: str, *, hold_seconds: float | None = None, entry_point: Sequence[str] = ENTRY_POINT
) -> int:
    """`bgpadv controller --no-shim`: the controller. stdout is the command pipe to ExaBGP (through the shim), so
    nothing else may write to it. `hold_seconds`: see `Reloader.hold_seconds` (the shipped command passes none);
    `entry_point`: how the API shim in ExaBGP's rewritten configuration runs bgpadv (`runfiles.ENTRY_POINT`).

    Every part is built with what it calls: nothing is attached to a part after it is built. Two construction
    cycles are broken by an object created before both sides: the loop's queue (`inbox`: the sources and the BFD
    client put into it, the controller takes from it) and the status parts (`LateStatusParts`: the observer every
    part reports to shows the controller's, the speaker's and the import's state in /status, bound once they exist).
    """
    # Here, not at the top: `bgpadv run` imports this module and must not load the Kubernetes client (the sources,
    # the Event writer and the controller loop through them), prometheus_client (metrics, the HTTP server) or
    # pyroute2 (the importer).
    # What the first LIST needs comes first (it starts as soon as the client is configured, below); the rest loads
    # while it runs.
    from bgpadv.observe.metrics_observer import LateStatusParts, MetricsObserver
    from bgpadv.sources.client import make_api_client

    commands = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # a stray print() must never reach ExaBGP as a command
    setup_logging(os.environ.get("BGPADV_LOG_LEVEL", "INFO"))

    status_parts = LateStatusParts()  # bound below, once the controller, the speaker and the import exist
    metrics = MetricsObserver(status_parts=status_parts)
    runtime = _runtime_dir()
    reloader = Reloader(
        config_path,
        controller_argv(config_path, entry_point=entry_point),
        runtime,
        counted=metrics.config_reload,
        applied_at=metrics.config_applied,
        hold_seconds=hold_seconds,
    )
    seen = fingerprint(config_path)  # before reading it: a change made while starting is seen by the watch
    config = reloader.start_config()  # the file, or the last good one while the file is invalid (bgpadv.runtime.reload)
    if config is None:
        log.error("invalid configuration %s and no earlier valid one: cannot start", config_path)
        return 2
    try:
        api_client = make_api_client(config.kubernetes)
    except Exception as e:  # no kubeconfig, no in-cluster environment: a configuration problem, said plainly
        log.error("cannot configure the Kubernetes client: %s", e)
        return 2
    inbox: queue.SimpleQueue = queue.SimpleQueue()  # the controller's queue, filled before the controller exists
    sources = _start_sources(config, api_client, metrics, inbox)
    from bgpadv.observe.events import EventRecorder
    from bgpadv.observe.metrics_observer import StatusParts
    from bgpadv.runtime.controller import Controller
    from bgpadv.runtime.peering import effective, kernel_interface_addresses, placement_status
    from bgpadv.sources.nodes import read_node

    configured = config
    node = read_node(api_client, config.speaker_node) if config.speaker_node else None
    if node is None and config.peer_selection:
        log.warning(
            "this instance's node is unknown: serving the peers without nodeSelector only",
            extra={"node": config.speaker_node},
        )

    from bgpadv.runtime.unnumbered import Advertising, KernelLinks, LinkRetry, raise_net_raw, waiting_gauge

    advertising = Advertising(metrics.metrics)
    # interface peers whose link failed are tried again off the loop, found ones handed to it through its queue
    links = LinkRetry(KernelLinks(), inbox.put, on_waiting=waiting_gauge(metrics.metrics))

    def placement(c: Config, n: Node | None) -> Config:
        raise_net_raw(c, log)  # interface peers (the file's, live-reloaded too): their RS and RAs need it
        placed = links.place(effective(c, n, kernel_interface_addresses))  # unnumbered
        advertising.serve(placed)  # unnumbered: RAs on the interface peers' links
        return placed

    config = placement(configured, node)
    _serve_placed_peers(reloader, config, runtime)
    log.info("peers served", extra={"node": config.speaker_node, "peers": [p.name for p in config.peers]})
    metrics.set_peers(p.name for p in config.peers)
    background: list[EventRecorder | SessionStateWriter] = [EventRecorder(api_client, metrics=metrics.metrics)]
    background += _session_state_writer(config, api_client, metrics)
    observer = Fanout(metrics, *background)  # threads started and stopped with the loop (`background`)
    egress = _egress_import(config, api_client, metrics)
    if egress is not None:
        background.append(egress.refusal_events)

    def write(line: str) -> None:
        commands.write(line + "\n")
        commands.flush()

    importer = egress.importer if egress is not None else None
    speaker = Speaker.from_config(
        config, write, observer, on_received=importer.handle if importer is not None else None
    )
    metrics.config_applied()
    bfd = _bfd_client(config, runtime, metrics, inbox)
    controller = Controller(
        config,
        speaker=speaker,
        sources=sources,  # started above, emitting into `inbox`, the controller's queue
        events=inbox,
        observer=observer,
        importer=importer,
        reloader=reloader,
        configured=configured,
        placement=placement,
        node=node,
        bfd=bfd,
        on_peers=_peers_changed(metrics, runtime if bfd is not None else None),
    )
    status_parts.bind(
        StatusParts(
            imported=importer.snapshot if importer is not None else None,
            placement=lambda: placement_status(controller.configured, controller.config, links.status()),
            bfd=(lambda: bfd_status(bfd)) if bfd is not None else None,
            sent=speaker.sent.report,  # /sent?prefix=P: when each peer was last sent P
            sessions=lambda: session_info(controller.config, speaker.extended_next_hop),
        )
    )
    watch = ConfigFileWatch(config_path, controller.queue.put, seen=seen)
    return _serve(controller, metrics, watch, background, bfd, (advertising, links))


def _start_sources(
    config: Config, api_client: ApiClient, metrics: MetricsObserver, inbox: queue.SimpleQueue
) -> Sources:
    """Start the sources, emitting into `inbox` (the controller's queue). The first LIST starts now, on the
    reflectors' threads, while the rest of the process starts (the node's addresses through netlink, the peers'
    placement, the health server, BFD): its events wait in the queue, and nothing is planned before every resource
    is listed and ExaBGP has told what it advertises. What is watched is the file's configuration (the placement
    narrows the peers only)."""
    from bgpadv.sources.reflector import ReflectorSettings
    from bgpadv.sources.store import watched_resources
    from bgpadv.sources.watches import Sources

    # per-node mode: one instance per node lost its watches together when the apiserver restarted; spread their
    # relists (cluster mode's one or two replicas list at once)
    spread = PER_NODE_RELIST_SPREAD if config.node_name else 0.0
    settings = ReflectorSettings(hold_seconds=config.safety.hold_seconds, relist_spread=spread)
    sources = Sources(api_client, watched_resources(config), inbox.put, settings, metrics)
    sources.start()
    return sources


def _serve(
    controller: Controller,
    metrics: MetricsObserver,
    watch: ConfigFileWatch,
    background: Sequence[EventRecorder | SessionStateWriter],
    bfd: BfdControl | None,
    unnumbered: tuple[Advertising, LinkRetry],
) -> int:
    """Run the controller's loop with what runs beside it (the BFD client, the configuration file's `watch`, the
    drain signal, the health server, the `background` threads, the router advertisements of interface peers and the
    retries of their links), all stopped when the loop ends."""
    from bgpadv.observe.health import HealthServer

    if bfd is not None:
        bfd.start()  # its state changes go to the loop's queue
    watch.start()
    # the API shim forwards the supervisor's drain request as SIGUSR1 (ignored until here); a request made before
    # the handler existed is in the environment or the runtime directory's drain file (bgpadv.runtime.lifecycle)
    signal.signal(signal.SIGUSR1, lambda _signum, _frame: controller.request_drain())
    if drain_requested():
        controller.request_drain()
    health = HealthServer(controller.config.metrics.host_port, metrics)
    health.start()
    for part in background:
        part.start()
    controller.feed_exabgp(sys.stdin)
    advertising, links = unnumbered
    links.start()
    try:
        return controller.run()
    finally:
        if bfd is not None:
            bfd.stop()
        advertising.stop()  # unnumbered
        links.stop()
        watch.stop()
        for part in background:
            part.stop()
        health.stop()


def _runtime_dir() -> Path | None:
    """The runtime directory `bgpadv run` shares with this process (None: `bgpadv controller --no-shim` alone)."""
    runtime = os.environ.get(RUNTIME_DIR_ENV)
    return Path(runtime) if runtime else None


def _serve_placed_peers(reloader: Reloader, config: Config, runtime: Path | None) -> None:
    """`bgpadv run` started ExaBGP with the peers without nodeSelector only: when this node's placement serves
    others, ExaBGP adds (or removes) just those neighbors."""
    from bgpadv.runtime.handover import wait_for_exabgp

    text = reloader.render(config)
    if text is None or runtime is None:
        return
    wait_for_exabgp()  # started before ExaBGP (bgpadv.runtime.handover): the file is ExaBGP's once it runs
    try:
        running = (runtime / EXABGP_CONF).read_text()
    except OSError:
        running = None
    if running != text:
        reloader.reload_exabgp(config)


def _session_state_writer(config: Config, api_client: ApiClient, metrics: MetricsObserver) -> list[SessionStateWriter]:
    """One BGPSessionState per served peer when enabled (`bgpadv.sources.sessionstate`)."""
    from bgpadv.sources.sessionstate import Identity, SessionStateWriter

    if not config.session_state.enabled:
        return []
    writer = SessionStateWriter(
        api_client,
        Identity.from_environment(config.session_state.namespace),
        metrics.status,
        interval=config.session_state.interval_seconds,
        metrics=metrics.metrics,
    )
    return [writer]


@dataclass(frozen=True, slots=True)
class _EgressImport:
    importer: Importer
    refusal_events: EventRecorder
    """The import guard's refusals get Events on the CUDN, as the plan's do, through their own recorder (each holds
    the complete current set of its refusals): started and stopped with the loop."""


def _egress_import(config: Config, api_client: ApiClient, metrics: MetricsObserver) -> _EgressImport | None:
    """The egress import when `importRoutes` is enabled (None otherwise), with its refusals' Event writer."""
    if not config.import_routes.enabled:
        return None
    from bgpadv.importer.capability import raise_net_admin
    from bgpadv.importer.netlink import Netlink  # pyroute2: ~0.2 s CPU, only when importing routes
    from bgpadv.importer.reconciler import Importer  # (it imports the netlink module too)
    from bgpadv.observe.events import EventRecorder
    from bgpadv.runtime.unnumbered import next_hop_links

    raise_net_admin(log)  # the netlink writes need it (reads do not: without it the import still reports)
    events = EventRecorder(api_client, metrics=metrics.metrics, verb="not importing")
    links = next_hop_links(config)  # unnumbered: the interface of each peer's link-local next hop
    importer = Importer(config, Netlink(links=links), metrics.metrics, time.monotonic(), on_refusals=events.record)
    return _EgressImport(importer, events)


def _bfd_client(
    config: Config, runtime: Path | None, metrics: MetricsObserver, inbox: queue.SimpleQueue
) -> BfdControl | None:
    """The BFD client of the peers with `bfd.enabled` (bgpadv.speaker.bfd), not started: asks the supervisor for
    bfdd (the `bfdd.wanted` file) while some served peer wants BFD, and keeps its sessions; its state changes go to
    the controller's loop (`inbox`, `BfdChanged`) and the gauges, and /status reads its states (`bfd_status`); the
    interface peers' sessions are kept on their links by host routes (`bgpadv.speaker.bfd_routes`). None without a
    runtime directory (`bgpadv controller --no-shim` alone: no supervisor, no bfdd)."""
    from bgpadv.core.runfiles import BFDD_FAILED
    from bgpadv.runtime.controller import BfdChanged
    from bgpadv.speaker.bfd import BFDD_SOCKET, BfdControl, BfdPeerState, BfdStates, bfdd_dir, sessions_of
    from bgpadv.speaker.bfd_routes import LinkRoutes, raise_net_admin

    sessions = sessions_of(config.peers)
    if runtime is None:
        if sessions:
            log.error("BFD is enabled but there is no runtime directory (no supervisor runs bfdd): no BFD")
        return None
    _want_bfdd(runtime, config, metrics)

    def changed(peer: str, st: BfdPeerState) -> None:
        inbox.put(BfdChanged(peer, st.failed, st.state, st.diagnostic))

    control = BfdControl(
        bfdd_dir(runtime) / BFDD_SOCKET,
        BfdStates(),
        changed,
        on_metrics=metrics.bfd_state,
        failed_file=runtime / BFDD_FAILED,
        on_bfdd_failed=metrics.bfdd_failed,
        host_routes=LinkRoutes(net_admin=raise_net_admin),
        net_admin=raise_net_admin,
    )
    control.set_desired(sessions)
    return control


def bfd_status(bfd: BfdControl) -> dict[str, object]:
    """/status's `bfd`: each peer's BFD state."""
    return {peer: st.as_json() for peer, st in bfd.states.snapshot().items()}


def _peers_changed(metrics: MetricsObserver, bfd_runtime: Path | None) -> Callable[[Config], None]:
    """What follows a live peer move (node labels or the file): the per-peer gauges, and bfdd wanted or not (when
    BFD is wired, `bfd_runtime`)."""

    def changed(running: Config) -> None:
        metrics.set_peers(p.name for p in running.peers)
        if bfd_runtime is not None:
            _want_bfdd(bfd_runtime, running, metrics)

    return changed


def _want_bfdd(runtime: Path, config: Config, metrics: MetricsObserver) -> None:
    """Ask the supervisor for bfdd (the `bfdd.wanted` file) while some served peer wants BFD; the BFD gauges' peers."""
    from bgpadv.core.runfiles import BFD_WANTED
    from bgpadv.speaker.bfd import sessions_of

    sessions = sessions_of(config.peers)
    wanted = runtime / BFD_WANTED
    if sessions:
        wanted.touch()
    else:
        wanted.unlink(missing_ok=True)
    metrics.bfd_peers(s.peer for s in sessions.values())
