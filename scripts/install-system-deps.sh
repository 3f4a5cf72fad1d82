#!/usr/bin/env bash
# Installs the Debian packages bgpadv's lab and tests need: FRR (the ToR), iproute2 (netns, veth),
# tcpdump (UPDATE capture at the ToR), prometheus (a real scraper), ping (the traffic test). Idempotent; needs root.
set -euo pipefail
need=()
command -v ip >/dev/null || need+=(iproute2)
command -v ping >/dev/null || need+=(iputils-ping)
[ -x /usr/lib/frr/bgpd ] || need+=(frr)
command -v vtysh >/dev/null || need+=(frr)
command -v tcpdump >/dev/null || need+=(tcpdump)
command -v prometheus >/dev/null || need+=(prometheus)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing system packages: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive

  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# The packaged services are not used: the lab starts its own daemons inside its namespaces.
for svc in frr prometheus; do
  if command -v systemctl >/dev/null && systemctl is-active --quiet "$svc" 2>/dev/null; then systemctl stop "$svc" || true; fi
done
exit 0
