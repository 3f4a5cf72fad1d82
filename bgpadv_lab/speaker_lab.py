"""The lab's handle on the real Speaker in ExaBGP: ExaBGP runs in worker-1 with bgpadv_lab/speaker_driver.py as its
API process (the Speaker in a minimal controller); callers rewrite the driver's desired-set file and wait on FRR.
Used by tests/lab/test_speaker_frr.py and bench/speaker.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

from bgpadv.config import load
from bgpadv.speaker.exabgp_config import exabgp_argv, exabgp_environment, render_exabgp_config
from bgpadv_lab.frr import FrrRouter

DRIVER = Path(__file__).with_name("speaker_driver.py")
W1, W2, W1_6 = "10.0.0.11", "10.0.0.12", "fd00::11"


def v4_hosts(start: int, count: int) -> list[str]:
    return [f"10.{128 + (i >> 16)}.{(i >> 8) & 255}.{i & 255}/32" for i in range(start, start + count)]


class Speaker:
    """The test's handle on ExaBGP + the driver in worker-1."""

    def __init__(self, lab, workdir: Path) -> None:
        self.lab = lab
        self.dir = workdir
        self.desired = workdir / "desired.json"
        self.status_file = workdir / "status.json"
        self.gen = 0
        cfg = {
            "localASN": 64513,
            "routerID": W1,
            "peers": [{"address": "10.0.0.1", "asn": 64512, "localAddress": W1, "holdTime": 9, "gracefulRestart": 60}],
        }
        (workdir / "bgpadv.yaml").write_text(yaml.safe_dump(cfg))
        config = load(workdir / "bgpadv.yaml")
        api = [sys.executable, str(DRIVER), str(workdir / "bgpadv.yaml"), str(self.desired), str(self.status_file)]
        (workdir / "exabgp.conf").write_text(render_exabgp_config(config, api))
        env = {**os.environ, **exabgp_environment(config, workdir)}
        self.log = (workdir / "exabgp.log").open("ab")
        self.proc = lab.net.spawn(
            lab.ns("w1"), exabgp_argv(workdir / "exabgp.conf"), env=env, stdout=self.log, stderr=subprocess.STDOUT
        )

    def set(self, routes: list[tuple[str, str | None]]) -> int:
        self.gen += 1
        tmp = self.desired.with_suffix(".tmp")
        tmp.write_text(json.dumps({"gen": self.gen, "routes": routes}))
        time.sleep(0.01)  # distinct mtime
        tmp.replace(self.desired)
        return self.gen

    def status(self) -> dict:
        try:
            return json.loads(self.status_file.read_text())
        except (FileNotFoundError, ValueError):
            return {}

    def wait_idle(self, gen: int, timeout: float = 30) -> dict:
        return FrrRouter.wait_for(
            lambda: (s := self.status()).get("gen") == gen and s.get("idle") and s, timeout, f"driver idle at {gen}"
        )
