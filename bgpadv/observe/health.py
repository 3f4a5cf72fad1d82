"""The metrics listener: /metrics, /healthz, /readyz and /status on one small HTTP server thread.

- `/metrics`: the Prometheus exposition of bgpadv's registry (OpenMetrics when the scraper asks for it).
- `/healthz`: 200 while the main loop calls `heartbeat()` (here or on the observer) at least every `stale_after`
  seconds; 503 when it is stuck.
- `/readyz`: 200 once the initial sync is done and at least one peer is established; 503 with the reason otherwise.
- `/status`: a JSON snapshot for people and `bgpadv status` (peers, routes, convergence percentiles, last sync).
- `/sent?prefix=P[&prefix=Q...]`: for each prefix (an address means its host prefix), each peer's last send of it
  acknowledged by ExaBGP: action, time and the cause's times (`bgpadv explain --status-url` asks it; at most
  `MAX_SENT_QUERY` prefixes; 400 for a bad prefix, 404 when the instance keeps no record).

The server only reads what the observer keeps; it never calls into the chain.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from bgpadv.core.prefix import Prefix
from bgpadv.observe.metrics_observer import MetricsObserver

log = logging.getLogger(__name__)

MAX_SENT_QUERY = 256  # prefixes per /sent request


def sent_prefixes(query: str) -> list[Prefix]:
    """The prefixes of a /sent query string (`prefix=` repeated; an address is its host prefix). ValueError with
    a message fit for the client when one is malformed, none is given or there are too many."""
    values = parse_qs(query).get("prefix", [])
    if not values:
        raise ValueError("give ?prefix=CIDR (repeatable)")
    if len(values) > MAX_SENT_QUERY:
        raise ValueError(f"at most {MAX_SENT_QUERY} prefixes per request, got {len(values)}")
    out = []
    for value in values:
        try:
            out.append(Prefix.parse(value))  # no length: the host prefix
        except ValueError as e:
            raise ValueError(f"prefix {value[:64]!r}: {e}") from None
    return out


class HealthServer:
    """Serves the endpoints on `listen` (host, port; port 0 picks a free one, see `.port`) from a daemon thread."""

    def __init__(
        self,
        listen: tuple[str, int],
        registry: CollectorRegistry | MetricsObserver,
        observer: MetricsObserver | None = None,
        *,
        stale_after: float = 30.0,
    ):
        if isinstance(registry, MetricsObserver):  # HealthServer(listen, observer): the observer's own registry
            observer, registry = registry, registry.metrics.registry
        if observer is None:
            raise TypeError("HealthServer needs a MetricsObserver")
        self.registry = registry
        self.observer = observer
        self.stale_after = stale_after
        self._server = _Server(listen, _Handler, self)
        self._thread: threading.Thread | None = None

    @property
    def host(self) -> str:
        return str(self._server.server_address[0])

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        host = self.host
        return f"http://[{host}]:{self.port}" if ":" in host else f"http://{host}:{self.port}"

    def heartbeat(self) -> None:
        """The main loop is alive: call once per loop turn (cheap). Same as the observer's `heartbeat()`."""
        self.observer.heartbeat()

    def alive(self) -> tuple[bool, str]:
        age = self.observer.heartbeat_age()
        if age > self.stale_after:
            return False, f"main loop silent for {age:.1f}s (limit {self.stale_after:.0f}s)"
        return True, "ok"

    def start(self) -> HealthServer:
        serve = self._server.serve_forever
        self._thread = threading.Thread(target=serve, args=(0.1,), name="bgpadv-health", daemon=True)
        self._thread.start()
        log.info("health server listening", extra={"url": self.url})
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> HealthServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, listen: tuple[str, int], handler: type[BaseHTTPRequestHandler], owner: HealthServer):
        self.owner = owner  # what the handlers answer from
        host = listen[0]
        if ":" in host:
            self.address_family = socket.AF_INET6
        super().__init__((host.strip("[]"), listen[1]), handler)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        owner = self.server.owner
        path = urlsplit(self.path).path
        try:
            if path == "/metrics":
                encoder, content_type = choose_encoder(self.headers.get("Accept", ""))
                self._send(200, encoder(owner.registry), content_type)
            elif path == "/healthz":
                ok, reason = owner.alive()
                self._send(200 if ok else 503, (reason + "\n").encode(), "text/plain; charset=utf-8")
            elif path == "/readyz":
                ok, reason = owner.observer.ready()
                self._send(200 if ok else 503, (reason + "\n").encode(), "text/plain; charset=utf-8")
            elif path == "/status":
                body = owner.observer.status()
                body["alive"] = dict(zip(("ok", "reason"), owner.alive(), strict=True))
                self._send(200, (json.dumps(body, sort_keys=True) + "\n").encode(), "application/json")
            elif path == "/sent":
                self._sent(owner, urlsplit(self.path).query)
            elif path == "/":
                links = "".join(f'<a href="{p}">{p}</a><br>' for p in ("/metrics", "/healthz", "/readyz", "/status"))
                self._send(200, f"<html><body>bgpadv<br>{links}</body></html>".encode(), "text/html")
            else:
                self._send(404, b"not found\n", "text/plain; charset=utf-8")
        except Exception:
            log.exception("health endpoint failed", extra={"path": path})
            self._send(500, b"internal error\n", "text/plain; charset=utf-8")

    def _sent(self, owner: HealthServer, query: str) -> None:
        report = owner.observer.sent_status
        if report is None:
            self._send(404, b"this instance keeps no send record\n", "text/plain; charset=utf-8")
            return
        try:
            prefixes = sent_prefixes(query)
        except ValueError as e:
            self._send(400, (str(e) + "\n").encode(), "text/plain; charset=utf-8")
            return
        body = {"prefixes": report(prefixes)}
        self._send(200, (json.dumps(body, sort_keys=True) + "\n").encode(), "application/json")

    def do_HEAD(self) -> None:
        self.do_GET()

    def _send(self, code: int, body: bytes, content_type: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # scrapes every second: keep them out of the log
        log.debug("http %s", format % args)
