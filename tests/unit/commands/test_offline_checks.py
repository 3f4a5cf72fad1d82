"""Offline checks that match the deployment: `check-config`, `render` and `explain` judge the configuration as the
pods will run it, off the cluster, without a fake environment.

- `check-config --offline`: an `md5PasswordFile` that cannot be read (the Secret is mounted only in the pod) is a
  warning naming it, not an error; a readable one is still checked; without the flag a missing file is an error.
- per-node mode (`mode: per-node`, or `--per-node` for the shared configuration the DaemonSet runs) needs no
  BGPADV_NODE_NAME: `check-config` checks it, `render`/`explain` judge every node's instance, or `--node NAME`'s.
- cluster mode: `render --node NAME` judges a replica on NAME, whose Node's IPv6 InternalIP is next-hop self for IPv6
  routes over an IPv4 session as the live replica takes it; without it render says why it refuses them.
- warnings: `importRoutes` outside per-node mode; a peer that would get third-party next hops off its subnet.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from bgpadv.commands import checkconfig, explain, render

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "config" / "examples"
NODES = ("worker-1", "worker-2", "worker-3")
BASE = {"localASN": 64513, "peers": [{"address": "10.0.0.1", "asn": 64512}]}


@pytest.fixture(autouse=True)
def _no_pod_environment(monkeypatch):
    for name in ("BGPADV_NODE_NAME", "BGPADV_POD_NODE_NAME", "BGPADV_NODE_IP"):
        monkeypatch.delenv(name, raising=False)


def write(tmp_path: Path, config: dict) -> str:
    path = tmp_path / "bgpadv.yaml"
    path.write_text(yaml.safe_dump(config))
    return str(path)


# -- check-config ----------------------------------------------------------------------------------------------------


def test_offline_check_names_the_secret_file_it_could_not_read_and_passes(tmp_path, capsys):
    secret = "/etc/bgpadv-secrets/tor-1"
    path = write(tmp_path, {**BASE, "peers": [{**BASE["peers"][0], "md5PasswordFile": secret}]})
    assert checkconfig.main(path, offline=True) == 0
    err = capsys.readouterr().err
    assert f"warning: peers[0].md5PasswordFile {secret} was not read (--offline)" in err
    assert checkconfig.main(path) == 2
    assert "peers[0].md5PasswordFile: cannot read" in capsys.readouterr().err


def test_offline_check_still_checks_a_secret_file_it_can_read(tmp_path, capsys):
    bad = tmp_path / "tor-1"
    bad.write_text("two words\n")
    path = write(tmp_path, {**BASE, "peers": [{**BASE["peers"][0], "md5PasswordFile": str(bad)}]})
    assert checkconfig.main(path, offline=True) == 2
    assert "peers[0].md5PasswordFile" in capsys.readouterr().err


def test_a_per_node_configuration_checks_without_a_node_name(tmp_path, capsys):
    assert checkconfig.main(write(tmp_path, {**BASE, "mode": "per-node"})) == 0
    assert "valid" in capsys.readouterr().out


IMPORT = {"enabled": True, "networks": [{"name": "vmnet-a"}]}


@pytest.mark.parametrize(
    ("extra", "warned"),
    [
        pytest.param({"importRoutes": IMPORT}, True, id="cluster-mode-imports"),
        pytest.param({"importRoutes": IMPORT, "mode": "per-node"}, False, id="per-node-imports"),
        pytest.param({}, False, id="no-import"),
    ],
)
def test_import_outside_per_node_mode_is_a_warning(tmp_path, capsys, extra, warned):
    assert checkconfig.main(write(tmp_path, {**BASE, **extra})) == 0
    assert ("importRoutes is enabled in cluster mode" in capsys.readouterr().err) == warned


# -- render and explain: which instance ------------------------------------------------------------------------------


def render_json(capsys, config: str, *args, **kwargs) -> tuple[int, dict | None, str]:
    code = render.main(config, [str(kwargs.pop("manifests", EXAMPLES))], "json", *args, **kwargs)
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out else None), err


def test_per_node_render_judges_every_node_without_a_node_name(tmp_path, capsys):
    code, doc, _ = render_json(capsys, write(tmp_path, {**BASE, "mode": "per-node"}))
    assert code == 0
    assert [n["node"] for n in doc["nodes"]] == list(NODES)
    for section in doc["nodes"]:  # each node's instance announces its own node's routes only
        assert {r["node"] for r in section["routes"]} <= {section["node"], None}
    one_node = next(n for n in doc["nodes"] if n["node"] == "worker-1")
    code, only, _ = render_json(capsys, write(tmp_path, {**BASE, "mode": "per-node"}), node="worker-1")
    assert code == 0 and only["routes"] == one_node["routes"]


def test_per_node_flag_judges_the_shared_configuration_as_the_daemonset_runs_it(tmp_path, capsys):
    config = write(tmp_path, BASE)
    _, flagged, _ = render_json(capsys, config, per_node=True)
    _, said, _ = render_json(capsys, write(tmp_path, {**BASE, "mode": "per-node"}))
    assert flagged == said


@pytest.mark.parametrize(
    ("config", "kwargs", "message"),
    [
        pytest.param({**BASE, "mode": "per-node"}, {"node": "worker-9"}, "worker-9", id="unknown-node"),
        pytest.param({**BASE, "mode": "cluster"}, {"per_node": True}, "mode: cluster", id="per-node-flag-vs-cluster"),
    ],
)
def test_an_instance_that_cannot_be_is_a_usage_error(tmp_path, capsys, config, kwargs, message):
    code, _, err = render_json(capsys, write(tmp_path, config), **kwargs)
    assert code == 2 and message in err


def test_cluster_mode_judges_ipv6_next_hops_from_the_replicas_node(capsys):
    """The example's IPv6 subnet over the IPv4 session: without a node render says why it refuses it; a replica on
    worker-1 announces it with worker-1's IPv6 InternalIP as next-hop self, as the live replica does."""
    config = str(ROOT / "config" / "bgpadv.yaml")
    code, doc, err = render_json(capsys, config)
    assert code == 0 and "pass --node NAME to judge the replica on NAME" in err
    assert "fd10:100::/64" in {r["value"] for r in doc["refused"]}
    code, doc, err = render_json(capsys, config, node="worker-1")
    assert code == 0 and "family-not-carried" not in err
    assert "fd10:100::/64" in {r["prefix"] for r in doc["routes"]}


