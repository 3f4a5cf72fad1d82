"""Hostile documents are bounded: a small text never costs big memory or time, a deep one never
raises RecursionError, and a bad document is refused alone while everything else still plans.

Scope: `bgpadv.core.yamlsafe` (the one YAML loader of manifests and the configuration: no aliases, nesting at most
`MAX_DEPTH`, plain data only, recovery after a syntax error), JSON depth in manifests and watch lines
(`Reflector._handle`), the per-claim address rules of `planner.vms` (linear de-duplication, one address per family,
at most `MAX_CLAIM_IPS` entries), and the bounds on refusal values (`checks.describe`) and Event messages.
"""

from __future__ import annotations

import json
import time
import tracemalloc
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from kubernetes import client

from bgpadv.config import ConfigError, load
from bgpadv.core import resources, yamlsafe
from bgpadv.core.model import ObjectRef, Refusal
from bgpadv.observe.events import MAX_MESSAGE, EventRecorder
from bgpadv.planner import checks, plan
from bgpadv.planner.incremental import IncrementalPlanner
from bgpadv.planner.vms import MAX_CLAIM_IPS
from bgpadv.sources.decode.dispatch import decode
from bgpadv.sources.manifests import load_manifests
from bgpadv.sources.reflector import Reflector
from bgpadv_lab import objects as k8s
from bgpadv_lab.objects import VM_NAMESPACE as NS

ADV = {"bgpadv.io/advertise": "true"}

# The classic "billion laughs": 9 levels of 9 aliases, 9^9 (387 million) strings once expanded.
LAUGHS = (
    "a: &a ["
    + ",".join(['"lol"'] * 9)
    + "]\n"
    + "".join(
        f"{level}: &{level} [{','.join([f'*{prev}'] * 9)}]\n"
        for prev, level in zip("abcdefgh", "bcdefghi", strict=True)
    )
)
# ... carried by an otherwise well-formed IPAMClaim (about 530 bytes, like the 526-byte file).
ALIAS_BOMB = (
    "apiVersion: k8s.cni.cncf.io/v1alpha1\nkind: IPAMClaim\n"
    "metadata: {name: vm-bomb.default, namespace: imported-vms, labels: {kubevirt.io/vm: vm-bomb}}\n"
    "spec: {network: cluster_udn_vmnet-a}\nlol:\n"
    + "".join("  " + line + "\n" for line in LAUGHS.splitlines())
    + "status: {ips: *i}\n"
)


def _cluster() -> list[dict]:
    """A small valid cluster: one node, one selected Layer2 CUDN, one running VM with one claim."""
    return [
        k8s.node("worker-1", "10.0.0.11", "fd00::11"),
        k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24", "fd10:100::/64"], labels=ADV),
        k8s.ipam_claim(NS, "vm-a.default", "vm-a", "cluster_udn_vmnet-a", ["192.168.100.5/24"]),
        k8s.vmi(NS, "vm-a", "worker-1"),
    ]


def _dump(*docs: object) -> str:
    return "".join("---\n" + yaml.safe_dump(d, sort_keys=False) for d in docs)


def _host_routes(state) -> set[str]:
    return {str(r.prefix) for r in plan(state, k8s.config()).routes if str(r.kind) == "host"}


# --- aliases ------------------------------------------------------------------------------------------------------


def test_the_alias_bomb_is_refused_quickly_in_little_memory(tmp_path):
    assert len(ALIAS_BOMB.encode()) < 600
    (tmp_path / "bomb.yaml").write_text(ALIAS_BOMB)
    tracemalloc.start()
    try:
        state, warnings = load_manifests(tmp_path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 * 2**20
    assert warnings == [
        f"{tmp_path / 'bomb.yaml'} document 1, line 7: YAML aliases (*name) are not accepted; "
        "refused (the file's other documents are still read)"
    ]
    assert not state.ipam_claims


def test_the_alias_bomb_in_the_configuration_is_a_config_error(tmp_path):
    path = tmp_path / "bgpadv.yaml"
    path.write_text("localASN: 64513\n" + LAUGHS + "peers: *i\n")
    with pytest.raises(ConfigError) as err:
        load(path)
    assert err.value.problems == [f"{path}: document 1, line 3: YAML aliases (*name) are not accepted"]


def test_anchors_alone_expand_nothing_and_are_accepted():
    assert list(yamlsafe.load_documents("a: &x [1, 2]\nb: 3\n")) == [(1, {"a": [1, 2], "b": 3})]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        pytest.param("a: &x 1\n<<: {b: 2}\n", "line 2: merge keys (<<) are not accepted", id="merge-key"),
        pytest.param("a: !!binary aGk=\n", "line 1: the tag 'tag:yaml.org,2002:binary' is not accepted", id="binary"),
        pytest.param("a: !!python/name:os.system x\n", "line 1: the tag 'tag:yaml.org,2002:python/name:os", id="py"),
        pytest.param("a: !!set {x}\n", "line 1: the tag 'tag:yaml.org,2002:set' is not accepted", id="set"),
        pytest.param("? [a, b]\n: c\n", "line 1: a mapping key must be a scalar", id="complex-key"),
        pytest.param("a: 1\nb: 2\na: 3\n", "line 3: the key 'a' is given twice", id="repeated-key"),
        pytest.param("a: " + "1" * 5000 + "\n", "line 1: not a usable number: '111111", id="int-beyond-limit"),
    ],
)
def test_only_plain_data_is_built(text, problem):
    [(index, refused)] = list(yamlsafe.load_documents(text))
    assert index == 1 and isinstance(refused, yamlsafe.Refused)
    assert str(refused).startswith(f"document 1, {problem}")


