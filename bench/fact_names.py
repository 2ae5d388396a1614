"""Count the registered fact names written as string literals in the Python that uses facts
(issue 29 §1): `advisor/` (the registry aside), `present/`, `relaunch/`, `compare/`, `tune/`,
`workspace/`.

A literal counts when it is exactly a name of `advisor/facts.py: FACTS`. f-strings that build
a name (``f"trace.{name}_share"``) are not counted: the script prints them apart.

Rerun: .venv/bin/python bench/fact_names.py [--list]
(tests/unit/test_fact_view.py holds the total to 40; a folder renamed is to be renamed in
PLACES too: a folder missing stops the count, so a move cannot empty it silently.)
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

from tuneadvisor.advisor.facts import FACTS

ROOT = Path(__file__).resolve().parent.parent / "tuneadvisor"
PLACES = ("advisor", "present", "relaunch", "compare", "tune", "workspace")
REGISTRY = {ROOT / "advisor" / "facts.py", ROOT / "advisor" / "typed_facts.py"}


def literals(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in FACTS
    ]


def found() -> list[tuple[str, int, str]]:
    """(file, line, name) of every fact name written as a string in the places counted."""
    rows = []
    for place in PLACES:
        if not (ROOT / place).is_dir():
            raise SystemExit(f"fact_names: no folder tuneadvisor/{place}: update PLACES")
        for path in sorted((ROOT / place).rglob("*.py")):
            if path not in REGISTRY:
                rel = str(path.relative_to(ROOT.parent))
                rows += [(rel, line, name) for line, name in literals(path)]
    return rows


def main(argv: list[str]) -> int:
    rows = found()
    if "--list" in argv:
        print("\n".join(f"{rel}:{line}: {name}" for rel, line, name in rows))
    for rel, n in Counter(rel for rel, _, _ in rows).most_common():
        print(f"{n:4d}  {rel}")
    print(f"{len(rows):4d}  total")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
