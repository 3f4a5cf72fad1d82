"""The guard of bgpadv's changes to ExaBGP (`bgpadv/speaker/exabgp_boot.py`): each applies only where it was tested.

Rules: on a release within `TESTED_EXABGP` whose replaced functions are the ones the changes were written for, every
change applies (under CPython and under PyPy, the two runtimes ExaBGP runs on); on any other release none applies
and ExaBGP's own functions stay in place; a replaced function whose parameters changed, whose code no longer names
what the change assumes, or a helper the change calls that moved or renders otherwise leaves that one change out and
applies the others; the boot file on an untested ExaBGP runs ExaBGP's own `main` with exactly one log line naming
each change left out; the tested range is the one pyproject.toml allows.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("exabgp")

from exabgp.bgp.message import Update
from exabgp.bgp.message.update.nlri.cidr import CIDR
from exabgp.reactor.api.response import json as json_encoder
from exabgp.version import release as installed_release

from bgpadv.speaker import exabgp_boot
from bgpadv.speaker.exabgp_boot import CHANGES, TESTED_EXABGP, Patch, exabgp_patches, install, refusal_line
from bgpadv.speaker.exabgp_config import BOOT, exabgp_package_dir

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def stock(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """ExaBGP's own functions, by change name; whatever a test installs is undone after it."""
    originals = {}
    for p in exabgp_patches():
        original = getattr(p.owner, p.attribute)
        monkeypatch.setattr(p.owner, p.attribute, original)
        originals[p.name] = original
    yield originals


def current() -> dict[str, Any]:
    return {p.name: getattr(p.owner, p.attribute) for p in exabgp_patches()}


def test_on_the_installed_tested_release_every_change_applies(stock: dict[str, Any]) -> None:
    assert install(installed_release, exabgp_patches) == []
    now = current()
    assert all(now[name] is not stock[name] for name in CHANGES)
    assert now["json.hexstring"] is exabgp_boot.hexstring


def test_the_changes_named_in_the_log_are_the_ones_described() -> None:
    assert tuple(p.name for p in exabgp_patches()) == CHANGES


@pytest.mark.parametrize(
    "release",
    [
        pytest.param("5.0.12", id="below-the-lowest"),
        pytest.param("5.0.16", id="above-the-highest"),
        pytest.param("5.1.0", id="next-minor"),
        pytest.param("6.0.0", id="next-major"),
        pytest.param("5.0.15-dev", id="development-build"),
    ],
)
def test_an_untested_release_gets_none_of_the_changes(stock: dict[str, Any], release: str) -> None:
    refused = install(release, exabgp_patches)
    assert [r.split(":")[0] for r in refused] == list(CHANGES)
    assert all(f"ExaBGP {release} is not a tested release" in r for r in refused)
    assert current() == stock


def test_an_untested_release_whose_modules_moved_still_runs_its_own_code(stock: dict[str, Any]) -> None:
    def moved() -> list[Patch]:
        raise ImportError("No module named 'exabgp.rib.outgoing'")

    low = ".".join(map(str, TESTED_EXABGP[0]))
    refused = install(low, moved)
    assert len(refused) == len(CHANGES) and all("modules are not where it expects them" in r for r in refused)
    assert current() == stock


def takes(*names: str) -> Any:
    """A function with parameters `names` whose code names nothing the changes look for."""
    namespace: dict[str, Any] = {}
    exec(f"def f({', '.join(names)}):\n    return None", namespace)  # a signature built for the test
    return namespace["f"]


@pytest.mark.parametrize(
    ("name", "replacement", "reason"),
    [
        pytest.param("Neighbor.remove_self", takes("self", "changes", "peer"), "(self, changes, peer)", id="rs-sig"),
        pytest.param("Neighbor.remove_self", takes("self", "changes"), "no longer uses SELF, deepcopy", id="rs-code"),
        pytest.param("Protocol.send", takes("self", "raw", "negotiated"), "(self, raw, negotiated)", id="send-sig"),
        pytest.param("Protocol.send", takes("self", "raw"), "no longer uses _to_api, stats", id="send-code"),
        pytest.param("OutgoingRIB.updates", takes("self"), "takes (self), not (self, grouped)", id="updates-sig"),
        pytest.param("OutgoingRIB.updates", takes("self", "grouped"), "no longer uses RouteRefresh", id="updates-code"),
        pytest.param("json.hexstring", takes("value", "spaced"), "takes (value, spaced)", id="hexstring-sig"),
        pytest.param("json.hexstring", None, "missing", id="hexstring-gone"),
    ],
)
def test_a_changed_function_keeps_exabgps_own_and_the_others_still_apply(
    monkeypatch: pytest.MonkeyPatch, stock: dict[str, Any], name: str, replacement: Any, reason: str
) -> None:
    [target] = [p for p in exabgp_patches() if p.name == name]
    if replacement is None:
        monkeypatch.delattr(target.owner, target.attribute)
    else:
        monkeypatch.setattr(target.owner, target.attribute, replacement)

    [refused] = install(installed_release, exabgp_patches)

    assert refused.startswith(f"{name}: ") and reason in refused
    assert getattr(target.owner, target.attribute, None) is replacement  # the stock path: nothing was put in place
    now = current() if replacement is not None else {}
    assert all(now[other] is not stock[other] for other in now if other != name)


