"""Fixtures of the real-Kubernetes tier: one etcd + kube-apiserver per test session, in the ToR namespace of one lab.

```
 <p>-w1: bgpadv run ──HTTPS 10.0.0.1:6443 (a ServiceAccount token)──▶ <p>-tor: kube-apiserver ──▶ etcd (tor's loopback)
                    ──BGP──▶ FRR (tor)
 the test process: kubectl through `ip netns exec <p>-tor`, Python clients through sockets opened inside it
```

`scripts/kube/build.sh` builds kube-apiserver, kubectl, etcd and controller-gen from their Go modules and generates
the upstream CRDs into the kube cache (outside the checkout) the first time; later sessions find them built.
The work directory (etcd data, PKI, logs) is the lab's own temporary directory, unique per run; teardown stops the
apiserver and etcd by their PID files (`kube.sh down`), then the lab.
"""

from __future__ import annotations

import pytest

from bgpadv_lab import objects as k8s
from bgpadv_lab.kubeapi import RealApiServer, build, kube_possible, shipped_crds, shipped_rbac
from bgpadv_lab.ovnk import ClusterManager, build_ovnkube
from bgpadv_lab.topology import TOR_V4, WORKERS, Lab

API_PORT = 6443
W1, W2 = WORKERS["w1"][0], WORKERS["w2"][0]
W1_6, W2_6 = WORKERS["w1"][1], WORKERS["w2"][1]


@pytest.fixture(scope="session")
def kube():
    """(lab, api): the lab (FRR ToR, two workers) and the real apiserver on the ToR's 10.0.0.1:6443, with the two
    worker Nodes, the shipped BGPSessionState CRD and the shipped RBAC (namespace `bgpadv`, ServiceAccount `bgpadv`
    bound to the ClusterRole, and in `bgpadv` to the Role `bgpadv-session-state`)."""
    reason = kube_possible()
    if reason:
        pytest.skip(reason)
    build()
    with Lab("bgpkube") as lab:
        api = RealApiServer(lab.workdir / "kube", netns=lab.ns("tor"), listen=TOR_V4, port=API_PORT)
        try:
            api.up()
            api.install_crds(shipped_crds())
            api.apply(shipped_rbac())
            api.apply([k8s.node("worker-1", W1, W1_6), k8s.node("worker-2", W2, W2_6)])
            yield lab, api
        finally:
            api.down()


@pytest.fixture(scope="module")
def ovnk(kube, request):
    """(lab, api, manager): OVN-Kubernetes' own cluster manager (`bgpadv_lab.ovnk.ClusterManager`) running against
    the session's apiserver, for one test module. Skipped, with the build's own error, only where `ovnkube` cannot
    be built from the pinned module. Its log is printed when a test of the module failed; at the end it is stopped by
    its PID and the node annotations it wrote are taken off again (the session's other modules see the Nodes as
    they were)."""
    lab, api = kube
    binary, why = build_ovnkube()
    if binary is None:
        pytest.skip(why)
    before = {n["metadata"]["name"]: dict(n["metadata"].get("annotations") or {}) for n in api.list("v1", "Node")}
    manager = ClusterManager(binary, api, lab.workdir / "ovnkube")
    failed = request.session.testsfailed
    try:
        manager.up()
        yield lab, api, manager
    finally:
        manager.down()
        if request.session.testsfailed > failed:
            print(f"\nthe OVN-K cluster manager's log ({manager.log}):\n{manager.log_tail(200)}")
        for name, annotations in before.items():
            node = api.get("v1", "Node", name) or {}
            added = set((node.get("metadata") or {}).get("annotations") or {}) - set(annotations)
            if added:
                api.patch("v1", "Node", name, None, {"metadata": {"annotations": dict.fromkeys(added)}})
