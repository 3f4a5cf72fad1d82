"""`bgpadv check-config`: the configuration is valid for bgpadv *and* for ExaBGP.

bgpadv's own validation (`bgpadv.config`) names every field error. Then the ExaBGP configuration `bgpadv run`
would write is rendered and handed to the installed ExaBGP's own validator (`exabgp validate FILE`, with the same
environment `run` uses), so nothing check-config accepts is refused by ExaBGP at start-up. ExaBGP's complaint, or
its absence, is reported as one more problem, exit 2. It takes ExaBGP's start-up time (well under a second
unloaded); the timeout bounds it.

A valid configuration can still be a trap in a pod; `warnings` names those (printed as `path: warning: …` on
stderr, exit 0): the metrics listener on loopback (the kubelet probes /healthz and /readyz, and Prometheus scrapes,
at the pod's address, which is the node's with hostNetwork) or on every interface; passive peers on a port below
1024 (binding it needs UID 0 or CAP_NET_BIND_SERVICE, which the shipped non-root pod does not have); an MD5 password
inline in the configuration (a ConfigMap) rather than in a Secret file (`md5PasswordFile`); an AS number reserved
for documentation (RFC 5398: 64496-64511, 65536-65551), valid but most likely copied from an example;
a configured network kind that no OVN-K release bgpadv knows routes (`bgpadv.core.datapath`: an IPAM-less
secondary Layer2 network); `importRoutes` outside per-node mode (each instance writes the routes into the tables of
the node it runs on: the central replicas' two nodes only); a well-known community (RFC 1997, 7999, 8326) a policy
sets without listing it in `intendedWellKnownCommunities`, and more communities than fit a 4,096-byte UPDATE without
extended messages (`bgpadv.config.communities`).

Off the cluster: a configuration for per-node mode is checked without BGPADV_NODE_NAME (for every node: nothing in it
depends on which), and with `--offline` an `md5PasswordFile` that cannot be read (the Secret is mounted only in the
pod) is a warning naming it instead of an error; a file that can be read is checked as in the pod.

The configuration path is kept as given, made absolute but never resolved through symlinks
(`bgpadv.core.runfiles.controller_argv`):
in a Pod the file is a ConfigMap volume, `config.yaml -> ..data/config.yaml -> ..2025_01_01_00_00_00.1/config.yaml`,
and kubelet replaces the timestamped directory on every ConfigMap update, so a resolved path vanishes and the next
controller ExaBGP respawns could not read its configuration.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TextIO

from bgpadv.config import Config, Judged, communities, json_schema, load_or_report
from bgpadv.config.schema import DOCUMENTATION_ASNS
from bgpadv.core import datapath
from bgpadv.core.prefix import Address
from bgpadv.core.printable import printable, write_json, write_line
from bgpadv.core.runfiles import controller_argv
from bgpadv.speaker.exabgp_config import (
    exabgp_argv,
    exabgp_environment,
    render_exabgp_config,
    write_private,
)

EXABGP_TIMEOUT = 60.0
_MAX_COMPLAINT = 600


def _complaint(output: str) -> str:
    """ExaBGP's reason, from its output: the lines from the first `error:` on, joined, bounded."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    start = next((i for i, line in enumerate(lines) if line.startswith("error:")), max(0, len(lines) - 4))
    text = " ".join(line.removeprefix("error:").strip() for line in lines[start:])
    return text if len(text) <= _MAX_COMPLAINT else text[:_MAX_COMPLAINT] + "…"


def exabgp_problems(config: Config, config_path: str | os.PathLike[str], timeout: float = EXABGP_TIMEOUT) -> list[str]:
    """Render ExaBGP's configuration as `bgpadv run` would and run ExaBGP's validator on it; [] when it accepts."""
    try:
        text = render_exabgp_config(config, controller_argv(config_path))
    except ValueError as e:
        return [f"the ExaBGP configuration cannot be rendered: {e}"]
    with tempfile.TemporaryDirectory(prefix="bgpadv-check-") as runtime:
        conf = Path(runtime) / "exabgp.conf"
        write_private(conf, text)  # 0600: it holds the MD5 passwords
        env = {**os.environ, **exabgp_environment(config, runtime)}
        argv = exabgp_argv(conf, validate=True)
        try:
            result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout, check=False)
        except FileNotFoundError:
            return [f"ExaBGP cannot be run to validate the rendered configuration ({argv[0]} not found)"]
        except subprocess.TimeoutExpired:
            return [f"ExaBGP did not finish validating the rendered configuration within {timeout:g} s"]
    if result.returncode == 0:
        return []
    return [f"ExaBGP refuses the rendered configuration: {_complaint(result.stdout + result.stderr)}"]


