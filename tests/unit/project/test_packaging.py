"""What ships and what imports what: the wheel holds the product only, and the lab and bench stay apart from it.

Scope: the wheel `pip wheel --no-deps .` builds (from a copy of the checkout's sources so that a stale `build/lib`
cannot leak into it): only `bgpadv/` modules plus its metadata, the `bgpadv` console script; no `bgpadv_lab/` (the
lab: fake apiserver, namespaces, FRR driver, capture, demo, object builders) and no tests; the PEP 561 marker
`py.typed`, the example configuration `bgpadv example-config` prints (the checkout's documented config/bgpadv.yaml
with a placeholder peer, which check-config refuses), the SPDX license with the LICENSE text, classifiers and project
URLs. The image's pins (requirements/image.txt) satisfy every dependency. And the import rules around it, read from
the source with `ast`: the product never imports the lab, bench never imports tests.
"""

from __future__ import annotations

import ast
import difflib
import email
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[3]
SOURCES = ["pyproject.toml", "README.md", "LICENSE", "bgpadv", "bgpadv_lab", "tests", "bench"]
DIST_INFO = "bgpadv-0.1.0.dist-info"


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
    lab_files = [n for n in names if n.rsplit("/", 1)[-1] == "objects.py" or "fakeapi" in n or "capture" in n]
    assert lab_files == []


def test_the_wheel_declares_the_bgpadv_console_script(wheel):
    entry_points = wheel.read("bgpadv-0.1.0.dist-info/entry_points.txt").decode()
    assert "[console_scripts]\nbgpadv = bgpadv.commands.cli:main" in entry_points


def test_the_wheel_ships_its_type_hints_marker_and_the_example_configuration(wheel):
    names = wheel.namelist()
    assert "bgpadv/py.typed" in names
    shipped = wheel.read("bgpadv/data/bgpadv.example.yaml").decode()
    assert shipped == (ROOT / "bgpadv" / "data" / "bgpadv.example.yaml").read_text()


def test_the_wheel_declares_its_license_classifiers_and_urls(wheel):
    meta = email.message_from_bytes(wheel.read(f"{DIST_INFO}/METADATA"))
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta.get_all("License-File") == ["LICENSE"]
    assert wheel.read(f"{DIST_INFO}/licenses/LICENSE") == (ROOT / "LICENSE").read_bytes()
    assert (
        "Apache License" in (ROOT / "LICENSE").read_text()
        and "Version 2.0, January 2004" in (ROOT / "LICENSE").read_text()
    )
    classifiers = meta.get_all("Classifier")
    assert "Typing :: Typed" in classifiers and "Programming Language :: Python :: 3.11" in classifiers
    assert not [c for c in classifiers if c.startswith("License ::")]  # the SPDX expression says it (PEP 639)
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL"))
    assert set(urls) == {"Homepage", "Documentation", "Source", "Issues", "Changelog"}


def test_example_config_prints_the_shipped_file_which_check_config_refuses_until_the_peer_is_replaced(tmp_path, capsys):
    from bgpadv.commands import checkconfig, cli

    assert cli.main(["example-config"]) == 0
    printed = capsys.readouterr().out
    assert printed == (ROOT / "bgpadv" / "data" / "bgpadv.example.yaml").read_text()
    path = tmp_path / "bgpadv.yaml"
    path.write_text(printed)
    assert checkconfig.main(str(path)) == 2
    assert "peers[0].address: is the shipped placeholder 'REPLACE-WITH-YOUR-TOR-ADDRESS'" in (capsys.readouterr().err)
    path.write_text(printed.replace("REPLACE-WITH-YOUR-TOR-ADDRESS", "192.0.2.1"))
    assert checkconfig.main(str(path)) == 0, capsys.readouterr().err


