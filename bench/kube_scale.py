"""Scale against the real Kubernetes API: N IPAMClaims + N VMIs written through kube-apiserver, then `bgpadv run`
started over them; the time until FRR holds every route.

Builds the lab (FRR ToR, workers) and a real etcd + kube-apiserver in the ToR's namespace (scripts/kube/kube.sh,
binaries built once into the kube cache by scripts/kube/build.sh), writes `objects.vms_on_one_node(N)` through the
API with the official client (claims created, then their status written through the status subresource, as OVN-K
does; VMIs with their status, KubeVirt's CRD having no status subresource), then times:
  - write:   creating the 2N objects (+ N status writes), 8 client threads;
  - list:    `bgpadv run` started → every route at FRR (bgpadv's initial LIST pages through the real API, 500 a page,
             then the plan, ExaBGP, the session); FRR's table polled every 100 ms;
  - pages:   the LIST requests (pages) bgpadv's initial list made per resource, and the apiserver's time per page
             and in all, from kube-apiserver's own apiserver_request_duration_seconds{verb="LIST"} (read before
             and after the start through /metrics);
  - one:     one more VM created → its /32 at FRR, with the N others watched;
  - memory:  peak (VmHWM) and current RSS of bgpadv's processes and of kube-apiserver and etcd.

Run: `.venv/bin/python bench/kube_scale.py [--vms N]` (root, FRR, Go for the first build; default 10,000).
Not a test: nothing is asserted. Skips (exit 0, a line saying why) where the lab cannot run.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: bgpadv_lab is not installed

from kubernetes.client import CoreV1Api, CustomObjectsApi
from prometheus_client.parser import text_string_to_metric_families

from bgpadv.config import KubernetesConfig
from bgpadv.sources.client import make_api_client
from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import BgpadvInLab, lab_config, process_tree
from bgpadv_lab.frr import VtyClient
from bgpadv_lab.kubeapi import AsServiceAccount, RealApiServer, applicable, kube_possible, shipped_crds, shipped_rbac
from bgpadv_lab.netns import in_netns
from bgpadv_lab.topology import TOR_V4, Lab

NS = "imported-vms"
W1 = "10.0.0.11"


def write_all(api: RealApiServer, netns: str, objs: list[dict], threads: int = 8) -> float:
    client = make_api_client(KubernetesConfig(kubeconfig=str(api.kubeconfig)))
    custom, core = CustomObjectsApi(client), CoreV1Api(client)
    local = threading.local()

    def enter() -> None:
        if not getattr(local, "entered", False):  # each pool thread moves into the ToR's namespace once
            local.ctx = in_netns(netns)
            local.ctx.__enter__()
            local.entered = True

    def write(obj: dict) -> None:
        enter()
        group, _, version = obj["apiVersion"].rpartition("/")
        plural = {"IPAMClaim": "ipamclaims", "VirtualMachineInstance": "virtualmachineinstances"}[obj["kind"]]
        body = applicable(obj)
        if obj["kind"] == "VirtualMachineInstance":
            body["status"] = obj["status"]  # no status subresource
        custom.create_namespaced_custom_object(group, version, NS, plural, body)
        if obj["kind"] == "IPAMClaim":
            custom.patch_namespaced_custom_object_status(
                group, version, NS, plural, obj["metadata"]["name"], {"status": obj["status"]}
            )

    started = time.monotonic()
    with in_netns(netns):
        core.create_namespace({"metadata": {"name": NS}})
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(write, objs, chunksize=64))
    elapsed = time.monotonic() - started
    client.close()
    return elapsed


def routes_at_frr(vty: VtyClient) -> int:
    peers = vty.json("show bgp ipv4 unicast summary json").get("peers") or {}
    return int((peers.get(W1) or {}).get("pfxRcd") or 0)


def wait_count(vty: VtyClient, count: int, timeout: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if routes_at_frr(vty) >= count:
            return time.monotonic() - started
        time.sleep(0.1)
    raise TimeoutError(f"FRR has {routes_at_frr(vty)} of {count} routes after {timeout:.0f}s")


def _status_kib(pid: int, field: str) -> int:
    """A `/proc/PID/status` figure in KiB (VmRSS, VmHWM: the peak), 0 when the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def memory(label: str, pids: list[int]) -> str:
    """Peak and current RSS of `pids`, in MiB, each named by its command."""
    parts = []
    for pid in pids:
        try:
            name = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            what = " ".join(a.decode(errors="replace").rsplit("/", 1)[-1] for a in name[:3] if a)[:40]
        except OSError:
            continue
        parts.append(
            f"{what}: peak {_status_kib(pid, 'VmHWM') / 1024:.0f} MiB, now {_status_kib(pid, 'VmRSS') / 1024:.0f}"
        )
    return f"memory ({label}): " + "; ".join(parts)


