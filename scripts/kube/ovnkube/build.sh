#!/usr/bin/env bash
# Build OVN-Kubernetes' `ovnkube` (the test tier runs its cluster manager) from the pinned go-controller module
# (scripts/kube/versions.env: OVN_KUBERNETES_VERSION, its hash OVN_KUBERNETES_SUM) into
# ${BGPADV_KUBE_CACHE:-/var/cache/bgpadv/kube}/ovnkube-<pin hash>/bin/ovnkube, outside the checkout.
#
# The go-controller module has `replace` lines, so it cannot be `go install`ed: a wrapper module of our own requires
# it and repeats those lines. Two of its own pinned dependencies are not served by the Go module proxy, and both are
# used only in modes the tests never run; the wrapper replaces them locally:
#   github.com/metallb/frr-k8s              the API and client packages of FRR_K8S_REPLACEMENT_VERSION (served),
#                                           plus the one field OVN-K uses that it lacks (Advertise.NextHop)
#   github.com/ovn-kubernetes/dpu-simulator/lib/dpusim   scripts/kube/ovnkube/dpusim (a few names of the simulator)
# The pin hash covers versions.env and this directory; a stamp marks a finished build, so an unchanged pin is a no-op.
# Its own tree and hash: a change here never rebuilds the apiserver's tree (scripts/kube/build.sh), nor the reverse.
#
# Usage: build.sh            build if needed, print the tree (its bin/ovnkube)
#        build.sh --print    print the tree without building (exit 1, with the reason, if not built)
# A failed build leaves its output in <tree>.log (the tests that need ovnkube skip and print its end).
# Environment: BGPADV_KUBE_CACHE (cache root), GOFLAGS (default -p=2). Go commands run under nice -n 10.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../versions.env
source "$here/../versions.env"
# frr-k8s: OVN-K pins a pseudo-version the module proxy does not serve; its route advertisements (never run by the
# tests) are built against this served version's API plus the one field it lacks.
FRR_K8S_REPLACEMENT_VERSION=v0.0.21

cache_root="${BGPADV_KUBE_CACHE:-/var/cache/bgpadv/kube}"
pin_hash="$(cat "$here/../versions.env" "$here/build.sh" "$here"/dpusim/* | sha256sum | cut -c1-16)"
tree="$cache_root/ovnkube-$pin_hash"
stamp="$tree/.built"
log="$tree.log"

if [[ "${1:-}" == "--print" ]]; then
  if [[ ! -f "$stamp" ]]; then
    echo "ovnkube not built: $tree" >&2
    [[ -f "$log" ]] && tail -5 "$log" >&2
    exit 1
  fi
  echo "$tree"
  exit 0
fi
[[ -f "$stamp" ]] && { echo "$tree"; exit 0; }

[[ -x /usr/local/go/bin/go ]] && PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null || { echo "ovnkube/build.sh: go not on PATH" | tee "$log" >&2; exit 1; }
mkdir -p "$cache_root"
exec 9>"$cache_root/.lock-ovnkube-$pin_hash"
flock 9
[[ -f "$stamp" ]] && { echo "$tree"; exit 0; }

export GOFLAGS="${GOFLAGS:--p=2} -buildvcs=false -trimpath -mod=mod"
export CGO_ENABLED=0
export GOTOOLCHAIN=local
# The go-controller pseudo-version has no checksum-database entry: its hash is checked against the pin below.
export GONOSUMDB="$OVN_KUBERNETES_MODULE"
start=$(date +%s)
src="$tree/src"
rm -rf "$src"
mkdir -p "$src" "$tree/bin"

