"""ExaBGP's configuration file, environment and command line, rendered from bgpadv's configuration.

bgpadv runs ExaBGP, and ExaBGP runs `bgpadv controller` as its API process (`process bgpadv`): a shim that runs
and restarts the controller (`bgpadv.runtime.shim`), so a controller crash never drops a BGP session and never
counts
against ExaBGP's own respawn limit (5 in a 64-second window, then ExaBGP exits). `exabgp.api.respawn` stays on for
the shim itself. Each neighbor runs with `manual-eor` and the configured graceful-restart time, which must cover a
restart of the whole pod: the ToR keeps the routes stale that long after `bgpadv run` stops or dies. Every value is
rendered from a parsed object (IPAddress, int); the MD5 password, the only free string, is refused if it could
break the syntax. The file holds the MD5 passwords, so `write_private` creates it readable by its owner only.

Passive peers (`passive: true`): ExaBGP listens only where `exabgp.tcp.bind` says, on `exabgp.tcp.port`; both are
rendered here, the bind list being the passive peers' `localAddress`es (the configuration requires one) and the
port `exabgp.listenPort` (default 179). With no passive peer the bind list is empty: ExaBGP listens nowhere.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from bgpadv.config import DESCRIPTION, MD5_PASSWORD, Config, PeerConfig
from bgpadv.config.unnumbered import valid_interface
from bgpadv.core.prefix import Address
from bgpadv.core.runfiles import PID_FILE

PROCESS_NAME = "bgpadv"


def _derived_router_id(config: Config) -> Address:
    return Address(4, (10 << 24) | (config.local_asn & 0x00FFFFFF))


def _unnumbered(peer: PeerConfig, part: str) -> list[str]:
    """An interface peer's lines in `part` of its neighbor block (bgpadv.config.unnumbered): bound to the link
    (`source-interface`), the Extended Next Hop capability for IPv4 unicast (RFC 8950), and ipv6 unicast among the
    families (ExaBGP 5.0.15 sends the capability empty without it). Nothing for another peer."""
    if peer.interface is None:
        return []
    if part == "session":
        if not valid_interface(peer.interface):
            raise ValueError(f"peer {peer.address}: the interface name is not one ExaBGP can carry")
        return [f"    source-interface {peer.interface};"]
    if part == "capability":
        return ["        nexthop enable;"]
    if part == "family":
        return [] if "ipv6 unicast" in peer.families else ["        ipv6 unicast;"]
    return ["    nexthop {", "        ipv4 unicast ipv6;", "    }"]


def _neighbor(config: Config, peer: PeerConfig, receive_routes: bool) -> list[str]:
    rid = config.router_id
    if rid is None:
        rid = peer.local_address if peer.local_address is not None and peer.local_address.version == 4 else None
    if rid is None:
        rid = _derived_router_id(config)
    lines = [f"neighbor {peer.address} {{"]
    if peer.description is not None:
        if not DESCRIPTION.fullmatch(peer.description):
            raise ValueError(f"peer {peer.address}: the description contains characters ExaBGP cannot parse")
        lines.append(f'    description "{peer.description}";')
    lines += [
        f"    router-id {rid};",
        f"    local-address {peer.local_address if peer.local_address is not None else 'auto'};",
        f"    local-as {int(config.local_asn)};",
        f"    peer-as {int(peer.asn)};",
        f"    hold-time {int(peer.hold_time)};",
    ]
    if peer.passive:
        lines.append("    passive true;")
    if peer.port is not None:
        lines.append(f"    connect {int(peer.port)};")
    if peer.ebgp_multihop is not None:
        lines.append(f"    outgoing-ttl {int(peer.ebgp_multihop)};")
    lines += _unnumbered(peer, "session")
    if peer.md5_password:
        if not MD5_PASSWORD.fullmatch(peer.md5_password):
            raise ValueError(f"peer {peer.address}: the MD5 password contains characters ExaBGP cannot parse")
        lines.append(f'    md5-password "{peer.md5_password}";')
    lines.append("    manual-eor true;")
    if receive_routes:  # a restarted controller reads the received routes back (`show adj-rib in json`)
        lines.append("    adj-rib-in true;")
    lines.append("    capability {")
    if peer.graceful_restart is not None:
        lines.append(f"        graceful-restart {int(peer.graceful_restart)};")
    lines.append("        route-refresh;")
    lines += _unnumbered(peer, "capability")
    lines.append("    }")
    lines.append("    family {")
    lines.extend(f"        {family};" for family in peer.families if family in ("ipv4 unicast", "ipv6 unicast"))
    lines += _unnumbered(peer, "family")
    lines.append("    }")
    lines += _unnumbered(peer, "nexthop")
    lines.append("    api {")
    lines.append(f"        processes [ {PROCESS_NAME} ];")
    lines.append("        neighbor-changes;")
    if peer.interface is not None:  # what the session negotiated: IPv4 goes only with Extended Next Hop (RFC 8950)
        lines.append("        negotiated;")
    # `parsed` is needed for the echo to be written (bgpadv's ExaBGP writes a sent UPDATE as its bytes even so:
    # exabgp_boot.raw_update_echo); the NOTIFICATIONs both ways are the session objects' "last notification"
    # (bgpadv.observe.sessionstate)
    lines.append("        send { parsed; update; notification; }")
    receive = "parsed; update; notification;" if receive_routes else "notification;"
    lines.append(f"        receive {{ {receive} }}")
    lines.append("    }")
    lines.append("}")
    return lines


def render_exabgp_config(config: Config, api_argv: Sequence[str], *, receive_routes: bool | None = None) -> str:
    """The whole ExaBGP configuration: the API process and one neighbor block per peer.

    `api_argv` is the controller's command line (argv[0] absolute). `receive_routes` adds `receive { parsed;
    update; }` and `adj-rib-in true` (the ToR's routes go into the networks' VRF tables); None: as the
    configuration says (`importRoutes.enabled`), which is what `bgpadv run`, `check-config` and a reload render.
    """
    if receive_routes is None:
        receive_routes = config.import_routes.enabled
    if not api_argv:
        raise ValueError("api_argv must not be empty")
    run = " ".join(shlex.quote(str(a)) for a in api_argv)
    if ";" in run or "\n" in run or "{" in run or "}" in run:
        raise ValueError("the API process command line contains characters ExaBGP's syntax cannot carry")
    lines = [
        "# rendered by bgpadv: do not edit",
        f"process {PROCESS_NAME} {{",
        f"    run {run};",
        "    encoder json;",
        "}",
        "",
    ]
    for peer in config.peers:
        if peer.undiscovered:  # found by the controller at start (bgpadv.runtime.unnumbered), then rendered
            lines += [f"# the peer on {peer.interface}: its link-local address is discovered at start", ""]
            continue
        lines.extend(_neighbor(config, peer, receive_routes))
        lines.append("")
    return "\n".join(lines)


def daemon_user(uid: int | None = None) -> str:
    """The account ExaBGP is told to run as (`daemon.user`): the one it already runs as, so it switches nothing.

    ExaBGP looks the name up with getpwnam() when it reads its environment, then, unless uid and gid are both
    non-zero already, switches to that account and refuses to start if the process's uid and gid are not the
    account's afterwards. So: the passwd name of `uid` (default: this process's), which is root in the lab,
    `bgpadv` (65532:0) in the image and `bgpadv-<uid>` for the arbitrary UID with GID 0 OpenShift assigns (the
    image's entry point adds that entry); "nobody" for a uid without an entry, enough when uid and gid are non-zero.
    """
    try:
        return pwd.getpwuid(os.getuid() if uid is None else uid).pw_name
    except KeyError:
        return "nobody"


def listen_addresses(config: Config) -> list[str]:
    """Where ExaBGP listens for passive peers: each passive peer's localAddress, once, in configuration order."""
    out: list[str] = []
    for peer in config.peers:
        if peer.passive and peer.local_address is not None and str(peer.local_address) not in out:
            out.append(str(peer.local_address))
    return out


def write_private(path: str | Path, text: str) -> None:
    """Write `text` to `path` readable and writable by the owner only (0600), created so from the start.

    The file is written beside `path` under a fresh name, created with mode 0600 (never chmod-ed later: no moment
    where it is readable by others, whatever the umask), then renamed over `path`: a file left by an earlier run,
    whatever its mode, is replaced rather than rewritten in place.
    """
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def exabgp_environment(config: Config, runtime_dir: str | Path) -> dict[str, str]:
    """ExaBGP settings (passed as environment variables, `exabgp.section.key` form)."""
    runtime = Path(runtime_dir)
    return {
        "exabgp.tcp.bind": " ".join(listen_addresses(config)),  # empty: no listener (no passive peer)
        "exabgp.tcp.port": str(int(config.exabgp.listen_port)),
        "exabgp.api.ack": "true",
        "exabgp.api.encoder": "json",
        "exabgp.api.show-routes-format": "v2",  # one line per route (v1 re-prints the whole list for each route)
        "exabgp.api.chunk": "1000",
        "exabgp.api.respawn": "true",  # for the shim; the controller behind it is restarted by the shim
        "exabgp.daemon.daemonize": "false",
        "exabgp.daemon.drop": "false",
        "exabgp.daemon.user": daemon_user(),  # the current account: root in the lab, non-root in the image
        "exabgp.daemon.pid": str(runtime / PID_FILE),
        "exabgp.log.destination": "stdout",
        "exabgp.log.statistics": "false",
        "exabgp.log.processes": "false",
        "exabgp.log.routes": "false",
        "exabgp.log.packets": "false",
        "exabgp.log.rib": "false",
        "exabgp.reactor.speed": repr(float(config.exabgp.reactor_speed)),
        "exabgp.cache.attributes": "true",
        "exabgp.api.cli": "false",  # no named pipes: bgpadv is the only API client
    }


RUNTIMES = ("auto", "cpython", "pypy")
"""`exabgp.runtime`: the interpreter ExaBGP runs under. `pypy`: Debian's `pypy3` (on PATH), running the ExaBGP that is
installed beside bgpadv (pure Python, no dependencies, so the same files run under both); `cpython`: bgpadv's own
interpreter; `auto`: pypy when `pypy3` is found, else cpython."""

BOOT = Path(__file__).with_name("exabgp_boot.py")  # ExaBGP's entry point as bgpadv runs it


def exabgp_package_dir() -> str | None:
    """Where the `exabgp` package bgpadv runs is installed (found without importing it), None if it is not."""
    spec = importlib.util.find_spec("exabgp")
    if spec is None or not spec.submodule_search_locations:
        return None
    return str(Path(next(iter(spec.submodule_search_locations))).absolute())


def pypy_interpreter() -> str | None:
    """The `pypy3` on PATH, None if there is none."""
    return shutil.which("pypy3")


def resolve_runtime(setting: str) -> str:
    """`cpython` or `pypy` for `exabgp.runtime` (`auto`: pypy when it is there). An explicit `pypy` that cannot run
    raises ValueError (a configuration the node cannot honour; `auto` falls back instead)."""
    if setting not in RUNTIMES:
        raise ValueError(f"exabgp.runtime must be one of {', '.join(RUNTIMES)}, got {setting!r}")
    if setting == "cpython":
        return "cpython"
    missing = [what for what, found in (("pypy3", pypy_interpreter()), ("exabgp", exabgp_package_dir())) if not found]
    if not missing:
        return "pypy"
    if setting == "pypy":
        raise ValueError(f"exabgp.runtime is pypy but {' and '.join(missing)} cannot be found")
    return "cpython"


def exabgp_argv(config_file: str | Path, *, validate: bool = False, runtime: str = "cpython") -> list[str]:
    """ExaBGP's command line (`validate`: check the file and exit): `exabgp_boot.py` (ExaBGP's entry point with
    bgpadv's one change to it, see that module) under bgpadv's own interpreter (`cpython`) or `pypy`
    (`resolve_runtime`'s answer), running the ExaBGP package installed beside bgpadv."""
    command = ["validate" if validate else "server", str(config_file)]
    package = exabgp_package_dir()
    if runtime == "pypy":
        interpreter = pypy_interpreter()
        if interpreter is None or package is None:
            raise ValueError("ExaBGP under PyPy needs pypy3 on PATH and the exabgp package")
    elif runtime == "cpython":
        interpreter = sys.executable
        if package is None:
            raise ValueError("the exabgp package is not installed")
    else:
        raise ValueError(f"unknown ExaBGP runtime {runtime!r}")
    return [interpreter, str(BOOT), package, *command]