def test_timestamps_stay_strings_and_yaml_11_scalars_keep_their_types():
    text = "t: 2025-01-01T00:00:00Z\nn: null\nb: yes\ni: 0x10\nf: 1.5\ns: '1'\n"
    [(_, doc)] = list(yamlsafe.load_documents(text))
    assert doc == {"t": "2025-01-01T00:00:00Z", "n": None, "b": True, "i": 16, "f": 1.5, "s": "1"}
    assert doc == yaml.load(text, Loader=yaml.BaseLoader) | {"n": None, "b": True, "i": 16, "f": 1.5}


# --- depth ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [101, 5_000, 1_000_000])
def test_nesting_deeper_than_the_limit_is_a_clear_refusal_never_a_recursion_error(depth):
    [(_, refused)] = list(yamlsafe.load_documents("a: " + "[" * depth + "]" * depth + "\n"))
    assert isinstance(refused, yamlsafe.Refused)
    assert refused.problem == "nested deeper than 100 levels"


def test_nesting_up_to_the_limit_is_read():
    depth = yamlsafe.MAX_DEPTH
    [(_, doc)] = list(yamlsafe.load_documents("[" * depth + "]" * depth))
    for _ in range(depth - 1):
        doc = doc[0]
    assert doc == []


def _depth(value: object) -> int:
    """How many dicts/lists nest in `value` (a scalar: 0)."""
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


# strings full of what could fool a scan of the text: brackets, quotes, backslashes, escapes, non-ASCII
_TRICKY_TEXT = st.text(alphabet=st.sampled_from('{}[]"\\/ab\n\té\u2028'), max_size=8)
_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | _TRICKY_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TRICKY_TEXT, inner, max_size=3),
    max_leaves=40,
)


@settings(max_examples=400, deadline=None)
@given(value=_JSON_VALUES, limit=st.integers(1, 12), ascii_only=st.booleans(), spaced=st.booleans())
def test_the_text_bound_on_json_depth_never_passes_a_value_deeper_than_its_limit(value, limit, ascii_only, spaced):
    """`nests_at_most` reads the text only (the LIST pages' fast path): when it says "at most `limit` levels" the
    decoded value really is, whatever its strings hold; and a value within half the limit always passes."""
    separators = (", ", ": ") if spaced else (",", ":")
    text = json.dumps(value, ensure_ascii=ascii_only, separators=separators).encode()
    passed = yamlsafe.nests_at_most(text, limit)
    if passed:
        assert _depth(value) <= limit
    if _depth(value) <= limit // 2:
        assert passed


@pytest.mark.parametrize("depth", [100, 101, 102, 103, 250])
def test_a_list_page_keeps_items_up_to_the_limit_whatever_the_fast_bound_says(depth):
    """A page with one item nested `depth` levels: kept up to MAX_DEPTH (100), left out beyond, exactly."""
    item = {"metadata": {"name": "x"}, "spec": "@"}
    text = json.dumps(item).replace('"@"', "[" * (depth - 1) + "]" * (depth - 1))
    page = ('{"metadata": {"resourceVersion": "1"}, "items": [' + text + ', {"a": "[[[["}]}').encode()
    _, kept, too_deep = yamlsafe.loads_list_page(page)
    assert (len(kept), too_deep) == ((2, 0) if depth <= yamlsafe.MAX_DEPTH else (1, 1))


