"""What the planner's tables compare: a plan read as an operator reads it, and a plan made both ways.

Shared by the planner's test modules; each module keeps the readings particular to its rules (which fields of a
host route it compares, for instance).
"""

from __future__ import annotations

from bgpadv.config import Config
from bgpadv.core.model import Plan
from bgpadv.core.state import ClusterState
from bgpadv.planner import plan
from bgpadv.planner.incremental import IncrementalPlanner


def refused(p: Plan) -> set[tuple[str, str, str]]:
    """Each refusal as `render` lists it: (object, value, reason code)."""
    return {(str(r.source), r.value, r.reason) for r in p.rejected}


def host_routes(p: Plan) -> set[tuple[str, str, str]]:
    """Each VM host route: (prefix, next hop, the object it comes from)."""
    return {(str(r.prefix), str(r.next_hop), str(r.source)) for r in p.routes if r.kind.value == "host"}


def planned_both_ways(state: ClusterState, config: Config) -> Plan:
    """plan() of the state, after checking that the incremental planner's first plan is exactly the same."""
    cold = plan(state, config)
    assert IncrementalPlanner(config).plan(state, None) == cold
    return cold
