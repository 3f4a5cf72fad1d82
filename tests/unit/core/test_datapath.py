"""The data-path table (`bgpadv.core.datapath`): one truth for the guide's compatibility matrix and the warnings.

Scope: every kind of the table has its row in docs/concepts.md with the same versions; the kinds a CUDN view can be are
classified; a kind is warned of exactly when some direction has no known release.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bgpadv.core import datapath

CONCEPTS = Path(__file__).resolve().parents[3] / "docs" / "concepts.md"


def _rows() -> dict[str, tuple[str, str]]:
    rows = {}
    for line in CONCEPTS.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 4:
            rows[cells[0]] = (cells[1], cells[2])
    return rows


@pytest.mark.parametrize("kind", sorted(datapath.MATRIX))
def test_the_guides_matrix_states_what_the_table_holds(kind):
    path = datapath.MATRIX[kind]
    row = _rows().get(path.title)
    assert row is not None, f"docs/concepts.md has no row for {path.title}"
    assert [None if c.startswith("none") else c for c in row] == [path.ingress, path.egress]


@pytest.mark.parametrize(
    ("view", "kind", "warned"),
    [
        pytest.param(("Layer3", False, False), datapath.PRIMARY_LAYER3, False, id="primary-layer3"),
        pytest.param(("Layer2", False, False), datapath.PRIMARY_LAYER2, False, id="primary-layer2"),
        pytest.param(("Layer2", True, True), datapath.SECONDARY_LAYER2, True, id="ipamless-secondary"),
        pytest.param(("Localnet", True, False), datapath.LOCALNET, True, id="localnet"),
        pytest.param(("Layer2", True, False), None, False, id="secondary-with-ipam-not-a-kind"),
    ],
)
def test_kinds_and_warnings(view, kind, warned):
    assert datapath.kind_of(*view) == kind
    if kind is not None:
        assert (datapath.unsupported(kind) is not None) == warned
