#!/usr/bin/env bash
# Generate the upstream CRDs the real-apiserver tier installs, into OUT (a directory in the kube cache):
#   ClusterUserDefinedNetwork, UserDefinedNetwork, RouteAdvertisements  controller-gen over OVN-K's Go types (CEL kept)
#   IPAMClaim                                                           the YAML the ipamclaims module ships
#   NetworkAttachmentDefinition                                         the YAML the NAD client module ships
#   VirtualMachineInstance                                              controller-gen over kubevirt.io/api/core/v1
# Versions: scripts/kube/versions.env. Called by build.sh (one pin, one stamp); needs controller-gen in BIN.
# Usage: crds.sh BIN OUT
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"
bin="$1"
out="$2"
work="$out.work"
rm -rf "$work" "$out"
mkdir -p "$work" "$out"

module_dir() { # module@version [expected h1 sum] -> the module's directory in the module cache
  local json dir sum
  json="$(go mod download -json "$1")"
  dir="$(sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p' <<<"$json")"
  sum="$(sed -n 's/^\s*"Sum": "\(.*\)",$/\1/p' <<<"$json")"
  if [[ -z "$dir" ]]; then
    echo "crds.sh: cannot download $1:" >&2
    echo "$json" >&2
    return 1
  fi
  if [[ -n "${2:-}" && "$sum" != "$2" ]]; then
    echo "crds.sh: $1 has hash $sum, the pin says $2" >&2
    return 1
  fi
  echo "$dir"
}

# -- OVN-Kubernetes: only the CRD type packages, in a module of the same path whose go.mod needs apimachinery alone
# (the whole go-controller module needs hundreds of modules to resolve; its CRD packages import apimachinery only).
ovnk="$(GONOSUMDB="$OVN_KUBERNETES_MODULE" module_dir "$OVN_KUBERNETES_MODULE@$OVN_KUBERNETES_VERSION" \
  "$OVN_KUBERNETES_SUM")"
apimachinery="$(sed -n 's#^\s*k8s.io/apimachinery \(v[^ ]*\).*#\1#p' "$ovnk/go.mod" | head -1)"
mkdir -p "$work/ovnk/pkg/crd"
for pkg in userdefinednetwork/v1 routeadvertisements/v1 types; do
  mkdir -p "$work/ovnk/pkg/crd/$pkg"
  cp "$ovnk/pkg/crd/$pkg"/*.go "$work/ovnk/pkg/crd/$pkg/"
done
chmod -R u+w "$work/ovnk"
cat >"$work/ovnk/go.mod" <<GOMOD
module $OVN_KUBERNETES_MODULE

go 1.24

require k8s.io/apimachinery $apimachinery
GOMOD
(cd "$work/ovnk" && go mod tidy >&2 && \
  "$bin/controller-gen" crd:crdVersions=v1 paths=./pkg/crd/userdefinednetwork/v1/... \
    paths=./pkg/crd/routeadvertisements/v1/... output:crd:dir="$out" >&2)

# -- IPAMClaim and NetworkAttachmentDefinition: the YAML their modules ship.
ipamclaims="$(module_dir "github.com/k8snetworkplumbingwg/ipamclaims@$IPAMCLAIMS_VERSION")"
cp "$ipamclaims/artifacts/k8s.cni.cncf.io_ipamclaims.yaml" "$out/"
nad="$(module_dir "github.com/k8snetworkplumbingwg/network-attachment-definition-client@$NAD_VERSION")"
cp "$nad/artifacts/networks-crd.yaml" "$out/k8s.cni.cncf.io_network-attachment-definitions.yaml"

# -- KubeVirt: controller-gen over a writable copy of kubevirt.io/api, keeping the VirtualMachineInstance CRD alone.
kubevirt="$(module_dir "kubevirt.io/api@$KUBEVIRT_API_VERSION")"
cp -r "$kubevirt" "$work/kubevirt"
chmod -R u+w "$work/kubevirt"
mkdir -p "$work/kubevirt-out"
(cd "$work/kubevirt" && go mod download >&2 && \
  "$bin/controller-gen" crd:crdVersions=v1,allowDangerousTypes=true paths=./core/v1/... \
    output:crd:dir="$work/kubevirt-out" >&2)
cp "$work/kubevirt-out/kubevirt.io_virtualmachineinstances.yaml" "$out/"

chmod -R a+rX "$out"
rm -rf "$work"
ls "$out" >&2
