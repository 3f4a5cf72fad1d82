#!/usr/bin/env bash
# A real Kubernetes API for tests and by hand: etcd + kube-apiserver (no kubelet, no controller-manager), with
# RBAC (--authorization-mode=Node,RBAC), service-account token signing, and the upstream CRDs installed and
# Established (scripts/kube/crds.sh). Everything lives in DIR; `down` stops exactly what `up` started (PID files).
#
#   kube.sh up DIR [--listen ADDR] [--port PORT] [--netns NAME]   start what is not running; print the kubeconfig
#   kube.sh down DIR                                              stop the apiserver, then etcd (by PID file)
#   kube.sh stop-apiserver DIR                                    stop the apiserver only (etcd keeps the data)
#
# --listen: the apiserver's address (default 127.0.0.1); --port: its port (default: a free one);
# --netns: run etcd and the apiserver inside that network namespace (etcd on its loopback).
# `up` on a DIR that ran before reuses its PKI, ports and namespace and starts only what is not running, so
# `stop-apiserver` + `up` is an apiserver restart over the same etcd data.
# DIR/admin.kubeconfig is the admin's (system:masters, client certificate); DIR/kubectl runs the built kubectl with
# it (inside the namespace); DIR/pki holds the CA, the serving and client certificates and the service-account keys.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

usage() {
  sed -n '5,8p' "${BASH_SOURCE[0]}" >&2
  exit 2
}

[[ $# -ge 2 ]] || usage
verb="$1"
dir="$2"
shift 2
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"

alive() { # pidfile name: the process of the PID file runs and is that program
  local pid
  [[ -f "$1" ]] || return 1
  pid="$(cat "$1")"
  [[ -n "$pid" && -r "/proc/$pid/cmdline" ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$2"
}

stop_one() { # pidfile name
  local pid i
  if alive "$1" "$2"; then
    pid="$(cat "$1")"
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 100); do
      alive "$1" "$2" || break
      sleep 0.1
    done
    if alive "$1" "$2"; then
      kill -KILL "$pid" 2>/dev/null || true
      sleep 0.2
    fi
  fi
  rm -f "$1"
}

case "$verb" in
  down)
    stop_one "$dir/kube-apiserver.pid" kube-apiserver
    stop_one "$dir/etcd.pid" etcd
    exit 0
    ;;
  stop-apiserver)
    stop_one "$dir/kube-apiserver.pid" kube-apiserver
    exit 0
    ;;
  up) ;;
  *) usage ;;
esac

listen=127.0.0.1
port=""
netns=""
if [[ -f "$dir/kube.env" ]]; then
  # shellcheck source=/dev/null
  source "$dir/kube.env"
fi
while [[ $# -gt 0 ]]; do
  case "$1" in
    --listen) listen="$2"; shift 2 ;;
    --port) port="$2"; shift 2 ;;
    --netns) netns="$2"; shift 2 ;;
    *) usage ;;
  esac
done

tree="$("$here/build.sh")"
bin="$tree/bin"
in_ns=()
[[ -n "$netns" ]] && in_ns=(ip netns exec "$netns")

free_port() { # a free TCP port on $1 (inside the namespace)
  "${in_ns[@]}" python3 -c 'import socket,sys; s=socket.socket(); s.bind((sys.argv[1], 0)); print(s.getsockname()[1])' "$1"
}

if [[ ! -f "$dir/kube.env" ]]; then
  [[ -n "$port" ]] || port="$(free_port "$listen")"
  etcd_port="$(free_port 127.0.0.1)"
  peer_port="$(free_port 127.0.0.1)"
  cat >"$dir/kube.env" <<ENV
listen=$listen
port=$port
netns=$netns
etcd_port=$etcd_port
peer_port=$peer_port
ENV
fi
# shellcheck source=/dev/null
source "$dir/kube.env"

pki="$dir/pki"
if [[ ! -f "$pki/admin.crt" ]]; then
  mkdir -p "$pki"
  (
    cd "$pki"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 30 -subj "/CN=bgpadv-test-ca" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr -subj "/CN=kube-apiserver" 2>/dev/null
    printf 'subjectAltName=IP:%s,IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default.svc\n' "$listen" \
      >apiserver.ext
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out apiserver.crt -days 30 \
      -extfile apiserver.ext 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -keyout admin.key -out admin.csr -subj "/O=system:masters/CN=admin" 2>/dev/null
    openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out admin.crt -days 30 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    chmod 600 ./*.key
  )
fi

server="https://$listen:$port"
[[ "$listen" == *:* ]] && server="https://[$listen]:$port"
cat >"$dir/admin.kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: $server
    certificate-authority-data: $(base64 -w0 <"$pki/ca.crt")
users:
- name: admin
  user:
    client-certificate-data: $(base64 -w0 <"$pki/admin.crt")
    client-key-data: $(base64 -w0 <"$pki/admin.key")
contexts:
- name: admin
  context: {cluster: test, user: admin}
current-context: admin
KUBECONFIG
chmod 600 "$dir/admin.kubeconfig"
{
  echo '#!/bin/sh'
  echo "exec ${in_ns[*]} $bin/kubectl --kubeconfig $dir/admin.kubeconfig \"\$@\""
} >"$dir/kubectl"
chmod +x "$dir/kubectl"

wait_for() { # seconds pidfile name command...: until the command succeeds, while the process lives
  local limit="$1" pidfile="$2" what="$3" deadline=$((SECONDS + $1))
  shift 3
  while ((SECONDS < deadline)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    if ! alive "$pidfile" "$bin/$what"; then
      echo "kube.sh: $what exited; the end of $dir/$what.log:" >&2
      grep -v '^[IW][0-9]' "$dir/$what.log" | tail -5 >&2
      return 1
    fi
    sleep 0.2
  done
  echo "kube.sh: $what did not come up in ${limit}s; see $dir/$what.log" >&2
  return 1
}

if ! alive "$dir/etcd.pid" "$bin/etcd"; then
  # --unsafe-no-fsync: a test store on a shared disk; nothing here must survive a power cut.
  (exec "${in_ns[@]}" setsid "$bin/etcd" --name default --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-cluster "default=http://127.0.0.1:$peer_port" --unsafe-no-fsync --log-level warn \
    >>"$dir/etcd.log" 2>&1 </dev/null) &
  echo $! >"$dir/etcd.pid"
  wait_for 30 "$dir/etcd.pid" etcd "${in_ns[@]}" curl -sf "http://127.0.0.1:$etcd_port/health"
fi

if ! alive "$dir/kube-apiserver.pid" "$bin/kube-apiserver"; then
  (exec "${in_ns[@]}" setsid "$bin/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address "$listen" --advertise-address "$listen" --secure-port "$port" \
    --cert-dir "$pki" --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --client-ca-file "$pki/ca.crt" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --authorization-mode Node,RBAC \
    --service-cluster-ip-range 10.96.0.0/16 --endpoint-reconciler-type none \
    --allow-privileged=true --profiling=false --v=1 \
    >>"$dir/kube-apiserver.log" 2>&1 </dev/null) &
  echo $! >"$dir/kube-apiserver.pid"
  wait_for 120 "$dir/kube-apiserver.pid" kube-apiserver "$dir/kubectl" get --raw /readyz
fi

# Every `up` (re)applies the CRDs: server-side apply, as the VMI CRD is too big for the last-applied annotation of a
# client-side apply; a CRD deleted by a test comes back.
"$dir/kubectl" apply --server-side --force-conflicts -f "$tree/crds" >&2
"$dir/kubectl" wait --for condition=Established --timeout=60s crd --all >&2
echo "$dir/admin.kubeconfig"
