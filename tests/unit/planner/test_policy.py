"""Policies: attributes per network and per VM label, their precedence, the configuration's rules
about them, and per-peer export filters. Planner forms' agreement is pinned in test_incremental.py."""

from __future__ import annotations

import pytest

from bgpadv.config import ConfigError, parse
from bgpadv.core import resources
from bgpadv.core.model import RouteKind
from bgpadv.core.state import ClusterState
from bgpadv.planner import plan
from bgpadv.planner.incremental import IncrementalPlanner
from bgpadv.safety.guard import Guard
from bgpadv.sources.decode.dispatch import decode
from bgpadv_lab import objects as k8s

NS = k8s.VM_NAMESPACE
WAVE = "bgpadv.io/wave"


def _state(*objects: dict) -> ClusterState:
    state = ClusterState(**{r.field: {} for r in resources.ALL})
    for obj in objects:
        res = resources.resource_for(obj)
        assert res is not None
        getattr(state, res.field)[res.key(obj)] = decode(res, obj, res.key(obj))
    return state


def _cluster(wave: str | None = "3") -> ClusterState:
    return _state(
        k8s.node("worker-1", "10.0.0.11", "fd00::11"),
        k8s.namespace(NS),
        k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels={**k8s.ADVERTISED, "tier": "gold"}),
        k8s.ipam_claim(NS, "vm-a.default", "vm-a", "cluster_udn_vmnet-a", ["192.168.100.10/24"]),
        k8s.vmi(NS, "vm-a", "worker-1", labels={WAVE: wave} if wave else None),
        k8s.ipam_claim(NS, "vm-b.default", "vm-b", "cluster_udn_vmnet-a", ["192.168.100.20/24"]),
        k8s.vmi(NS, "vm-b", "worker-1"),
    )


POLICIES = [
    {"name": "gold", "match": {"networkSelector": {"matchLabels": {"tier": "gold"}}}, "set": {"med": 10}},
    {"name": "subnet", "match": {"kinds": ["subnet"], "networks": ["vmnet-a"]}, "set": {"communities": ["64513:1"]}},
    {
        "name": "wave-3",
        "match": {"vmSelector": {"matchLabels": {WAVE: "3"}}},
        "set": {"communities": ["64513:3"], "largeCommunities": ["64513:3:3"], "med": 30, "asPathPrepend": 2},
    },
]


def _attributes(config, state):
    return {str(r.prefix): r.attributes for r in plan(state, config).routes}


def test_policies_apply_in_list_order_over_attributes_later_scalars_win_and_communities_add_up():
    config = k8s.config(policies=POLICIES, attributes={"communities": ["64513:7"]})
    got = _attributes(config, _cluster())
    assert got["192.168.100.0/24"].communities == ("64513:7", "64513:1") and got["192.168.100.0/24"].med == 10
    assert got["192.168.100.10/32"].communities == ("64513:7", "64513:3")  # a VM policy matches no subnet
    assert (got["192.168.100.10/32"].med, got["192.168.100.10/32"].as_path_prepend) == (30, 2)
    assert got["192.168.100.10/32"].large_communities == ("64513:3:3",)
    assert got["192.168.100.20/32"].communities == ("64513:7",) and got["192.168.100.20/32"].med == 10


def test_a_vmi_label_change_retags_only_that_vms_route():
    config = k8s.config(policies=POLICIES)
    before, after = _attributes(config, _cluster("3")), _attributes(config, _cluster("4"))
    assert {p for p in before if before[p] != after[p]} == {"192.168.100.10/32"}


def test_every_replica_computes_the_same_attributes_for_a_route():
    cluster, node = k8s.config(policies=POLICIES), k8s.config(policies=POLICIES, nodeName="worker-1")
    a = {str(r.prefix): r.attributes for r in plan(_cluster(), cluster).routes if r.kind is RouteKind.HOST}
    b = {str(r.prefix): r.attributes for r in plan(_cluster(), node).routes if r.kind is RouteKind.HOST}
    assert a == b


