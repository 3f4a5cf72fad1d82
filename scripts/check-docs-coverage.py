"""Did the user guide keep everything the README said? Compares an old README (a git revision) with README.md + docs/.

Usage: `python scripts/check-docs-coverage.py [REV]` (default: the README before the split into docs/). Lists every
`code span`, every `bgpadv_*` metric name, every reason code and every line of a shell or YAML block of the old
README that appears nowhere in the new README.md or docs/*.md; exit 1 if any does. Text that was rewritten on
purpose (the ToR examples) shows up here and is judged by a person.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEFORE_SPLIT = "462619e"


def main(argv: list[str]) -> int:
    rev = argv[0] if argv else BEFORE_SPLIT
    old = subprocess.run(
        ["git", "show", f"{rev}:README.md"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    new = "\n".join(p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])
    wanted = set(re.findall(r"`([^`\n]+)`", old)) | set(re.findall(r"\bbgpadv_[a-z_]+", old))
    for block in re.findall(r"^```(?:sh|yaml)\n(.*?)^```$", old, re.M | re.S):
        wanted |= {line.strip() for line in block.splitlines() if line.strip()}
    missing = sorted(w for w in wanted if w not in new)
    for item in missing:
        print(f"missing: {item}")
    print(f"{len(wanted)} items of the README at {rev}, {len(missing)} missing from README.md and docs/")
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
