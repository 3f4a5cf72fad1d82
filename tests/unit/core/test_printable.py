"""Output cannot be forged: every cluster-supplied string in `bgpadv render`'s and `bgpadv status`'s tables is
made printable (`bgpadv.core.printable`), while their JSON stays exact.

Scope: the helper's escapes (control characters, newlines, ANSI escapes, bidi overrides, backslashes); a CUDN whose
name carries a newline and an ANSI escape through `render` from a manifest directory (the table gains no line, the
JSON keeps the name byte for byte); the import table of `render --learned`; `status` rendering a hostile /status
document (network, peer, reason and resource strings); the filter itself: every C0/C1 control, DEL, bidi control,
line/paragraph separator, zero-width, tag, invisible filler and lone surrogate escaped by both filters, and as
properties over any text: one visible line, read back losslessly, plain text unchanged, one printed line per line.
Every command driven end to end with such input: tests/unit/commands/test_printed_output.py.
"""

from __future__ import annotations

import ast
import io
import json

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from bgpadv.commands import status, statusclient
from bgpadv.commands.render import main as render_main
from bgpadv.core.printable import join_lines, printable, printable_line, shown, write_text
from bgpadv_lab import objects as k8s
from bgpadv_lab.objects import VM_NAMESPACE as NS

EVIL = "vmnet-a\nnetwork forged (1 route(s))\n  10.0.0.0/8  10.0.0.66  host"
ANSI = "vmnet-b\x1b[2J\x1b[31m"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        pytest.param("vmnet-a", "vmnet-a", id="plain-name-unchanged"),
        pytest.param("tenant blue", "tenant blue", id="space-unchanged"),
        pytest.param("réseau-été", "réseau-été", id="printable-unicode-unchanged"),
        pytest.param("a\nb", "a\\nb", id="newline"),
        pytest.param("a\r\nb", "a\\r\\nb", id="carriage-return"),
        pytest.param("a\tb", "a\\tb", id="tab"),
        pytest.param("\x1b[31mred", "\\x1b[31mred", id="ansi-escape"),
        pytest.param("\x00\x7f", "\\x00\\x7f", id="nul-and-delete"),
        pytest.param("abc\u202edef", "abc\\u202edef", id="right-to-left-override"),
        pytest.param("a\u2028b", "a\\u2028b", id="unicode-line-separator"),
        pytest.param("x\U000e0041", "x\\U000e0041", id="tag-character"),
        pytest.param("a\\nb", "a\\\\nb", id="a-literal-backslash-cannot-pose-as-an-escape"),
    ],
)
def test_printable_escapes_what_could_forge_or_steer_a_terminal(text, shown):
    assert printable(text) == shown
    assert "\n" not in printable(text) and "\x1b" not in printable(text)


def test_printable_takes_any_value():
    assert printable(3) == "3"
    assert printable(None) == "None"


def cluster(name: str) -> list[dict]:
    return [
        k8s.node("worker-1", "10.0.0.11", "fd00::11"),
        k8s.cudn_layer2(name, ["192.168.100.0/24"], labels={"bgpadv.io/advertise": "true"}),
        k8s.ipam_claim(NS, "vm-a.default", "vm-a", f"cluster_udn_{name}", ["192.168.100.10/24"]),
        k8s.vmi(NS, "vm-a", "worker-1", "Running", interfaces=[k8s.interface(["192.168.100.10"])]),
        k8s.namespace(NS),
    ]


@pytest.fixture
def dump(tmp_path):
    def write(name: str, learned: dict | None = None) -> tuple[str, str, str | None]:
        manifests = tmp_path / "manifests"
        manifests.mkdir(exist_ok=True)
        (manifests / "cluster.yaml").write_text(yaml.safe_dump(k8s.as_list(cluster(name))))
        config = {
            "localASN": 64513,
            "peers": [{"address": "10.0.0.1", "asn": 64512}],
            "networks": {"selector": {"matchLabels": {"bgpadv.io/advertise": "true"}}},
            "importRoutes": {"enabled": True, "networks": [{"name": name, "table": 1001}]},
        }
        (tmp_path / "bgpadv.yaml").write_text(yaml.safe_dump(config))
        learned_path = None
        if learned is not None:
            (tmp_path / "learned.yaml").write_text(yaml.safe_dump(learned))
            learned_path = str(tmp_path / "learned.yaml")
        return str(tmp_path / "bgpadv.yaml"), str(manifests), learned_path

    return write


@pytest.mark.parametrize("name", [pytest.param(EVIL, id="newline"), pytest.param(ANSI, id="ansi")])
def test_a_cudn_name_cannot_forge_a_line_of_the_render_table(capsys, dump, name):
    config, manifests, _ = dump(name)
    assert render_main(config, manifests, "table") == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out
    assert "forged" not in out or printable(EVIL) in out
    assert not any(line.startswith("network forged") for line in out.splitlines())
    assert not any(line.strip().startswith("10.0.0.0/8") for line in out.splitlines())
    for line in out.splitlines():
        assert line.isprintable()


@pytest.mark.parametrize("name", [pytest.param(EVIL, id="newline"), pytest.param(ANSI, id="ansi")])
def test_the_render_json_keeps_the_cluster_name_exactly(capsys, dump, name):
    config, manifests, _ = dump(name)
    assert render_main(config, manifests, "json") == 0
    doc = json.loads(capsys.readouterr().out)
    networks = {r["network"] for r in doc["routes"]} | {r["network"] for r in doc["rejected"]}
    assert name in networks


