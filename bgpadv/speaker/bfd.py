"""BFD next to ExaBGP (which has none): FRR's `bfdd`, standalone (no zebra, no bgpd), one single-hop session per peer
with `peers[].bfd.enabled`.

`bgpadv run`'s supervisor runs bfdd in its own directory (`bfdd/` under the runtime directory: PID file, vty socket
and the control socket `bfdd.sock`; run as root, bfdd drops to FRR's `frr` user, which owns that directory) while
the controller asks for it (`BFD_WANTED`), restarting it when it dies (`bgpadv.runtime.supervisor`). The controller
drives it through the control socket (`--bfdctl`, FRR's `bfdd/control.c`; no vtysh, no configuration file):

- a message is an 8-byte header (payload length u32, request id u16, type u8, version u8 = 1; network order) and a
  JSON payload; every request gets a `RESPONSE` (`{"status": "ok"}` or `{"status": "error", "error": ...}`) with
  its id;
- `REQUEST_ADD` `{"ipv4": [{"peer-address", "local-address", "receive-interval", "transmit-interval",
  "detect-multiplier"}]}` creates a session, or updates the timers of an existing one in place (no flap: measured);
  `REQUEST_DEL` with the same keys deletes it. The sessions belong to bfdd, not to the connection: a restarted
  controller finds them running, and the ToR sees nothing;
- `NOTIFY` with the 64-bit flags all set subscribes to every session's configuration (`op` add/update/delete) and
  state (`op` status, `state` up/down/init/adm-down, `diagnostics`), the current ones first. Measured (FRR 8.4,
  100 ms x 3): a frozen peer's session is reported down ~0.25 s after the freeze.

An interface peer's session (`peers[].interface`, over link-local addresses) is given to bfdd by the ToR's
link-local address alone: bfdd learns interfaces only from zebra, and refuses an interface or a link-local local
address without it. The kernel then routes its packets by the main table, so `bgpadv.speaker.bfd_routes` keeps a host
route `fe80::<ToR>/128 dev <uplink>` for each, written before the session is asked for. Such a session is not run
(state `refused`, with the reason in /status and the log) when that route cannot be written (no CAP_NET_ADMIN).

The controller keeps only what it was told: `BfdStates` holds each peer's last state; a session it does not want
(from an earlier configuration, another node's peer) is deleted when bfdd mentions it. A BFD down after up is a
failure (`BfdStates.failed`): the importer drops the peer's routes from the VRF tables at once and status shows the
session down (`bgpadv.runtime.controller`). `BfdStates.snapshot()` is the seam other readers (status, a
session-state writer) use.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from bgpadv.config import PeerConfig
from bgpadv.core.runfiles import BFDD_DIR

log = logging.getLogger(__name__)

BFDD_SOCKET = "bfdd.sock"  # bfdd's control socket, in BFDD_DIR
BFDD_PID = "bfdd.pid"
BFDD_BINARY_ENV = "BGPADV_BFDD"  # where bfdd is (default DEFAULT_BFDD)
DEFAULT_BFDD = "/usr/lib/frr/bfdd"

HEADER = struct.Struct("!IHBB")
VERSION = 1
RESPONSE, REQUEST_ADD, REQUEST_DEL, NOTIFY = 1, 2, 3, 4
NOTIFY_ALL = struct.pack("=Q", 2**64 - 1)
NOTIFY_ID = 0

UP, DOWN, INIT, ADMIN_DOWN, UNKNOWN = "up", "down", "init", "adm-down", "unknown"
REFUSED = "refused"  # not asked of bfdd (the reason in BfdPeerState.reason)


# --- what bfdd runs -----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BfdSession:
    """One single-hop session as bfdd is asked for it; `peer` names the bgpadv peer (its label in metrics)."""

    peer: str
    address: str
    local: str | None
    min_rx: int
    min_tx: int
    multiplier: int
    interface: str | None = None
    """An interface peer's link: not given to bfdd (see the module), its host route's (`bfd_routes`)."""

    @property
    def family(self) -> str:
        return "ipv6" if ":" in self.address else "ipv4"

    def key(self, *, timers: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"peer-address": self.address, "multihop": False}
        if self.local is not None:
            out["local-address"] = self.local
        if timers:
            out["receive-interval"] = self.min_rx
            out["transmit-interval"] = self.min_tx
            out["detect-multiplier"] = self.multiplier
        return out


def sessions_of(peers: Iterable[PeerConfig]) -> dict[str, BfdSession]:
    """peer address → the session bfdd runs for each peer with `bfd.enabled` (rendered from the parsed values). Two
    interface peers never have one address: the second is not served (`bgpadv.runtime.unnumbered`)."""
    out = {}
    for p in peers:
        if not p.bfd.enabled:
            continue
        local = str(p.local_address) if p.local_address is not None else None
        session = BfdSession(p.name, str(p.address), local, p.bfd.min_rx, p.bfd.min_tx, p.bfd.multiplier, p.interface)
        out[str(p.address)] = session
    return out


def bfdd_dir(runtime_dir: Path) -> Path:
    return runtime_dir / BFDD_DIR


def bfdd_argv(*, user: str | None, group: str | None = None) -> list[str]:
    """bfdd in the foreground (the supervisor's child), run in its own directory (`bfdd_dir`, its working directory)
    with every path relative to it: no TCP vty (`-P 0`), its own vty and control sockets and PID file, a zebra socket
    path that nothing serves (bfdd runs without zebra: it never reaches a host's FRR), no configuration file read
    (`/dev/null`: its sessions come over the control socket; never a host's /etc/frr/bfdd.conf), logs on stdout.
    `user`: drop to it (bfdd's own privilege handling; root only). Relative paths: a bfdd that dropped to `frr`
    reaches its own directory, which it owns, without any directory above it (a runtime directory private to
    root) being opened to it or anyone."""
    argv = [os.environ.get(BFDD_BINARY_ENV, DEFAULT_BFDD), "-P", "0", "--vty_socket", "."]
    argv += ["-f", os.devnull, "-i", BFDD_PID, "--bfdctl", BFDD_SOCKET, "-z", "zserv.api", "--log", "stdout"]
    if user is not None:
        argv += ["-u", user, "-g", group or user]
    return argv


# --- the control protocol (pure) ----------------------------------------------------------------------------------


def encode(kind: int, request_id: int, payload: bytes) -> bytes:
    return HEADER.pack(len(payload), request_id, kind, VERSION) + payload


def request(kind: int, request_id: int, sessions: Iterable[BfdSession], *, timers: bool = True) -> bytes:
    body: dict[str, list[dict[str, Any]]] = {}
    for s in sessions:
        body.setdefault(s.family, []).append(s.key(timers=timers))
    return encode(kind, request_id, json.dumps(body, separators=(",", ":")).encode())


@dataclass(frozen=True, slots=True)
class Message:
    request_id: int
    kind: int
    data: dict[str, Any]


class Decoder:
    """Splits bfdd's byte stream into messages; a payload that is not a JSON object is dropped (counted)."""

    def __init__(self) -> None:
        self._buffer = b""
        self.malformed = 0

    def feed(self, chunk: bytes) -> list[Message]:
        self._buffer += chunk
        out = []
        while len(self._buffer) >= HEADER.size:
            length, request_id, kind, _version = HEADER.unpack_from(self._buffer)
            if len(self._buffer) < HEADER.size + length:
                break
            payload = self._buffer[HEADER.size : HEADER.size + length]
            self._buffer = self._buffer[HEADER.size + length :]
            try:
                data = json.loads(payload)
            except ValueError:
                data = None
            if not isinstance(data, dict):
                self.malformed += 1
                continue
            out.append(Message(request_id, kind, data))
        return out


# --- states -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BfdPeerState:
    state: str  # up | down | init | adm-down | unknown (no word from bfdd yet, or bfdd unreachable) | refused
    diagnostic: int = 0  # RFC 5880 diagnostic code of the last change (1: control detection time expired)
    since: float = 0.0  # time.time() of the last change
    failed: bool = False  # down after having been up while this controller watched: the peer is considered down
    reason: str = ""  # why a `refused` session is not run

    def as_json(self) -> dict[str, Any]:
        out = {"state": self.state, "diagnostic": self.diagnostic, "since": self.since, "failed": self.failed}
        return out | ({"reason": self.reason} if self.reason else {})


@dataclass
class BfdStates:
    """Each BFD-enabled peer's session state (by peer name), safe to read from any thread.

    The seam for readers: `snapshot()` (peer → BfdPeerState) and `failed(peer)`."""

    _states: dict[str, BfdPeerState] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def snapshot(self) -> dict[str, BfdPeerState]:
        with self._lock:
            return dict(self._states)

    def failed(self, peer: str) -> bool:
        with self._lock:
            s = self._states.get(peer)
        return s is not None and s.failed

    def set_peers(self, peers: Iterable[str], refused: Mapping[str, str] | None = None) -> list[str]:
        """Keep exactly these peers (new ones, and those refused before, unknown) and the `refused` ones (peer →
        why: state `refused`); return the names that left."""
        wanted = list(peers)
        refused = dict(refused or {})
        with self._lock:
            gone = [p for p in self._states if p not in wanted and p not in refused]
            for p in gone:
                del self._states[p]
            for p in wanted:
                if self._states.get(p, BfdPeerState(REFUSED)).state == REFUSED:
                    self._states[p] = BfdPeerState(UNKNOWN)
            for p, why in refused.items():
                self._states[p] = BfdPeerState(REFUSED, reason=why)
        return gone

    def update(self, peer: str, state: str, diagnostic: int, at: float) -> BfdPeerState | None:
        """A state bfdd reported; the new state when it changed (None otherwise, or for a peer not watched)."""
        with self._lock:
            old = self._states.get(peer)
            if old is None or old.state == REFUSED or (old.state == state and old.diagnostic == diagnostic):
                return None
            if state == UP:
                failed = False
            elif state == DOWN:
                failed = old.failed or old.state == UP
            else:
                failed = old.failed and state != ADMIN_DOWN
            new = BfdPeerState(state, diagnostic, at, failed)
            self._states[peer] = new
            return new

    def unreachable(self, at: float) -> list[str]:
        """bfdd's control socket closed: every state unknown (a restarted bfdd reports again); keeps `failed` off:
        bfdd's death says nothing about the peers (the ToR's own BFD and BGP decide there)."""
        with self._lock:
            changed = [p for p, s in self._states.items() if s.state not in (UNKNOWN, REFUSED)]
            for p in changed:
                self._states[p] = BfdPeerState(UNKNOWN, 0, at, False)
            return changed


# --- the client ---------------------------------------------------------------------------------------------------


class BfdSessions(Protocol):
    """What the controller needs of the BFD client: the sessions to run (peer address → session)."""

    def set_desired(self, sessions: Mapping[str, BfdSession]) -> None: ...


class HostRoutes(Protocol):
    """The host routes that keep the interface peers' sessions on their links (`bfd_routes.LinkRoutes`)."""

    def set_desired(self, routes: Mapping[str, str]) -> None: ...

    def start(self) -> object: ...

    def stop(self) -> None: ...


Listener = Callable[[str, BfdPeerState], None]


class BfdControl:
    """The controller's connection to bfdd's control socket (a daemon thread that reconnects every `retry`
    seconds): keeps bfdd's sessions equal to `set_desired`'s and reports state changes to `on_change` (from its
    thread: the controller queues them) and to `on_metrics` (peer, up: the gauge). `failed_file`: where the
    supervisor writes its reason for giving up on bfdd (`BFDD_FAILED`), read while bfdd is unreachable and handed to
    `on_bfdd_failed` (the gauge). `host_routes`: the interface peers' host routes (see the module; None: their
    sessions are refused), written once `net_admin` (None when CAP_NET_ADMIN is effective, else why not) allows."""

    def __init__(
        self,
        socket_path: Path,
        states: BfdStates,
        on_change: Listener | None = None,
        *,
        on_metrics: Callable[[str, bool], None] | None = None,
        failed_file: Path | None = None,
        on_bfdd_failed: Callable[[str], None] | None = None,
        host_routes: HostRoutes | None = None,
        net_admin: Callable[[], str | None] = lambda: None,
        retry: float = 0.5,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = socket_path
        self.states = states
        self.on_change = on_change
        self.on_metrics = on_metrics
        self.on_bfdd_failed = on_bfdd_failed
        self.failed_file = failed_file
        self.host_routes = host_routes
        self.net_admin = net_admin
        self.bfdd_failed = ""
        self.retry = retry
        self._wall = wall_clock
        self._desired: dict[str, BfdSession] = {}
        self._lock = threading.Lock()  # _desired, _sock, _next_id
        self._sock: socket.socket | None = None
        self._next_id = 1
        self._told: dict[str, str] = {}  # the refused peers logged already, with their reason
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.connected = threading.Event()
        self.errors = 0  # error responses from bfdd

    # -- controller side -------------------------------------------------------------------------------------------
    def set_desired(self, sessions: Mapping[str, BfdSession]) -> None:
        """The sessions bfdd must run (peer address → session): new and changed ones are added (bfdd updates the
        timers of an existing session in place), the others deleted; untouched ones are not sent again. An interface
        peer's session is added after its host route is written, or refused (see the module)."""
        wanted, refused = self._routed(sessions)
        with self._lock:
            old, self._desired = self._desired, wanted
            add = [s for a, s in self._desired.items() if old.get(a) != s]
            remove = [s for a, s in old.items() if a not in self._desired]
        for name in self.states.set_peers((s.peer for s in wanted.values()), refused):
            log.info("BFD: peer no longer watched", extra={"peer": name})
        for name, why in refused.items():
            if self._told.get(name) != why:
                log.error("BFD: the session with the peer is not run: %s", why, extra={"peer": name})
                self._notify(name)
        self._told = refused
        if remove:
            self._send(REQUEST_DEL, remove, timers=False)
        if self.host_routes is not None:
            self.host_routes.set_desired({a: s.interface for a, s in wanted.items() if s.interface is not None})
        if add:
            self._send(REQUEST_ADD, add)

    def _routed(self, sessions: Mapping[str, BfdSession]) -> tuple[dict[str, BfdSession], dict[str, str]]:
        """`sessions` but the interface peers' when their host routes cannot be written: those refused (peer →
        why)."""
        linked = [s for s in sessions.values() if s.interface is not None]
        refused: dict[str, str] = {}
        if not linked:
            return dict(sessions), refused
        if self.host_routes is None:
            refused |= {
                s.peer: "no host route keeps it on its link (bgpadv controller without a supervisor)" for s in linked
            }
        elif (why := self.net_admin()) is not None:
            refused |= {
                s.peer: f"its host route to the peer on {s.interface} needs CAP_NET_ADMIN: {why}" for s in linked
            }
        else:
            return dict(sessions), refused
        return {a: s for a, s in sessions.items() if s.interface is None}, refused

    def start(self) -> BfdControl:
        if self.host_routes is not None:
            self.host_routes.start()
        self._thread = threading.Thread(target=self._run, name="bfd-control", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self.host_routes is not None:
            self.host_routes.stop()  # the routes stay, as bfdd's sessions do
        self._stop.set()
        with self._lock:
            sock = self._sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=2)

    # -- the thread --------------------------------------------------------------------------------------------------
    def _send(self, kind: int, sessions: list[BfdSession], *, timers: bool = True) -> None:
        with self._lock:
            sock = self._sock
            if sock is None:
                return  # sent on (re)connect
            rid = self._next_id
            self._next_id = self._next_id % 65535 + 1
            try:
                sock.sendall(request(kind, rid, sessions, timers=timers))
            except OSError as e:
                log.warning("BFD: writing to bfdd failed: %s", e)

    def _check_failed(self) -> None:
        """Report once that the supervisor gave up on bfdd (its `BFDD_FAILED` file): nothing will ever listen."""
        if self.failed_file is None or self.bfdd_failed:
            return
        try:
            reason = self.failed_file.read_text().strip()
        except OSError:
            return
        self.bfdd_failed = reason or "bfdd cannot start"
        log.error("BFD: the supervisor gave up on bfdd: %s", self.bfdd_failed)
        if self.on_bfdd_failed is not None:
            self.on_bfdd_failed(self.bfdd_failed)

    def _run(self) -> None:
        warned = False
        while not self._stop.is_set():
            try:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.connect(str(self.path))
            except OSError as e:
                sock.close()
                self._check_failed()
                if not warned:
                    log.info("BFD: bfdd's control socket not reachable yet: %s", e, extra={"path": str(self.path)})
                    warned = True
                self._stop.wait(self.retry)
                continue
            warned = False
            self._serve(sock)
            for name in self.states.unreachable(self._wall()):
                self._notify(name)
            if not self._stop.is_set():
                log.warning("BFD: bfdd's control socket closed: reconnecting", extra={"path": str(self.path)})

    def _serve(self, sock: socket.socket) -> None:
        with self._lock:
            self._sock = sock
            desired = list(self._desired.values())
            try:
                sock.sendall(encode(NOTIFY, 65535, NOTIFY_ALL))
            except OSError:
                self._sock = None
                sock.close()
                return
        log.info("BFD: connected to bfdd", extra={"sessions": [s.peer for s in desired]})
        if desired:
            self._send(REQUEST_ADD, desired)
        self.connected.set()
        decoder = Decoder()
        try:
            while not self._stop.is_set():
                chunk = sock.recv(65536)
                if not chunk:
                    break
                for message in decoder.feed(chunk):
                    self._message(message)
        except OSError:
            pass
        finally:
            self.connected.clear()
            with self._lock:
                self._sock = None
            sock.close()

    def _message(self, m: Message) -> None:
        if m.kind == RESPONSE:
            if m.data.get("status") != "ok":
                self.errors += 1
                log.error("BFD: bfdd refused a request: %s", m.data.get("error", m.data), extra={"id": m.request_id})
            return
        if m.kind != NOTIFY:
            return
        address = m.data.get("peer-address")
        with self._lock:
            session = self._desired.get(address) if isinstance(address, str) else None
        op = m.data.get("op")
        if session is None:
            if op in ("add", "update", "status") and isinstance(address, str) and not m.data.get("multihop"):
                # bfdd runs a session nobody wants (an earlier configuration's, a peer of another rack)
                log.info("BFD: deleting a session no peer asks for", extra={"address": address})
                local = m.data.get("local-address")
                stray = BfdSession("", address, local if isinstance(local, str) else None, 0, 0, 0)
                self._send(REQUEST_DEL, [stray], timers=False)
            return
        if op != "status":
            return
        state = m.data.get("state")
        diag = m.data.get("diagnostics", 0)
        state = state if isinstance(state, str) else UNKNOWN
        new = self.states.update(session.peer, state, diag if isinstance(diag, int) else 0, self._wall())
        if new is not None:
            log.warning(
                "BFD: session %s", new.state, extra={"peer": session.peer, "diagnostic": new.diagnostic}
            ) if new.state != UP else log.info("BFD: session up", extra={"peer": session.peer})
            self._notify(session.peer)

    def _notify(self, peer: str) -> None:
        state = self.states.snapshot().get(peer)
        if state is None:
            return
        try:
            if self.on_metrics is not None:
                self.on_metrics(peer, state.state == UP)
            if self.on_change is not None:
                self.on_change(peer, state)
        except Exception:
            log.exception("BFD: state listener failed")
