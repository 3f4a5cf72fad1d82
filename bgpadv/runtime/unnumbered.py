"""Interface peers at controller start: their link found, their address discovered, their link given RAs.

For each served peer with `interface` (`bgpadv.config.unnumbered`), `with_links` finds the node's link-local
address on the interface (the next hop of every route the session carries, `PeerConfig.on_link`) and, when the file
leaves the peer's address to discovery, the ToR's link-local address (`bgpadv.speaker.ndp.discover_router`: a
Router Solicitation, the answering Router Advertisement's source, within `DISCOVERY_SECONDS`). A peer whose link
fails (no such interface, no link-local address, no router answering) is not served, with an error naming the
reason: never a session or a route to a guessed address. Found whenever the controller places its peers (at start,
when the node's labels or the file select other peers).

`LinkRetry` keeps trying a peer left out so, off the controller's loop (a Router Solicitation waits up to
`DISCOVERY_SECONDS`): every `RETRY_FIRST_SECONDS` doubling to `RETRY_MAX_SECONDS`, with jitter. Once its link answers
it posts `LinksFound` to the loop's queue, and the loop places its peers again and adds the peer by a live peer move
(`bgpadv.runtime.peer_moves`), the other sessions untouched. Meanwhile the peer is in `/status` (`waitingForLink`)
and `bgpadv_interface_peer_waiting{interface}` is 1; each distinct reason it waits for is logged once.

`Advertising` keeps `bgpadv.speaker.router_adverts.RouterAdvertiser` sending on the served interface peers' links,
with its metrics: `bgpadv_router_adverts_sent_total{interface}` and `bgpadv_router_advert_errors_total{interface}`.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import threading
import time
from collections.abc import Callable, Iterable
from typing import Protocol

from bgpadv.config import Config, PeerConfig
from bgpadv.core.capability import CAP_NET_RAW, raise_capability
from bgpadv.core.prefix import Address
from bgpadv.observe.metrics import Metrics
from bgpadv.speaker import ndp
from bgpadv.speaker.router_adverts import RouterAdvertiser

log = logging.getLogger(__name__)

DISCOVERY_SECONDS = 5.0
RETRY_FIRST_SECONDS = 2.0
"""An interface peer whose link failed is tried again this long after (then twice as long each time)."""
RETRY_MAX_SECONDS = 30.0
"""The longest wait between two tries of an interface peer's link."""
RETRY_JITTER = 0.2
"""Each wait is drawn within this fraction around it: the nodes of a rack whose ToR came back do not all solicit it at
the same instant."""


NET_RAW_DEPLOY = "kustomize: deploy/components/unnumbered; Helm: a peer in config has interface, or unnumbered.enabled"
"""Where the pod gets CAP_NET_RAW, for the errors that say it has not."""


def raise_net_raw(config: Config | None = None, log: logging.Logger | None = None) -> str | None:
    """Make CAP_NET_RAW effective in this process when `config` (None: unconditionally) has interface peers: the
    raw ICMPv6 socket of their Router Solicitations and Advertisements needs it. None when it is (or nothing needs
    it), else why it cannot be (also logged as an error on `log`: the interface peers then wait for their link in
    /status and `bgpadv_interface_peer_waiting`, and each failed advertisement counts in
    `bgpadv_router_advert_errors_total`)."""
    if config is not None and not any(p.interface is not None for p in config.peers):
        return None
    why = raise_capability(CAP_NET_RAW, "NET_RAW", NET_RAW_DEPLOY)
    if why is not None and log is not None:
        log.error("interface peers cannot discover the ToR or send it router advertisements: %s", why)
    return why


class Links(Protocol):
    """What `with_links` reads of the node's links (`KernelLinks` on a node; a table in tests)."""

    def link_local(self, interface: str) -> Address: ...

    def router(self, interface: str, timeout: float) -> Address: ...


class KernelLinks:
    """The node's own links: /proc/net/if_inet6 and a Router Solicitation on a raw socket."""

    def link_local(self, interface: str) -> Address:
        return ndp.link_local(interface)

    def router(self, interface: str, timeout: float) -> Address:
        # capabilities are per thread: `LinkRetry`'s thread may predate the placement that raised CAP_NET_RAW
        raise_net_raw()
        try:
            return ndp.discover_router(interface, timeout)
        except PermissionError as e:
            raise ndp.LinkError(f"a Router Solicitation needs CAP_NET_RAW ({NET_RAW_DEPLOY}): {e}") from e


def resolve(peer: PeerConfig, links: Links, timeout: float = DISCOVERY_SECONDS) -> PeerConfig:
    """`peer` with its link: `on_link` and, when undiscovered, `address`. Raises ndp.LinkError (the reason)."""
    if peer.interface is None:
        return peer
    own = links.link_local(peer.interface)
    address = links.router(peer.interface, timeout) if peer.undiscovered else peer.address
    if not (address.version == 6 and address.is_link_local()):
        raise ndp.LinkError(f"the router on {peer.interface} answered from {address}, not a link-local address")
    if address == own:
        raise ndp.LinkError(f"the peer's address {address} is this node's own on {peer.interface}")
    return dataclasses.replace(peer, address=address, on_link=own)


