"""The whole chain in a lab: `bgpadv run` (ExaBGP + controller) in worker-1, fed by a fake Kubernetes API.

```
 test process                      <p>-w1 namespace                                           <p>-tor namespace
                                   bgpadv run (supervisor)
 FakeApiServer ◀─HTTP 127.0.0.1─ bgpadv controller ◀─pipes─▶ API shim ◀─pipes─▶ ExaBGP ─BGP─▶ FRR (bgpd + zebra)
 (its listening socket is created inside w1, so the controller reaches it on w1's own loopback)
```

The test drives the cluster through `chain.api` (create/patch/delete, exactly as HTTP writes would) and asserts on
FRR's RIB and the ToR kernel's FIB (`lab.frr`). bgpadv's metrics listener is on w1's loopback; `chain.get(path)`
reaches it through a socket opened inside w1.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml

from bgpadv_lab.fakeapi import FakeApiServer
from bgpadv_lab.frr import FrrRouter
from bgpadv_lab.netns import in_netns
from bgpadv_lab.topology import TOR_V4, WORKERS, Lab

METRICS_PORT = 9179


def lab_config(kubeconfig: Path, node: str = "w1", **overrides: Any) -> dict:
    """bgpadv's configuration for the lab: AS 64513 on `node`, the ToR 10.0.0.1 in AS 64512."""
    v4, v6 = WORKERS[node]
    config: dict[str, Any] = {
        "localASN": 64513,
        "routerID": v4,
        "peers": [{"address": TOR_V4, "asn": 64512, "localAddress": v4, "holdTime": 9, "gracefulRestart": 60}],
        "networks": {"selector": {"matchLabels": {"bgpadv.io/advertise": "true"}}},
        "nextHop": "node",
        "nextHopSelf": {"ipv4": v4, "ipv6": v6},
        "kubernetes": {"kubeconfig": str(kubeconfig)},
        "metrics": {"listen": f"127.0.0.1:{METRICS_PORT}"},
    }
    config.update(overrides)
    return config


def fake_api_in(lab: Lab, role: str, host: str) -> FakeApiServer:
    """A fake API listening on `host` (an address of `role`'s namespace), not started yet."""
    with in_netns(lab.ns(role)):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, 0))
        sock.listen(128)
    return FakeApiServer(sock=sock, bookmark_interval=1.0)


def shared_api(lab: Lab) -> FakeApiServer:
    """One fake API for several `BgpadvInLab`s (pass it as `api=`; per-node mode: one cluster, one bgpadv per node;
    two replicas): it listens on the ToR's fabric address 10.0.0.1, which every worker reaches. The caller starts,
    loads and stops it."""
    return fake_api_in(lab, "tor", TOR_V4)


CHECKOUT = Path(__file__).resolve().parent.parent
"""The checkout bgpadv_lab is imported from (it is no part of the installed package)."""


