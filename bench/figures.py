"""The headline figures of the benchmarks, one machine-readable line each, for `make bench`'s summary table.

A script calls `figure(...)` beside its own printout; `bench/run.py` collects the lines and prints every figure of the
run in one table: bgpadv's value, the raw-ExaBGP floor measured in the same run where there is one, their ratio (this
machine is noisy: a ratio of one run means more than two absolute figures of two), and the issue's goal.
"""

from __future__ import annotations

import json

PREFIX = "FIGURE "


def figure(name: str, value: float, unit: str, *, floor: float | None = None, goal: str = "") -> None:
    """Print one figure (`floor`: the raw-ExaBGP floor of the same run, in the same unit)."""
    record = {"name": name, "value": value, "unit": unit, "floor": floor, "goal": goal}
    print(PREFIX + json.dumps(record), flush=True)


def quantile(values: list[float], q: float) -> float:
    """The `q` quantile of `values` (nearest index into the sorted values, as the benchmarks print them)."""
    v = sorted(values)
    return v[min(len(v) - 1, round(q * (len(v) - 1)))]


def parse(line: str) -> dict | None:
    """The figure a line carries, or None."""
    if not line.startswith(PREFIX):
        return None
    try:
        record = json.loads(line[len(PREFIX) :])
    except ValueError:
        return None
    return record if isinstance(record, dict) and "name" in record else None


def table(records: list[dict]) -> list[str]:
    """The summary table's lines."""
    out = [f"{'figure':<58} {'bgpadv':>12} {'floor':>12} {'ratio':>7}  goal"]
    for r in records:
        unit, value, floor = r.get("unit", ""), r.get("value"), r.get("floor")
        shown = f"{value:.3g} {unit}" if isinstance(value, int | float) else "-"
        floor_shown = f"{floor:.3g} {unit}" if isinstance(floor, int | float) else "-"
        ratio = (
            f"{value / floor:.2f}×"
            if isinstance(value, int | float) and isinstance(floor, int | float) and floor
            else ""
        )
        out.append(f"{r['name']:<58} {shown:>12} {floor_shown:>12} {ratio:>7}  {r.get('goal', '')}")
    return out
