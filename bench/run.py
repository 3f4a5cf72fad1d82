"""`make bench`: run every benchmark script in this folder, print their figures, then one summary table of the
headline figures (bench/figures.py) with the raw-ExaBGP floor of the same run beside them (nothing is asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from figures import parse, table

HERE = Path(__file__).parent
NOT_SCRIPTS = {"run.py", "figures.py"}


def main() -> int:
    scripts = sorted(p for p in HERE.glob("*.py") if p.name not in NOT_SCRIPTS)
    failed = 0
    records: list[dict] = []
    for script in scripts:
        print(f"== {script.name}", flush=True)
        proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, bufsize=1)
        assert proc.stdout is not None
        for line in proc.stdout:
            record = parse(line)
            if record is not None:
                records.append({**record, "name": f"{record['name']} ({script.stem})"})
            else:
                print(line, end="", flush=True)
        rc = proc.wait()
        if rc != 0:
            print(f"!! {script.name} exited {rc}", flush=True)
            failed += 1
    print("== summary: this run's headline figures; ratio = bgpadv / the raw-ExaBGP floor measured in this run")
    for line in table(records):
        print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
