"""ExaBGP's entry point as bgpadv runs it, under CPython or PyPy: run as a file, never imported by bgpadv.

    <python> exabgp_boot.py <the exabgp package directory> server|validate <exabgp.conf>

It puts the ExaBGP package's parent directory first on `sys.path` (only that: under PyPy nothing else of CPython's
site-packages can be picked up; this file's own directory is taken off, so no bgpadv module shadows one ExaBGP
imports), makes one change to ExaBGP, then runs ExaBGP's own `main`.

The change (measured, see issue 19): for every route a command announces or withdraws, ExaBGP 5.0 calls
`Neighbor.remove_self(change)` once per peer, and that returns `copy.deepcopy(change)`: the NLRI, every attribute
object and their caches, so that `next-hop self` can be filled in per peer. A bulk load spent ~40 % of ExaBGP's CPU
in that deepcopy. After the call ExaBGP changes only the NLRI of a change (`nlri.action` when a withdrawal is
filed, `nlri.nexthop` for `next-hop self`), never its attributes. So for a change whose next hop is not `self`
bgpadv's ExaBGP copies the change and its NLRI object (shallow: what ExaBGP may still mutate is per peer again) and
shares the attributes, which stay read-only; `next-hop self` keeps ExaBGP's own deepcopy. The lab's tests run
ExaBGP through this file, so the routes the ToR learns are what prove it.
"""

from __future__ import annotations

import copy
import os
import sys
from typing import Any


def shallow_remove_self(original: Any) -> Any:
    """`Neighbor.remove_self` without the deepcopy for a change whose next hop is not `self` (see the module)."""

    def remove_self(neighbor: Any, changes: Any) -> Any:
        if changes.nlri.nexthop.SELF:
            return original(neighbor, changes)
        change = copy.copy(changes)
        change.nlri = copy.copy(changes.nlri)
        return change

    remove_self.__doc__ = original.__doc__
    return remove_self


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    package = sys.argv.pop(1)
    sys.path[:] = [os.path.dirname(package), *(p for p in sys.path if os.path.abspath(p or ".") != here)]
    sys.argv[0] = "exabgp"
    from exabgp.bgp.neighbor import Neighbor

    Neighbor.remove_self = shallow_remove_self(Neighbor.remove_self)
    from exabgp.application.main import main as exabgp_main

    sys.exit(exabgp_main())


if __name__ == "__main__":
    main()
