#!/usr/bin/env bash
# Builds the `helm` binary the chart tests (tests/unit/project/test_helm.py) run, from Helm's own Go module at a pinned
# version, with the Go toolchain (no prebuilt binary is downloaded). Prints the binary's path on the last line of
# stdout. Idempotent: a binary already built for this version is reused at once.
#
# Usage: scripts/build-helm.sh            (`make helm`; the test fixture runs it when the binary is missing)
# Environment:
#   BGPADV_TOOLS_CACHE  where built tools are kept (default /var/cache/bgpadv/tools): <cache>/helm-<version>
#   GO                  the go command (default: go on PATH, else /usr/local/go/bin/go)
# A cold build takes minutes on two shared cores (`-p=1` and `nice` keep it from starving the machine); the module
# download goes through the Go module proxy (GOPROXY) like any Go module.
set -euo pipefail

HELM_VERSION=v3.22.0
# Helm's Makefile derives the Kubernetes version the chart sees as .Capabilities.KubeVersion (and `helm lint` checks
# deprecated APIs against) from its client-go: v0.37 -> 1.37. Set the same here, as a release build does.
KUBE_MAJOR=1
KUBE_MINOR=37

cache=${BGPADV_TOOLS_CACHE:-/var/cache/bgpadv/tools}
out=${cache}/helm-${HELM_VERSION}
if [ -x "$out" ]; then
  echo "$out"
  exit 0
fi

if [ -z "${GO:-}" ]; then
  if command -v go >/dev/null; then GO=go; elif [ -x /usr/local/go/bin/go ]; then GO=/usr/local/go/bin/go; else
    echo "build-helm: no Go toolchain (go) found: install Go >= 1.26 to build helm ${HELM_VERSION}" >&2
    exit 1
  fi
fi

mkdir -p "$cache"
work=$(mktemp -d "${cache}/.helm-build.XXXXXX")
trap 'rm -rf "$work"' EXIT

ldflags=(
  -w -s
  -X "helm.sh/helm/v3/internal/version.version=${HELM_VERSION}"
  -X "helm.sh/helm/v3/internal/version.metadata="
  -X "helm.sh/helm/v3/internal/version.gitTreeState=clean"
  -X "helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=${KUBE_MAJOR}"
  -X "helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=${KUBE_MINOR}"
  -X "helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=${KUBE_MAJOR}"
  -X "helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=${KUBE_MINOR}"
)
t0=$(date +%s)
echo "build-helm: building helm ${HELM_VERSION} into $out (takes minutes on a cold Go build cache)" >&2
# `go install module@version` builds in module mode outside any go.mod, at exactly Helm's own go.sum.
(
  cd "$work"
  GOBIN="$work/bin" GOFLAGS="-p=1 -trimpath -modcacherw" CGO_ENABLED=0 GOTOOLCHAIN=local \
    nice -n 10 "$GO" install -ldflags "${ldflags[*]}" "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}"
)
"$work/bin/helm" version --short >/dev/null
mv "$work/bin/helm" "$out.partial"
mv "$out.partial" "$out"
echo "build-helm: $out in $(($(date +%s) - t0)) s" >&2
echo "$out"
