#!/usr/bin/env bash
# Regenerates requirements/image.txt, the pinned versions of everything the image installs (bgpadv's dependencies,
# transitively), as `pip freeze` reports them in a clean virtualenv that installed this checkout. Run it after a
# change of `dependencies` in pyproject.toml (tests/unit/project/test_packaging.py fails until the pins satisfy them),
# or to take newer versions on purpose; review the diff like code.
#
# Usage: scripts/lock-image.sh            (PYTHON=python3.11 to choose the interpreter: the image's is 3.11)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
venv=$(mktemp -d)
trap 'rm -rf "$venv"' EXIT
"$PYTHON" -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check .
{
  echo "# Pinned versions of everything bgpadv's image installs: \`pip freeze\` of a clean virtualenv with this checkout"
  echo "# installed (scripts/lock-image.sh; $("$venv/bin/python" -c 'import platform; print("Python", platform.python_version())')). scripts/build-image.sh builds the wheels"
  echo "# with it as a constraints file, so the image is the same from one build to the next."
  "$venv/bin/pip" freeze --disable-pip-version-check --exclude bgpadv
} >requirements/image.txt
echo "requirements/image.txt: $(grep -vc '^#' requirements/image.txt) pins" >&2