def test_a_deep_json_manifest_is_refused_and_the_rest_still_plans(tmp_path):
    (tmp_path / "deep.json").write_text('{"kind": "Node", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    (tmp_path / "cluster.yaml").write_text(_dump(*_cluster()))
    state, warnings = load_manifests(tmp_path)
    assert warnings == [f"{tmp_path / 'deep.json'}: refused: nested deeper than 100 levels"]
    assert _host_routes(state) == {"192.168.100.5/32"}


def test_a_deep_configuration_is_a_config_error(tmp_path):
    path = tmp_path / "bgpadv.yaml"
    path.write_text("localASN: 64513\npeers: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ConfigError) as err:
        load(path)
    assert err.value.problems == [f"{path}: document 1, line 2: nested deeper than 100 levels"]


# --- a bad document is refused alone --------------------------------------------------------------------------------


def test_a_bad_document_among_good_ones_is_refused_and_every_other_document_still_plans(tmp_path):
    node, cudn, claim, vmi = _cluster()
    claim_b = k8s.ipam_claim(NS, "vm-b.default", "vm-b", "cluster_udn_vmnet-a", ["192.168.100.6/24"])
    vmi_b = k8s.vmi(NS, "vm-b", "worker-1")
    (tmp_path / "a.yaml").write_text(
        _dump(node, cudn)
        + ALIAS_BOMB.replace("apiVersion", "---\napiVersion", 1)  # document 3
        + _dump(claim)
        + "---\nkind: [\n"  # document 5: a syntax error
        + _dump(vmi, claim_b)
        + "---\n"
        + "x: " + "[" * 5000 + "]" * 5000 + "\n"  # document 8: too deep
        + _dump(vmi_b)
    )  # fmt: skip
    state, warnings = load_manifests(tmp_path)
    path = tmp_path / "a.yaml"
    assert len(warnings) == 3
    assert warnings[0].startswith(f"{path} document 3, line ")
    assert warnings[0].endswith(
        ": YAML aliases (*name) are not accepted; refused (the file's other documents are still read)"
    )
    assert warnings[1].startswith(f"{path} document 5, line ")
    assert ": not valid YAML: " in warnings[1]
    assert warnings[2].startswith(f"{path} document 8, line ")
    assert warnings[2].endswith(": nested deeper than 100 levels; refused (the file's other documents are still read)")
    assert _host_routes(state) == {"192.168.100.5/32", "192.168.100.6/32"}


# --- the 20k-claim dump and the C parser ----------------------------------------------------------------------------


def test_the_c_parser_is_used_when_pyyaml_has_it():
    assert yamlsafe.Loader is getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def test_a_20k_claim_list_loads_like_pyyaml_would(tmp_path):
    """The issue's 20k-claim dump (26.8 s with the pure-Python loader): every claim read, equal to PyYAML's."""
    template = k8s.ipam_claim(NS, "vm-@.default", "vm-@", "cluster_udn_vmnet-a", ["10.@.0.1/8"])
    item = yaml.safe_dump({"items": [template]}, sort_keys=False).split("\n", 1)[1]  # dumped once, stamped 20k times
    text = "apiVersion: v1\nkind: List\nitems:\n" + "".join(item.replace("@", str(i)) for i in range(20_000))
    (tmp_path / "claims.yaml").write_text(text)
    state, warnings = load_manifests(tmp_path)
    assert warnings == []
    assert len(state.ipam_claims) == 20_000
    expected = yaml.safe_load(item.replace("@", "19999"))[0]
    assert state.ipam_claims[(NS, "vm-19999.default")] == decode(resources.IPAM_CLAIM, expected)  # as decoded


# --- per-claim work -------------------------------------------------------------------------------------------------


def _claim_state(ips: list[object]):
    objects = _cluster()
    objects[2] = k8s.ipam_claim(NS, "vm-a.default", "vm-a", "cluster_udn_vmnet-a", ips)
    return k8s.state(objects)


def test_a_claim_with_40k_addresses_is_one_bounded_refusal():
    ips = [f"192.168.{i >> 8 & 255}.{i & 255}/16" for i in range(40_000)]
    result = plan(_claim_state(ips), k8s.config())
    assert [str(r.prefix) for r in result.routes if str(r.kind) == "host"] == []
    [refusal] = result.rejected
    assert (refusal.reason, refusal.message) == (
        checks.MALFORMED_OBJECT,
        "status.ips lists 40000 entries; OVN-K writes at most one address per family",
    )
    assert refusal.value.startswith("['192.168.0.0/16', '192.168.0.1/16', ") and len(refusal.value) <= 257


def test_two_addresses_of_one_family_refuse_the_claim_whole():
    result = plan(_claim_state(["192.168.100.5/24", "fd10:100::5/64", "192.168.100.6/24"]), k8s.config())
    assert [str(r.prefix) for r in result.routes if str(r.kind) == "host"] == []
    [refusal] = result.rejected
    assert refusal.reason == checks.MALFORMED_OBJECT
    assert refusal.message == (
        "status.ips lists more than one IPv4 address (192.168.100.5/24, 192.168.100.6/24); "
        "OVN-K allocates one per family, so the claim is refused whole"
    )


@pytest.mark.parametrize(
    ("ips", "routes"),
    [
        pytest.param(["192.168.100.5/24", "fd10:100::5/64"], {"192.168.100.5/32", "fd10:100::5/128"}, id="dual"),
        pytest.param(["192.168.100.5/24", "192.168.100.5/32", "192.168.100.5"], {"192.168.100.5/32"}, id="same-3x"),
        pytest.param(["192.168.100.5/24", "garbage"], {"192.168.100.5/32"}, id="garbage-beside"),
        pytest.param(["192.168.100.5/24"] * MAX_CLAIM_IPS, {"192.168.100.5/32"}, id="at-the-entry-limit"),
        pytest.param(["192.168.100.5/24"] * (MAX_CLAIM_IPS + 1), set(), id="beyond-the-entry-limit"),
    ],
)
def test_one_address_per_family_is_announced(ips, routes):
    assert _host_routes(_claim_state(ips)) == routes


def test_the_incremental_planner_agrees_on_refused_claims():
    config = k8s.config()
    inc = IncrementalPlanner(config)
    for ips in (["192.168.100.5/24"], ["192.168.100.5/24", "192.168.100.6/24"], ["192.168.100.7/24"]):
        state = _claim_state(ips)
        assert inc.plan(state, [("ipam_claims", (NS, "vm-a.default"))]) == plan(state, config)


# --- bounded messages -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        pytest.param(list(range(40_000)), "[0, 1, 2, 3, 4, 5, 6, 7, ...]", id="40k-list"),
        pytest.param("x" * 10_000_000, "x" * 256 + "…", id="10MB-string"),
        pytest.param(10**5000, "<int of 16610 bits>", id="huge-int"),
        pytest.param({"b": 1, "a": [[[[["deep"]]]]]}, "{'b': 1, 'a': [[[[...]]]]}", id="nested-dict-in-order"),
    ],
)
def test_describe_formats_only_what_it_shows(value, shown):
    started = time.process_time()
    assert checks.describe(value) == shown
    assert time.process_time() - started < 0.05


