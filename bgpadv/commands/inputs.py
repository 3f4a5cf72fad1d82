"""Where `render` and `explain` read the cluster from: manifests (files, directories, `-`) or, read-only, the API.

Live (`--kubeconfig`), every resource the configuration needs is listed once (`bgpadv.sources.snapshot`) with the
list permission the service's ClusterRole grants, and nothing is written. Launcher pods are listed on every node
(per-node mode judges each instance from its own node's pods, `bgpadv.commands.outcome`). Both forms decode the
objects as the service's store does (`bgpadv.sources.decode.dispatch.state_from_objects`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

from bgpadv.config import Config
from bgpadv.core import resources
from bgpadv.core.state import ClusterState
from bgpadv.sources.decode.dispatch import state_from_objects
from bgpadv.sources.manifests import load_manifest_objects


class InputError(Exception):
    """The cluster could not be read (a missing manifest, an unreachable or refusing API): exit 2."""


def live_resources(config: Config) -> tuple[resources.Resource, ...]:
    """What a live read lists: the service's resources (RouteAdvertisements only when followed), pods on every node."""
    follow = config.networks.follow_route_advertisements
    return tuple(r for r in resources.ALL if r is not resources.ROUTE_ADVERTISEMENTS or follow)


def read_cluster(
    config: Config,
    manifests: Sequence[str] = (),
    kubeconfig: str | None = None,
    context: str | None = None,
    stdin: TextIO | None = None,
) -> tuple[ClusterState, list[str]]:
    """The cluster state from `manifests` or, when `kubeconfig` is given, the API; with the warnings met. Raises
    `InputError` (see `read_objects`)."""
    objects, warnings = read_objects(config, manifests, kubeconfig, context, stdin)
    state, _ignored = state_from_objects(objects)
    return state, warnings


def read_objects(
    config: Config,
    manifests: Sequence[str] = (),
    kubeconfig: str | None = None,
    context: str | None = None,
    stdin: TextIO | None = None,
) -> tuple[list[dict], list[str]]:
    """The watched objects, as written, from `manifests` or, when `kubeconfig` is given, the API; with the warnings
    met. Raises `InputError`. Reading manifests that hold no object bgpadv reads is an input error too (a wrong path,
    most likely), not an empty cluster."""
    if kubeconfig is not None:
        objects, warnings = _live(config, kubeconfig, context)
    else:
        try:
            objects, warnings = load_manifest_objects(*manifests, stdin=stdin if stdin is not None else sys.stdin)
        except OSError as e:
            raise InputError(f"cannot read the manifests: {e}") from e
        if not objects:
            raise InputError(
                f"no object bgpadv reads in {', '.join(manifests)} (ClusterUserDefinedNetworks, IPAMClaims, "
                "VirtualMachineInstances, virt-launcher Pods, Nodes, Namespaces, RouteAdvertisements)"
            )
    return objects, warnings


def _live(config: Config, kubeconfig: str, context: str | None) -> tuple[list[dict], list[str]]:
    from bgpadv.sources.snapshot import SnapshotError, snapshot_from_kubeconfig

    try:
        return snapshot_from_kubeconfig(kubeconfig, context, live_resources(config))
    except SnapshotError as e:
        raise InputError(str(e)) from e
