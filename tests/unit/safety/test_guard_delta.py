"""The guard's delta path equals its whole check: after any random change sequence (the planner's hypothesis
strategies), what each peer gets by applying `Guard.check_delta`'s changes step after step equals `Guard.check` on
the whole plan, and so do the refusals (as (object, value, reason) facts). Where the delta path declines (None),
the whole check runs, as the controller would do, and the delta path continues from it.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bgpadv.planner.incremental import IncrementalPlanner
from bgpadv.safety.guard import Guard, GuardContext
from tests.unit.planner.test_incremental import CONFIGS, SETTINGS, _apply, _base, _empty, batches


def _facts(refusals) -> set[tuple[str, str, str]]:
    return {(str(r.source), r.value, r.reason) for r in refusals}


def _table(routes) -> dict:
    return {r.prefix.key: r for r in routes}


@SETTINGS
@given(st.sampled_from(sorted(CONFIGS)), st.booleans(), st.lists(batches, min_size=1, max_size=15))
def test_the_delta_path_gives_every_peer_what_the_whole_check_gives(config_name, seeded, steps):
    config = CONFIGS[config_name]
    state = _empty()
    if seeded:
        for obj in _base():
            _apply(state, False, obj)
    planner = IncrementalPlanner(config)
    guard = Guard(config)
    plan = planner.plan(state, None)
    first = guard.check(plan.routes, guard.context(plan))
    tables = {peer: _table(routes) for peer, routes in first.per_peer.items()}
    for batch, everything in steps:
        changed = {_apply(state, delete, obj) for delete, obj in batch}
        plan = planner.plan(state, None if everything else changed)
        ctx = guard.context(plan)
        whole = Guard(config).check(plan.routes, GuardContext.from_plan(plan, config))
        delta = planner.last_delta
        got = guard.check_delta(delta, ctx) if delta is not None else None
        if got is None:
            again = guard.check(plan.routes, ctx)
            tables = {peer: _table(routes) for peer, routes in again.per_peer.items()}
            rejected = again.rejected
        else:
            for peer, changes in got.changes.items():
                for key, route in changes.items():
                    if route is None:
                        tables[peer].pop(key, None)
                    else:
                        tables[peer][key] = route
            rejected = got.rejected
            # observers count what the whole path counts, without the delta path walking the plan
            assert got.outcome(plan).announced == whole.outcome(plan).announced
        assert tables == {peer: _table(routes) for peer, routes in whole.per_peer.items()}
        assert _facts(rejected) == _facts(whole.rejected)