def test_event_messages_are_bounded_whatever_the_refusal_carries():
    recorder = EventRecorder(client.ApiClient(), host="test")
    ref = ObjectRef("IPAMClaim", "vm-a.default", NS, "uid-1")
    recorder.record([Refusal(ref, "v" * 1_000_000, checks.MALFORMED_OBJECT, "m" * 1_000_000, "n" * 1_000_000)])
    call = recorder._queue.get_nowait()  # the Event as queued: its bound holds before any apiserver sees it
    message = call.body["message"]
    assert len(message) <= MAX_MESSAGE
    assert message.startswith("not announcing " + "v" * 300 + "…: mmm")


# --- watch lines ----------------------------------------------------------------------------------------------------


class _Counter:
    def __init__(self) -> None:
        self.skipped: list[tuple[str, str]] = []

    def watch_line_skipped(self, resource: str, reason: str) -> None:
        self.skipped.append((resource, reason))

    def __getattr__(self, name: str):
        return lambda *args, **kwargs: None


@pytest.mark.parametrize("depth", [150, 100_000])
def test_a_watch_line_nested_too_deep_is_skipped_with_a_warning_and_a_count(depth, caplog):
    events = []
    observer = _Counter()
    reflector = Reflector(client.ApiClient(), resources.IPAM_CLAIM, events.append, observer=observer)
    deep = {"type": "ADDED", "object": {"metadata": {"name": "x", "namespace": NS}, "spec": "@"}}
    line = json.dumps(deep).replace('"@"', "[" * depth + "]" * depth).encode()
    good = {"type": "ADDED", "object": k8s.ipam_claim(NS, "vm-a.default", "vm-a", "cluster_udn_vmnet-a", [])}
    with caplog.at_level("WARNING", logger="bgpadv.sources.reflector"):
        # one watch line at a time: the reflector's public surface is a thread against a live apiserver
        reflector._handle(line, 1.0)
        reflector._handle(json.dumps(good).encode(), 2.0)
    assert observer.skipped == [("ipamclaims", "too-deep")]
    assert [e.obj["metadata"]["name"] for e in events] == ["vm-a.default"]
    assert f"ipamclaims: skipping a watch line nested deeper than 100 levels ({len(line)} bytes)" in caplog.messages


