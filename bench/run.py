"""`make bench`: run every benchmark script in this folder and print their figures (nothing is asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent


def main() -> int:
    scripts = sorted(p for p in HERE.glob("*.py") if p.name != "run.py")
    failed = 0
    for script in scripts:
        print(f"== {script.name}", flush=True)
        rc = subprocess.call([sys.executable, str(script)])
        if rc != 0:
            print(f"!! {script.name} exited {rc}", flush=True)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
