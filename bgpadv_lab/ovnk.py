"""OVN-Kubernetes' own cluster manager (`ovnkube --init-cluster-manager`) against the real-API tier: the producer of
what bgpadv reads (CUDN conditions and NADs, IPAMClaim status, the launcher pod's `k8s.ovn.org/pod-networks`, node
annotations), instead of fixtures.

`scripts/kube/ovnkube/build.sh` builds the binary from the pinned go-controller module (into the kube cache, outside
the checkout). The cluster manager talks to the Kubernetes API only; at start it looks up a few ovs/ovn command names
on PATH, which stub files (a temporary directory first on its PATH) satisfy: it never runs them in this mode. It
needs the `ovn-kubernetes` namespace (its leader Lease), Node objects with an InternalIP (it annotates them itself)
and, as no controller-manager runs, a `default` ServiceAccount in each namespace where pods are created.

```
 ovnkube --init-cluster-manager (ip netns exec <tor>) ──admin kubeconfig──▶ kube-apiserver (same namespace)
```
Started and stopped by PID (a PID file in its directory) like etcd and kube-apiserver; its log stays in the
directory and `log_tail()` returns its end for a failing test.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from bgpadv_lab.kubeapi import SCRIPTS, RealApiServer, wait_until

LEASE_NAMESPACE = "ovn-kubernetes"
# The names OVN-K's exec helper (go-controller/pkg/util/ovs.go, SetExec) looks up at start.
STUB_COMMANDS = (
    "ovs-vsctl",
    "ovs-ofctl",
    "ovs-appctl",
    "ovn-appctl",
    "ovn-nbctl",
    "ovn-sbctl",
    "ovsdb-client",
    "ovsdb-tool",
)
BUILD = SCRIPTS / "ovnkube" / "build.sh"


def build_ovnkube() -> tuple[Path | None, str]:
    """(the ovnkube binary, "") once built (building it if needed), or (None, why it cannot be built)."""
    out = subprocess.run(["bash", str(BUILD)], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        return None, f"ovnkube cannot be built from the pinned OVN-Kubernetes module: {out.stderr.strip()[-1500:]}"
    return Path(out.stdout.strip().splitlines()[-1]) / "bin" / "ovnkube", ""


class ClusterManager:
    """`ovnkube --init-cluster-manager` in `workdir`, inside the apiserver's network namespace, with multi-network,
    network segmentation, persistent IPs and preconfigured UDN addresses (a static address in a pod's
    `v1.multus-cni.io/default-network`) enabled."""

    def __init__(
        self,
        binary: Path,
        api: RealApiServer,
        workdir: Path,
        *,
        cluster_subnets: str = "10.128.0.0/14/23,fd00:10:128::/48/64",
        service_cidrs: str = "10.96.0.0/16,fd00:10:96::/112",
        extra_args: tuple[str, ...] = (),
    ) -> None:
        self.binary = binary
        self.api = api
        self.dir = workdir
        self.log = workdir / "ovnkube.log"
        self.pid_file = workdir / "ovnkube.pid"
        self.argv = [
            str(binary),
            "--init-cluster-manager",
            "ovnkube-cluster-manager",
            "--k8s-kubeconfig",
            str(api.kubeconfig),
            "--cluster-subnets",
            cluster_subnets,
            "--k8s-service-cidrs",
            service_cidrs,
            "--enable-multi-network",
            "--enable-network-segmentation",
            "--enable-persistent-ips",
            "--enable-preconfigured-udn-addresses",
            "--loglevel",
            "4",
            "--logfile",
            str(self.log),
            "--metrics-bind-address",
            "",
            *extra_args,
        ]

    def up(self, timeout: float = 60.0) -> None:
        """Start it (its lease namespace and stub commands first) and wait until it holds its leader Lease."""
        self.dir.mkdir(parents=True, exist_ok=True)
        stubs = self.dir / "stub-bin"
        stubs.mkdir(exist_ok=True)
        for name in STUB_COMMANDS:
            stub = stubs / name
            stub.write_text("#!/bin/sh\n# a stub: the cluster manager only looks the command up\nexit 0\n")
            stub.chmod(0o755)
        self.api.ensure_namespaces(LEASE_NAMESPACE)
        env = dict(os.environ, PATH=f"{stubs}:{os.environ.get('PATH', '/usr/bin:/bin')}")
        prefix = ["ip", "netns", "exec", self.api.netns] if self.api.netns else []
        with open(self.dir / "ovnkube.stderr", "ab") as err:
            proc = subprocess.Popen(
                [*prefix, *self.argv], stdout=err, stderr=err, stdin=subprocess.DEVNULL, env=env, start_new_session=True
            )
        self.pid_file.write_text(str(proc.pid))
        self._proc = proc

        def leading() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(f"ovnkube exited {proc.returncode}:\n{self.log_tail()}")
            leases = self.api.list("coordination.k8s.io/v1", "Lease", LEASE_NAMESPACE)
            return any((lease.get("spec") or {}).get("holderIdentity") for lease in leases)

        wait_until(leading, timeout, "the OVN-K cluster manager to hold its leader Lease")

    def alive(self) -> bool:
        return getattr(self, "_proc", None) is not None and self._proc.poll() is None

    def down(self) -> None:
        """Stop exactly the process of the PID file (TERM, then KILL after 10 s)."""
        if not self.pid_file.exists():
            return
        pid = int(self.pid_file.read_text())
        proc = getattr(self, "_proc", None)
        if proc is not None and proc.pid == pid and proc.poll() is None:
            os.kill(pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(pid, signal.SIGKILL)
                proc.wait(5)
        self.pid_file.unlink()

    def log_tail(self, lines: int = 60) -> str:
        """The end of its log (else of its stderr, where it writes before the log file is open)."""
        for path in (self.log, self.dir / "ovnkube.stderr"):
            if path.exists() and path.stat().st_size:
                return f"--- {path}\n" + "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
        return "(ovnkube wrote nothing)"


def wait_written(read, timeout: float, what: str, manager: ClusterManager):
    """`wait_until` that names the cluster manager's log when OVN-K did not write in time."""
    try:
        return wait_until(read, timeout, what)
    except TimeoutError as exc:
        raise TimeoutError(f"{exc}\n{manager.log_tail()}") from None
