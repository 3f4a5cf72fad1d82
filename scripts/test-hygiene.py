"""Count what makes a unit test tree hard to maintain: modules per folder, private reads, state set at import.

- modules: `test_*.py` per folder of tests/unit/;
- private reads: `obj._name` (not on `self`/`cls`) and `from bgpadv... import _name`, on any object the tests did not
  define (product objects, the lab's, argparse's, prometheus_client's);
- state at import: module-level statements that call something imported from `bgpadv` (a parse, a plan, a decode,
  a value type's constructor) or change the environment or a registry. Frozen value types built from literals
  (`Prefix.parse("10.0.0.0/8")`, `ObjectRef(...)`) are counted apart: they are constants, not state.

Usage: `.venv/bin/python scripts/test-hygiene.py [--list] [DIR]` (DIR: tests/unit by default; `--list` prints each
private read and each statement at import with its place).
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

VALUES = {"Prefix.parse", "Address.parse", "ObjectRef", "Refusal", "Route", "PeerConfig", "Attributes", "AcceptRule"}
VALUES |= {"ImportNetwork", "SelectedNetwork", "Address", "Prefix"}
MUTATORS = {"os.environ.update", "os.environ.setdefault", "os.environ.pop", "os.putenv", "REGISTRY.register"}


def dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{dotted(node.value)}.{node.attr}"
    return "?"


def private_reads(tree: ast.Module) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append((node.lineno, node.attr))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "bgpadv":
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("_") and not a.name.endswith("__")]
    return found


def state_at_import(tree: ast.Module) -> list[tuple[int, str, bool]]:
    """(line, what, a frozen value only) per module-level statement that runs product code or mutates at import."""
    product = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom) and (stmt.module or "").split(".")[0] == "bgpadv":
            product |= {a.asname or a.name for a in stmt.names}
    found = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        lazy = {id(n) for lam in ast.walk(stmt) if isinstance(lam, ast.Lambda) for n in ast.walk(lam.body)}
        calls = set()
        for node in ast.walk(stmt):
            if id(node) in lazy or not isinstance(node, ast.Call):
                continue
            name = dotted(node.func)
            if name.split(".")[0] in product or name in MUTATORS:
                calls.add(name)
        for node in ast.walk(stmt):
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Subscript) and dotted(t.value) == "os.environ" for t in node.targets
            ):
                calls.add("os.environ[...] =")
        if calls:
            found.append((stmt.lineno, ", ".join(sorted(calls)), calls <= VALUES))
    return found


def main(argv: list[str]) -> int:
    show = "--list" in argv
    root = Path(next((a for a in argv if not a.startswith("-")), "tests/unit"))
    modules: Counter[str] = Counter()
    reads = values = states = 0
    state_files = set()
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text())
        if path.name.startswith("test_"):
            modules[str(path.parent.relative_to(root)) or "."] += 1
        for line, name in private_reads(tree):
            reads += 1
            if show:
                print(f"private  {path}:{line}: {name}")
        for line, what, value in state_at_import(tree):
            values += value
            states += not value
            state_files |= set() if value else {path}
            if show:
                print(f"{'value' if value else 'import'}    {path}:{line}: {what}")
    for folder, count in sorted(modules.items()):
        print(f"{folder:10} {count} modules")
    print(f"total      {sum(modules.values())} modules")
    print(f"private reads: {reads}")
    print(f"state at import: {states} statements in {len(state_files)} files (+{values} frozen values)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