class _Page:
    """Stands in for the client's raw urllib3 response to one LIST call."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def release_conn(self) -> None:
        pass


@pytest.mark.parametrize("depth", [150, 5_000])
def test_a_listed_object_nested_too_deep_is_left_out_and_the_rest_of_the_page_is_listed(depth, caplog):
    """Even an object too deep for json.loads to decode the page (5,000 levels) costs only itself."""
    events = []
    observer = _Counter()
    reflector = Reflector(client.ApiClient(), resources.IPAM_CLAIM, events.append, observer=observer)
    good = [k8s.ipam_claim(NS, f"vm-{n}.default", f"vm-{n}", "cluster_udn_vmnet-a", []) for n in "ab"]
    good[0]["metadata"]["annotations"] = {"note": 'brackets }]"[{ and a backslash \\ inside strings'}
    deep = b'{"metadata": {"name": "deep", "namespace": "x"}, "spec": ' + b"[" * depth + b"]" * depth + b"}"
    page = (
        b'{"kind": "IPAMClaimList", "metadata": {"resourceVersion": "42"}, "items": ['
        + json.dumps(good[0]).encode() + b", " + deep + b", " + json.dumps(good[1]).encode()
        + b"]}"
    )  # fmt: skip
    # one LIST page at a time: the reflector's public surface is a thread against a live apiserver
    reflector._call = lambda **kwargs: _Page(page)
    with caplog.at_level("WARNING", logger="bgpadv.sources.reflector"):
        reflector._list()
    assert [(e.type, e.object_key()) for e in events] == [
        ("ADDED", (NS, "vm-a.default")),
        ("ADDED", (NS, "vm-b.default")),
        ("SYNCED", None),
    ]
    assert events[0].view == decode(resources.IPAM_CLAIM, good[0])  # decoded whole on the reflector's thread
    assert reflector.resource_version == "42"
    assert observer.skipped == [("ipamclaims", "too-deep")]
    assert "ipamclaims: skipping a listed object nested deeper than 100 levels" in caplog.messages


def test_manifest_paths_in_warnings_name_the_file(tmp_path):
    (tmp_path / "x.yaml").write_text("a: *b\n")
    _, warnings = load_manifests(tmp_path)
    assert warnings == [
        f"{Path(tmp_path) / 'x.yaml'} document 1, line 1: YAML aliases (*name) are not accepted; "
        "refused (the file's other documents are still read)"
    ]


# --- properties -----------------------------------------------------------------------------------------------------

json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(json_like, min_size=1, max_size=4))
def test_plain_documents_read_as_pyyaml_reads_them(docs):
    text = yaml.safe_dump_all(docs, sort_keys=False)
    assert [doc for _, doc in yamlsafe.load_documents(text)] == list(yaml.load_all(text, Loader=_NoTimestamps))


class _NoTimestamps(yaml.SafeLoader):
    pass


_NoTimestamps.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}

yaml_fragments = st.lists(
    st.sampled_from(
        [
            "---",
            "...",
            "a:",
            "  - x",
            "- [",
            "]",
            "{",
            "}",
            "*a",
            "&a b",
            "<<: {}",
            "!!binary x",
            "? [",
            "%YAML 1.1",
            "'",
            '"',
            "\t",
            "key: value",
            "  nested: 1",
            "|",
            "  text",
        ]
    )
    | st.text(max_size=10),
    max_size=12,
).map("\n".join)


@settings(max_examples=500, deadline=None)
@given(yaml_fragments)
def test_no_text_makes_the_loader_raise_and_every_document_is_numbered_once(text):
    indexes = [index for index, _ in yamlsafe.load_documents(text)]
    assert indexes == sorted(set(indexes))


@settings(max_examples=300, deadline=None)
@given(
    items=st.lists(st.dictionaries(st.text(max_size=8), json_like, max_size=4), max_size=4),
    metadata=st.dictionaries(st.text(max_size=8), json_like, max_size=3),
    ensure_ascii=st.booleans(),
)
def test_a_page_split_without_decoding_equals_the_decoded_page(items, metadata, ensure_ascii):
    data = json.dumps({"kind": "List", "items": items, "metadata": metadata}, ensure_ascii=ensure_ascii).encode()
    # loads_list_page splits only pages json.loads cannot decode: the splitter alone, on pages it can
    page, decoded = yamlsafe._split_page(data)
    assert (page, decoded) == ({"kind": "List", "metadata": metadata}, items)
