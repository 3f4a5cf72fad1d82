"""Router Advertisements on the links of interface peers, so that the ToR learns the node's link-local address.

A ToR's unnumbered interface (FRR `neighbor swp1 interface`, SONiC, Cumulus/NVUE) finds its BGP neighbour from the
Router Advertisements it receives on the link; without them it refuses the node's connection ("not configured").
A node's kernel sends none. `RouterAdvertiser` sends, on each interface peer's interface only, an RA that makes no
one use the node as a router (`ndp.router_advertisement`: router lifetime 0, no prefix, hop limit 255, to ff02::1)
every `interval` seconds and at once in answer to a Router Solicitation from the link (at most one per
`min_gap` s per interface).

The controller runs it (for the interface peers it serves); an interface that cannot be used is reported
(`on_error`, logged) and retried at every interval. The alternative, without this: radvd on the node with
`AdvDefaultLifetime 0` and no prefix on that interface (docs/unnumbered.md).
"""

from __future__ import annotations

import logging
import select
import socket
import threading
import time
from collections.abc import Callable, Iterable

from bgpadv.speaker import ndp

log = logging.getLogger(__name__)


class RouterAdvertiser:
    """Sends the RAs of `interfaces` from a daemon thread; `update()` changes the set, `stop()` ends it."""

    def __init__(
        self,
        interfaces: Iterable[str] = (),
        *,
        interval: float = 3.0,
        min_gap: float = 0.5,
        on_sent: Callable[[str], None] = lambda _interface: None,
        on_error: Callable[[str, str], None] = lambda _interface, _why: None,
    ) -> None:
        self.interval = interval
        self.min_gap = min_gap
        self.on_sent = on_sent
        self.on_error = on_error
        self.sent: dict[str, int] = {}
        self.errors: dict[str, str] = {}  # interface -> the last reason it could not send
        self._wanted = frozenset(interfaces)
        self._socks: dict[str, socket.socket] = {}
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def interfaces(self) -> frozenset[str]:
        return self._wanted

    def update(self, interfaces: Iterable[str]) -> None:
        with self._lock:
            self._wanted = frozenset(interfaces)

    def start(self) -> RouterAdvertiser:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="router-adverts", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        for sock in self._socks.values():
            sock.close()
        self._socks.clear()

    def _run(self) -> None:
        next_round = 0.0
        while not self._stop.is_set():
            now = time.monotonic()
            if now >= next_round:
                self._sync()
                for interface in list(self._socks):
                    self._advertise(interface, now)
                next_round = now + self.interval
            socks = list(self._socks.values())
            if not socks:
                self._stop.wait(max(0.0, next_round - now))
                continue
            readable, _, _ = select.select(socks, [], [], max(0.0, min(next_round - now, 0.5)))
            for sock in readable:
                self._answer(sock)

    def _sync(self) -> None:
        """Open the wanted interfaces' sockets (again, after an error), close the others."""
        with self._lock:
            wanted = self._wanted
        for interface in set(self._socks) - wanted:
            self._socks.pop(interface).close()
        for interface in wanted - set(self._socks):
            try:
                self._socks[interface] = ndp.icmp6_socket(interface)
            except (ndp.LinkError, OSError) as e:
                self._failed(interface, e)

    def _answer(self, sock: socket.socket) -> None:
        interface = next((i for i, s in self._socks.items() if s is sock), None)
        while interface is not None:
            got = ndp.receive(sock)
            if got is None:
                return
            if got[0] == ndp.ICMPV6_RS:
                self._advertise(interface, time.monotonic())

    def _advertise(self, interface: str, now: float) -> None:
        if now - self._last.get(interface, -1e9) < self.min_gap:
            return
        sock = self._socks.get(interface)
        if sock is None:
            return
        try:
            index = ndp.interface_index(interface)
            sock.sendto(ndp.router_advertisement(ndp.mac_address(interface)), (ndp.ALL_NODES, 0, 0, index))
        except (ndp.LinkError, OSError) as e:
            self._socks.pop(interface).close()  # reopened at the next round (the interface may come back)
            self._failed(interface, e)
            return
        self._last[interface] = now
        self.sent[interface] = self.sent.get(interface, 0) + 1
        if self.errors.pop(interface, None) is not None:
            log.info("sending router advertisements again", extra={"interface": interface})
        self.on_sent(interface)

    def _failed(self, interface: str, error: Exception) -> None:
        why = str(error) if isinstance(error, ndp.LinkError) else f"{type(error).__name__}: {error}"
        if isinstance(error, PermissionError):
            why += (
                " (sending router advertisements needs CAP_NET_RAW: kustomize deploy/components/unnumbered, Helm "
                "unnumbered.enabled)"
            )
        if self.errors.get(interface) != why:
            log.error(
                "cannot send router advertisements: the ToR cannot learn this node on the link",
                extra={"interface": interface, "error": why},
            )
        self.errors[interface] = why
        self.on_error(interface, why)
