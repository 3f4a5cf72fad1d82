"""The `bgpadv` command: a thin entry that parses arguments and hands over to the module that does the work."""

from __future__ import annotations

import argparse
import io
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from bgpadv import __version__
from bgpadv.core.printable import Writable, write_line, write_text


def _default_status_url() -> str:
    """Where `bgpadv status` looks by default: the pod's metrics listener, `${BGPADV_NODE_IP}:9179` (deploy/)."""
    host = os.environ.get("BGPADV_NODE_IP", "").strip() or "127.0.0.1"
    return f"http://[{host}]:9179" if ":" in host else f"http://{host}:9179"


class _Parser(argparse.ArgumentParser):
    """argparse, its output written through `bgpadv.core.printable`: a usage error, which echoes an argument as
    given, is one line whatever the argument holds."""

    def _print_message(self, message: str, file: Writable | None = None) -> None:
        if message:
            write_text(file if file is not None else sys.stderr, message)

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        write_line(sys.stderr, f"{self.prog}: error: {message}")
        sys.exit(2)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="bgpadv", description="Advertise KubeVirt VM and UDN routes through ExaBGP.")
    p.add_argument("--version", action="version", version=f"bgpadv {__version__}", help="print the version and exit")
    sub = p.add_subparsers(
        dest="command", required=True, metavar="COMMAND", help="what to do (COMMAND -h: its options)"
    )

    run = sub.add_parser("run", help="run the service: ExaBGP with bgpadv's controller as its API process")
    run.add_argument("--config", required=True, help="bgpadv configuration file (YAML)")
    run.add_argument("--runtime-dir", help="where ExaBGP's rendered configuration goes (default: a private temp dir)")

    ctl = sub.add_parser("controller", help="(internal) the API process ExaBGP runs; speaks ExaBGP's text protocol")
    ctl.add_argument("--config", required=True, help="bgpadv configuration file (YAML), as given to `bgpadv run`")
    ctl.add_argument(
        "--no-shim", action="store_true", help="(internal) be the controller itself, not the shim that restarts it"
    )

    render = sub.add_parser(
        "render", help="print the routes, refusals and addresses without a route for a cluster (manifests or live)"
    )
    render.add_argument("--config", required=True, help="bgpadv configuration file (YAML)")
    _cluster_arguments(render)
    _instance_arguments(render)
    render.add_argument(
        "--output", choices=("table", "json"), default="table", help="table (default), or json: one document"
    )
    render.add_argument(
        "--learned", help="print what importRoutes would install from these learned routes (peer -> prefix -> next hop)"
    )

    explain = sub.add_parser(
        "explain",
        help="why an IP, a VM or a network is (not) announced: objects, rules, routes, peers "
        "(exit 0 announced, 1 not, 2 usage/input error)",
    )
    explain.add_argument("target", metavar="IP|NAMESPACE/VM|NETWORK", help="an address (or CIDR), a VM, or a CUDN name")
    explain.add_argument("--config", required=True, help="bgpadv configuration file (YAML)")
    _cluster_arguments(explain)
    _instance_arguments(explain)
    explain.add_argument(
        "--status-url",
        action="append",
        default=[],
        metavar="URL",
        help="a running instance's metrics listener (repeatable): add its readiness, peers and the routes it holds",
    )
    explain.add_argument(
        "--output", choices=("table", "json"), default="table", help="table (default), or json: one document"
    )

    check = sub.add_parser(
        "check-config", help="validate a configuration file, and ExaBGP's rendering of it (exit 2 when invalid)"
    )
    check.add_argument(
        "file", nargs="?", help="bgpadv configuration file (YAML); warnings for deployment traps go to stderr"
    )
    check.add_argument(
        "--offline",
        action="store_true",
        help="off the cluster: an md5PasswordFile that cannot be read is a warning naming it, not an error",
    )
    check.add_argument(
        "--schema",
        action="store_true",
        help="print the configuration file's JSON Schema (draft 2020-12, keys as written) instead, for editors and CI",
    )

    sub.add_parser(
        "example-config",
        help="print the documented example configuration (every key; its placeholder peer is refused until replaced)",
    )

    status = sub.add_parser("status", help="print peers, routes and convergence of a running instance")
    status.add_argument(
        "--url",
        default=_default_status_url(),
        help="the instance's metrics listener (default: port 9179 on $BGPADV_NODE_IP, as in the pod, else 127.0.0.1)",
    )
    status.add_argument("--json", action="store_true", help="print the raw status document")
    status.add_argument(
        "--all",
        action="store_true",
        help="every instance's sessions, from the BGPSessionState objects in the API (read-only: list only)",
    )
    status.add_argument("--kubeconfig", help="with --all: the kubeconfig (default: in-cluster, then $KUBECONFIG)")
    status.add_argument("--context", help="with --all: the kubeconfig context")
    status.add_argument("--namespace", "-n", help="with --all: only this namespace (default: every namespace)")
    return p