def warnings(config: Config) -> list[str]:
    """The traps a valid configuration can still hold (see the module docstring); [] when none."""
    out: list[str] = []
    host, port = config.metrics.host_port
    try:
        address: Address | None = Address.parse(host)
    except ValueError:
        address = None
    if host == "localhost" or (address is not None and address.is_loopback()):
        out.append(
            f"metrics.listen {config.metrics.listen} is loopback: the kubelet's probes (/healthz, /readyz) and "
            f"Prometheus reach the pod at the node's address and will fail; use ${{BGPADV_NODE_IP}}:{port}"
        )
    elif address is not None and address.value == 0:
        out.append(
            f"metrics.listen {config.metrics.listen} serves /metrics and /status unauthenticated on every interface "
            f"of the node; bind the node's address only: ${{BGPADV_NODE_IP}}:{port}"
        )
    passive = [p for p in config.peers if p.passive]
    if passive and config.exabgp.listen_port < 1024:
        names = ", ".join(str(p.address) for p in passive)
        out.append(
            f"passive peers ({names}) connect to port {config.exabgp.listen_port}, below 1024: binding it needs UID 0 "
            "or CAP_NET_BIND_SERVICE, which the shipped non-root pod does not have; set exabgp.listenPort above 1023 "
            "and point the ToR at it (FRR: neighbor ADDRESS port N)"
        )
    out += _documentation_asns(config)
    out += _community_warnings(config)
    for i, secondary in enumerate(config.networks.secondary):
        note = datapath.unsupported(datapath.SECONDARY_LAYER2)
        out.append(f"networks.secondary[{i}] ({printable(secondary.name)}): {note}")
    if config.import_routes.enabled and config.node_name is None:
        out.append(
            "importRoutes is enabled in cluster mode: each instance writes the ToR's routes into the VRF tables of the "
            "node it runs on, so only the central replicas' nodes would get them; import with mode: per-node (the "
            "per-node DaemonSet with deploy/components/import, or Helm mode: per-node). If this configuration is for "
            "the DaemonSet (BGPADV_NODE_NAME set there), say mode: per-node to make it explicit"
        )
    for i, peer in enumerate(config.peers):
        if peer.md5_password is not None and peer.md5_password_file is None:
            out.append(
                f"peers[{i}].md5Password is inline: the configuration is a ConfigMap, readable by anyone who can read "
                "the namespace's ConfigMaps; put the password in a Secret and set md5PasswordFile"
            )
    return out


def _community_warnings(config: Config) -> list[str]:
    # a named one in attributes is refused unless intended (`schema.PathAttributes`): only the others are left
    out = communities.warnings("attributes", config.attributes.communities, communities.NAMES)
    for i, policy in enumerate(config.policies):
        actions = policy.actions
        out += communities.warnings(f"policies[{i}] ({policy.name})", actions.communities, actions.intended_well_known)
    for loc, kind, name, count, size, limit in communities.worst_cases(config.community_sources()):
        if not limit:
            path = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in loc).lstrip(".")
            out.append(f"{path}: {communities.budget_message(kind, name, count, size)}")
    return out


def _documentation_asns(config: Config) -> list[str]:
    def documentation(asn: int) -> bool:
        return any(lo <= asn <= hi for lo, hi in DOCUMENTATION_ASNS)

    where = [("localASN", config.local_asn)] + [(f"peers[{i}].asn", p.asn) for i, p in enumerate(config.peers)]
    return [
        f"{path} {asn} is an AS number reserved for documentation (RFC 5398): no real network uses it; "
        "is this a copied example?"
        for path, asn in where
        if documentation(asn)
    ]


def schema_main(out: TextIO | None = None) -> int:
    """`check-config --schema`: the configuration's JSON Schema on stdout (what `bgpadv.config.parse` checks key by
    key; the rules between keys and what the file points at are checked by check-config itself)."""
    write_json(out if out is not None else sys.stdout, json_schema())
    return 0


def main(path: str, out: TextIO | None = None, err: TextIO | None = None, *, offline: bool = False) -> int:
    """0 when bgpadv and ExaBGP both accept the configuration; 2 with one `path: problem` line per problem.
    `offline`: an md5PasswordFile that cannot be read is a warning (see the module)."""
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    unread: list[str] | None = [] if offline else None
    judged = Judged(unread=unread)
    cfg = load_or_report(path, err, judged=judged)
    if cfg is None:
        return 2
    problems = exabgp_problems(cfg, path)
    for problem in problems:
        write_line(err, f"{printable(path)}: {problem}")
    if problems:
        return 2
    notes = [
        f"peers[{i}].md5PasswordFile {printable(peer.md5_password_file)} was not read (--offline): the pod reads it "
        "at start, where a missing or invalid password is an error"
        for i, peer in enumerate(cfg.peers)
        if unread and peer.md5_password_file in unread
    ]
    for warning in judged.notes + notes + warnings(cfg):
        write_line(err, f"{printable(path)}: warning: {warning}")
    peers = ", ".join(f"{p.name} (AS{p.asn})" for p in cfg.peers)
    valid = f"valid — local AS{cfg.local_asn}, peers: {peers}; ExaBGP accepts the rendered configuration"
    write_line(out, f"{printable(path)}: {valid}")
    return 0
