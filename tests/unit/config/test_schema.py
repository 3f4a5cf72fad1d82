"""The configuration's JSON Schema and its defaults: one source for the code, the schema, the example and the guide.

Scope: `bgpadv check-config --schema` (a draft 2020-12 schema, keys as users write them); the shipped configurations
valid against it (checked with the `jsonschema` package, formats included); a typo'd key refused by the schema and
by `parse`, which names the key it resembles; every default that `config/bgpadv.yaml` (its commented-out
`key: value` lines and its `(default N)` remarks) and the guide (README.md, docs/) state equal to the schema's, and
every key of the schema documented in the example.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from bgpadv.commands.cli import main
from bgpadv.config import ConfigError, json_schema, parse
from bgpadv.core import yamlsafe
from tests import guide

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "config" / "bgpadv.yaml"
# deploy/base/bgpadv.yaml is a placeholder refused on purpose (its peer is no address): the install guide's config
# (deploy/examples/bgpadv.yaml) is the deployable one, and the placeholder's one error is asserted below
SHIPPED = [EXAMPLE, ROOT / "deploy" / "examples" / "bgpadv.yaml"]
PLACEHOLDER = ROOT / "deploy" / "base" / "bgpadv.yaml"
MINIMAL = {"localASN": 64513, "peers": [{"address": "10.0.0.1", "asn": 64512}]}


def _document(text: str) -> object:
    [(_, doc)] = yamlsafe.load_documents(text)
    assert not isinstance(doc, yamlsafe.Refused), doc
    return doc


def _validator() -> jsonschema.Draft202012Validator:
    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def test_check_config_schema_prints_a_draft_2020_12_schema(capsys):
    assert main(["check-config", "--schema"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(printed)
    assert {"localASN", "peers", "networks", "safety", "importRoutes"} <= set(printed["properties"])
    assert printed["required"] == ["localASN", "peers"]


@pytest.mark.parametrize("path", [pytest.param(p, id=str(p.relative_to(ROOT))) for p in SHIPPED])
def test_the_shipped_configurations_are_valid_against_the_schema(path):
    assert [e.message for e in _validator().iter_errors(_document(path.read_text()))] == []


def test_the_placeholder_configuration_fails_the_schema_on_its_peer_address_only():
    errors = list(_validator().iter_errors(_document(PLACEHOLDER.read_text())))
    assert [list(e.absolute_path) for e in errors] == [["peers", 0, "address"]]


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        pytest.param(
            {**MINIMAL, "peers": [{"asn": 64512, "localAddress": "10.0.0.11", "adress": "10.0.0.1"}]},
            "peers[0].adress: unknown field (did you mean 'address'?)",
            id="peer-key",
        ),
        pytest.param({**MINIMAL, "localAsn": 1}, "localAsn: unknown field (did you mean 'localASN'?)", id="case"),
        pytest.param(
            {**MINIMAL, "safety": {"hold_seconds": 120}},
            "safety.hold_seconds: unknown field (did you mean 'holdSeconds'?)",
            id="snake-case",
        ),
        pytest.param(
            {**MINIMAL, "importRoutes": {"networks": [{"name": "a", "acept": []}]}},
            "importRoutes.networks[0].acept: unknown field (did you mean 'accept'?)",
            id="nested-list",
        ),
        pytest.param(
            {**MINIMAL, "metrics": {"port": 9179}},
            "metrics.port: unknown field (allowed: listen)",
            id="nothing-close",
        ),
        pytest.param(
            {**MINIMAL, "metrics": {"listen_from_env": "X"}},
            "metrics.listen_from_env: unknown field (did you mean 'listen'?)",
            id="resolved-field-not-in-file",
        ),
    ],
)
def test_a_typo_d_key_is_refused_by_the_schema_and_by_parse_naming_the_key_it_resembles(raw, problem):
    with pytest.raises(ConfigError) as err:
        parse(raw)
    assert problem in err.value.problems
    assert [p for p in err.value.problems if p != problem] in ([], ["peers[0].address: is required"])
    assert "additionalProperties" in _refusals(_validator().iter_errors(raw))


def _refusals(errors) -> set[str]:
    """The keywords that refused, also inside anyOf branches (a section may be null)."""
    out: set[str] = set()
    for e in errors:
        out |= {e.validator, *_refusals(e.context)}
    return out


# --- every default written once ----------------------------------------------------------------------------------

_COMMENTED_KEY = re.compile(r"^(\s*)# ?(\s*(?!(?:true|false|yes|no|on|off):)[a-z][A-Za-z0-9]*:(?:\s|$))", re.MULTILINE)


def _uncommented(text: str) -> str:
    """The example with its commented-out `key: value` lines made live (one level of `#` removed)."""
    return _COMMENTED_KEY.sub(r"\1\2", text)


def _leaves(value: object, prefix: str = "") -> dict[str, object]:
    """Scalars and lists of scalars by dotted key path (list entries share their list's path)."""
    if isinstance(value, dict):
        out: dict[str, object] = {}
        for k, v in value.items():
            out.update(_leaves(v, f"{prefix}.{k}" if prefix else k))
        return out
    if isinstance(value, list) and any(isinstance(v, dict | list) for v in value):
        out = {}
        for v in value:
            out.update(_leaves(v, prefix))
        return out
    return {prefix: value}


def _schema_defaults() -> dict[str, object]:
    """Every key path of the schema with its default (`...` for a key without one)."""
    schema = json_schema()

    def resolve(node: dict) -> dict:
        while "$ref" in node or "anyOf" in node:
            if "$ref" in node:
                node = schema["$defs"][node["$ref"].rsplit("/", 1)[-1]]
            else:
                node = next((n for n in node["anyOf"] if "$ref" in n or "items" in n), node["anyOf"][0])
        return node

    out: dict[str, object] = {}

    def walk(node: dict, prefix: str) -> None:
        node = resolve(node)
        if "items" in node:
            walk(node["items"], prefix)
        for key, prop in node.get("properties", {}).items():
            path = f"{prefix}.{key}" if prefix else key
            out[path] = prop.get("default", ...)
            walk(prop, path)

    walk(schema, "")
    return out


def test_every_default_the_example_states_is_the_schemas():
    """A commented-out `key: value` line states the key's default (a key without a default, or with an empty one,
    shows an example instead); so does a `key (..., default N)` remark."""
    text = EXAMPLE.read_text()
    defaults = _schema_defaults()
    live = _leaves(_document(text))
    documented = _leaves(_document(_uncommented(text)))
    stated = {path: value for path, value in documented.items() if path not in live}
    assert len(stated) >= 25, sorted(stated)  # the transformation found the commented-out keys
    for path, value in stated.items():
        assert path in defaults, f"{path} is no key of the schema"
        default = defaults[path]
        if default in (None, [], ...):
            continue  # an example value
        assert value == default, f"config/bgpadv.yaml states {path}: {value!r}, the schema's default is {default!r}"
    remarks = re.findall(r"([a-z][A-Za-z]+) \([^)]*?default ([0-9.]+)", text)
    assert remarks
    for key, value in remarks:
        [path] = [p for p in defaults if p.rsplit(".", 1)[-1] == key]
        assert float(value) == defaults[path], f"config/bgpadv.yaml: {key} default {value}, schema {defaults[path]}"


def test_every_default_the_guide_states_is_the_schemas():
    """README.md and docs/: "`exabgp.listenPort` (default 179", "`safety.drainSeconds` (default 30 s", ..."""
    text = " ".join(guide.text().split())
    defaults = _schema_defaults()
    found = re.findall(r"`([A-Za-z.]+)`[^`()]{0,60}\(default ([0-9.]+)", text)
    assert len(found) >= 3, found
    for key, value in found:
        paths = [p for p in defaults if p == key or p.endswith("." + key)]
        assert len(paths) == 1, f"the guide: {key} names {paths}"
        assert float(value) == defaults[paths[0]], f"the guide: {key} default {value}, schema {defaults[paths[0]]}"


def test_the_documented_examples_are_valid_against_the_schema_and_every_key_is_documented():
    text = EXAMPLE.read_text()
    assert [e.message for e in _validator().iter_errors(_document(_uncommented(text)))] == []
    keys = {path.rsplit(".", 1)[-1] for path in _schema_defaults()}
    assert sorted(k for k in keys if not re.search(rf"\b{k}\b", text)) == []
