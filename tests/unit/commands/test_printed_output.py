"""What the commands print is clean, whatever the cluster, the configuration, the query or an instance says.

Scope: every command that prints for people — `render` (the routes, refusals and peers tables), `render --learned`,
`explain` (from a manifests dump, and with `--status-url` against an instance on 127.0.0.1), `status --url` and
`check-config` — driven through the command line (`bgpadv.commands.cli.main`) with hostile values: names, queries,
configuration keys and values and `/status` strings carrying newlines, carriage returns, ANSI escapes, C1 controls,
NUL, DEL, bidi overrides and isolates, line separators, zero-width and lone-surrogate characters. The assertions are
on the printed bytes of stdout and stderr: valid UTF-8, no control, format, separator, surrogate or invisible
character at all, and no forged text at the start of a line. `/status` documents of the wrong shape (wrong types,
missing keys, a list for a mapping, non-finite or huge numbers, huge strings, deep nesting, not JSON, too long) end
in one clear line on stderr and exit 2, never a traceback. JSON output stays exact and pure ASCII. The last test is
the lint that keeps it so: nothing in the commands writes to a stream except through `bgpadv.core.printable`.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import threading
import unicodedata
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from bgpadv.commands import statusdoc
from bgpadv.commands.cli import main
from bgpadv_lab import objects as k8s
from bgpadv_lab.objects import VM_NAMESPACE as NS

FORGED = "announce route 0.0.0.0/0 next-hop 10.0.0.66"
"""The line a hostile value tries to start (what an ExaBGP API command looks like)."""
HOSTILE = (
    f"\n{FORGED}\r{FORGED}\x1b[2J\x1b]0;owned\x07\x9b31m\x00\x7f\t\u202e\u2066\u200f\u061c\u2028\u2029"
    "\u200b\ufeff\u3164\U000e0041"
)
"""Appended to names and values: each class of character a terminal would act on or hide."""
NODE = "worker-1" + HOSTILE
CUDN = "vmnet-a"  # a CUDN's name is its OVN-K network's: the hostile one is tested by tests/unit/core/test_printable.py
QUERIES = [
    pytest.param(f"192.168.100.10\r{FORGED}", id="address-and-carriage-return"),
    pytest.param(f"{NS}/vm-a\r192.168.100.10: announced", id="vm-forging-the-verdict"),
    pytest.param(f"{NS}/vm-a\x1b[2J\x1b[1;1H", id="vm-clearing-the-screen"),
    pytest.param(f"vmnet-a\u202e\u2028{FORGED}", id="network-bidi-and-line-separator"),
    pytest.param(f"vmnet-a\n{FORGED}\x00\x9b", id="network-newline-nul-csi"),
]


def unclean(data: bytes) -> list[str]:
    """What is wrong with printed bytes: each line holding a character a terminal would act on or not show, or a
    line starting with the forged text; [] when clean."""
    text = data.decode("utf-8")  # strict: a lone surrogate or a stray byte fails here
    problems = []
    for number, line in enumerate(text.split("\n"), 1):
        bad = sorted(
            {f"U+{ord(c):04X}" for c in line if unicodedata.category(c)[0] in "CZ" and c != " "}
            | {f"U+{ord(c):04X}" for c in line if c in "\u3164\u115f\u034f"}
        )
        if bad:
            problems.append(f"line {number}: {', '.join(bad)}: {line!r}")
        if line.lstrip().startswith(FORGED):
            problems.append(f"line {number} is forged: {line!r}")
    return problems


def run(capsysbinary, *argv: str) -> tuple[int, bytes, bytes]:
    code = main(list(argv))
    captured = capsysbinary.readouterr()
    return code, captured.out, captured.err


def assert_clean(out: bytes, err: bytes) -> None:
    assert unclean(out) == [], out.decode("utf-8", "replace")
    assert unclean(err) == [], err.decode("utf-8", "replace")
    assert b"Traceback" not in err


# --- a cluster and a configuration with hostile names ---------------------------------------------------------------


def hostile_cluster() -> list[dict]:
    """A node with a hostile name, a VM running on it with a hostile interface name, its claim, its CUDN."""
    return [
        k8s.node(NODE, "10.0.0.11", "fd00::11"),
        k8s.node("worker-2" + HOSTILE, "10.0.0.12", "fd00::12"),
        k8s.cudn_layer2(CUDN, ["192.168.100.0/24"], labels={"bgpadv.io/advertise": "true"}),
        k8s.ipam_claim(NS, "vm-a.default", "vm-a", f"cluster_udn_{CUDN}", ["192.168.100.10/24"]),
        k8s.ipam_claim(NS, "vm-b.default" + HOSTILE, "vm-b", f"cluster_udn_{CUDN}", ["192.168.100.11/24", "x\n"]),
        k8s.vmi(NS, "vm-a", NODE, "Running", interfaces=[k8s.interface(["192.168.100.10"], name="eth0" + HOSTILE)]),
        k8s.vmi(NS, "vm-b", "worker-2" + HOSTILE, "Running" + HOSTILE),
        k8s.namespace(NS),
    ]


@pytest.fixture
def cluster(tmp_path: Path) -> tuple[str, str]:
    """(configuration, manifests): one peer served by every node (so render prints the peers table)."""
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(k8s.as_list(hostile_cluster())))
    config = {
        "localASN": 64513,
        "peers": [{"address": "10.0.0.1", "asn": 64512, "nodeSelector": {"matchLabels": {}}}],
        "networks": {"selector": {"matchLabels": {"bgpadv.io/advertise": "true"}}},
        "importRoutes": {"enabled": True, "networks": [{"name": CUDN, "table": 1001}]},
    }
    (tmp_path / "bgpadv.yaml").write_text(yaml.safe_dump(config))
    return str(tmp_path / "bgpadv.yaml"), str(tmp_path / "cluster.yaml")


def test_render_prints_hostile_node_names_escaped_in_every_table(capsysbinary, cluster):
    config, manifests = cluster
    code, out, err = run(capsysbinary, "render", "--config", config, "--manifests", manifests)
    assert code == 0
    assert_clean(out, err)
    text = out.decode()
    assert "peers (1)" in text  # the table that printed node names raw
    assert "worker-1\\nannounce route 0.0.0.0/0" in text
    assert "\\x1b[2J" in text and "\\u202e" in text and "\\u2028" in text and "\\x00" in text and "\\x9b" in text


def test_render_json_keeps_the_names_exactly_in_pure_ascii(capsysbinary, cluster):
    config, manifests = cluster
    code, out, _ = run(capsysbinary, "render", "--config", config, "--manifests", manifests, "--output", "json")
    assert code == 0
    assert all(0x20 <= b < 0x7F or b == 0x0A for b in out)
    doc = json.loads(out)
    assert NODE in {r["node"] for r in doc["routes"]}
    assert NODE in doc["peers"][0]["nodes"]


def test_render_learned_prints_hostile_learned_entries_escaped(capsysbinary, cluster, tmp_path):
    config, manifests = cluster
    learned = {
        "10.0.0.1": {"0.0.0.0/0": "10.0.0.1", f"10.9.0.0/16{HOSTILE}": "10.0.0.1", "10.8.0.0/16": f"x{HOSTILE}"},
        f"10.0.0.9{HOSTILE}": {"0.0.0.0/0": "10.0.0.9"},
    }
    (tmp_path / "learned.yaml").write_text(yaml.safe_dump(learned))
    argv = ["render", "--config", config, "--manifests", manifests, "--learned", str(tmp_path / "learned.yaml")]
    code, out, err = run(capsysbinary, *argv)
    assert code == 0
    assert_clean(out, err)
    assert out.decode().startswith(f"{CUDN} (")
    assert err.count(b"malformed-learned-route") == 3


@pytest.mark.parametrize("query", QUERIES)
def test_explain_echoes_a_hostile_query_escaped(capsysbinary, cluster, query):
    config, manifests = cluster
    code, out, err = run(capsysbinary, "explain", query, "--config", config, "--manifests", manifests)
    assert code in (0, 1)
    assert_clean(out, err)
    lines = out.decode().split("\n")
    assert lines[0].endswith(": unknown") and "\\" in lines[0]
    assert "192.168.100.10: announced" not in lines


@pytest.mark.parametrize("query", ["192.168.100.10", f"{NS}/vm-a", f"{NS}/vm-b", "192.168.100.11", CUDN])
def test_explain_prints_every_field_of_hostile_objects_escaped(capsysbinary, cluster, query):
    config, manifests = cluster
    code, out, err = run(capsysbinary, "explain", query, "--config", config, "--manifests", manifests)
    assert code in (0, 1)
    assert_clean(out, err)
    assert "\\n" in out.decode()  # a hostile field was printed, escaped


# --- /status documents ----------------------------------------------------------------------------------------------


def hostile_status() -> dict:
    """A /status document of the right shape whose every string is hostile."""
    h = HOSTILE
    note = {"time": 1.7e9, "direction": "send" + h, "code": 6, "subcode": "2" + h, "message": "cease" + h}
    return {
        "version": "0.1.0" + h,
        "time": 1.7e9,
        "ready": {"ok": False, "reason": "waiting" + h},
        "alive": {"ok": False, "reason": "stuck" + h},
        "last_sync": 1.7e9 - 5,
        "last_plan": 1.7e9 - 4,
        "peers": {
            "10.0.0.1" + h: {
                "state": "up" + h,
                "asn": 64512,
                "node": NODE,
                "uptime_seconds": 100.0,
                "routes_sent": 3,
                "routes_advertised": 3,
                "bfd": "up" + h,
                "last_error": note,
                "last_notification": note,
            }
        },
        "placement": {"node": NODE, "serves": ["tor-a" + h], "notServed": [{"peer": "tor-b" + h, "nodeSelector": h}]},
        "routes": [{"peer": "10.0.0.1" + h, "network": CUDN + h, "family": "4" + h, "kind": "host" + h, "count": 1}],
        "routes_total": 1,
        "routes_planned": 1,
        "refusals": 0,
        "held": {"routes": {"10.0.0.1" + h: 2}, "resources": ["nodes" + h]},
        "convergence": {"planned" + h: {"samples": 1, "p50": 0.001, "p90": 0.002, "p99": 0.003, "max": 0.004}},
        "import": {
            "complete": False,
            "learned": {"10.0.0.1" + h: {"0.0.0.0/0" + h: "10.0.0.1" + h}},
            "networks": {
                CUDN + h: {
                    "vrf": "vrf" + h,
                    "table": None,
                    "desired": {"0.0.0.0/0" + h: ["10.0.0.1" + h]},
                    "installed": {},
                    "refused": {"reason" + h: 1},
                    "refusals": [{"prefix": "p" + h, "nextHop": h, "peer": h, "reason": h, "message": h}],
                }
            },
        },
    }


LONE_SURROGATE = b'{"version": "0.1\\ud800", "peers": {"\\udfff": {"state": "up\\udc00"}}}'
"""JSON may escape lone surrogates; json.loads gives them back as unencodable strings."""


class Instance:
    """A stand-in running instance on 127.0.0.1: serves `status` at /status and `sent` at /sent."""

    def __init__(self) -> None:
        self.status = b"{}"
        self.sent: bytes | None = b'{"prefixes": {}}'
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = owner.status if self.path.startswith("/status") else owner.sent
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def serve(self, status: dict | bytes, sent: dict | bytes | None = None) -> str:
        self.status = status if isinstance(status, bytes) else json.dumps(status).encode()
        self.sent = sent if sent is None or isinstance(sent, bytes) else json.dumps(sent).encode()
        return self.url


@pytest.fixture
def instance() -> Iterator[Instance]:
    inst = Instance()
    thread = threading.Thread(target=inst.server.serve_forever, daemon=True)
    thread.start()
    yield inst
    inst.server.shutdown()
    inst.server.server_close()


HOSTILE_SENT = {"prefixes": {"192.168.100.10/32" + HOSTILE: {"tor" + HOSTILE: {"at": HOSTILE, "action": HOSTILE}}}}


@pytest.mark.parametrize(
    ("body", "printed"),
    [
        pytest.param(hostile_status(), "10.0.0.1\\nannounce route", id="hostile-strings"),
        pytest.param(LONE_SURROGATE, "bgpadv 0.1\\ud800", id="lone-surrogates"),
    ],
)
def test_status_prints_every_hostile_field_escaped(capsysbinary, instance, body, printed):
    code, out, err = run(capsysbinary, "status", "--url", instance.serve(body))
    assert code == 0
    assert_clean(out, err)
    assert printed in out.decode()


def test_status_json_is_the_document_exactly_in_pure_ascii(capsysbinary, instance):
    code, out, _ = run(capsysbinary, "status", "--url", instance.serve(hostile_status()), "--json")
    assert code == 0
    assert all(0x20 <= b < 0x7F or b == 0x0A for b in out)
    assert json.loads(out) == hostile_status()


@pytest.mark.parametrize("query", ["192.168.100.10", CUDN, QUERIES[0].values[0]])
def test_explain_status_url_prints_every_hostile_field_escaped(capsysbinary, cluster, instance, query):
    hostile_routes = hostile_status()
    hostile_routes["routes"][0]["network"] = CUDN  # a network concerned: explain prints its route counts
    code, out, err = explain_live(capsysbinary, cluster, instance.serve(hostile_routes, HOSTILE_SENT), query)
    assert code in (0, 1)
    assert_clean(out, err)
    assert "instances (live /status and /sent)" in out.decode()


def explain_live(capsysbinary, cluster: tuple[str, str], url: str, query: str = CUDN) -> tuple[int, bytes, bytes]:
    config, manifests = cluster
    return run(capsysbinary, "explain", query, "--config", config, "--manifests", manifests, "--status-url", url)


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


WRONG_SHAPES = [
    pytest.param(b"[]", "the document: must be a mapping", id="a-list-for-the-document"),
    pytest.param({"peers": []}, "peers: must be a mapping", id="a-list-for-peers"),
    pytest.param({"peers": {"a": "up"}}, 'peers["a"]: must be a mapping', id="a-string-for-a-peer"),
    pytest.param({"peers": {"a": {"asn": "64512"}}}, 'peers["a"].asn: must be a whole number', id="asn-a-string"),
    pytest.param({"peers": {"a": {"uptime_seconds": -1}}}, "uptime_seconds: must be a number", id="negative-uptime"),
    pytest.param(b'{"time": 1e400}', "time: must be a number", id="infinite-time"),
    pytest.param(b'{"time": NaN}', "NaN is not a JSON number", id="nan"),
    pytest.param({"last_sync": 1e300}, "last_sync: must be a number of seconds", id="a-time-beyond-year-9999"),
    pytest.param({"routes_total": 10**30}, "routes_total: must be a whole number", id="a-huge-count"),
    pytest.param({"routes_total": True}, "routes_total: must be a whole number", id="a-boolean-count"),
    pytest.param({"version": "x" * 100_000}, "version: a string of 100000 characters", id="a-huge-string"),
    pytest.param({"ready": {"ok": "yes"}}, "ready.ok: must be true or false", id="ready-a-string"),
    pytest.param({"routes": [{"peer": "a"}]}, "routes[0]: the key network is missing", id="a-route-without-keys"),
    pytest.param({"routes": {"a": 1}}, "routes: must be a list", id="a-mapping-for-routes"),
    pytest.param({"convergence": {"planned": {"p50": "fast"}}}, 'convergence["planned"].p50', id="a-string-percentile"),
    pytest.param({"held": {"resources": "nodes"}}, "held.resources: must be a list", id="a-string-for-a-list"),
    pytest.param({"placement": {"serves": [1]}}, "placement.serves[0]: must be a string", id="a-number-for-a-name"),
    pytest.param({"import": {"learned": {"p": ["x"]}}}, 'import.learned["p"]: must be a mapping', id="import-list"),
    pytest.param(
        {"peers": {"a": {"last_error": {"time": "noon"}}}}, "last_error.time: must be a number", id="a-string-time"
    ),
    pytest.param(_nested(100_000), "nested too deep", id="deep-nesting"),
    pytest.param(b'{"version": "a", "version": ["b"]}', "version: must be a string", id="a-duplicate-key"),
    pytest.param(b"<html>bad gateway</html>", "not JSON", id="not-json"),
    pytest.param(b'{"version": "\xff"}', "not UTF-8", id="not-utf8"),
]


@pytest.mark.parametrize(("body", "says"), WRONG_SHAPES)
def test_status_of_the_wrong_shape_is_one_clear_error_and_exit_2(capsysbinary, instance, body, says):
    code, out, err = run(capsysbinary, "status", "--url", instance.serve(body))
    assert code == 2
    assert out == b""
    assert_clean(out, err)
    assert err.count(b"\n") == 1
    assert err.startswith(b"bgpadv status: http://127.0.0.1:")
    assert says.encode() in err, err


@pytest.mark.parametrize(("body", "says"), WRONG_SHAPES[:6])
def test_explain_status_url_of_the_wrong_shape_is_one_clear_error_and_exit_2(
    capsysbinary, cluster, instance, body, says
):
    url = instance.serve(body)
    code, out, err = explain_live(capsysbinary, cluster, url)
    assert code == 2
    assert out == b""
    assert_clean(out, err)
    assert says.encode() in err, err


def test_a_sent_answer_of_the_wrong_shape_is_an_error_too(capsysbinary, cluster, instance):
    url = instance.serve(hostile_status(), {"prefixes": {"10.0.0.0/8": ["tor-a"]}})
    code, out, err = explain_live(capsysbinary, cluster, url)
    assert code == 2
    assert_clean(out, err)
    assert b'/sent is not a bgpadv /sent answer: prefixes["10.0.0.0/8"]: must be a mapping' in err


def test_an_answer_longer_than_the_bound_is_refused_unread(capsysbinary, instance, monkeypatch):
    monkeypatch.setattr(statusdoc, "MAX_BODY", 1000)
    code, _out, err = run(capsysbinary, "status", "--url", instance.serve({"version": "x" * 2000}))
    assert code == 2
    assert b"longer than 1000 bytes" in err


def test_an_unreachable_instance_is_exit_1_and_an_older_one_without_sent_is_reported(capsysbinary, cluster, instance):
    code, _out, err = run(capsysbinary, "status", "--url", "http://127.0.0.1:9")
    assert code == 1 and b"cannot read http://127.0.0.1:9/status" in err
    url = instance.serve({"ready": {"ok": True, "reason": "ok"}}, None)
    code, out, err = explain_live(capsysbinary, cluster, url)
    assert code == 0
    assert b"send times unknown: HTTP Error 404" in out


def test_status_all_names_a_damaged_session_object_instead_of_failing():
    from bgpadv.commands.status import render_all

    good = {
        "metadata": {"name": "worker-1.tor-a"},
        "spec": {"instance": "worker-1" + HOSTILE, "peer": "tor-a" + HOSTILE, "peerASN": 64512},
        "status": {"state": "up" + HOSTILE, "routes": {"sent": 3}, "lastError": {"message": HOSTILE}},
    }
    damaged = [
        {"metadata": {"name": "a" + HOSTILE}, "spec": ["x"]},
        {"metadata": {"name": "b"}, "spec": {"peerASN": "x"}},
        {"metadata": {"name": "c"}, "status": {"routes": {"sent": -1}}},
        "not an object",
    ]
    text = render_all([good, *damaged], 1.7e9)
    assert unclean(text.encode()) == []
    assert "not shown, not BGPSessionState objects of the expected shape: a\\n" in text
    assert "tor-a\\n" in text


# --- check-config ---------------------------------------------------------------------------------------------------

HOSTILE_CONFIG = {
    "localASN": 64513,
    "peers": [{"address": "10.0.0.1" + HOSTILE, "asn": 64512, "description" + HOSTILE: "x"}],
    "nodeName" + HOSTILE: HOSTILE,
    "networks": {"selector": {"matchLabels": {"a" + HOSTILE: HOSTILE}}},
}


def test_check_config_prints_hostile_keys_and_values_escaped(capsysbinary, tmp_path):
    path = tmp_path / ("bgpadv\x1b[2J.yaml")
    path.write_text(yaml.safe_dump(HOSTILE_CONFIG))
    code, out, err = run(capsysbinary, "check-config", str(path))
    assert code == 2
    assert_clean(out, err)
    assert err.count(b"\n") >= 3
    shown = f"{tmp_path}/bgpadv\\x1b[2J.yaml: ".encode()
    assert all(line.startswith(shown) for line in err.split(b"\n")[:-1]), err


def test_check_config_warnings_print_hostile_names_escaped(capsysbinary, tmp_path):
    path = tmp_path / "bgpadv.yaml"
    config = {
        "localASN": 64513,
        "peers": [{"address": "10.0.0.1", "asn": 64512}],
        "networks": {"secondary": [{"name": "tenant" + HOSTILE}]},
    }
    path.write_text(yaml.safe_dump(config))
    code, out, err = run(capsysbinary, "check-config", str(path))
    assert code == 0, err
    assert_clean(out, err)
    assert b"networks.secondary[0] (tenant\\n" in err


# --- usage errors ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["render", f"--{HOSTILE}", "--config", "x", "--manifests", "y"], id="unknown-argument"),
        pytest.param(["render", "--output", HOSTILE, "--config", "x", "--manifests", "y"], id="invalid-choice"),
        pytest.param([f"render{HOSTILE}"], id="unknown-command"),
        pytest.param(["status", "--url"], id="missing-value"),
    ],
)
def test_usage_errors_echo_the_arguments_escaped(capsysbinary, argv):
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    captured = capsysbinary.readouterr()
    assert_clean(captured.out, captured.err)
    assert b"error:" in captured.err


# --- the terminal's encoding ----------------------------------------------------------------------------------------


def test_an_ascii_terminal_gets_escapes_not_a_traceback(cluster):
    config, manifests = cluster
    argv = [sys.executable, "-m", "bgpadv", "explain", f"{NS}/vm-a\u00e9t\u00e9", "--config", config]
    argv += ["--manifests", manifests]
    done = subprocess.run(argv, capture_output=True, env={"PYTHONIOENCODING": "ascii", "PATH": ""}, timeout=60)
    assert done.returncode == 1, done.stderr
    assert b"Traceback" not in done.stderr
    assert done.stdout.split(b"\n")[0] == b"imported-vms/vm-a\\xe9t\\xe9: unknown"


# --- the lint -------------------------------------------------------------------------------------------------------

PRINTING = [
    *sorted(Path("bgpadv/commands").glob("*.py")),
    Path("bgpadv/config/load.py"),
]


def _offences(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        where = f"{path}:{node.lineno}"
        if isinstance(func, ast.Name) and func.id == "print":
            found.append(f"{where}: print(): write through bgpadv.core.printable")
        if isinstance(func, ast.Attribute) and func.attr in ("write", "writelines"):
            found.append(f"{where}: .{func.attr}(): write through bgpadv.core.printable")
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "join"
            and isinstance(func.value, ast.Constant)
            and func.value.value == "\n"
        ):
            found.append(f"{where}: '\\n'.join(): use printable.join_lines (one printable line per element)")
        if any(k.arg == "ensure_ascii" for k in node.keywords):
            found.append(f"{where}: ensure_ascii: JSON goes through printable.write_json")
    return found


def test_nothing_in_the_commands_writes_except_through_the_printable_filter():
    assert len(PRINTING) > 8
    offences = [o for path in PRINTING for o in _offences(path)]
    assert offences == []


def test_nothing_in_the_product_calls_print():
    """The service's own messages (`bgpadv run`) too: print() writes whatever a value holds."""
    calls = [
        f"{path}:{node.lineno}"
        for path in sorted(Path("bgpadv").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"
    ]
    assert calls == []
