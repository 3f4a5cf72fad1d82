"""The user guide (README.md, docs/, mkdocs.yml): it builds, it cannot drift from the code, and it stays a guide.

Scope: `mkdocs build --strict` succeeds (a broken link, a missing page or a missing anchor fails the build); every
page under docs/ is in the navigation; the configuration reference and the metrics table are what
scripts/gen-docs.py generates from the schema and from `bgpadv.observe.metrics` (so every key and every metric is
documented, none invented); every reason code has its words somewhere in the guide; the README stays a front page
(short, the two newcomer commands, links that resolve) and no page speaks of the team's own machines.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from prometheus_client import CollectorRegistry
from prometheus_client.metrics import MetricWrapperBase

from bgpadv.core import reasons
from bgpadv.observe.metrics import Metrics
from tests import guide

ROOT = Path(__file__).resolve().parents[3]
MKDOCS = Path(sys.executable).with_name("mkdocs")


def gen_docs():
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen-docs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_site_builds_in_strict_mode(tmp_path: Path) -> None:
    assert MKDOCS.exists(), "mkdocs missing: `make venv` installs the dev extra"
    result = subprocess.run(
        [str(MKDOCS), "build", "--strict", "--site-dir", str(tmp_path / "site"), "--config-file", "mkdocs.yml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "site" / "troubleshooting" / "index.html").exists()


def test_a_broken_anchor_fails_the_strict_build(tmp_path: Path) -> None:
    """The strictness is real: the shipped mkdocs.yml over a copy of docs/ with one link to a missing anchor."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for page in (ROOT / "docs").glob("*.md"):
        (docs / page.name).write_text(page.read_text())
    (docs / "index.md").write_text((docs / "index.md").read_text() + "\n[gone](bfd.md#no-such-section)\n")
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    config |= {"docs_dir": str(docs), "site_dir": str(tmp_path / "site")}
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    result = subprocess.run(
        [str(MKDOCS), "build", "--strict", "--config-file", str(tmp_path / "mkdocs.yml")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode != 0
    assert "no-such-section" in result.stderr


def nav_pages(nav: list) -> set[str]:
    pages: set[str] = set()
    for entry in nav:
        for value in entry.values() if isinstance(entry, dict) else [entry]:
            pages |= nav_pages(value) if isinstance(value, list) else {value}
    return pages


def test_every_page_is_in_the_navigation() -> None:
    nav = nav_pages(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"])
    assert nav == {p.name for p in (ROOT / "docs").glob("*.md")}


def test_the_generated_pages_are_what_the_code_says() -> None:
    """docs/configuration-reference.md and the table in docs/metrics.md: run scripts/gen-docs.py after a change."""
    for path, text in gen_docs().generated().items():
        assert path.read_text() == text, f"{path.relative_to(ROOT)} is stale: run scripts/gen-docs.py"


def test_every_metric_is_documented_with_its_type_and_labels() -> None:
    page = guide.page("metrics.md")
    metrics = Metrics(CollectorRegistry(), process_collectors=False)
    collectors = [c for c in vars(metrics).values() if isinstance(c, MetricWrapperBase)]
    assert len(collectors) >= 29
    for collector in collectors:
        (family,) = collector.describe()
        name = family.name + ("_total" if family.type == "counter" else "")
        # prometheus_client has no public reading of a metric's label names before it has a child
        labels = ", ".join(f"`{label}`" for label in collector._labelnames)
        assert f"| `{name}` | {family.type} | {labels} |" in page, name


def test_every_reason_code_is_in_the_guide() -> None:
    text = guide.text()
    codes = {
        v for k, v in vars(reasons).items() if k.isupper() and isinstance(v, str) and re.fullmatch(r"[a-z0-9-]+", v)
    }
    assert len(codes) > 20
    assert sorted(c for c in codes if f"`{c}`" not in text) == []


def test_the_readme_is_a_front_page() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    for command in ("make demo", "make test"):
        assert f"\n{command} " in readme, command
    for target in re.findall(r"\]\(((?:docs/)?[\w.-]+\.md)(?:#[\w-]+)?\)", readme):
        assert (ROOT / target).exists(), target


@pytest.mark.parametrize(
    "phrase", ["workplace", "busy cores", "our machines", "this machine", "about four minutes", "git.example.org"]
)
def test_no_page_speaks_of_the_teams_own_environment(phrase: str) -> None:
    for page in guide.pages():
        assert phrase not in page.read_text(), f"{page.name}: {phrase!r}"


def fenced(page: str, heading: str, lang: str = "") -> str:
    """The first ```lang block under the `## heading` of a docs page."""
    section = guide.page(page).split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return section.split(f"```{lang}\n", 1)[1].split("```", 1)[0]


def test_the_tor_pages_bgpadv_side_is_a_configuration_check_config_accepts(tmp_path: Path, monkeypatch, capsys) -> None:
    """The two-rack example as a node of rack 1 sees it: valid, BFD and MD5 on every peer, no documentation range."""
    from bgpadv.commands import checkconfig

    password = tmp_path / "tor"
    password.write_text("the-md5-password\n")
    text = fenced("tor.md", "The example fabric", "yaml").replace("/etc/bgpadv-secrets/tor", str(password))
    config = yaml.safe_load(text)
    assert all(p["bfd"]["enabled"] and p.get("md5PasswordFile") for p in config["peers"])
    (tmp_path / "bgpadv.yaml").write_text(text)
    monkeypatch.setenv("BGPADV_NODE_IP", "10.1.0.11")
    monkeypatch.setenv("BGPADV_NODE_NAME", "worker-1")
    assert checkconfig.main(str(tmp_path / "bgpadv.yaml")) == 0, capsys.readouterr().err


def test_the_tor_limits_exceed_bgpadvs_max_routes() -> None:
    """A ToR whose max-prefix is below `safety.maxRoutes` tears the session down before bgpadv refuses a route."""
    from bgpadv.config import json_schema

    max_routes = json_schema()["$defs"]["SafetyConfig"]["properties"]["maxRoutes"]["default"]
    page = guide.page("tor.md")
    limits = [int(n) for n in re.findall(r"(?:maximum-prefix|maximum-routes|maximum) (\d+)", page)]
    assert len(limits) >= 6  # FRR 2, EOS 1, NX-OS 2, Junos 2
    assert min(limits) > max_routes
    assert not re.search(r"\b(192\.0\.2|198\.51\.100|203\.0\.113)\.\d+\b(?!/24)|2001:db8:", page.split("## FRR")[1])


def test_the_frr_configuration_parses(tmp_path: Path) -> None:
    """FRR's own parser (`vtysh --dryrun`) accepts the ToR page's frr.conf as written."""
    vtysh = shutil.which("vtysh")
    if vtysh is None:
        pytest.skip("vtysh missing: FRR is installed by scripts/install-system-deps.sh")
    (tmp_path / "frr.conf").write_text(fenced("tor.md", "FRR"))
    result = subprocess.run([vtysh, "-C", "-f", str(tmp_path / "frr.conf")], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