def test_the_example_is_the_checkouts_documented_configuration_but_the_header_and_the_peer():
    """config/bgpadv.yaml (the lab's, every key documented) and the shipped example must not drift apart."""
    lab = (ROOT / "config" / "bgpadv.yaml").read_text().splitlines()
    shipped = (ROOT / "bgpadv" / "data" / "bgpadv.example.yaml").read_text().splitlines()
    changed = [line for line in difflib.ndiff(lab, shipped) if line.startswith(("- ", "+ "))]
    removed = [line[2:] for line in changed if line.startswith("- ")]
    added = [line[2:] for line in changed if line.startswith("+ ")]
    assert [line for line in removed if not line.startswith("#")] == ["  - address: 10.0.0.1"]
    assert [line for line in added if not line.startswith("#")] == [
        "  - address: REPLACE-WITH-YOUR-TOR-ADDRESS   # replace with your ToR's address"
    ]
    assert all(lab.index(line) < 5 for line in removed if line.startswith("#"))  # only the header's comment lines
    assert yaml.safe_load("\n".join(shipped))["peers"][1:] == yaml.safe_load("\n".join(lab))["peers"][1:]


def test_the_image_bakes_the_placeholder_example_never_the_labs_configuration(tmp_path, capsys):
    """Safe by default: the configuration the image carries at /etc/bgpadv/bgpadv.yaml peers with nothing; the pod
    mounts its own over it (the ConfigMap of deploy/ and of the chart)."""
    from bgpadv.commands import checkconfig

    copies = [
        line.split()[1:]
        for line in (ROOT / "Containerfile").read_text().splitlines()
        if line.startswith("COPY ") and "/etc/bgpadv" in line
    ]
    assert copies == [["bgpadv/data/bgpadv.example.yaml", "/etc/bgpadv/bgpadv.yaml"]]
    context = (ROOT / ".containerignore").read_text().splitlines()
    assert "!bgpadv/data/bgpadv.example.yaml" in context and "!config/bgpadv.yaml" not in context
    path = tmp_path / "bgpadv.yaml"
    path.write_text((ROOT / "bgpadv" / "data" / "bgpadv.example.yaml").read_text())
    assert checkconfig.main(str(path)) == 2
    assert "is the shipped placeholder" in capsys.readouterr().err


def test_the_image_pins_satisfy_every_dependency_and_pin_exact_versions():
    pins = {}
    for line in (ROOT / "requirements" / "image.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"not an exact pin: {line}"
            pins[name.lower().replace("_", "-")] = version
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    for dependency in map(Requirement, dependencies):
        name = dependency.name.lower().replace("_", "-")
        assert name in pins, f"{name} has no pin: run scripts/lock-image.sh"
        assert dependency.specifier.contains(pins[name]), f"{name}=={pins[name]} outside {dependency.specifier}"
    assert "--constraint requirements/image.txt" in (ROOT / "scripts" / "build-image.sh").read_text()


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
    assert importers == [
        "bulk.py",
        "change_cost.py",
        "convergence.py",
        "flap.py",
        "guard.py",
        "hostile.py",
        "kube_scale.py",
        "pernode_scale.py",
        "restart.py",
        "rss.py",
    ]


def test_the_demo_finds_the_checkouts_example_manifests():
    from bgpadv_lab import demo

    assert demo.REPO == ROOT
    assert (demo.REPO / "config" / "examples").is_dir()


def test_the_demo_seeds_its_api_with_the_example_objects_as_written():
    """`make demo` seeds the fake API with raw objects (not the decoded views the planner reads)."""
    from bgpadv_lab import demo

    objects = demo._objects(demo.EXAMPLES)  # the lab's seeding step alone: the demo itself runs a fake API
    assert objects and all(isinstance(o, dict) for o in objects)
    claim = next(o for o in objects if o["kind"] == "IPAMClaim" and o["metadata"]["name"] == f"{demo.VM_NAME}.default")
    assert claim["metadata"]["namespace"] == demo.VM_NAMESPACE and claim["status"]["ips"]
