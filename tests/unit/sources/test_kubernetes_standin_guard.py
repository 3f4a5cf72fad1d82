"""The guard of the Kubernetes client's lazy stand-in (`bgpadv/sources/__init__.py`): used only where it was tested.

Rules: a client within `TESTED_KUBERNETES` whose package `__init__` only names its version and imports its
submodules, and which ships the files bgpadv imports, gets the stand-in (its `__init__` is not run at import); any
other client (an untested version, no version, an `__init__` that does more, a file bgpadv imports that is missing)
is imported whole, as Python would, with exactly one log line saying why; the tested range is the one
pyproject.toml allows.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from bgpadv.sources import IMPORTED, TESTED_KUBERNETES, client_refusal

ROOT = Path(__file__).resolve().parents[3]
LOW, HIGH = (".".join(map(str, v)) for v in TESTED_KUBERNETES)
TESTED = f"is not a tested release ({LOW} to {HIGH})"
INIT = """# Kubernetes Python client, as its releases ship it (abridged)
__project__ = 'kubernetes'
__version__ = "{version}"

from . import client
from . import config
from . import watch
{extra}"""


def client_package(root: Path, version: str = HIGH, extra: str = "", missing: str = "") -> Path:
    """A `kubernetes` package under `root` shaped like a release: the `__init__` above, the files bgpadv imports
    (`missing` left out), and a `watch` module only that `__init__` imports, which records that it ran."""
    package = root / "kubernetes"
    for name in IMPORTED:
        if name != missing:
            (package / name).parent.mkdir(parents=True, exist_ok=True)
            (package / name).write_text("")
    (package / "watch.py").write_text("import builtins\nbuiltins.CLIENT_INIT_RAN = True\n")
    (package / "__init__.py").write_text(INIT.format(version=version, extra=extra))
    return package


def test_the_installed_client_is_a_tested_one() -> None:
    import importlib.util

    spec = importlib.util.find_spec("kubernetes")
    assert spec is not None and spec.submodule_search_locations
    assert client_refusal(Path(next(iter(spec.submodule_search_locations)))) is None


@pytest.mark.parametrize(
    ("version", "extra", "missing", "reason"),
    [
        pytest.param("36.0.3", "", "", f"36.0.3 {TESTED}", id="below-the-lowest"),
        pytest.param("38.0.0", "", "", f"38.0.0 {TESTED}", id="next-major"),
        pytest.param("37.1.0a1", "", "", "of no version is not a tested release", id="pre-release"),
        pytest.param(
            HIGH,
            "configuration = client.Configuration()\n",
            "",
            "its __init__ does more than import its submodules ('configuration = client.Configuration()')",
            id="init-does-more",
        ),
        pytest.param(HIGH, "", "config/incluster_config.py", "config/incluster_config.py missing", id="file-moved"),
    ],
)
def test_an_untested_client_is_refused_with_its_reason(
    tmp_path: Path, version: str, extra: str, missing: str, reason: str
) -> None:
    refusal = client_refusal(client_package(tmp_path, version, extra, missing))
    assert refusal is not None and refusal.startswith(reason)


def test_a_tested_client_shape_is_accepted(tmp_path: Path) -> None:
    assert client_refusal(client_package(tmp_path)) is None


PROBE = """
import builtins, json, sys
sys.path.insert(0, sys.argv[1])
import bgpadv.sources
standin = "kubernetes" in sys.modules
ran_at_import = getattr(builtins, "CLIENT_INIT_RAN", False)
import kubernetes
version = kubernetes.__version__
print(json.dumps([standin, ran_at_import, getattr(builtins, "CLIENT_INIT_RAN", False), version]))
"""


@pytest.mark.parametrize(
    ("version", "standin", "logged"),
    [
        pytest.param(HIGH, True, False, id="tested-gets-the-stand-in"),
        pytest.param("38.0.0", False, True, id="untested-imports-whole"),
    ],
)
def test_the_sources_use_the_stand_in_only_for_a_tested_client(
    tmp_path: Path, version: str, standin: bool, logged: bool
) -> None:
    client_package(tmp_path, version)
    run = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path)], capture_output=True, text=True, timeout=60, cwd=ROOT, check=True
    )
    # the stand-in: in sys.modules at once, its __init__ run at the first name only it defines; whole: run on import
    assert json.loads(run.stdout) == [standin, False, True, version]
    lines = run.stderr.splitlines()
    assert len(lines) == (1 if logged else 0)
    if logged:
        assert "imported whole" in lines[0] and "38.0.0 is not a tested release" in lines[0]


def test_the_tested_range_is_the_one_pyproject_allows() -> None:
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    [client] = [d for d in dependencies if re.match(r"kubernetes\b", d)]
    assert client == f"kubernetes>={LOW},<={HIGH}"