class BgpadvInLab:
    """`bgpadv run` in a worker namespace of `lab`, with the fake API it watches. A context manager.

    By default the instance owns a fake API on its worker's loopback (started, seeded with `objects` and stopped with
    it); with `api=` it watches that one instead, which its owner starts, loads and stops (see `shared_api`). `env`:
    extra environment variables of `bgpadv run` (e.g. BGPADV_NODE_NAME, as the DaemonSet's downward API sets it).
    `runtime_dir`: `--runtime-dir` (default: `run` in the instance's directory); None: no `--runtime-dir`, `bgpadv
    run` makes its own private temporary one.
    `hold`: `safety.holdSeconds` in seconds, below the configuration's floor, through the lab's own entry point
    (`bgpadv_lab.short_hold`); None runs the shipped `bgpadv` command.
    """

    def __init__(
        self,
        lab: Lab,
        objects: Iterable[dict] = (),
        *,
        node: str = "w1",
        config: dict[str, Any] | None = None,
        api: FakeApiServer | None = None,
        env: dict[str, str] | None = None,
        runtime_dir: Path | str | None = "run",
        hold: float | None = None,
    ) -> None:
        self.lab = lab
        self.hold = hold
        self.node = node
        self.ns = lab.ns(node)
        self.address = WORKERS[node][0]
        self.dir = lab.workdir / f"bgpadv-{node}"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.runtime_dir = self.dir / runtime_dir if runtime_dir is not None else None
        self._owns_api = api is None
        self.api = api if api is not None else fake_api_in(lab, node, "127.0.0.1")
        self.env = dict(env or {})
        self._seed = list(objects)
        kubeconfig = self.dir / "kubeconfig"
        self.config = config if config is not None else lab_config(kubeconfig, node)
        self.config_path = self.dir / "bgpadv.yaml"
        self.proc: subprocess.Popen | None = None
        self.log_path = self.dir / "bgpadv.log"

    @property
    def frr(self) -> FrrRouter:
        assert self.lab.frr is not None, "the lab runs no FRR"
        return self.lab.frr

    def start(self, *, wait_established: bool = True, timeout: float = 30.0) -> BgpadvInLab:
        if self._owns_api:
            self.api.start()
            self.api.load(self._seed)
        self.api.write_kubeconfig(self.dir / "kubeconfig")
        self.config_path.write_text(yaml.safe_dump(self.config, sort_keys=False))
        self.spawn()
        if wait_established:
            self.wait_established(timeout)
        return self

    def spawn(self) -> subprocess.Popen:
        """Start `bgpadv run` (again, after a stop or a kill: the fake API keeps running)."""
        env = {**os.environ, "BGPADV_LOG_LEVEL": os.environ.get("BGPADV_LOG_LEVEL", "INFO"), **self.env}
        log = self.log_path.open("ab")
        entry = ["-m", "bgpadv"]
        if self.hold is not None:  # the lab's entry point, from the checkout (bgpadv_lab is not installed)
            entry = ["-m", "bgpadv_lab.short_hold", str(self.hold)]
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(CHECKOUT), env.get("PYTHONPATH", "")]))
        argv = [sys.executable, *entry, "run", "--config", str(self.config_path)]
        if self.runtime_dir is not None:
            argv += ["--runtime-dir", str(self.runtime_dir)]
        self.proc = self.lab.net.spawn(self.ns, argv, stdout=log, stderr=subprocess.STDOUT, env=env)
        log.close()
        return self.proc

    def wait_established(self, timeout: float = 30.0) -> None:
        def up() -> bool:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"bgpadv exited with {self.proc.returncode}; log:\n{self.log_tail()}")
            return self.frr.neighbor_state(self.address) == "Established"

        self.frr.wait_for(up, timeout, f"the ToR's session with {self.address}")

    def stop(self) -> None:
        """Stop `bgpadv run` at once (SIGTERM, then SIGINT to skip the drain) and the fake API it owns."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.terminate()
                time.sleep(0.2)
                with contextlib.suppress(ProcessLookupError):
                    self.proc.send_signal(signal.SIGINT)
            self.lab.net.kill(self.proc)
            self.proc = None
        if self._owns_api:
            self.api.stop()

    def __enter__(self) -> BgpadvInLab:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- observing bgpadv from outside -----------------------------------------------------------------------------
    def get(self, path: str, timeout: float = 5.0) -> tuple[int, str]:
        """GET bgpadv's metrics listener (w1's loopback) through a socket opened inside w1."""
        with in_netns(self.ns):
            conn = http.client.HTTPConnection("127.0.0.1", METRICS_PORT, timeout=timeout)
            conn.connect()
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            return resp.status, resp.read().decode()
        finally:
            conn.close()

    def answers(self, path: str) -> bool:
        """True when the listener answers `path` at all (any status): it is up."""
        try:
            self.get(path, timeout=2.0)
        except OSError:
            return False
        return True

    def get_ok(self, path: str) -> bool:
        """True when `path` answers 200 (False on any error: the listener may be restarting)."""
        try:
            return self.get(path, timeout=2.0)[0] == 200
        except OSError:
            return False

    def status(self) -> dict:
        code, body = self.get("/status")
        return json.loads(body) if code == 200 else {}

    def _pids(self, match: Callable[[list[bytes]], bool]) -> list[int]:
        out = subprocess.run(["ip", "netns", "pids", self.ns], capture_output=True, text=True).stdout.split()
        pids = []
        for pid in out:
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if match(cmdline):
                pids.append(int(pid))
        return sorted(pids)

    def controller_pids(self) -> list[int]:
        """PIDs of controller processes (`bgpadv controller --no-shim`: the first started by `bgpadv run` and taken
        over by the API shim, the later ones the shim's) in this namespace."""
        return self._pids(lambda argv: b"controller" in argv and b"--no-shim" in argv)

    def shim_pids(self) -> list[int]:
        """PIDs of API shims (`bgpadv controller`, ExaBGP's API process) in this namespace."""
        return self._pids(lambda argv: b"controller" in argv and b"--no-shim" not in argv and b"bgpadv" in argv)

    def exabgp_pids(self) -> list[int]:
        """PIDs of ExaBGP processes (`exabgp server …`) in this namespace."""
        return self._pids(lambda argv: b"server" in argv and any(part.endswith(b"exabgp") for part in argv))

    def bfdd_pids(self) -> list[int]:
        """PIDs of bgpadv's bfdd (the supervisor's child while a peer enables BFD) in this namespace."""
        return self._pids(lambda argv: argv[0].rsplit(b"/", 1)[-1] == b"bfdd")

    def kill_controller(self) -> int:
        """SIGKILL the controller (ExaBGP respawns it); return the killed PID."""
        pids = self.controller_pids()
        assert pids, "no controller process found"
        os.kill(pids[0], signal.SIGKILL)
        return pids[0]

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def metric(running: BgpadvInLab, name: str) -> float:
    """The sum of the samples whose line starts with `name` (a metric, or one series: `name{label="…"}`) in the
    instance's /metrics; 0 when absent."""
    _code, text = running.get("/metrics")
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name))


def wait_for_routes(
    frr: FrrRouter, expected: dict[str, list[str]], afi: str = "ipv4", timeout: float = 20.0
) -> dict[str, list[str]]:
    """Wait until FRR's best paths for `afi` are exactly `expected` (prefix -> next hops); return them."""
    last: dict[str, list[str]] = {}

    def match() -> bool:
        nonlocal last
        last = frr.bgp_routes(afi)
        return last == expected

    try:
        frr.wait_for(match, timeout, f"FRR's {afi} table to be {expected}", every=0.05)
    except TimeoutError as e:
        raise TimeoutError(f"{e}; FRR has {last}") from None
    return last


def process_tree(pid: int) -> list[int]:
    """`pid` and every descendant (bgpadv run → ExaBGP → the API shim → the controller), from /proc."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for task in Path(f"/proc/{p}/task").glob("*"):
            with contextlib.suppress(OSError):
                todo += [int(c) for c in (task / "children").read_text().split()]
    return out


def parent_of(pid: int) -> int:
    """`pid`'s parent, from /proc (the field after the command name, which may hold spaces and parentheses)."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def monotonic_ms(since: float) -> float:
    return (time.monotonic() - since) * 1000
