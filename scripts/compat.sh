#!/usr/bin/env bash
# `make compat`: bgpadv against the lowest and the highest ExaBGP and Kubernetes client that pyproject.toml allows
# (its `>=` and `<=` bounds, the releases bgpadv's changes to them were tested with). For each end, a throwaway
# virtualenv with bgpadv, those two releases and the test tools, then:
#   - the guards' unit tests: every change to ExaBGP and the client's stand-in apply to that release (CPython, PyPy),
#     and ExaBGP's own code runs on any other;
#   - against a real FRR ToR: the speaker's scenario (bulk IPv4 + IPv6, End-of-RIB, route refresh, next-hop move,
#     withdrawal, controller respawn), ExaBGP under both runtimes, and the whole chain from a fake Kubernetes API
#     through the client (selected networks, a live migration, a controller crash).
# Needs root, FRR and the lab's tools (`make system-deps`), like `make test`'s lab tests.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/bgpadv-compat.XXXXXX")
trap 'rm -rf "$work"' EXIT

# "lowest|highest <requirement>..." for both ends, and the test tools' requirements, read from pyproject.toml
ends=$("$PYTHON" - <<'EOF'
import re, tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
def bounds(name):
    [spec] = [d for d in project["dependencies"] if re.match(rf"{name}\b", d)]
    low, high = re.search(r">=([\d.]+)", spec), re.search(r"<=([\d.]+)", spec)
    if not (low and high):
        raise SystemExit(f"compat: {spec!r} needs a tested lowest (>=) and highest (<=) release")
    return low[1], high[1]
tools = [d for d in project["optional-dependencies"]["dev"] if re.match(r"(pytest|hypothesis|dpkt|jsonpatch)\b", d)]
(el, eh), (kl, kh) = bounds("exabgp"), bounds("kubernetes")
print(f"lowest exabgp=={el} kubernetes=={kl}")
print(f"highest exabgp=={eh} kubernetes=={kh}")
print("tools", *(f"'{t}'" for t in tools))
EOF
)
tools=$(sed -n 's/^tools //p' <<<"$ends")

TESTS=(
  tests/unit/speaker/test_exabgp_boot.py
  tests/unit/speaker/test_exabgp_boot_guard.py
  tests/unit/sources/test_kubernetes_standin_guard.py
  tests/unit/runtime/test_start_imports.py
  tests/lab/test_speaker_frr.py
  tests/lab/test_exabgp_runtimes.py
  tests/lab/test_chain.py::test_selected_network_subnets_and_running_vm_addresses_reach_the_tor
  tests/lab/test_chain.py::test_live_migration_moves_the_next_hop_when_the_target_is_ready_without_a_withdrawal
  tests/lab/test_chain.py::test_a_controller_crash_keeps_the_routes_on_the_fabric
)

status=0
while read -r end exabgp kubernetes; do
  [ "$end" = tools ] && continue
  venv="$work/$end"
  echo "compat: $end: $exabgp $kubernetes"
  "$PYTHON" -m venv "$venv"
  eval "\"$venv/bin/python\" -m pip install -q --disable-pip-version-check -e . \"$exabgp\" \"$kubernetes\" $tools"
  "$venv/bin/python" -m compileall -q bgpadv bgpadv_lab
  "$venv/bin/python" -c 'import exabgp.version as e, importlib.metadata as m; print("compat: installed exabgp",
    e.release, "kubernetes", m.version("kubernetes"))'
  if ! "$venv/bin/python" -m pytest -q -p no:cacheprovider "${TESTS[@]}"; then
    echo "compat: $end ($exabgp $kubernetes) FAILED" >&2
    status=1
  fi
done <<<"$ends"
exit $status
