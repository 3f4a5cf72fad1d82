#!/usr/bin/env bash
# Builds bgpadv's container image from Debian packages and PyPI wheels alone (no registry pull), with buildah:
#
#   1. base image  localhost/bgpadv-base:bookworm-<key>: `mmdebstrap --variant=minbase` with python3, python3-venv, frr (bfdd), libcap2-bin (setcap),
#      libnss-wrapper and ca-certificates, imported with `buildah from scratch` + commit. Built once per <key> (a hash
#      of the mmdebstrap command line): the root filesystem tar is kept in $CACHE_DIR, the image in buildah's store.
#   2. wheels      bgpadv and its dependencies at the versions pinned in requirements/image.txt (constraints:
#                  scripts/lock-image.sh regenerates it), `pip wheel` into build/wheels (pip's cache makes reruns cheap).
#   3. the image   `buildah bud` of ./Containerfile FROM that base, tagged $IMAGE.
#
# Usage: scripts/build-image.sh            (as root; `make image` runs it, and installs only buildah and mmdebstrap)
# Environment:
#   IMAGE          tag to build (default localhost/bgpadv:<version from pyproject.toml>)
#   PYTHON         the Python that builds the wheels (default .venv/bin/python, else python3)
#   CACHE_DIR      where the base root filesystem tar is kept (default .cache/image)
#   BUILDAH_ROOT   a private buildah store (--root; its runroot is $BUILDAH_ROOT/../run); default: buildah's own
#   BASE_REFRESH=1 rebuild the base even when cached (picks up Debian security updates)
# Prints the image name on the last line of stdout; timings go to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml | head -1)
IMAGE=${IMAGE:-localhost/bgpadv:${version}}
CACHE_DIR=${CACHE_DIR:-.cache/image}
if [ -z "${PYTHON:-}" ]; then
  if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi

buildah=(buildah --storage-driver vfs)
if [ -n "${BUILDAH_ROOT:-}" ]; then
  buildah+=(--root "$BUILDAH_ROOT" --runroot "$(dirname "$BUILDAH_ROOT")/run")
fi
for tool in buildah mmdebstrap; do
  command -v "$tool" >/dev/null || { echo "$tool missing: run scripts/install-system-deps.sh image" >&2; exit 1; }
done

t0=$(date +%s)
say() { echo "build-image: $* ($(($(date +%s) - t0)) s)" >&2; }

# -- 1. the base image -------------------------------------------------------------------------------------------
debstrap=(
  mmdebstrap --quiet --variant=minbase --format=tar
  --include=python3,python3-venv,libnss-wrapper,ca-certificates,frr,libcap2-bin
  --dpkgopt='path-exclude=/usr/share/man/*'
  --dpkgopt='path-exclude=/usr/share/locale/*'
  --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright'
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/* "$1"/var/log/*'
  bookworm
)
key=$(printf '%s\n' "${debstrap[@]}" | sha256sum | cut -c1-12)
base=localhost/bgpadv-base:bookworm-${key}
rootfs=${CACHE_DIR}/base-bookworm-${key}.tar

if [ "${BASE_REFRESH:-0}" = 1 ]; then
  rm -f "$rootfs"
  "${buildah[@]}" rmi "$base" >/dev/null 2>&1 || true
fi
if ! "${buildah[@]}" inspect --type image "$base" >/dev/null 2>&1; then
  if [ ! -s "$rootfs" ]; then
    mkdir -p "$CACHE_DIR"
    "${debstrap[@]}" "$rootfs.partial"
    mv "$rootfs.partial" "$rootfs"
    say "root filesystem $rootfs: $(du -h "$rootfs" | cut -f1)"
  fi
  ctr=$("${buildah[@]}" from scratch)
  trap '"${buildah[@]}" rm "$ctr" >/dev/null 2>&1 || true' EXIT
  mnt=$("${buildah[@]}" mount "$ctr")
  tar -xf "$rootfs" -C "$mnt" --numeric-owner
  "${buildah[@]}" umount "$ctr" >/dev/null
  "${buildah[@]}" config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --cmd /bin/sh --label "org.opencontainers.image.description=Debian bookworm minbase + python3" "$ctr"
  "${buildah[@]}" commit --quiet --rm "$ctr" "$base" >/dev/null
  trap - EXIT
  say "base image $base"
else
  say "base image $base (cached)"
fi

# -- 2. the wheels -----------------------------------------------------------------------------------------------
# setuptools packs whatever build/lib holds: a module left there by an older checkout (bgpadv/lab/ before the lab
# moved to bgpadv_lab/) would ship in the wheel, so the in-tree build starts empty.
rm -rf build/wheels build/lib build/bdist.*
mkdir -p "$CACHE_DIR"
# The pins make the image reproducible: the same versions whatever PyPI serves today (a dependency missing from the
# file is taken unpinned; tests/unit/project/test_packaging.py checks that the pins cover every dependency).
if ! "$PYTHON" -m pip wheel --quiet --disable-pip-version-check --constraint requirements/image.txt \
  --wheel-dir build/wheels . >"$CACHE_DIR/wheels.log" 2>&1
then
  cat "$CACHE_DIR/wheels.log" >&2
  exit 1
fi
say "wheels: $(find build/wheels -name '*.whl' | wc -l) in build/wheels"

# -- 3. the image ------------------------------------------------------------------------------------------------
"${buildah[@]}" bud --quiet --isolation chroot --layers=false --build-arg "BASE=$base" \
  --build-arg "VERSION=$version" -f Containerfile -t "$IMAGE" . >/dev/null
say "image $IMAGE: $("${buildah[@]}" inspect --type image --format '{{.FromImageDigest}}' "$IMAGE" | cut -c1-19)"
echo "$IMAGE"
