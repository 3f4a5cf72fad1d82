"""The commands' one HTTP client (`bgpadv.commands.statusclient`): a running instance's `/status` and `/sent`.

Scope: against the instance's own listener (`bgpadv.observe.health.HealthServer`) it reads the `/status` document
and the sends of the prefixes asked; a base URL with a trailing slash reads the same paths. Every failure is one of
two errors, each one printable line: `Unreachable` (a refused connection, a listener that does not answer within the
timeout, an HTTP error such as an older instance's 404 for `/sent`, a URL that is no HTTP URL) and `NotTheDocument`
(an answer of another shape, too long, not JSON), naming the URL without its query; `refuse` prints it as one line on
stderr and gives exit 2. The last test is the lint that keeps it the one client: no other module of the commands
imports an HTTP or socket library.
"""

from __future__ import annotations

import ast
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from bgpadv.commands import statusclient, statusdoc
from bgpadv.core.model import Cause
from bgpadv.core.prefix import Prefix
from bgpadv.observe.health import HealthServer
from bgpadv.observe.metrics import Metrics
from bgpadv.observe.metrics_observer import MetricsObserver, StatusParts
from bgpadv.speaker.sent import ANNOUNCE, SendLog

ROOT = Path(__file__).resolve().parents[3]
ROUTE = "192.168.100.205/32"
WALL = 1_796_212_800.0  # 2026-12-02T12:00:00Z


@pytest.fixture
def listener() -> Iterator[HealthServer]:
    """An instance's metrics listener whose send log holds 192.168.100.205/32 announced to tor-a."""
    log = SendLog(["tor-a", "tor-b"], wall=lambda: WALL, monotonic=lambda: 0.0)
    log.acked("tor-a", ANNOUNCE, [Prefix.parse(ROUTE).key], Cause(1.0, 1.5), at=2.0)
    observer = MetricsObserver(Metrics(), status_parts=StatusParts(sent=log.report))
    with HealthServer(("127.0.0.1", 0), observer) as server:
        yield server


class Stub:
    """A stand-in listener on 127.0.0.1 answering every GET with `body` (None: 404) after `delay` seconds; it
    records the paths asked."""

    def __init__(self) -> None:
        self.body: bytes | None = b"{}"
        self.delay = 0.0
        self.paths: list[str] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                stub.paths.append(self.path)
                time.sleep(stub.delay)
                if stub.body is None:
                    self.send_error(404)
                    return
                try:
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(stub.body)))
                    self.end_headers()
                    self.wfile.write(stub.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (the timeout test)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def stub() -> Iterator[Stub]:
    s = Stub()
    thread = threading.Thread(target=s.server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield s
    s.server.shutdown()
    s.server.server_close()


def test_the_status_document_of_a_running_instance_is_read_and_checked(listener: HealthServer):
    doc = statusclient.status(listener.url)
    assert doc["ready"]["ok"] is False  # no plan yet: the listener says why
    assert isinstance(doc["ready"]["reason"], str)


def test_the_sends_of_the_prefixes_asked_are_read(listener: HealthServer):
    found = statusclient.sent(listener.url, [ROUTE, "192.168.100.9/32"])
    assert found[ROUTE]["tor-a"]["action"] == ANNOUNCE
    assert found["192.168.100.9/32"] == {}


def test_a_trailing_slash_reads_the_same_paths(stub: Stub):
    statusclient.status(stub.url + "/")
    stub.body = b'{"prefixes": {}}'
    statusclient.sent(stub.url + "/", ["10.0.0.0/8", "fd00::/8"])
    assert stub.paths == ["/status", "/sent?prefix=10.0.0.0%2F8&prefix=fd00%3A%3A%2F8"]


@pytest.mark.parametrize(
    ("url", "says"),
    [
        pytest.param("http://127.0.0.1:9", "Connection refused", id="refused"),
        pytest.param("nonsense", "unknown url type", id="no-url"),
        pytest.param("file:///etc", "", id="not-http"),
    ],
)
def test_an_instance_that_gives_no_answer_is_unreachable(url: str, says: str):
    with pytest.raises(statusclient.Unreachable) as raised:
        statusclient.status(url)
    assert says in str(raised.value)
    assert raised.value.where == url.rstrip("/") + "/status"


def test_a_listener_slower_than_the_timeout_is_unreachable(stub: Stub):
    stub.delay = 1.0
    started = time.monotonic()
    with pytest.raises(statusclient.Unreachable, match="timed out"):
        statusclient.status(stub.url, timeout=0.2)
    assert time.monotonic() - started < 1.0


def test_an_older_instance_without_sent_is_unreachable_there(stub: Stub):
    stub.body = None
    with pytest.raises(statusclient.Unreachable, match="HTTP Error 404"):
        statusclient.sent(stub.url, [ROUTE])


@pytest.mark.parametrize(
    ("body", "read", "says"),
    [
        pytest.param(b"<html>bad gateway</html>", "status", "/status is not a bgpadv /status document: not JSON"),
        pytest.param(b'{"peers": []}', "status", "/status is not a bgpadv /status document: peers: must be a map"),
        pytest.param(b'{"prefixes": {"10.0.0.0/8": []}}', "sent", '/sent is not a bgpadv /sent answer: prefixes["'),
        pytest.param(json.dumps({"version": "x" * 2000}).encode(), "status", "longer than 1000 bytes"),
    ],
)
def test_an_answer_of_another_shape_is_not_the_document(stub: Stub, monkeypatch, body: bytes, read: str, says: str):
    monkeypatch.setattr(statusdoc, "MAX_BODY", 1000)
    stub.body = body
    with pytest.raises(statusclient.NotTheDocument) as raised:
        statusclient.status(stub.url) if read == "status" else statusclient.sent(stub.url, [ROUTE])
    message = str(raised.value)
    assert message.startswith(f"{stub.url}/{read} is not") and "?" not in message
    assert says in message


def test_refuse_prints_one_line_and_gives_exit_2(capsys):
    error = statusclient.NotTheDocument("http://x/status is not a bgpadv /status document: peers: must be\na mapping")
    assert statusclient.refuse("bgpadv status", error) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "bgpadv status: http://x/status is not a bgpadv /status document: peers: must be\\na mapping\n"


HTTP_LIBRARIES = ("urllib.request", "urllib3", "http.client", "requests", "httpx", "socket", "aiohttp")


def _http_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        found += [f"{path.name}:{node.lineno}: {n}" for n in names if n.startswith(HTTP_LIBRARIES)]
    return found


def test_the_client_is_the_only_module_of_the_commands_that_speaks_http():
    modules = sorted((ROOT / "bgpadv" / "commands").rglob("*.py"))
    speaking = [i for m in modules for i in _http_imports(m)]
    assert speaking and all(i.startswith("statusclient.py:") for i in speaking), speaking