def _cluster_arguments(p: argparse.ArgumentParser) -> None:
    """Where the cluster is read from: manifests, or (read-only) the API."""
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--manifests",
        nargs="+",
        metavar="PATH",
        help="YAML/JSON manifests (kubectl get -o yaml): files, directories, or - for standard input",
    )
    where.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="read the live cluster once, read-only (list only: the service's own RBAC suffices)",
    )
    p.add_argument("--context", help="the kubeconfig context (with --kubeconfig)")


PRINTING = frozenset({"check-config", "render", "explain", "status", "example-config"})
"""The commands that print for people (`bgpadv.core.printable`); run and controller speak to ExaBGP instead."""


def _never_unencodable() -> None:
    """A character the terminal's encoding lacks (a name in another script under LANG=C) is written as its
    backslash escape instead of ending the command with UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def _instance_arguments(p: argparse.ArgumentParser) -> None:
    """Which instance is judged: no pod environment says it off the cluster."""
    p.add_argument(
        "--per-node",
        action="store_true",
        help="judge the configuration as the per-node DaemonSet runs it (each node's own instance), even when it does "
        "not say mode: per-node",
    )
    p.add_argument(
        "--node",
        metavar="NAME",
        help="judge the instance on this node only (per-node mode: that node's; cluster mode: a replica running "
        "there, whose node's addresses stand for next-hop self); default in per-node mode: every node",
    )


def main(argv: Sequence[str] | None = None, *, entry_point: Sequence[str] | None = None) -> int:
    """bgpadv's command line. `entry_point`: the interpreter arguments that run bgpadv's commands in the children
    `run` and `controller` start (default `python -m bgpadv`, `bgpadv.core.runfiles.ENTRY_POINT`), for a program
    that embeds bgpadv and runs its own entry point in every process."""
    args = _parser().parse_args(argv)
    if entry_point is None:
        from bgpadv.core.runfiles import ENTRY_POINT

        entry_point = ENTRY_POINT
    if args.command in PRINTING:
        _never_unencodable()
    if args.command == "check-config":
        if args.schema:
            from bgpadv.commands import checkconfig

            return checkconfig.schema_main()
        if args.file is None:
            write_line(sys.stderr, "bgpadv check-config: give a configuration FILE, or --schema")
            return 2
        return _check_config(args.file, offline=args.offline)
    if args.command == "render":
        from bgpadv.commands import render

        return render.main(
            args.config,
            args.manifests or (),
            args.output,
            args.learned,
            kubeconfig=args.kubeconfig,
            context=args.context,
            per_node=args.per_node,
            node=args.node,
        )
    if args.command == "explain":
        from bgpadv.commands import explain

        return explain.main(
            args.target,
            args.config,
            args.manifests or (),
            kubeconfig=args.kubeconfig,
            context=args.context,
            status_urls=args.status_url,
            output=args.output,
            per_node=args.per_node,
            node=args.node,
        )
    if args.command == "run":
        return _run(args.config, args.runtime_dir, entry_point)
    if args.command == "controller":
        if not args.no_shim:
            from bgpadv.runtime.shim import shim_main

            return shim_main(args.config, entry_point=entry_point)
        import gc

        gc.disable()  # until the first plan: see bgpadv.runtime.controller.LoopSettings.startup_gc_pause
        from bgpadv.runtime.wiring import controller_main

        return controller_main(args.config, entry_point=entry_point)
    if args.command == "status":
        from bgpadv.commands import status

        if args.all:
            return status.main_all(args.kubeconfig, args.context, args.namespace, as_json=args.json)
        return status.main(args.url, as_json=args.json)
    if args.command == "example-config":
        from bgpadv.commands import example

        return example.main()
    raise AssertionError(args.command)


def _run(config_path: str, runtime_dir: str | None, entry_point: Sequence[str]) -> int:
    """`bgpadv run`: the first controller starts before anything else (`bgpadv.runtime.handover`): its imports and its
    first LIST overlap the configuration check, ExaBGP's start and the session's; then ExaBGP under the supervisor."""
    from bgpadv.core.runfiles import controller_argv
    from bgpadv.runtime.handover import EarlyController
    from bgpadv.runtime.lifecycle import reset_runtime_dir, runtime_directory

    rdir, owned = runtime_directory(runtime_dir)
    reset_runtime_dir(rdir)  # before the controller: it reads the drain file and writes bfdd.wanted
    # the path as ExaBGP's process line gives it to the shim
    argv = controller_argv(config_path, no_shim=True, entry_point=entry_point)
    early = EarlyController.start(argv, os.environ, rdir) if Path(config_path).is_file() else None
    from bgpadv.runtime.wiring import run

    return run(config_path, rdir, owned=owned, early=early, entry_point=entry_point)


def _check_config(path: str, *, offline: bool = False) -> int:
    from bgpadv.commands import checkconfig

    return checkconfig.main(path, offline=offline)


if __name__ == "__main__":
    sys.exit(main())
