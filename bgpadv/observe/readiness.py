"""Readiness and the `/status` model: peers, the routes ExaBGP holds, refusals, held withdrawals, liveness.

`StatusModel` keeps what `/readyz`, `/livez` and `/status` (and `bgpadv status`) report, and moves the gauges that
describe the same facts: `bgpadv_routes_advertised` (from acknowledged commands), `bgpadv_peer_up`,
`bgpadv_peer_transitions_total`, `bgpadv_peer_routes_advertised`, `bgpadv_last_sync_timestamp_seconds`,
`bgpadv_routes_rejected_total` (each distinct refusal once; not the out-of-scope ones,
`reasons.OUT_OF_SCOPE_REASONS`), `bgpadv_out_of_scope_objects` (those, by reason: a gauge, the objects of the last
plan, since they come and go with the cluster and a count of them now is what tells), `bgpadv_routes_held`,
`bgpadv_resource_held`.

Threads: the controller's loop writes, the HTTP thread reads `ready()`, `status()` and `heartbeat_age()`; every
structure both touch is changed and read under one lock. The acknowledged-route index (`_unacked`, `_held`) is the
loop's alone.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bgpadv import __version__
from bgpadv.core.model import Outcome
from bgpadv.core.reasons import OUT_OF_SCOPE_REASONS
from bgpadv.observe.metrics import Metrics
from bgpadv.observe.observers import RouteChange


def _objects_by_reason(refusals: set[tuple[str, str, str]], counts: dict[str, int]) -> dict[str, int]:
    """`counts` (reason → 0) with the number of distinct objects refused with each of its reasons."""
    seen: set[tuple[str, str]] = set()
    for source, _, reason in refusals:
        if reason in counts and (source, reason) not in seen:
            seen.add((source, reason))
            counts[reason] += 1
    return counts


@dataclass(slots=True)
class PeerStatus:
    state: str = "unknown"
    since_wall: float | None = None  # wall time of the last state change
    up_since_wall: float | None = None
    routes: int | None = None  # from the last `synced`
    announced: int = 0  # prefixes seen leaving in UPDATEs
    withdrawn: int = 0
    last_error: dict[str, Any] | None = None  # {"time": wall, "message"}
    last_notification: dict[str, Any] | None = None  # {"time": wall, "direction", "code", "subcode", "message"}
    bfd_down: bool = False  # its BFD session went down after up (bgpadv.speaker.bfd): the peer is taken as down

    @property
    def up(self) -> bool:
        """Established, and not failed by BFD: what `bgpadv_peer_up`, readiness and `/status` say."""
        return self.state == "up" and not self.bfd_down

    @property
    def reported(self) -> str:
        """The state `/status` reports: BGP's, or down while BFD says the path is gone."""
        return "down" if self.bfd_down else self.state


MAX_SESSION_TEXT = 512
"""The longest error or notification text kept per peer (ExaBGP's reasons and NOTIFICATION data are the peer's)."""

_FAMILY = {4: "ipv4", 6: "ipv6"}
"""The `family` label of a prefix version: one string each, not one per route."""

# RFC 4271 §4.5 error codes and the subcodes most seen (RFC 4486 for Cease)
_NOTIFICATION_CODES = {
    1: "Message Header Error",
    2: "OPEN Message Error",
    3: "UPDATE Message Error",
    4: "Hold Timer Expired",
    5: "Finite State Machine Error",
    6: "Cease",
    7: "ROUTE-REFRESH Message Error",
}
_CEASE = {
    1: "Maximum Number of Prefixes Reached",
    2: "Administrative Shutdown",
    3: "Peer De-configured",
    4: "Administrative Reset",
    5: "Connection Rejected",
    6: "Other Configuration Change",
    7: "Connection Collision Resolution",
    8: "Out of Resources",
    9: "Hard Reset",
    10: "BFD Down",
}
_OPEN = {1: "Unsupported Version Number", 2: "Bad Peer AS", 3: "Bad BGP Identifier", 6: "Unacceptable Hold Time"}


# RFC 5880 §4.1: the diagnostic code of a BFD session's last state change
_BFD_DIAGNOSTICS = {
    0: "no diagnostic",
    1: "control detection time expired",
    2: "echo function failed",
    3: "neighbor signaled session down",
    4: "forwarding plane reset",
    5: "path down",
    6: "concatenated path down",
    7: "administratively down",
    8: "reverse concatenated path down",
}


