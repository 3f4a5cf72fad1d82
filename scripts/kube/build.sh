#!/usr/bin/env bash
# Build the test-only Kubernetes tools (kube-apiserver, kubectl, etcd, controller-gen) from their Go modules
# into ${BGPADV_KUBE_CACHE:-/var/cache/bgpadv/kube}/<pin hash>/bin, outside the checkout.
#
# Go is used only here, only to build test tools: nothing fetched or built is ever written into the checkout.
# The pin is scripts/kube/versions.env; the pin hash covers that file and the two build scripts, so a changed pin
# builds a new tree beside the old one and an unchanged pin is a no-op (a stamp file records a finished build).
# The tree: bin/ (kube-apiserver, kubectl, etcd, controller-gen), crds/ (scripts/kube/crds.sh), src/ (our module).
#
# Usage: scripts/kube/build.sh            build if needed, print the tree (its bin/ and crds/)
#        scripts/kube/build.sh --print    print the tree without building (exit 1 if not built)
# Environment: BGPADV_KUBE_CACHE (cache root), GOFLAGS (default -p=2). Every go command runs under nice -n 10: the
# cores are shared with whoever else builds or tests.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

cache_root="${BGPADV_KUBE_CACHE:-/var/cache/bgpadv/kube}"
pin_hash="$(cat "$here/versions.env" "$here/build.sh" "$here/crds.sh" | sha256sum | cut -c1-16)"
tree="$cache_root/$pin_hash"
bin="$tree/bin"
stamp="$tree/.built"

if [[ "${1:-}" == "--print" ]]; then
  [[ -f "$stamp" ]] || { echo "build.sh: not built yet: $tree" >&2; exit 1; }
  echo "$tree"
  exit 0
fi
if [[ -f "$stamp" ]]; then
  echo "$tree"
  exit 0
fi

[[ -x /usr/local/go/bin/go ]] && PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null || { echo "build.sh: Go is needed to build the kube test tools (go not on PATH)" >&2; exit 1; }
mkdir -p "$cache_root"
# One builder at a time per pin (a second caller waits, then finds the stamp).
exec 9>"$cache_root/.lock-$pin_hash"
flock 9
if [[ -f "$stamp" ]]; then
  echo "$tree"
  exit 0
fi

export GOFLAGS="${GOFLAGS:--p=2} -buildvcs=false -trimpath"
export CGO_ENABLED=0
export GOTOOLCHAIN=local
start=$(date +%s)
src="$tree/src"
mkdir -p "$src/etcd" "$bin"

# Our own module: requires k8s.io/kubernetes, pins each staging module (k8s.io/kubernetes requires them at
# v0.0.0 and replaces them by its own ./staging tree, which a dependent module never sees).
mod_file="$(go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" | sed -n 's/^\s*"GoMod": "\(.*\)",$/\1/p')"
{
  echo "module bgpadv.test/kubetools"
  echo
  echo "go $(sed -n 's/^go \([0-9.]*\)$/\1/p' "$mod_file")"
  echo
  echo "require ("
  echo "	k8s.io/kubernetes $KUBERNETES_VERSION"
  echo "	go.etcd.io/etcd/server/v3 $ETCD_VERSION"
  echo ")"
  echo
  echo "replace ("
  sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/src/k8s.io/[a-z0-9-]*$#\t\1 => \1 '"$KUBERNETES_STAGING_VERSION"'#p' "$mod_file"
  echo ")"
} >"$src/go.mod"
cat >"$src/etcd/main.go" <<'GO'
// Command etcd: the etcd server, for the bgpadv test tier only.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
cat >"$src/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
cd "$src"
echo "build.sh: resolving modules in $src" >&2
nice -n 10 go mod tidy
# Each step is skipped when its output exists, so an interrupted build resumes (a binary appears only once linked).
for cmd in k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl ./etcd; do
  name="$(basename "$cmd")"
  [[ -x "$bin/$name" ]] && continue
  echo "build.sh: building $cmd" >&2
  nice -n 10 go build -ldflags "-s -w" -o "$bin/$name.tmp" "$cmd"
  mv "$bin/$name.tmp" "$bin/$name"
done
if [[ ! -x "$bin/controller-gen" ]]; then
  echo "build.sh: building controller-gen $CONTROLLER_TOOLS_VERSION" >&2
  GOBIN="$tree/gobin" nice -n 10 go install "sigs.k8s.io/controller-tools/cmd/controller-gen@$CONTROLLER_TOOLS_VERSION"
  mv "$tree/gobin/controller-gen" "$bin/controller-gen"
fi
echo "build.sh: generating the CRDs" >&2
bash "$here/crds.sh" "$bin" "$tree/crds"
"$bin/kube-apiserver" --version >&2
"$bin/etcd" --version | sed -n 1p >&2  # sed reads it all: head could end etcd by SIGPIPE (exit 141 under pipefail)
echo "build.sh: built in $(( $(date +%s) - start )) s" >&2
touch "$stamp"
echo "$tree"
