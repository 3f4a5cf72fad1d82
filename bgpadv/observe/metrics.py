"""Every bgpadv metric, defined in one module — definitions only.

`Metrics` holds the Prometheus objects on a dedicated `CollectorRegistry` (plus the process, platform and GC
collectors), named by Prometheus conventions with the `bgpadv_` prefix. What moves them:
`bgpadv.observe.metrics_observer`
(`MetricsObserver`, the controller's observer), which hands convergence matching to `bgpadv.observe.convergence` and the
peers, routes and readiness behind `/status` to `bgpadv.observe.readiness`. The metrics that need a word:

- `bgpadv_convergence_seconds{stage, op, kind}`: for every route change that has a cause (a watch event), the time
  from the event reaching bgpadv to each stage of its life: `planned` (the planner returned), `written` (the command
  line went to ExaBGP), `acked` (ExaBGP answered `done`) and `sent` (ExaBGP's `send { update; }` echo named the
  prefix: the UPDATE left for the peer). Changes waiting for their ack or their echo are forgotten after
  `pending_ttl` seconds and counted in `bgpadv_convergence_unmatched_total{stage}`.
- `bgpadv_routes_held{peer}`: withdrawals held back because a relist or full replan would have withdrawn too many
  of the peer's routes at once (fail static, bgpadv/hold.py); `bgpadv_resource_held{resource}`: 1 while a resource
  that was readable answers 404/403 and its objects are kept pending confirmation.
- `bgpadv_migration_handover_seconds`: from a migration target's ready time (a Kubernetes timestamp, so only as
  precise as the object records it) to the host route leaving with its new next hop.
- `bgpadv_config_stale`: 1 while the configuration file's last change was refused and an older configuration runs
  (the BgpadvConfigStale alert); 0 once a change is applied or the file is back to the configuration in force.

No `_created` series: `prometheus_client.disable_created_metrics()` (process-wide) when the registry is built. They
double the series of every counter and histogram, and nothing here reads them (`process_start_time_seconds` says
when the process started).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

from bgpadv import __version__

# 1 ms ... 30 s: fine steps where a single change lives (a few ms), coarse ones for bulk loads and outages.
CONVERGENCE_BUCKETS: tuple[float, ...] = (
    0.001,
    0.0025,
    0.005,
    0.0075,
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)
# Kubernetes timestamps mostly have one-second resolution: lag and handover need the coarse end too.
LAG_BUCKETS: tuple[float, ...] = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)

STAGES: tuple[str, ...] = ("planned", "written", "acked", "sent")
OPS: tuple[str, ...] = ("announce", "withdraw")


class Metrics:
    """The Prometheus objects, registered on their own registry (`registry`)."""

    def __init__(self, registry: CollectorRegistry | None = None, *, process_collectors: bool = True):
        disable_created_metrics()
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        if process_collectors:
            ProcessCollector(registry=self.registry)
            PlatformCollector(registry=self.registry)
            GCCollector(registry=self.registry)
        r = self.registry
        self.convergence = Histogram(
            "bgpadv_convergence_seconds",
            "Time from a watch event reaching bgpadv to each stage of the route change it caused "
            "(planned, written to ExaBGP, acked by ExaBGP, UPDATE sent to the peer).",
            ["stage", "op", "kind"],
            buckets=CONVERGENCE_BUCKETS,
            registry=r,
        )
        self.convergence_unmatched = Counter(
            "bgpadv_convergence_unmatched_total",
            "Route changes whose ack or UPDATE echo was not seen within the pending window (no sample taken).",
            ["stage"],
            registry=r,
        )
        self.object_lag = Histogram(
            "bgpadv_object_lag_seconds",
            "How old a change already was when its watch event reached bgpadv (from the object's newest timestamp).",
            ["resource"],
            buckets=LAG_BUCKETS,
            registry=r,
        )
        self.migration_handover = Histogram(
            "bgpadv_migration_handover_seconds",
            "From a migration target's ready timestamp to the host route leaving with the new next hop.",
            buckets=LAG_BUCKETS,
            registry=r,
        )
        self.routes_advertised = Gauge(
            "bgpadv_routes_advertised",
            "Routes ExaBGP holds for the peer (announcements it acknowledged, less acknowledged withdrawals), by "
            "network, address family and kind.",
            ["peer", "network", "family", "kind"],
            registry=r,
        )
        self.routes_rejected = Counter(
            "bgpadv_routes_rejected_total",
            "Refusals by reason, each distinct (object, value, reason) counted once while it persists.",
            ["reason"],
            registry=r,
        )
        self.peer_up = Gauge(
            "bgpadv_peer_up",
            "1 while the BGP session with the peer is established and its BFD session (peers[].bfd), if any, has "
            "not failed; 0 otherwise.",
            ["peer"],
            registry=r,
        )
        self.bfd_up = Gauge(
            "bgpadv_bfd_session_up",
            "1 while the peer's BFD session (peers[].bfd, FRR's bfdd) is up; 0 otherwise (down, init, bfdd not "
            "reachable). Only peers with BFD enabled have a series.",
            ["peer"],
            registry=r,
        )
        self.bfdd_cannot_start = Gauge(
            "bgpadv_bfdd_cannot_start",
            "1 once the supervisor gave up starting FRR's bfdd (e.g. the pod lacks the capabilities bfdd needs: "
            "see docs/bfd.md); every BFD session then stays down. 0 otherwise.",
            registry=r,
        )
        self.router_adverts_sent = Counter(
            "bgpadv_router_adverts_sent_total",
            "IPv6 Router Advertisements sent on an interface peer's link (so the ToR learns the node's link-local "
            "address).",
            ["interface"],
            registry=r,
        )
        self.router_advert_errors = Counter(
            "bgpadv_router_advert_errors_total",
            "Times a Router Advertisement could not be sent on an interface peer's link.",
            ["interface"],
            registry=r,
        )
        self.interface_peer_waiting = Gauge(
            "bgpadv_interface_peer_waiting",
            "1 while an interface peer (peers[].interface) is not served because its link failed (no such interface, "
            "no link-local address, no router answering): it is tried again every 2 s, doubling to 30 s. No series "
            "otherwise.",
            ["interface"],
            registry=r,
        )
        self.peer_transitions = Counter(
            "bgpadv_peer_transitions_total", "Changes of a peer's session between up and not up.", ["peer"], registry=r
        )
        self.peer_routes = Gauge(
            "bgpadv_peer_routes_advertised",
            "Routes ExaBGP holds for the peer, as of the last time everything desired was acknowledged.",
            ["peer"],
            registry=r,
        )
        self.exabgp_commands = Counter(
            "bgpadv_exabgp_commands_total",
            "Commands written to ExaBGP by answer: done, error.",
            ["result"],
            registry=r,
        )
        self.routes_held = Gauge(
            "bgpadv_routes_held",
            "Routes kept announced to the peer although the plan withdraws them: a relist or full replan would have "
            "withdrawn more than safety.maxWithdrawFraction of its routes; they wait for a confirming full LIST.",
            ["peer"],
            registry=r,
        )
        self.resource_held = Gauge(
            "bgpadv_resource_held",
            "1 while a resource that was readable answers 404/403: its objects are kept until a LIST "
            "safety.holdSeconds later confirms.",
            ["resource"],
            registry=r,
        )
        self.watch_restarts = Counter(
            "bgpadv_watch_restarts_total",
            "Restarts of a resource's list/watch loop by reason.",
            ["resource", "reason"],
            registry=r,
        )
        self.watch_lines_skipped = Counter(
            "bgpadv_watch_lines_skipped_total",
            "Watch lines (or listed objects) skipped by reason: undecodable, too-deep.",
            ["resource", "reason"],
            registry=r,
        )
        self.full_resync = Histogram(
            "bgpadv_full_resync_seconds",
            "Planner time for a full resync (start-up or timer).",
            buckets=CONVERGENCE_BUCKETS,
            registry=r,
        )
        self.last_sync = Gauge(
            "bgpadv_last_sync_timestamp_seconds",
            "Unix time when ExaBGP last held everything desired for a peer (all commands acknowledged).",
            registry=r,
        )
        self.routes_imported = Gauge(
            "bgpadv_routes_imported",
            "Routes learned from the peers that bgpadv holds installed (protocol 186) in a network's routing table.",
            ["network", "family"],
            registry=r,
        )
        self.import_refused = Gauge(
            "bgpadv_import_refused",
            "Learned paths not imported now, by reason (bgpadv.core.reasons IMPORT_*): outside the policy, inside the "
            "network's own subnets, refused by the import guard (special destination or next hop, a node's, a VM "
            "network's, off the peer's link), over the limit.",
            ["network", "reason"],
            registry=r,
        )
        self.import_malformed = Counter(
            "bgpadv_import_malformed_total",
            "Parts of learned routes that could not be read (ExaBGP's echo: peer, prefix, next hop, update), refused.",
            ["part"],
            registry=r,
        )
        self.netlink_errors = Counter(
            "bgpadv_netlink_errors_total",
            "Netlink requests of the route import that failed (install, delete, dump, VRF lookup).",
            ["operation"],
            registry=r,
        )
        self.build_info = Gauge("bgpadv_build_info", "bgpadv's version; always 1.", ["version"], registry=r)
        self.build_info.labels(version=__version__).set(1)
        self.config_reloads = Counter(
            "bgpadv_config_reloads_total",
            "Changes of the configuration file by outcome: applied (live, by this controller), refused (invalid; the"
            " running configuration stays). Changes applied by starting a new controller count in none.",
            ["result"],
            registry=r,
        )
        for result in ("applied", "refused"):
            self.config_reloads.labels(result=result)
        self.config_stale = Gauge(
            "bgpadv_config_stale",
            "1 while the configuration file's last change was refused (invalid, or ExaBGP could not reload it) and an"
            " older configuration runs; 0 once a change is applied or the file is back to the one in force.",
            registry=r,
        )
        self.config_last_reload_success = Gauge(
            "bgpadv_config_last_reload_success_timestamp_seconds",
            "Unix time the configuration in force was applied (controller start or live reload).",
            registry=r,
        )
        self.out_of_scope = Gauge(
            "bgpadv_out_of_scope_objects",
            "Objects on networks bgpadv does not serve (an unselected CUDN, a namespaced UDN, a NAD network) in the "
            "last plan, by reason: refused quietly (no Warning Event, not in bgpadv_routes_rejected_total).",
            ["reason"],
            registry=r,
        )
        self.events = Counter(
            "bgpadv_kubernetes_events_total",
            "Kubernetes Events about refusals by outcome: created, updated, dropped, failed.",
            ["result"],
            registry=r,
        )
        self.session_state_writes = Counter(
            "bgpadv_session_state_writes_total",
            "Writes of BGPSessionState objects by outcome: created, updated, deleted, failed.",
            ["result"],
            registry=r,
        )