def bfd_diagnostic_name(code: int) -> str:
    """`1` → "control detection time expired": RFC 5880's words for a BFD diagnostic code."""
    return _BFD_DIAGNOSTICS.get(code, f"diagnostic {code}")


def notification_name(code: int, subcode: int) -> str:
    """`6/2` → "Cease (Administrative Shutdown)": the RFC's words for a NOTIFICATION's code and subcode."""
    name = _NOTIFICATION_CODES.get(code, f"code {code}")
    sub = (_CEASE if code == 6 else _OPEN if code == 2 else {}).get(subcode)
    return f"{name} ({sub})" if sub else name


class StatusModel:
    """`expected_resources`: resources whose first LIST must be done for readiness (None: the first plan suffices,
    which the service produces only after every watched kind listed)."""

    def __init__(
        self,
        metrics: Metrics,
        *,
        expected_resources: Iterable[str] | None = None,
        max_pending: int = 500_000,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.metrics = metrics
        self._expected = frozenset(expected_resources) if expected_resources is not None else None
        self._max_pending = max_pending
        self._clock = clock
        self._wall = wall_clock
        self._lock = threading.Lock()
        self._synced_resources: set[str] = set()
        self._planned_once = False
        self._peers: dict[str, PeerStatus] = {}
        # what ExaBGP holds per peer, from acknowledged commands: peer -> prefix key -> gauge labels (one tuple per
        # label set, shared by its routes: `_label_sets`, which holds exactly the label sets counted), and the counts
        self._unacked: OrderedDict[int, Sequence[RouteChange]] = OrderedDict()  # batch -> its route changes
        self._held: dict[str, dict[tuple[int, int, int], tuple[str, str, str, str]]] = {}
        self._label_sets: dict[tuple[str, str, str, str], tuple[str, str, str, str]] = {}
        self._route_counts: dict[tuple[str, str, str, str], int] = {}
        self._planned_routes = 0
        self._refusals: set[tuple[str, str, str]] = set()
        self._rejected_seen: object = None  # the last plan's refusals as handed (the same tuple while unchanged)
        self._routes_held: dict[str, int] = {}
        self._resources_held: set[str] = set()
        self._last_sync_wall: float | None = None
        self._last_plan_wall: float | None = None
        self._last_beat = clock()

    # --- the loop's side ------------------------------------------------------------------------------------------

    def initial_sync(self, resource: str) -> None:
        with self._lock:
            self._synced_resources.add(resource)

    def is_synced(self, resource: str) -> bool:
        with self._lock:
            return resource in self._synced_resources

    def resource_held(self, resource: str, held: bool) -> None:
        self.metrics.resource_held.labels(resource=resource).set(1 if held else 0)
        with self._lock:
            if held:
                self._resources_held.add(resource)
            else:
                self._resources_held.discard(resource)

    def routes_held(self, held: Mapping[str, int]) -> None:
        for peer, count in held.items():
            self.metrics.routes_held.labels(peer=peer).set(count)
        with self._lock:
            self._routes_held = dict(held)

    def planned(self, outcome: Outcome) -> None:
        # route gauges are not the plan's: they follow acknowledged commands (command_acked)
        if outcome.rejected is self._rejected_seen:  # the same refusals (the planner and the guard keep the tuple)
            with self._lock:
                self._planned_routes = outcome.announced
                self._planned_once = True
            return
        self._rejected_seen = outcome.rejected
        refusals = {(str(x.source), x.value, x.reason) for x in outcome.rejected}
        out_of_scope = dict.fromkeys(OUT_OF_SCOPE_REASONS, 0)
        for _, _, reason in refusals - self._refusals:
            if reason not in out_of_scope:
                self.metrics.routes_rejected.labels(reason=reason).inc()
        for reason, objects in _objects_by_reason(refusals, out_of_scope).items():
            self.metrics.out_of_scope.labels(reason=reason).set(objects)
        with self._lock:
            self._planned_routes = outcome.announced
            self._refusals = refusals
            self._planned_once = True
            self._last_plan_wall = self._wall()

    def commands_written(self, batch: int, changes: Sequence[RouteChange]) -> None:
        if changes:
            self._unacked[batch] = changes
            while len(self._unacked) > self._max_pending:  # never without an ack in practice (bounded in flight)
                self._unacked.popitem(last=False)

    def command_acked(self, batch: int, ok: bool) -> None:
        self.metrics.exabgp_commands.labels(result="done" if ok else "error").inc()
        changes = self._unacked.pop(batch, None)
        if changes:
            self._hold(changes, ok)

    def _hold(self, changes: Sequence[RouteChange], ok: bool) -> None:
        """Move the route gauges by one acknowledged command: O(its routes). An `error` leaves its prefixes unknown
        to the speaker, so they are no longer counted (as in `bgpadv_peer_routes_advertised`)."""
        delta: dict[tuple[str, str, str, str], int] = {}
        label_sets = self._label_sets
        for change in changes:
            p = change.route.prefix
            held = self._held.get(change.peer)
            if held is None:
                held = self._held[change.peer] = {}
            old = held.pop(p.key, None)
            if old is not None:
                delta[old] = delta.get(old, 0) - 1
            if ok and change.op == "announce":
                route = change.route
                labels = (change.peer, route.network, _FAMILY[p.version], str(route.kind))
                labels = label_sets.setdefault(labels, labels)
                held[p.key] = labels
                delta[labels] = delta.get(labels, 0) + 1
        gauge = self.metrics.routes_advertised
        with self._lock:
            counts = self._route_counts
            for labels, d in delta.items():
                if d == 0:
                    if labels not in counts:  # announced and withdrawn within this command: no route holds it
                        self._label_sets.pop(labels, None)
                    continue
                n = counts.get(labels, 0) + d
                if n > 0:
                    counts[labels] = n
                    gauge.labels(*labels).set(n)
                else:
                    counts.pop(labels, None)
                    self._label_sets.pop(labels, None)  # no route holds it any longer
                    with contextlib.suppress(KeyError):
                        gauge.remove(*labels)

    def updates_sent(self, peer: str, announced: int, withdrawn: int) -> None:
        with self._lock:
            st = self._peers.setdefault(peer, PeerStatus())
            st.announced += announced
            st.withdrawn += withdrawn

    def peer_state(self, peer: str, state: str) -> None:
        now = self._wall()
        with self._lock:
            st = self._peers.setdefault(peer, PeerStatus())
            was_up = st.up
            st.state = state
            st.since_wall = now
            self._moved(peer, st, was_up, now)

    def bfd_changed(self, peer: str, failed: bool, diagnostic: int) -> None:
        """The peer's BFD session changed: a failure (down after up) takes the peer as down whatever BGP says —
        `bgpadv_peer_up` 0, not counted for readiness, `/status` and the session state object "down" — with the
        reason as its last error; a recovery gives it back to BGP's state."""
        now = self._wall()
        with self._lock:
            st = self._peers.setdefault(peer, PeerStatus())
            if failed == st.bfd_down:
                return
            was_up = st.up
            st.bfd_down = failed
            if failed:
                text = f"BFD down: {bfd_diagnostic_name(diagnostic)}"
                if st.state == "up":
                    text += " (the BGP session is still up: the peer is taken as down, its routes are not imported)"
                st.last_error = {"time": now, "message": text[:MAX_SESSION_TEXT]}
            if was_up != st.up:
                st.since_wall = now
            self._moved(peer, st, was_up, now)

    def _moved(self, peer: str, st: PeerStatus, was_up: bool, now: float) -> None:
        """After a change of `st` (under the lock): the uptime, `bgpadv_peer_up` and the transitions counter. The
        gauge is set under the lock, so two threads' changes land in the order they were made."""
        is_up = st.up
        if is_up and not was_up:
            st.up_since_wall = now
        elif not is_up:
            st.up_since_wall = None
        self.metrics.peer_up.labels(peer=peer).set(1 if is_up else 0)
        if was_up != is_up:
            self.metrics.peer_transitions.labels(peer=peer).inc()

    def notification(self, peer: str, direction: str, code: int, subcode: int, message: str) -> None:
        note = {
            "time": self._wall(),
            "direction": direction,
            "code": code,
            "subcode": subcode,
            "message": message[:MAX_SESSION_TEXT],
        }
        # a NOTIFICATION ends the session: it is also the session's last error
        text = f"NOTIFICATION {'sent' if direction == 'send' else 'received'}: {code}/{subcode} "
        text += notification_name(code, subcode) + (f": {message}" if message else "")
        with self._lock:
            st = self._peers.setdefault(peer, PeerStatus())
            st.last_notification = note
            st.last_error = {"time": note["time"], "message": text[:MAX_SESSION_TEXT]}

    def peer_error(self, peer: str, message: str) -> None:
        with self._lock:
            self._peers.setdefault(peer, PeerStatus()).last_error = {
                "time": self._wall(),
                "message": message[:MAX_SESSION_TEXT],
            }

    def synced(self, peer: str, advertised: int, wall: float) -> None:
        self.metrics.peer_routes.labels(peer=peer).set(advertised)
        self.metrics.last_sync.set(wall)
        with self._lock:
            self._peers.setdefault(peer, PeerStatus()).routes = advertised
            self._last_sync_wall = wall

    def set_peers(self, peers: Iterable[str]) -> list[str]:
        """The configured peers: new ones start at peer_up 0. Returns the peers no longer configured."""
        wanted = set(peers)
        for name in wanted:
            with self._lock:
                new = name not in self._peers
                if new:
                    self._peers[name] = PeerStatus(state="idle")
            if new:
                self.metrics.peer_up.labels(peer=name).set(0)
                self.metrics.peer_transitions.labels(peer=name)
        with self._lock:
            return sorted(set(self._peers) - wanted)

    def forget_peer(self, peer: str) -> None:
        """Delete every label set of a removed peer."""
        with self._lock:
            self._peers.pop(peer, None)
        for metric in (
            self.metrics.peer_up,
            self.metrics.peer_transitions,
            self.metrics.peer_routes,
            self.metrics.routes_held,
        ):
            with contextlib.suppress(KeyError):
                metric.remove(peer)
        self._held.pop(peer, None)
        with self._lock:
            gone = [labels for labels in self._route_counts if labels[0] == peer]
            for labels in gone:
                del self._route_counts[labels]
                self._label_sets.pop(labels, None)
                with contextlib.suppress(KeyError):
                    self.metrics.routes_advertised.remove(*labels)

    def heartbeat(self) -> None:
        """The main loop is alive (the controller calls this once per loop turn)."""
        self._last_beat = self._clock()

    # --- any thread -----------------------------------------------------------------------------------------------

    def heartbeat_age(self) -> float:
        """Seconds since the last heartbeat (or since this model was made)."""
        return self._clock() - self._last_beat

    def ready(self) -> tuple[bool, str]:
        """(ready, reason): the initial sync is done and at least one peer is established."""
        with self._lock:
            if self._expected is not None:
                missing = sorted(self._expected - self._synced_resources)
                if missing:
                    return False, "initial list not done for: " + ", ".join(missing)
            if not self._planned_once:
                return False, "initial sync not done (no plan yet)"
            if not any(p.up for p in self._peers.values()):
                failed = sorted(name for name, p in self._peers.items() if p.state == "up" and p.bfd_down)
                if failed:
                    return False, "no BGP peer established (BFD down: " + ", ".join(failed) + ")"
                return False, "no BGP peer established"
        return True, "ok"

    def status(self, convergence: dict[str, Any], pending: dict[str, int]) -> dict[str, Any]:
        """A JSON-ready snapshot for `/status`: peers, routes, convergence (given), last sync, version, readiness."""
        now = self._wall()
        with self._lock:
            peers = {
                name: {
                    "state": st.reported,
                    "bgp_state": st.state,
                    "since": st.since_wall,
                    "uptime_seconds": (now - st.up_since_wall) if st.up_since_wall is not None else None,
                    "routes_advertised": st.routes,
                    "prefixes_announced": st.announced,
                    "prefixes_withdrawn": st.withdrawn,
                    "routes_sent": sum(n for labels, n in self._route_counts.items() if labels[0] == name),
                    "last_error": dict(st.last_error) if st.last_error else None,
                    "last_notification": dict(st.last_notification) if st.last_notification else None,
                }
                for name, st in sorted(self._peers.items())
            }
            routes = [
                {"peer": peer, "network": net, "family": fam, "kind": kind, "count": n}
                for (peer, net, fam, kind), n in sorted(self._route_counts.items())
            ]
            out = {
                "version": __version__,
                "time": now,
                "peers": peers,
                "routes": routes,
                "routes_total": sum(self._route_counts.values()),
                "routes_planned": self._planned_routes,
                "refusals": len(self._refusals),
                "convergence": convergence,
                "last_sync": self._last_sync_wall,
                "last_plan": self._last_plan_wall,
                "held": {"routes": dict(sorted(self._routes_held.items())), "resources": sorted(self._resources_held)},
            }
        out["pending"] = pending
        ok, reason = self.ready()
        out["ready"] = {"ok": ok, "reason": reason}
        return out
