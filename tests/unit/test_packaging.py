"""What ships and what imports what: the wheel holds the product only, and the lab and bench stay apart from it.

Scope: the wheel `pip wheel --no-deps .` builds (offline, from a copy of the checkout's sources so that a stale
`build/lib` cannot leak into it): only `bgpadv/` modules plus its metadata, the `bgpadv` console script; no
`bgpadv_lab/` (the lab: fake apiserver, namespaces, FRR driver, capture, demo, object builders) and no tests. And the
import rules around it, read from the source with `ast`: the product never imports the lab, bench never imports
tests.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ["pyproject.toml", "README.md", "bgpadv", "bgpadv_lab", "tests", "bench"]


def imported_modules(path: Path) -> set[str]:
    """Every absolute module name `path` imports (`import a.b` → a.b; `from a.b import c` → a.b and a.b.c)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def top_level(name: str) -> str:
    return name.split(".", 1)[0]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    src = tmp_path_factory.mktemp("src")
    for name in SOURCES:
        item = ROOT / name
        if item.is_dir():
            shutil.copytree(item, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(item, src / name)
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(src)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    (path,) = out.glob("bgpadv-*.whl")
    with zipfile.ZipFile(path) as zf:
        yield zf


def test_the_wheel_holds_only_bgpadv_modules_and_its_metadata(wheel):
    names = wheel.namelist()
    outside = sorted(n for n in names if not n.startswith(("bgpadv/", "bgpadv-0.1.0.dist-info/")))
    assert outside == []
    assert "bgpadv/__init__.py" in names
    assert "bgpadv/planner/__init__.py" in names


def test_the_wheel_holds_no_lab_and_no_tests(wheel):
    names = wheel.namelist()
    assert [n for n in names if n.startswith(("bgpadv_lab/", "bgpadv/lab/", "tests/", "bench/"))] == []
    assert [n for n in names if "objects.py" in n or "fakeapi" in n or "capture" in n] == []


def test_the_wheel_declares_the_bgpadv_console_script(wheel):
    entry_points = wheel.read("bgpadv-0.1.0.dist-info/entry_points.txt").decode()
    assert "[console_scripts]\nbgpadv = bgpadv.commands.cli:main" in entry_points


def test_the_product_never_imports_the_lab_or_the_tests():
    offenders = {
        str(path.relative_to(ROOT)): sorted(
            name for name in imported_modules(path) if top_level(name) in {"bgpadv_lab", "tests"}
        )
        for path in sorted((ROOT / "bgpadv").rglob("*.py"))
    }
    assert {path: names for path, names in offenders.items() if names} == {}


def test_bench_never_imports_the_tests_or_their_old_object_builders():
    offenders = {
        str(path.relative_to(ROOT)): sorted(
            name for name in imported_modules(path) if top_level(name) in {"tests", "objects", "conftest"}
        )
        for path in sorted((ROOT / "bench").glob("*.py"))
    }
    assert {path: names for path, names in offenders.items() if names} == {}


def test_bench_reaches_the_object_builders_through_the_lab_package():
    importers = sorted(
        path.name for path in (ROOT / "bench").glob("*.py") if "bgpadv_lab.objects" in imported_modules(path)
    )
    assert importers == ["convergence.py", "flap.py", "guard.py", "hostile.py", "restart.py", "rss.py"]


def test_the_demo_finds_the_checkouts_example_manifests():
    from bgpadv_lab import demo

    assert demo.REPO == ROOT
    assert (demo.REPO / "config" / "examples").is_dir()
