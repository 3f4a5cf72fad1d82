"""Publishing: the image a user builds with their own tools, and the release workflow (.github/workflows/release.yml).

The workflow cannot run here; it is checked statically: valid against GitHub's workflow schema (the copy
check-jsonschema vendors, a PyPI package), triggered by version tags only, pushing the image built from ./Containerfile
and the chart as an OCI artifact with the Helm version the tests use, the chart pointed at the published image by a
substitution that matches exactly one line of values.yaml. The Containerfile's default base is a public image; `make
image` passes its own (scripts/build-image.sh), and docker's ignore file is podman's.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import jsonschema
import yaml

ROOT = Path(__file__).resolve().parents[3]
WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"


def workflow() -> dict:
    doc = yaml.load(WORKFLOW.read_text(), Loader=yaml.BaseLoader)  # `on:` stays a key, every scalar a string
    assert isinstance(doc, dict)
    return doc


def steps(job: str) -> list[dict]:
    return workflow()["jobs"][job]["steps"]


def run_text(job: str) -> str:
    return "\n".join(step.get("run", "") for step in steps(job))


def test_the_workflow_is_valid_for_github_actions() -> None:
    schema_file = resources.files("check_jsonschema") / "builtin_schemas" / "vendor" / "github-workflows.json"
    schema = json.loads(schema_file.read_text())
    doc = yaml.safe_load(WORKFLOW.read_text())
    doc = {("on" if key is True else key): value for key, value in doc.items()}  # YAML 1.1 reads `on` as true
    jsonschema.validate(doc, schema)


def test_it_runs_on_version_tags_only_with_read_only_default_permissions() -> None:
    doc = workflow()
    assert set(doc["on"]) == {"push"} and set(doc["on"]["push"]) == {"tags"}
    assert doc["permissions"] == {"contents": "read"}
    for name, job in doc["jobs"].items():
        assert job.get("timeout-minutes"), name
        assert job.get("permissions", {}).get("packages", "read") in ("read", "write"), name


def test_every_action_is_pinned_to_a_release() -> None:
    for job in workflow()["jobs"].values():
        for step in job["steps"]:
            if "uses" in step:
                assert re.fullmatch(r"[\w.-]+/[\w.-]+@v\d+(\.\d+)*", step["uses"]), step["uses"]


def test_the_tag_must_be_the_package_and_chart_version() -> None:
    text = run_text("version")
    assert "pyproject.toml" in text and "Chart.yaml" in text and "exit 1" in text


def test_the_image_is_built_from_the_containerfile_and_pushed() -> None:
    build = next(s for s in steps("image") if s.get("uses", "").startswith("docker/build-push-action@"))
    assert build["with"]["file"] == "Containerfile" and build["with"]["push"] == "true"
    assert "VERSION=" in build["with"]["build-args"]
    assert "bgpadv:${{ needs.version.outputs.version }}" in build["with"]["tags"]


def test_the_chart_is_pushed_as_an_oci_artifact_with_the_tested_helm_version() -> None:
    pinned = re.search(r"^HELM_VERSION=(\S+)", (ROOT / "scripts" / "build-helm.sh").read_text(), re.M)
    assert pinned and workflow()["env"]["HELM_VERSION"] == pinned.group(1)
    text = run_text("chart")
    assert "helm lint --strict" in text and "helm package" in text
    assert re.search(r'helm push "dist/bgpadv-\$\{VERSION\}\.tgz" "oci://', text)
    assert workflow()["jobs"]["chart"]["needs"] == ["version", "image"]  # never a chart whose image is missing


def test_the_chart_is_pointed_at_the_published_image_by_one_line() -> None:
    text = run_text("chart")
    pattern = re.search(r'sed -i "s\|\^(.+?)\|', text)
    assert pattern, text
    values = (ROOT / "deploy" / "helm" / "bgpadv" / "values.yaml").read_text().splitlines()
    assert len([line for line in values if line.startswith(pattern.group(1))]) == 1


def test_the_containerfile_builds_from_a_public_base_unless_make_image_gives_its_own() -> None:
    containerfile = (ROOT / "Containerfile").read_text()
    assert re.search(r"^ARG BASE=docker\.io/library/debian:bookworm-slim$", containerfile, re.M)
    assert '--build-arg "BASE=$base"' in (ROOT / "scripts" / "build-image.sh").read_text()
    for package in ("python3-venv", "frr", "libcap2-bin", "libnss-wrapper"):
        assert package in containerfile  # installed when the base lacks it
    assert (ROOT / ".dockerignore").read_text() == (ROOT / ".containerignore").read_text()
