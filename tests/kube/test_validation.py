"""What the upstream CRDs' own validation (OpenAPI schema + CEL, on the real apiserver) rejects, and what it admits.

Scope: hostile network and claim shapes built with `bgpadv_lab.objects`, each sent with `kubectl apply
--dry-run=server` (the whole admission chain, nothing stored). A shape the API admits reaches bgpadv in a real
cluster, so bgpadv's own checks (the planner's checks and the guard) are what keeps it off the fabric: the
`admitted` rows are the cases those checks must cover, and tests/unit/planner/test_checks.py and
tests/unit/safety/test_guard.py do.
A row whose outcome changes with a new OVN-K or ipamclaims pin fails here first.
"""

from __future__ import annotations

import json

import pytest

from bgpadv_lab import objects as k8s
from bgpadv_lab.kubeapi import RealApiServer, applicable

pytestmark = [pytest.mark.kube, pytest.mark.lab]

NS = "kube-validation"
REJECTED, ADMITTED = "rejected", "admitted"


def claim_with(ips: list[str]) -> dict:
    return k8s.ipam_claim(NS, "vm-h.default", "vm-h", "cluster_udn_hostile", ips)


SHAPES = [
    pytest.param(k8s.cudn_layer2("hostile", ["0.0.0.0/0"]), ADMITTED, id="layer2-subnet-0.0.0.0/0"),
    pytest.param(k8s.cudn_layer2("hostile", ["::/0"]), ADMITTED, id="layer2-subnet-::/0"),
    pytest.param(k8s.cudn_layer2("hostile", ["192.168.1.5/32"]), ADMITTED, id="layer2-subnet-/32"),
    pytest.param(k8s.cudn_layer2("hostile", ["192.168.1.5/24"]), ADMITTED, id="layer2-subnet-host-bits-set"),
    pytest.param(
        k8s.cudn_layer2("hostile", ["192.168.0.0/16", "192.168.1.0/24"]), REJECTED, id="layer2-overlapping-subnets"
    ),
    pytest.param(k8s.cudn_layer2("hostile", ["not-an-ip"]), REJECTED, id="layer2-subnet-not-an-ip"),
    pytest.param(
        k8s.cudn_layer2("hostile", ["192.168.1.0/24"], default_gateway_ips=["10.9.9.1"]),
        REJECTED,
        id="layer2-gateway-outside-the-subnet",
    ),
    pytest.param(
        k8s.cudn_layer2("hostile", ["192.168.1.0/24"], infrastructure_subnets=["10.9.9.0/30"]),
        REJECTED,
        id="layer2-infrastructure-subnet-outside",
    ),
    pytest.param(k8s.cudn_layer3("hostile", [("10.128.0.0/16", 33)]), REJECTED, id="layer3-hostSubnet-33"),
    pytest.param(
        k8s.cudn_layer3("hostile", [("10.128.0.0/16", 8)]), REJECTED, id="layer3-hostSubnet-shorter-than-cidr"
    ),
    pytest.param(k8s.cudn_layer3("hostile", [("0.0.0.0/0", 24)]), ADMITTED, id="layer3-cidr-0.0.0.0/0"),
    pytest.param(
        k8s.cudn_layer3("hostile", [("10.128.0.0/16", 24), ("10.128.5.0/24", 28)]),
        REJECTED,
        id="layer3-overlapping-subnets",
    ),
    pytest.param(claim_with([f"192.168.1.{i}/24" for i in range(10, 50)]), ADMITTED, id="ipamclaim-40-ips"),
    pytest.param(claim_with(["banana"]), ADMITTED, id="ipamclaim-ip-not-an-ip"),
    pytest.param(claim_with(["0.0.0.0/0"]), ADMITTED, id="ipamclaim-ip-0.0.0.0/0"),
]


def outcome(api: RealApiServer, obj: dict) -> tuple[str, str]:
    """(admitted|rejected, the apiserver's message) for a create of `obj` and, for a kind with a status
    subresource, the write of its status."""
    body = applicable(obj)
    if "status" in obj and not api.has_status_subresource(obj["apiVersion"], obj["kind"]):
        body["status"] = obj["status"]
    out = api.kubectl("apply", "--server-side", "--dry-run=server", "-f", "-", input=json.dumps(body), check=False)
    if out.returncode != 0:
        return REJECTED, out.stderr.strip()
    if "status" in obj and api.has_status_subresource(obj["apiVersion"], obj["kind"]):
        # a status can only be dry-run on an object that exists: create it for real, try the status, delete it
        api.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(body))
        try:
            meta = obj["metadata"]
            target = [api._ref(obj["apiVersion"], obj["kind"]), meta["name"]]
            if meta.get("namespace"):
                target += ["-n", meta["namespace"]]
            patch = json.dumps({"status": obj["status"]})
            out = api.kubectl(
                "patch", *target, "--subresource=status", "--type=merge", "-p", patch, "--dry-run=server", check=False
            )
            if out.returncode != 0:
                return REJECTED, out.stderr.strip()
        finally:
            api.finalize(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace"))
            api.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace"))
    return ADMITTED, ""


@pytest.fixture(scope="module")
def api(kube) -> RealApiServer:
    _, real = kube
    real.ensure_namespaces(NS)
    return real


@pytest.mark.parametrize(("obj", "expected"), SHAPES)
def test_upstream_validation_of_a_hostile_shape(api: RealApiServer, obj: dict, expected: str) -> None:
    got, message = outcome(api, obj)
    print(f"{obj['kind']}: {got} {message}")
    assert got == expected, message or "admitted"
