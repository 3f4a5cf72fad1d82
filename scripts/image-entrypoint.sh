#!/bin/sh
# The image's entry point: `bgpadv` with whatever arguments the pod gives.
#
# OpenShift runs a container as an arbitrary UID (e.g. 1000720000) with GID 0, which has no /etc/passwd entry.
# ExaBGP looks its `daemon.user` up with getpwnam() and refuses to start unless that user is the one it runs as, so
# the account must exist. The root filesystem is read-only, so the entry goes to a passwd file in the runtime
# directory (an emptyDir), read through nss_wrapper (Debian's libnss-wrapper) for this process tree only.
set -eu
if ! getent passwd "$(id -u)" >/dev/null 2>&1; then
  dir=${BGPADV_RUNTIME_DIR:-/run/bgpadv}
  if [ -d "$dir" ] && [ -w "$dir" ]; then
    cp /etc/passwd "$dir/passwd"
    echo "bgpadv-$(id -u):x:$(id -u):$(id -g):bgpadv:$dir:/usr/sbin/nologin" >>"$dir/passwd"
    cp /etc/group "$dir/group"
    export NSS_WRAPPER_PASSWD="$dir/passwd" NSS_WRAPPER_GROUP="$dir/group" LD_PRELOAD=libnss_wrapper.so
  else
    echo "bgpadv-entrypoint: UID $(id -u) has no passwd entry and $dir is not writable: ExaBGP will refuse to start" >&2
  fi
fi
exec /opt/bgpadv/bin/bgpadv "$@"