def _claimless(wave: str | None) -> ClusterState:
    """vm-a without an IPAMClaim: its address from OVN-K's pod-networks annotation on its launcher pod."""
    return k8s.state(
        [k8s.node("worker-1", "10.0.0.11", "fd00::11")],
        k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels={**k8s.ADVERTISED, "tier": "gold"}, namespaces=[NS]),
        k8s.vmi(NS, "vm-a", "worker-1", labels={WAVE: wave} if wave else None),
        k8s.launcher_pod(NS, "vm-a", "worker-1", ips=["192.168.100.10/24"], nad="vmnet-a"),
    )


def test_a_vm_without_a_claim_gets_its_policies_and_a_vmi_relabel_retags_it_in_both_planner_forms():
    config = k8s.config(policies=POLICIES)
    incremental = IncrementalPlanner(config)
    for wave, med in (("3", 30), ("4", 10)):
        state = _claimless(wave)
        cold = plan(state, config)
        assert incremental.plan(state, None) == cold
        (route,) = [r for r in cold.routes if r.kind is RouteKind.HOST]
        assert (str(route.prefix), route.attributes.med) == ("192.168.100.10/32", med)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param(
            {"attributes": {"localPreference": 200}},
            "attributes.localPreference: is sent to iBGP peers only",
            id="local-pref-ebgp-only",
        ),
        pytest.param(
            {"policies": [{"name": "x", "set": {"localPreference": 300}}]},
            "policies[0].set.localPreference: is sent to iBGP peers only",
            id="policy-local-pref-ebgp-only",
        ),
        pytest.param(
            {"policies": [{"name": "x", "match": {"kinds": ["subnet"], "vmSelector": {}}, "set": {"med": 1}}]},
            "policies[0].match.kinds: a subnet belongs to no VM",
            id="vm-selector-on-subnets",
        ),
        pytest.param(
            {"policies": [{"name": "x", "set": {}}, {"name": "x", "set": {}}]},
            "policies[1].name: 'x' is listed twice",
            id="duplicate-name",
        ),
        pytest.param(
            {
                "peers": [
                    {
                        "address": "10.0.0.1",
                        "asn": 64512,
                        "exportFilter": {"rules": [{"prefix": "10.1.0.0/16", "ge": 8}]},
                    }
                ]
            },
            "ge: must be between the prefix length 16 and 32",
            id="ge-below-length",
        ),
    ],
)
def test_the_configuration_refuses_policies_that_cannot_work(raw, expected):
    base = {"localASN": 64513, "peers": [{"address": "10.0.0.1", "asn": 64512}]}
    with pytest.raises(ConfigError) as e:
        parse({**base, **raw}, environ={})
    assert expected in str(e.value)


@pytest.mark.parametrize(
    ("rules", "default", "gets"),
    [
        pytest.param([{"prefix": "192.168.100.0/24"}], "deny", ["192.168.100.0/24"], id="exact-prefix-only"),
        pytest.param(
            [{"prefix": "192.168.100.0/24", "ge": 32, "action": "deny"}],
            "allow",
            ["192.168.100.0/24"],
            id="deny-the-32s",
        ),
        pytest.param(
            [{"prefix": "192.168.100.0/24", "ge": 25, "le": 32}],
            "deny",
            ["192.168.100.10/32", "192.168.100.20/32"],
            id="ge-le-allow",
        ),
    ],
)
def test_an_export_filter_is_a_prefix_list_per_peer(rules, default, gets):
    config = k8s.config(
        peers=[
            {"address": "10.0.0.1", "asn": 64512, "exportFilter": {"rules": rules, "defaultAction": default}},
            {"address": "10.0.0.2", "asn": 64512},
        ]
    )
    p = plan(_cluster(), config)
    guard = Guard(config)
    result = guard.check(p.routes, guard.context(p))
    assert [str(r.prefix) for r in result.per_peer["10.0.0.1"]] == gets
    assert len(result.per_peer["10.0.0.2"]) == 3 and not result.rejected