def test_the_import_table_of_render_learned_shows_the_network_name_escaped(capsys, dump):
    config, manifests, learned = dump(EVIL, {"10.0.0.1": {"0.0.0.0/0": "10.0.0.1"}})
    assert render_main(config, manifests, "table", learned) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith(printable(EVIL) + " (table 1001")
    assert all(line.isprintable() for line in out.splitlines())


def hostile_status() -> dict:
    return {
        "version": "0.1.0\x1b]0;owned\x07",
        "ready": {"ok": False, "reason": "waiting\nready: yes"},
        "alive": {"ok": True},
        "peers": {"10.0.0.1\nFORGED": {"state": "up\x1b[2K", "routes_advertised": 3}},
        "routes": [{"peer": "10.0.0.1", "network": EVIL, "family": "ipv4", "kind": "host", "count": 1}],
        "routes_total": 1,
        "held": {"routes": {"10.0.0.1\r": 2}, "resources": ["nodes\nheld: none"]},
        "convergence": {"planned\n": {"samples": 1, "p50": 0.001}},
        "import": {
            "complete": True,
            "learned": {"10.0.0.1": {"0.0.0.0/0\nx": "10.0.0.1\x1b"}},
            "networks": {EVIL: {"vrf": "v\nrf", "table": None, "desired": {}, "installed": {}, "refused": {}}},
        },
    }


def test_status_tables_escape_every_string_of_the_status_document():
    text = status.render(hostile_status())
    lines = text.splitlines()
    assert all(line.isprintable() for line in lines), [line for line in lines if not line.isprintable()]
    assert not any(line.startswith(("ready: yes", "FORGED", "held: none", "network forged")) for line in lines)
    assert printable(EVIL) in text
    assert "10.0.0.1\\nFORGED" in text


def test_status_json_is_the_document_exactly(monkeypatch, capsys):
    doc = hostile_status()
    monkeypatch.setattr(statusclient, "status", lambda url: doc)
    assert status.main("http://127.0.0.1:1", as_json=True) == 0
    assert json.loads(capsys.readouterr().out) == doc


# --- the filter itself --------------------------------------------------------------------------------------------

DANGEROUS = [
    *(chr(c) for c in range(0x00, 0x20)),  # C0 controls: NUL, TAB, LF, CR, ESC, ...
    "\x7f",  # DEL
    *(chr(c) for c in range(0x80, 0xA0)),  # C1 controls: CSI \x9b, NEL \x85, OSC \x9d, ...
    *"\u202a\u202b\u202c\u202d\u202e",  # bidi embeddings and overrides
    *"\u2066\u2067\u2068\u2069",  # bidi isolates
    *"\u200e\u200f\u061c",  # direction marks
    *"\u2028\u2029",  # line and paragraph separators
    *"\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e",  # zero-width and soft characters (Cf)
    *"\u00a0\u2000\u3000",  # spaces other than U+0020
    *"\u034f\u115f\u1160\u3164\uffa0\ufe0f\U000e0100",  # printable to Python, invisible on a terminal
    "\U000e0041",  # a tag character
    *"\ud800\udbff\udc00\udfff",  # lone surrogates
    "\ue000",  # private use
    "\u0378",  # unassigned
]


@pytest.mark.parametrize("char", [pytest.param(c, id=f"U+{ord(c):04X}") for c in DANGEROUS])
def test_every_dangerous_character_is_escaped_by_both_filters(char):
    assert not shown(char)
    for printed in (printable(f"a{char}b"), printable_line(f"a{char}b")):
        assert char not in printed
        assert printed.startswith("a\\") and printed.endswith("b")
        printed.encode("utf-8")  # never unencodable


def unescape(shown: str) -> str:
    """The text `printable` escaped, read back as the Python string literal it is written as."""
    return ast.literal_eval("'" + shown.replace("'", "\\'") + "'")


ANY_TEXT = st.text(st.characters(exclude_categories=()), max_size=40)
"""Every code point, lone surrogates included."""


def visible(text: str) -> bool:
    return all(shown(c) for c in text)


@settings(max_examples=400, deadline=None)
@given(ANY_TEXT)
def test_printable_output_is_one_visible_line_and_reads_back_to_the_value(text):
    printed = printable(text)
    assert visible(printed)
    printed.encode("utf-8")
    assert unescape(printed) == text  # lossless, so unambiguous: no two values print alike
    assert printable_line(printed) == printed  # the boundary filter leaves a printed value alone


@settings(max_examples=400, deadline=None)
@given(ANY_TEXT)
def test_text_prints_as_itself_exactly_when_every_character_is_shown(text):
    assert (printable(text) == text) == (visible(text) and "\\" not in text)
    assert (printable_line(text) == text) == visible(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(ANY_TEXT, max_size=6))
def test_each_line_given_is_exactly_one_line_printed(lines):
    text = join_lines(lines)
    assert text.count("\n") == len(lines)
    assert text.split("\n")[:-1] == [printable_line(line) for line in lines]
    assert all(visible(line) for line in text.split("\n"))
    out = io.StringIO()
    write_text(out, text)
    assert out.getvalue() == text  # text made by join_lines is written as it is