def list_requests(api: RealApiServer) -> dict[str, tuple[float, float]]:
    """kube-apiserver's LIST requests so far per resource: (count, seconds), from its own duration histogram."""
    text = api.kubectl("get", "--raw", "/metrics").stdout
    out: dict[str, tuple[float, float]] = {}
    for family in text_string_to_metric_families(text):
        if family.name != "apiserver_request_duration_seconds":
            continue
        for sample in family.samples:
            if sample.labels.get("verb") != "LIST" or not sample.name.endswith(("_count", "_sum")):
                continue
            count, seconds = out.get(sample.labels.get("resource", "?"), (0.0, 0.0))
            if sample.name.endswith("_count"):
                count += sample.value
            else:
                seconds += sample.value
            out[sample.labels.get("resource", "?")] = (count, seconds)
    return out


def pages(before: dict[str, tuple[float, float]], after: dict[str, tuple[float, float]]) -> str:
    parts = []
    for resource in ("ipamclaims", "virtualmachineinstances"):
        count = after.get(resource, (0, 0))[0] - before.get(resource, (0, 0))[0]
        seconds = after.get(resource, (0, 0))[1] - before.get(resource, (0, 0))[1]
        per = f"{1000 * seconds / count:.0f} ms/page" if count else "-"
        parts.append(f"{resource} {count:.0f} pages ({per} at the apiserver, {seconds:.1f} s in all)")
    return "pages: " + "; ".join(parts)


def _pidfile(path: Path) -> list[int]:
    try:
        return [int(path.read_text().strip())]
    except (OSError, ValueError):
        return []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vms", type=int, default=10_000)
    args = parser.parse_args()
    reason = kube_possible()
    if reason:
        print(f"kube_scale: skipped: {reason}")
        return 0
    objs = k8s.vms_on_one_node(args.vms)
    cluster = objs[:2]  # the Node and the CUDN; then claim, VMI, claim, VMI, ...
    vms = objs[2:]
    with Lab("bgpks") as lab:
        api = RealApiServer(lab.workdir / "kube", netns=lab.ns("tor"), listen=TOR_V4, port=6443)
        try:
            api.up()
            api.apply(cluster)
            api.install_crds(shipped_crds())
            api.apply(shipped_rbac())
            write = write_all(api, lab.ns("tor"), vms)
            print(f"write: {len(vms)} objects (+{args.vms} status writes) in {write:.1f} s ({len(vms) / write:.0f}/s)")
            expected = args.vms + 1  # + the CUDN's subnet
            who = AsServiceAccount(api, "bgpadv", "bgpadv")
            config = lab_config(lab.workdir / "bgpadv-w1" / "kubeconfig")
            listed_before = list_requests(api)
            started = time.monotonic()
            with BgpadvInLab(lab, api=who, config=config) as running:
                vty = running.frr.vty()
                wait_count(vty, expected, 600)
                total = time.monotonic() - started
                print(f"list: bgpadv started -> {expected} routes at FRR in {total:.1f} s")
                print(pages(listed_before, list_requests(api)))
                extra = k8s.vms_on_one_node(args.vms + 1)[-2:]
                t0 = time.monotonic()
                api.apply(extra)
                wait_count(vty, expected + 1, 60)
                print(f"one: one more VM (kubectl apply) -> its /32 at FRR in {time.monotonic() - t0:.2f} s")
                assert running.proc is not None
                print(memory("bgpadv", process_tree(running.proc.pid)))
                print(memory("API", _pidfile(api.dir / "kube-apiserver.pid") + _pidfile(api.dir / "etcd.pid")))
        finally:
            api.down()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("BGPADV_LOG_LEVEL", "WARNING")
    sys.exit(main())
