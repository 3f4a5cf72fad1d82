"""ExaBGP's entry point as bgpadv runs it (`bgpadv/speaker/exabgp_boot.py`), on changes ExaBGP's own parser makes.

Rules: for a route whose next hop is an address, each peer's copy equals what ExaBGP's deepcopy gives, and what
ExaBGP later changes in one peer's copy (filing a withdrawal sets `nlri.action`) leaves the others alone; a
`next-hop self` route still takes ExaBGP's own path (the next hop is filled in per peer); ExaBGP launched through the
file is the ExaBGP installed beside bgpadv, and runs.
"""

from __future__ import annotations

import subprocess

import pytest

pytest.importorskip("exabgp")

from exabgp.bgp.message import Action
from exabgp.bgp.neighbor import Neighbor
from exabgp.configuration.configuration import Configuration
from exabgp.environment import getenv
from exabgp.logger import option
from exabgp.reactor.api import API

from bgpadv.speaker.exabgp_boot import shallow_remove_self
from bgpadv.speaker.exabgp_config import exabgp_argv


@pytest.fixture(scope="module")
def api() -> API:
    option.setup(getenv())  # ExaBGP's parser logs through its own logger
    return API(Configuration([]))


def test_each_peer_gets_its_own_copy_of_a_bulk_announcement_equal_to_exabgps_deepcopy(api: API) -> None:
    line = "announce attributes next-hop 10.0.0.11 community [64512:100] nlri 10.64.0.1/32 10.64.0.2/32"
    changes = api.api_attributes(line, [])
    remove_self = shallow_remove_self(Neighbor.remove_self)
    tor_a, tor_b = Neighbor(), Neighbor()

    for change in changes:
        change.nlri.action = Action.ANNOUNCE  # as ExaBGP's `announce` command sets it before handing it to the peers
        a, b = remove_self(tor_a, change), remove_self(tor_b, change)
        assert a == Neighbor.remove_self(tor_a, change) == b
        assert a is not change and a.nlri is not change.nlri and a.nlri is not b.nlri
        a.nlri.action = Action.WITHDRAW  # what ExaBGP's outgoing RIB does to the change it files as a withdrawal
        assert b.nlri.action == Action.ANNOUNCE == change.nlri.action
        assert a.index() == change.index()


def test_a_next_hop_self_route_still_takes_exabgps_own_per_peer_path(api: API) -> None:
    [change] = api.api_route("announce route 10.64.0.3/32 next-hop self")
    seen: list[object] = []

    def original(neighbor: Neighbor, c: object) -> object:
        seen.append(c)
        return "filled in per peer"

    assert shallow_remove_self(original)(Neighbor(), change) == "filled in per peer"
    assert seen == [change]


def test_exabgp_started_through_the_boot_file_is_the_installed_one_and_runs() -> None:
    argv = exabgp_argv("/nonexistent.conf")
    assert argv[1].endswith("exabgp_boot.py") and argv[2].endswith("exabgp")
    version = subprocess.run([*argv[:3], "version"], capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and "ExaBGP" in version.stdout
