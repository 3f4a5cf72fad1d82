#!/usr/bin/env bash
# Installs the Debian packages bgpadv's lab and tests need: FRR (the ToR), iproute2 (netns, veth),
# tcpdump (UPDATE capture at the ToR), prometheus (a real scraper), ping (the traffic test), buildah and mmdebstrap
# (`make image` and tests/image), openssl and curl (scripts/kube/kube.sh: the test apiserver's PKI, etcd's health),
# pypy3 (ExaBGP under PyPy: `exabgp.runtime: pypy`, its lab test and `make bench`), bird2 (BIRD 2 as the ToR of an
# unnumbered session: tests/lab/test_unnumbered_bird.py).
# Idempotent; needs root. Go (>= 1.26, for scripts/kube/build.sh) is not Debian's (bookworm's is 1.19): install the
# Go project's release (for example in /usr/local/go).
# `kubectl` (for `kubectl kustomize` in tests/unit/project/test_kustomize.py) is not installed from here: Debian
# bookworm's kubernetes-client is 1.20, whose kustomize (v2) is too old for deploy/; install kubectl >= 1.27 from the
# Kubernetes project.
#
# Usage: scripts/install-system-deps.sh [all|image]
#   all    (default) everything above: `make test`, `make demo`, `make bench`
#   image  only what `make image` needs: buildah and mmdebstrap
set -euo pipefail
what=${1:-all}
need=()
case "$what" in
  all)
    command -v ip >/dev/null || need+=(iproute2)
    command -v ping >/dev/null || need+=(iputils-ping)
    [ -x /usr/lib/frr/bgpd ] || need+=(frr)
    command -v vtysh >/dev/null || need+=(frr)
    command -v tcpdump >/dev/null || need+=(tcpdump)
    command -v prometheus >/dev/null || need+=(prometheus)
    command -v unshare >/dev/null || need+=(util-linux)
    command -v flock >/dev/null || need+=(util-linux)
    command -v openssl >/dev/null || need+=(openssl)
    command -v curl >/dev/null || need+=(curl)
    command -v pypy3 >/dev/null || need+=(pypy3)
    [ -x /usr/sbin/bird ] || need+=(bird2)
    ;;
  image) ;;
  *) echo "usage: $0 [all|image]" >&2; exit 2 ;;
esac
command -v buildah >/dev/null || need+=(buildah)
command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing system packages: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive

  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
[ "$what" = image ] && exit 0
# The packaged services are not used: the lab starts its own daemons inside its namespaces.
for svc in frr prometheus bird; do
  if command -v systemctl >/dev/null && systemctl is-active --quiet "$svc" 2>/dev/null; then systemctl stop "$svc" || true; fi
done
exit 0