def test_explain_judges_per_node_without_a_node_name(tmp_path, capsys):
    config = write(tmp_path, {**BASE, "mode": "per-node"})
    code = explain.main("imported-vms/vm-a", config, [str(EXAMPLES)], output="json")
    assert code in (0, 1)
    assert {i["instance"] for i in json.loads(capsys.readouterr().out)["routes"]} <= set(NODES)


# -- third-party next hops off a ToR's subnet --------------------------------------------------------------------------


def test_per_rack_peers_in_cluster_mode_warn_of_next_hops_off_their_subnet(tmp_path, capsys):
    """worker-2 moved to a second rack (10.0.1.0/24, its own ToR 10.0.1.1): a central speaker would send each ToR
    the other rack's routes with next hops it cannot reach; per-node mode with a peer per rack (nodeSelector) sends
    each ToR its own rack's."""
    manifests = tmp_path / "manifests"
    shutil.copytree(EXAMPLES, manifests)
    nodes = manifests / "nodes.yaml"
    nodes.write_text(nodes.read_text().replace("10.0.0.12", "10.0.1.12"))
    racks = {**BASE, "peers": [{"address": "10.0.0.1", "asn": 64512}, {"address": "10.0.1.1", "asn": 64512}]}
    code, _, err = render_json(capsys, write(tmp_path, racks), manifests=manifests)
    assert code == 0
    assert "peer 10.0.0.1 (on 10.0.0.0/24) would get" in err and "via 10.0.1.12, node worker-2" in err
    assert "peer 10.0.1.1 (on 10.0.1.0/24) would get" in err
    rack = lambda *nodes: {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": nodes}]}  # noqa: E731
    per_rack = {
        **BASE,
        "mode": "per-node",
        "peers": [
            {"address": "10.0.0.1", "asn": 64512, "nodeSelector": rack("worker-1", "worker-3")},
            {"address": "10.0.1.1", "asn": 64512, "nodeSelector": rack("worker-2")},
        ],
    }
    code, _, err = render_json(capsys, write(tmp_path, per_rack), manifests=manifests)
    assert code == 0 and "off its subnet" not in err


def test_the_command_line_passes_the_flags(tmp_path, capsys):
    from bgpadv.commands.cli import main

    secret = "/etc/bgpadv-secrets/tor-1"
    path = write(tmp_path, {**BASE, "peers": [{**BASE["peers"][0], "md5PasswordFile": secret}]})
    assert main(["check-config", "--offline", path]) == 0
    assert f"md5PasswordFile {secret} was not read" in capsys.readouterr().err
    args = ["render", "--config", path, "--manifests", str(EXAMPLES), "--output", "json"]
    assert main([*args, "--per-node"]) == 0  # render needs no password: an unreadable file is no error
    capsys.readouterr()
    config = write(tmp_path, BASE)
    args = ["render", "--config", config, "--manifests", str(EXAMPLES), "--output", "json"]
    assert main([*args, "--per-node", "--node", "worker-2"]) == 0
    assert {r["node"] for r in json.loads(capsys.readouterr().out)["routes"]} <= {"worker-2", None}
    assert main(["explain", "imported-vms/vm-a", *args[1:5], "--per-node", "--node", "worker-1"]) in (0, 1)