def with_links(config: Config, links: Links, timeout: float = DISCOVERY_SECONDS) -> Config:
    """`config` with every interface peer resolved (`resolve`); those whose link fails are left out, logged (once:
    nothing tries them again, see `LinkRetry`)."""
    return LinkRetry(links, timeout=timeout).place(config)


@dataclasses.dataclass(frozen=True, slots=True)
class LinksFound:
    """The loop's queue item: `LinkRetry` found the link of a peer it was trying; the controller places its peers
    again, which adds it."""


_Key = tuple[str, Address]
"""An interface peer across placements: its interface and its address as the file gives it (UNDISCOVERED)."""


@dataclasses.dataclass(slots=True)
class _Waiting:
    """An interface peer left out because its link failed, and when it is tried next."""

    peer: PeerConfig
    reason: str
    delay: float
    due: float
    since: float
    attempts: int = 1
    told: set[str] = dataclasses.field(default_factory=set)
    """The reasons logged already: each once."""


def _key(peer: PeerConfig) -> _Key:
    return (peer.interface or "", peer.address)


class LinkRetry:
    """The interface peers of the placements (`place`), and those whose link failed tried again on a back-off (see
    the module). `post(LinksFound())` tells the loop; `on_waiting(interfaces)` is called with the interfaces waiting
    whenever they change (the metric). `attempt` is one round of tries (the thread's; a test calls it with its
    `clock`)."""

    def __init__(
        self,
        links: Links,
        post: Callable[[object], None] | None = None,
        *,
        timeout: float = DISCOVERY_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        jitter: Callable[[float], float] | None = None,
        on_waiting: Callable[[Iterable[str]], None] | None = None,
    ) -> None:
        self.links = links
        self.post = post
        self.timeout = timeout
        self.clock = clock
        self.jitter = jitter or (lambda d: d * random.uniform(1 - RETRY_JITTER, 1 + RETRY_JITTER))
        self.on_waiting = on_waiting
        self._lock = threading.Lock()
        self._showing = threading.Lock()  # `on_waiting` is called from the loop and the retry thread
        self._waiting: dict[_Key, _Waiting] = {}
        self._found: dict[_Key, PeerConfig] = {}
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    # -- on the loop's thread ---------------------------------------------------------------------------------------
    def place(self, config: Config) -> Config:
        """`config` with every interface peer resolved (`resolve`). A peer the retry found is taken as it found it;
        a peer it is still trying is left out without asking the link here (no Router Solicitation wait on the
        loop); a peer whose link fails now is left out, logged, and tried again from now on. Peers no longer in
        `config` are no longer tried."""
        peers = []
        seen: set[Address] = {p.address for p in config.peers if p.interface is None}
        failed: dict[_Key, tuple[PeerConfig, str]] = {}
        with self._lock:
            found, self._found = self._found, {}
            waiting = dict(self._waiting)
        for peer in config.peers:
            if peer.interface is None:
                peers.append(peer)
                continue
            key = _key(peer)
            try:
                resolved = found.get(key)
                if resolved is None and key in waiting:
                    failed[key] = (peer, waiting[key].reason)
                    continue
                resolved = resolved or resolve(peer, self.links, self.timeout)
            except (ndp.LinkError, OSError) as e:
                failed[key] = (peer, str(e))
                continue
            if resolved.address in seen:  # two links answering with one address: waiting does not mend it
                log.error(
                    "interface peer not served: %s is already the address of another peer",
                    resolved.address,
                    extra={"peer": resolved.name, "interface": peer.interface},
                )
                continue
            seen.add(resolved.address)
            if peer.undiscovered:
                log.info(
                    "peer discovered on the link",
                    extra={"peer": resolved.name, "interface": peer.interface, "nextHop": str(resolved.on_link)},
                )
            peers.append(resolved)
        self._wait_for(failed)
        return dataclasses.replace(config, peers=tuple(peers))

    def _wait_for(self, failed: dict[_Key, tuple[PeerConfig, str]]) -> None:
        """The peers to try again from now: those of `failed` (a new one logged and due after the first delay)."""
        now = self.clock()
        with self._lock:
            before = self._waiting
            self._waiting = {}
            for key, (peer, reason) in failed.items():
                waiting = before.get(key)
                if waiting is None:
                    delay = RETRY_FIRST_SECONDS
                    waiting = _Waiting(peer, reason, delay, now + self.jitter(delay), now)
                waiting.peer = peer
                self._waiting[key] = waiting
                self._tell(waiting, reason)
            changed = before.keys() != self._waiting.keys()
        if changed:
            self._changed()

    def _tell(self, waiting: _Waiting, reason: str) -> None:
        """Log `reason` the first time this peer waits for it."""
        waiting.reason = reason
        if reason in waiting.told:
            return
        waiting.told.add(reason)
        log.error(
            "interface peer not served: %s; tried again every %g s at most",
            reason,
            RETRY_MAX_SECONDS,
            extra={"peer": waiting.peer.name, "interface": waiting.peer.interface, "attempts": waiting.attempts},
        )

    def _changed(self) -> None:
        """The waiting peers changed: the metric follows (from either thread, one at a time), the thread re-times."""
        if self.on_waiting is not None:
            with self._showing:
                self.on_waiting(self.interfaces())
        self._wake.set()

    def interfaces(self) -> list[str]:
        """The interfaces of the peers waiting for their link."""
        with self._lock:
            return sorted({w.peer.interface or "" for w in self._waiting.values()})

    def status(self) -> list[dict[str, object]]:
        """For `/status`: each peer waiting for its link, why, since when, how often tried, when next (seconds)."""
        now = self.clock()
        with self._lock:
            return [
                {
                    "peer": w.peer.name,
                    "interface": w.peer.interface,
                    "reason": w.reason,
                    "waitingSeconds": round(now - w.since, 1),
                    "attempts": w.attempts,
                    "nextAttemptSeconds": round(max(w.due - now, 0.0), 1),
                }
                for w in self._waiting.values()
            ]

    # -- off the loop -------------------------------------------------------------------------------------------------
    def next_due(self) -> float | None:
        """When the next try is due (`clock`), None: no peer waits."""
        with self._lock:
            return min((w.due for w in self._waiting.values()), default=None)

    def attempt(self) -> bool:
        """Try the links of the peers due now; those that answer are kept for the next `place` and the loop is told
        (`post(LinksFound())`); the others wait twice as long (at most `RETRY_MAX_SECONDS`). True: one answered."""
        now = self.clock()
        with self._lock:
            due = [(key, w) for key, w in self._waiting.items() if w.due <= now]
        answered = False
        for key, waiting in due:
            try:
                resolved: PeerConfig | None = resolve(waiting.peer, self.links, self.timeout)
                reason = ""
            except (ndp.LinkError, OSError) as e:
                resolved, reason = None, str(e)
            with self._lock:
                if self._waiting.get(key) is not waiting:
                    continue  # placed again meanwhile: no longer wanted, or wanted as that placement says
                if resolved is None:
                    waiting.attempts += 1
                    waiting.delay = min(waiting.delay * 2, RETRY_MAX_SECONDS)
                    waiting.due = self.clock() + self.jitter(waiting.delay)
                    self._tell(waiting, reason)
                    continue
                del self._waiting[key]
                self._found[key] = resolved
            answered = True
            log.warning(
                "interface peer's link answered: serving it",
                extra={
                    "peer": resolved.name,
                    "interface": resolved.interface,
                    "attempts": waiting.attempts + 1,
                    "waited": round(self.clock() - waiting.since, 1),
                },
            )
        if answered:
            self._changed()
            if self.post is not None:
                self.post(LinksFound())
        return answered

    def start(self) -> None:
        """Try the waiting peers' links on a thread of their own until `stop`."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="link-retry", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)  # a daemon thread: a Router Solicitation in flight does not hold the exit

    def _run(self) -> None:
        while not self._stopped.is_set():
            due = self.next_due()
            self._wake.wait(None if due is None else max(due - self.clock(), 0.0))
            self._wake.clear()
            if self._stopped.is_set():
                return
            try:
                self.attempt()
            except Exception:  # a bug here must not end the tries (nor the controller)
                log.exception("trying the interface peers' links failed")
                self._stopped.wait(RETRY_MAX_SECONDS)


def next_hop_links(config: Config) -> dict[Address, str]:
    """The imported routes' link-local next hops that can be installed: each interface peer's own address → its
    interface (`bgpadv.importer.netlink.Netlink.links`)."""
    return {p.address: p.interface for p in config.peers if p.interface and not p.undiscovered}


def interfaces(config: Config) -> list[str]:
    """The interfaces of the served interface peers, once each, in configuration order."""
    return list(dict.fromkeys(p.interface for p in config.peers if p.interface is not None))


def waiting_gauge(metrics: Metrics) -> Callable[[Iterable[str]], None]:
    """`LinkRetry`'s `on_waiting`: `bgpadv_interface_peer_waiting{interface}` 1 for each interface waiting, no series
    for the others."""
    gauge = metrics.interface_peer_waiting
    shown: set[str] = set()

    def show(interfaces: Iterable[str]) -> None:
        now = set(interfaces)
        for interface in shown - now:
            gauge.remove(interface)
        for interface in now:
            gauge.labels(interface).set(1)
        shown.clear()
        shown.update(now)

    return show


class Advertising:
    """The controller's RA sender and its metrics (see the module)."""

    def __init__(self, metrics: Metrics, advertiser: Callable[..., RouterAdvertiser] | None = None):
        sent, errors = metrics.router_adverts_sent, metrics.router_advert_errors
        make = advertiser or RouterAdvertiser
        self.advertiser: RouterAdvertiser = make(
            on_sent=lambda i: sent.labels(i).inc(), on_error=lambda i, _why: errors.labels(i).inc()
        )

    def serve(self, config: Config) -> None:
        """Send on the links of `config`'s interface peers (started on the first one)."""
        wanted = interfaces(config)
        self.advertiser.update(wanted)
        if wanted:
            self.advertiser.start()

    def stop(self) -> None:
        self.advertiser.stop()
