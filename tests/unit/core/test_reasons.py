"""The reason codes (`bgpadv.core.reasons`): what operators match alerts and Event reasons on.

Rules: every code of the planner's and the guard's refusals (`ALL_REASONS`) and of the import's (`IMPORT_REASONS`)
is kebab-case, appears once, and is documented where it is defined (a docstring under its constant, which the guide's
reason table is generated from).
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

from bgpadv.core import reasons


def documented() -> set[str]:
    """The codes whose constant in core/reasons.py is followed by its docstring."""
    body = ast.parse(Path(reasons.__file__).read_text()).body
    return {
        getattr(reasons, stmt.targets[0].id)
        for stmt, nxt in itertools.pairwise(body)
        if isinstance(stmt, ast.Assign)
        and isinstance(stmt.targets[0], ast.Name)
        and isinstance(nxt, ast.Expr)
        and isinstance(nxt.value, ast.Constant)
        and isinstance(nxt.value.value, str)
    }


@pytest.mark.parametrize(
    "codes",
    [
        pytest.param(reasons.ALL_REASONS, id="refusals"),
        pytest.param(reasons.IMPORT_REASONS, id="import"),
    ],
)
def test_every_reason_code_is_kebab_case_unique_and_documented(codes: tuple[str, ...]) -> None:
    assert all(code == code.lower() and "_" not in code and " " not in code for code in codes)
    assert len(set(codes)) == len(codes)
    assert set(codes) <= documented()
