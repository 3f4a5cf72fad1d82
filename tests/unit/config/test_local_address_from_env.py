"""`peers[].localAddress: {fromEnv: VARIABLE}`: one shared configuration, each pod's session source its own node's
address of the peer's family, from the downward API (the shipped pods set BGPADV_NODE_IPS from status.hostIPs,
which holds one address per family). Resolved when the configuration is loaded in the pod, with a clear error at
`peers[i].localAddress.fromEnv` when the variable is unset, holds no address, none of the peer's family, or a
special-purpose one. Off the cluster (`check-config`, `render`) an unset variable is judged as `auto`, with a note.
"""

from __future__ import annotations

import pytest
import yaml

from bgpadv.commands import checkconfig
from bgpadv.config import ConfigError, parse
from tests.unit.project.test_kustomize import DEPLOY, container, render

FROM_ENV = {"fromEnv": "BGPADV_NODE_IPS"}
DUAL = {"BGPADV_NODE_IPS": "10.0.0.11,fd00::11"}


def config(local: object, peer: str = "10.0.0.1") -> dict:
    return {"localASN": 64513, "peers": [{"address": peer, "asn": 64512, "localAddress": local}]}


@pytest.mark.parametrize(
    ("peer", "environ", "source"),
    [
        pytest.param("10.0.0.1", DUAL, "10.0.0.11", id="ipv4-peer-dual-stack-node"),
        pytest.param("fd00::1", DUAL, "fd00::11", id="ipv6-peer-dual-stack-node"),
        pytest.param("fd00::1", {"BGPADV_NODE_IPS": " fd00::11 "}, "fd00::11", id="single-stack-spaces"),
    ],
)
def test_the_source_is_the_nodes_address_of_the_peers_family(peer, environ, source):
    assert str(parse(config(FROM_ENV, peer), environ).peers[0].local_address) == source


@pytest.mark.parametrize(
    ("local", "peer", "environ", "problem"),
    [
        pytest.param(
            FROM_ENV, "10.0.0.1", {}, "localAddress.fromEnv: BGPADV_NODE_IPS is not set in this pod", id="unset"
        ),
        pytest.param(
            FROM_ENV, "10.0.0.1", {"BGPADV_NODE_IPS": "worker-1"}, "'worker-1' is not an IP address", id="no-address"
        ),
        pytest.param(
            FROM_ENV,
            "fd00::1",
            {"BGPADV_NODE_IPS": "10.0.0.11"},
            "holds no IPv6 address for the IPv6 peer",
            id="wrong-family",
        ),
        pytest.param(FROM_ENV, "10.0.0.1", {"BGPADV_NODE_IPS": "127.0.0.1"}, "is loopback", id="loopback"),
        pytest.param(FROM_ENV, "fd00::1", {"BGPADV_NODE_IPS": "fe80::1"}, "is link-local", id="link-local"),
        pytest.param(
            FROM_ENV,
            "10.0.0.1",
            {"BGPADV_NODE_IPS": "10.0.0.1"},
            "must not be the peer's own address",
            id="the-peer-itself",
        ),
        pytest.param(
            {"fromEnv": "NODE-IPS"}, "10.0.0.1", DUAL, "must be an address or {fromEnv: VARIABLE}", id="bad-name"
        ),
        pytest.param(
            {"fromEnv": "X", "or": "Y"}, "10.0.0.1", DUAL, "must be an address or {fromEnv: VARIABLE}", id="extra-key"
        ),
    ],
)
def test_a_variable_that_gives_no_usable_source_is_refused_at_start(local, peer, environ, problem):
    with pytest.raises(ConfigError) as refused:
        parse(config(local, peer), environ)
    assert any(problem in p and p.startswith("peers[0].localAddress") for p in refused.value.problems), refused.value


def test_off_the_cluster_an_unset_variable_is_judged_as_auto_with_a_note(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("BGPADV_NODE_IPS", raising=False)
    path = tmp_path / "bgpadv.yaml"
    path.write_text(yaml.safe_dump({**config(FROM_ENV), "mode": "per-node"}))
    assert checkconfig.main(str(path)) == 0
    assert "peers[0].localAddress: BGPADV_NODE_IPS is set in the pod only" in capsys.readouterr().err


@pytest.mark.parametrize("overlay", ["default", "per-node"])
def test_the_pods_set_the_variable_from_the_nodes_addresses(overlay):
    env = {e["name"]: e.get("valueFrom") for e in container(render(overlay))["env"]}
    assert env["BGPADV_NODE_IPS"] == {"fieldRef": {"fieldPath": "status.hostIPs"}}


def test_the_schema_offers_both_forms():
    schema = checkconfig.json_schema()["$defs"]["PeerConfig"]["properties"]["localAddress"]
    forms = [b for b in schema["anyOf"] if b.get("type") != "null"]
    assert [f["type"] for f in forms] == ["string", "object"]
    assert forms[1]["required"] == ["fromEnv"]
    assert (DEPLOY / "helm" / "bgpadv" / "values.schema.json").read_text().count('"fromEnv"') >= 1
