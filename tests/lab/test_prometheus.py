"""A real Prometheus scrapes bgpadv's metrics listener, and PromQL over the convergence histogram answers.

Scope: Debian's `prometheus` server on loopback (its own port, tsdb directory and 1 s scrape interval) scrapes a
HealthServer that a feeder thread fills with synthetic route changes through MetricsObserver (written, acked and
echoed a few milliseconds apart); `histogram_quantile` over `bgpadv_convergence_seconds_bucket` returns the median
those changes had. The server is stopped by its PID.
"""

from __future__ import annotations

import importlib.metadata
import json
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from bgpadv.core.model import Cause, ObjectRef, Outcome, Plan, Route, RouteKind
from bgpadv.core.prefix import Address, Prefix
from bgpadv.observe.health import HealthServer
from bgpadv.observe.metrics import Metrics
from bgpadv.observe.metrics_observer import MetricsObserver
from bgpadv.observe.observers import RouteChange

pytestmark = pytest.mark.lab

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PEER = "10.0.0.1"
CLAIM = ObjectRef("IPAMClaim", "vm-a.default", "imported-vms", "0b6a4c1e-2f4d-4b8e-9c1a-7d2e3f4a5b6c")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def feed(observer: MetricsObserver, stop: threading.Event) -> None:
    """Synthetic changes: the UPDATE leaves 4 ms after the watch event (acked at 3 ms, written at 2 ms)."""
    observer.peer_state(PEER, "up", time.monotonic())
    batch = 0
    while not stop.wait(0.02):
        batch += 1
        ip = f"192.168.100.{batch % 250 + 2}"
        route = Route(
            Prefix.parse(f"{ip}/32"), Address.parse("192.0.2.11"), "vmnet-a", RouteKind.HOST, CLAIM, "worker-1"
        )
        t0 = time.monotonic() - 0.004
        observer.planned(Outcome.of(Plan.build([route], [])), Cause(t0, t0 + 0.001), 0.001, False)
        observer.commands_written(batch, [RouteChange(PEER, "announce", route)], Cause(t0, t0 + 0.001), t0 + 0.002)
        observer.command_acked(batch, True, t0 + 0.003)
        observer.updates_sent(PEER, [Prefix.parse(f"{ip}/32")], [], t0 + 0.004)
        observer.synced(PEER, 1, t0 + 0.004)


@pytest.fixture
def scraped_bgpadv():
    observer = MetricsObserver(Metrics())
    stop = threading.Event()
    feeder = threading.Thread(target=feed, args=(observer, stop), daemon=True)
    with HealthServer(("127.0.0.1", 0), observer) as server:
        feeder.start()
        yield server
        stop.set()
        feeder.join(5)


@pytest.fixture
def prometheus(tmp_path: Path, scraped_bgpadv: HealthServer):
    assert Path(PROMETHEUS).exists(), "prometheus missing: run scripts/install-system-deps.sh"
    port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        json.dumps(  # JSON is YAML
            {
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "scrape_configs": [
                    {
                        "job_name": "bgpadv",
                        "scrape_interval": "1s",
                        "scrape_timeout": "900ms",
                        "static_configs": [{"targets": [f"127.0.0.1:{scraped_bgpadv.port}"]}],
                    }
                ],
            }
        )
    )
    proc = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "prometheus.log").open("w"),
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert proc.poll() is None, (tmp_path / "prometheus.log").read_text()
            try:
                with urllib.request.urlopen(url + "/-/ready", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.2)
        else:
            pytest.fail("prometheus did not become ready within 60 s")
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)  # by PID
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def query(url: str, promql: str) -> list[dict]:
    q = urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(f"{url}/api/v1/query?{q}", timeout=5) as r:
        doc = json.loads(r.read())
    assert doc["status"] == "success", doc
    return doc["data"]["result"]


def wait_for(url: str, promql: str, timeout: float = 60.0) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = query(url, promql)
        if result and result[0]["value"][1] not in ("NaN", "+Inf", "-Inf"):
            return result
        time.sleep(0.5)
    pytest.fail(f"no value for {promql} within {timeout} s")


def test_prometheus_scrapes_bgpadv_and_histogram_quantile_answers(prometheus: str) -> None:
    up = wait_for(prometheus, 'up{job="bgpadv"} == 1')
    assert up[0]["metric"]["job"] == "bgpadv"

    promql = 'histogram_quantile(0.5, sum by (le) (rate(bgpadv_convergence_seconds_bucket{stage="sent"}[1m])))'
    (sample,) = wait_for(prometheus, promql)
    p50 = float(sample["value"][1])
    # Every change reached the wire 4 ms after its event: the median lies in the (2.5 ms, 5 ms] bucket.
    assert 0.0025 < p50 <= 0.005

    by_stage = wait_for(
        prometheus, "histogram_quantile(0.99, sum by (stage, le) (rate(bgpadv_convergence_seconds_bucket[1m])))"
    )
    assert {r["metric"]["stage"] for r in by_stage} == {"planned", "written", "acked", "sent"}
    assert float(query(prometheus, f'bgpadv_peer_up{{peer="{PEER}"}}')[0]["value"][1]) == 1.0
    assert query(prometheus, f'bgpadv_build_info{{version="{importlib.metadata.version("bgpadv")}"}}')