@pytest.mark.parametrize(
    ("name", "owner", "attribute", "value", "reason"),
    [
        pytest.param(
            "Protocol.send",
            json_encoder.JSON,
            "packets",
            takes("self", "neighbor", "direction", "category", "header", "body"),
            "JSON.packets takes (self, neighbor, direction, category, header, body)",
            id="packets-encoder",
        ),
        pytest.param(
            "OutgoingRIB.updates",
            Update,
            "__init__",
            takes("self", "nlris"),
            "Update takes (self, nlris)",
            id="update-init",
        ),
        pytest.param("OutgoingRIB.updates", CIDR, "pack_ip", None, "CIDR.pack_ip is missing", id="cidr-pack-ip"),
        pytest.param(
            "json.hexstring",
            json_encoder,
            "hexstring",
            lambda value: "0x" + value.hex(),
            "renders hex otherwise",
            id="hexstring-lower-case",
        ),
    ],
)
def test_a_helper_the_change_calls_that_changed_keeps_exabgps_own(
    monkeypatch: pytest.MonkeyPatch, stock: dict[str, Any], name: str, owner: Any, attribute: str, value: Any, reason
) -> None:
    if value is None:
        monkeypatch.delattr(owner, attribute)
    else:
        monkeypatch.setattr(owner, attribute, value)
    [target] = [p for p in exabgp_patches() if p.name == name]
    before = getattr(target.owner, target.attribute)

    [refused] = install(installed_release, exabgp_patches)

    assert refused.startswith(f"{name}: ") and reason in refused
    assert getattr(target.owner, target.attribute) is before


def test_the_log_line_is_one_json_object_naming_each_change_left_out() -> None:
    line = refusal_line("5.1.0", ["Protocol.send: takes (self, raw, negotiated), not (self, raw)"])
    assert "\n" not in line
    record = json.loads(line)
    assert record["level"] == "warning" and record["logger"] == "bgpadv.speaker.exabgp_boot"
    assert record["exabgp"] == "5.1.0" and record["not_applied"] == [
        "Protocol.send: takes (self, raw, negotiated), not (self, raw)"
    ]


def test_the_boot_file_on_an_untested_exabgp_runs_its_own_main_and_says_so_once(tmp_path: Path) -> None:
    package = tmp_path / "exabgp"
    (package / "application").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "version.py").write_text("release = '5.1.0'\n")
    (package / "application" / "__init__.py").write_text("")
    (package / "application" / "main.py").write_text("def main():\n    print('stock exabgp')\n    return 0\n")

    run = subprocess.run(
        [sys.executable, str(BOOT), str(package), "version"], capture_output=True, text=True, timeout=60
    )

    assert run.returncode == 0 and run.stdout == "stock exabgp\n"
    [line] = run.stderr.splitlines()
    assert json.loads(line)["not_applied"] == [
        f"{name}: ExaBGP 5.1.0 is not a tested release (5.0.13 to 5.0.15)" for name in CHANGES
    ]


GUARD_UNDER = """
import runpy, sys
sys.path.insert(0, sys.argv[2])
boot = runpy.run_path(sys.argv[1])
from exabgp.version import release
print(boot["install"](release, boot["exabgp_patches"]))
"""


@pytest.mark.skipif(shutil.which("pypy3") is None, reason="pypy3 is not installed")
def test_under_pypy_every_change_applies_to_the_installed_exabgp() -> None:
    """The code objects' names the guard checks are the compiler's: PyPy's must read the same."""
    parent = str(Path(exabgp_package_dir() or "").parent)
    run = subprocess.run(
        ["pypy3", "-c", GUARD_UNDER, str(BOOT), parent], capture_output=True, text=True, timeout=120, check=True
    )
    assert run.stdout.strip() == "[]"


def test_the_tested_range_is_the_one_pyproject_allows() -> None:
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    [exabgp] = [d for d in dependencies if re.match(r"exabgp\b", d)]
    low, high = (".".join(map(str, v)) for v in TESTED_EXABGP)
    assert exabgp == f"exabgp>={low},<={high}"