build() {
  local json dir sum frr
  json="$(go mod download -json "$OVN_KUBERNETES_MODULE@$OVN_KUBERNETES_VERSION")"
  dir="$(sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p' <<<"$json")"
  sum="$(sed -n 's/^\s*"Sum": "\(.*\)",$/\1/p' <<<"$json")"
  [[ -n "$dir" ]] || { echo "cannot download $OVN_KUBERNETES_MODULE@$OVN_KUBERNETES_VERSION: $json"; return 1; }
  [[ "$sum" == "$OVN_KUBERNETES_SUM" ]] || { echo "$OVN_KUBERNETES_MODULE has hash $sum, the pin says $OVN_KUBERNETES_SUM"; return 1; }

  # frr-k8s: the served version's API and generated client, in a module that needs only what they import.
  json="$(go mod download -json "github.com/metallb/frr-k8s@$FRR_K8S_REPLACEMENT_VERSION")"
  frr="$(sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p' <<<"$json")"
  [[ -n "$frr" ]] || { echo "cannot download frr-k8s $FRR_K8S_REPLACEMENT_VERSION: $json"; return 1; }
  mkdir -p "$src/frr-k8s/api" "$src/frr-k8s/pkg"
  cp -r "$frr/api/v1beta1" "$src/frr-k8s/api/"
  cp -r "$frr/pkg/client" "$src/frr-k8s/pkg/"
  chmod -R u+w "$src/frr-k8s"
  printf 'module github.com/metallb/frr-k8s\n\ngo 1.24\n' >"$src/frr-k8s/go.mod"
  # Advertise.NextHop: newer frr-k8s has it (OVN-K sets it for DPU hosts only). A struct of strings needs no
  # deep-copy code beyond the generated `*out = *in`.
  grep -q 'NextHop' "$frr/api/v1beta1/frrconfiguration_types.go" || {
    sed -i 's#^\tPrefixesWithCommunity \[\]CommunityPrefixes `json:"withCommunity,omitempty"`#&\n\n\t// NextHop overrides the next hop advertised per family.\n\t// +optional\n\tNextHop AdvertiseNextHop `json:"nextHop,omitempty"`#' \
      "$src/frr-k8s/api/v1beta1/frrconfiguration_types.go"
    grep -q 'NextHop AdvertiseNextHop' "$src/frr-k8s/api/v1beta1/frrconfiguration_types.go" || {
      echo "frr-k8s $FRR_K8S_REPLACEMENT_VERSION: Advertise has changed, cannot add NextHop"; return 1; }
    printf '\n// AdvertiseNextHop is the next hop advertised per family.\ntype AdvertiseNextHop struct {\n\tIPv4 string `json:"ipv4,omitempty"`\n\tIPv6 string `json:"ipv6,omitempty"`\n}\n' \
      >>"$src/frr-k8s/api/v1beta1/frrconfiguration_types.go"
  }
  cp -r "$here/dpusim" "$src/dpusim"

  {
    echo "module bgpadv.test/ovnkube"
    echo
    echo "go $(sed -n 's/^go \([0-9.]*\)$/\1/p' "$dir/go.mod")"
    echo
    echo "require $OVN_KUBERNETES_MODULE $OVN_KUBERNETES_VERSION"
    echo
    echo "replace ("
    # upstream's own replace lines, repeated (a dependent module never sees them)
    sed -n '/^replace (/,/^)/{/=>/p}' "$dir/go.mod"
    echo "	github.com/metallb/frr-k8s => ./frr-k8s"
    echo "	github.com/ovn-kubernetes/dpu-simulator/lib/dpusim => ./dpusim"
    echo ")"
  } >"$src/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "%s/cmd/ovnkube"\n' "$OVN_KUBERNETES_MODULE" >"$src/tools.go"
  cd "$src"
  echo "resolving modules in $src"
  nice -n 10 go mod tidy
  echo "building ovnkube"
  nice -n 10 go build -ldflags "-s -w" -o "$tree/bin/ovnkube.tmp" "$OVN_KUBERNETES_MODULE/cmd/ovnkube"
  mv "$tree/bin/ovnkube.tmp" "$tree/bin/ovnkube"
}

if ! build >"$log" 2>&1; then
  echo "ovnkube/build.sh: the build failed; the end of $log:" >&2
  tail -15 "$log" >&2
  exit 1
fi
echo "ovnkube/build.sh: built in $(( $(date +%s) - start )) s" | tee -a "$log" >&2
touch "$stamp"
echo "$tree"
