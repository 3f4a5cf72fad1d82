"""Start-up figures: how long the controller takes from its start to its first API request, and
what `bgpadv run`'s supervisor loads before it starts ExaBGP (printed, never asserted).

The controller (`bgpadv controller --no-shim`: `bgpadv run` starts the first one at once, the shim any later one) is
pointed at a listening socket posing as the API; the figure is the time from its spawn to the first connection (its
first LIST). The supervisor figure is the CPU time and peak RSS of a fresh interpreter importing what `bgpadv run`
imports (the first controller is started before those imports). Run:
`.venv/bin/python bench/start.py [--runs N]` (no root, no lab).
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from figures import figure


def first_request(workdir: Path, code: Path | None = None) -> float:
    """Seconds from the controller's spawn to its first connection to the API (`code`: a tree exported by
    `--baseline`, run instead of this checkout)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(60)
    port = server.getsockname()[1]
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "users": [{"name": "u", "user": {"token": "bench"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    (workdir / "kubeconfig").write_text(yaml.safe_dump(kubeconfig))
    config = {
        "localASN": 64513,
        "routerID": "10.0.0.11",
        "peers": [{"address": "10.0.0.1", "asn": 64512, "localAddress": "10.0.0.11"}],
        "networks": {"selector": {"matchLabels": {"bgpadv.io/advertise": "true"}}},
        "nextHop": "node",
        "kubernetes": {"kubeconfig": str(workdir / "kubeconfig")},
        "metrics": {"listen": "127.0.0.1:0"},
    }
    (workdir / "bgpadv.yaml").write_text(yaml.safe_dump(config))
    argv = [sys.executable, "-m", "bgpadv", "controller", "--no-shim", "--config", str(workdir / "bgpadv.yaml")]
    with (workdir / "controller.log").open("w") as log:
        t0 = time.monotonic()
        env = {**os.environ, "PYTHONPATH": str(code)} if code is not None else None
        cwd = code if code is not None else None  # `-m bgpadv` finds the current directory's package first
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=log, env=env, cwd=cwd)
        try:
            conn, _ = server.accept()
            took = time.monotonic() - t0
            conn.close()
        finally:
            proc.kill()
            proc.wait()
            server.close()
    return took


def supervisor_imports() -> tuple[float, float]:
    """CPU seconds and peak RSS (MB) of importing what `bgpadv run` imports, in a fresh interpreter."""
    code = "import bgpadv.commands.cli, bgpadv.runtime.wiring"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, after.ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--baseline", help="git revision whose controller is timed too, runs interleaved")
    args = parser.parse_args()
    cpu, rss = supervisor_imports()  # first: RUSAGE_CHILDREN's peak RSS is the largest child's so far
    with tempfile.TemporaryDirectory(prefix="bgpadv-start-") as tmp:
        base: Path | None = None
        if args.baseline:
            base = Path(tmp) / "baseline"
            base.mkdir()
            root = Path(__file__).resolve().parent.parent
            archive = subprocess.run(
                ["git", "-C", str(root), "archive", args.baseline, "bgpadv"], check=True, capture_output=True
            ).stdout
            subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        times, before = [], []
        for _ in range(args.runs):
            times.append(first_request(Path(tmp)))
            if base is not None:
                before.append(first_request(Path(tmp), base))
    if before:
        print(
            f"controller start -> first API request, {args.baseline}: median {statistics.median(before):.2f} s "
            f"(min {min(before):.2f}, max {max(before):.2f}, {args.runs} runs, interleaved)"
        )
    print(
        f"controller start -> first API request: median {statistics.median(times):.2f} s "
        f"(min {min(times):.2f}, max {max(times):.2f}, {args.runs} runs)"
    )
    print(f"bgpadv run's imports before ExaBGP starts: {cpu:.2f} s CPU, peak RSS {rss:.0f} MB")
    figure("controller start → first API request (median)", statistics.median(times), "s", goal="≤ 0.5 s")
    figure("bgpadv run's imports before ExaBGP starts", cpu, "s CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
