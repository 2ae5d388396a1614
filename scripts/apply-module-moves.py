#!/usr/bin/env python3
"""Rewrite references to moved modules across a tree, from scripts/module-moves.txt.

Each line of the map is ``old.dotted.path new.dotted.path`` (``#`` starts a comment); a
package line moves everything under it. A name is rewritten by the longest old path it starts
with (at a dot), so a module line wins over its package's line. What is rewritten:

- dotted names that start with the root package: imports, ``mock.patch``/``monkeypatch``
  targets, import-linter contracts, docs (``tuneadvisor.slurm.seff.parse_seff``);
- ``from PARENT import MODULE`` where ``PARENT.MODULE`` moved (``as MODULE`` kept);
- file paths: ``tuneadvisor/session/gather.py`` and, with at least one ``/``, the same path
  without the root (``session/gather.py``, ``session/``), as the docs write them.

It is idempotent: a name whose longest known prefix is a new path is left alone, and the map
is refused if an old path is also a new path or the prefix of one (a second run would move
it again). A file that holds the words "apply-module-moves: skip" is left alone.

Usage: ``scripts/apply-module-moves.py [--check] [--map FILE] [ROOT]``. ROOT is the
checkout (default: this script's folder's parent), the map ROOT/scripts/module-moves.txt;
``--check`` changes nothing and exits 1 if anything would change.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

ROOT_PACKAGE = "tuneadvisor"
SUFFIXES = {".py", ".pyi", ".md", ".toml", ".txt", ".cfg", ".ini", ".sh", ".yml", ".yaml"}
SKIP_DIRS = {
    ".git",
    ".venv",
    "venv",
    "__pycache__",
    "node_modules",
    "build",
    "dist",
    "__snapshots__",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".hypothesis",
}
SKIP_PATHS = {"tests/fixtures"}  # data read as text (real scripts, fake modules)
SKIP_MARK = "apply-module-moves: skip"  # a file that names old paths on purpose (its tests)

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_DOTTED = re.compile(rf"(?<![\w.]){ROOT_PACKAGE}(?:\.{_IDENT})+")
# a path with at least one slash: a/b/c.py, a/b/, tuneadvisor/a/b
_PATH = re.compile(rf"(?<![\w./\-])((?:{_IDENT}/)+(?:{_IDENT}(?:\.py)?)?)(?![\w\-/])")
_FROM_IMPORT = re.compile(
    rf"^(?P<indent>[ \t]*)from (?P<parent>{ROOT_PACKAGE}(?:\.{_IDENT})*) import "
    rf"(?P<name>{_IDENT})(?P<alias>[ \t]+as[ \t]+{_IDENT})?(?P<tail>[ \t]*(?:#.*)?)$",
    re.MULTILINE,
)


def read_map(path: Path) -> dict[str, str]:
    moves: dict[str, str] = {}
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2 or not all(re.fullmatch(rf"{_IDENT}(?:\.{_IDENT})*", p) for p in parts):
            raise ValueError(f"{path}:{number}: want 'old.dotted.path new.dotted.path': {raw!r}")
        old, new = parts
        if old in moves and moves[old] != new:
            raise ValueError(f"{path}:{number}: {old} is moved twice")
        moves[old] = new
    news = set(moves.values())
    for old in moves:
        if old in news or any(n.startswith(old + ".") for n in news):
            raise ValueError(
                f"{path}: old path {old} is also (the start of) a new path; "
                "a second run would move it again"
            )
    return moves


def _prefixes(name: str) -> Iterator[str]:
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        yield ".".join(parts[:end])


def moved(name: str, moves: Mapping[str, str], news: set[str]) -> str | None:
    """The new dotted name, or None where it did not move (or moved already)."""
    for prefix in _prefixes(name):
        if prefix in moves:
            return moves[prefix] + name[len(prefix) :]
        if prefix in news:
            return None
    return None


def rewrite(text: str, moves: Mapping[str, str]) -> str:
    news = set(moves.values())
    tops = {old.split(".")[1] for old in moves if old.count(".") >= 1}

    def from_import(m: re.Match[str]) -> str:
        new = moved(f"{m['parent']}.{m['name']}", moves, news)
        if new is None:
            return m[0]
        parent, _, leaf = new.rpartition(".")
        alias = m["alias"] or ("" if leaf == m["name"] else f" as {m['name']}")
        return f"{m['indent']}from {parent} import {leaf}{alias}{m['tail']}"

    def dotted(m: re.Match[str]) -> str:
        return moved(m[0], moves, news) or m[0]

    def path(m: re.Match[str]) -> str:
        found = m[1]
        rooted = found.startswith(ROOT_PACKAGE + "/")
        if not rooted and found.split("/", 1)[0] not in tops:
            return found
        stem, suffix = found, ""
        for end in (".py", "/"):
            if stem.endswith(end):
                stem, suffix = stem[: -len(end)], end
        name = stem.replace("/", ".")
        new = moved(name if rooted else f"{ROOT_PACKAGE}.{name}", moves, news)
        if new is None:
            return found
        if not rooted:
            new = new.split(".", 1)[1]
        return new.replace(".", "/") + suffix

    text = _FROM_IMPORT.sub(from_import, text)
    text = _DOTTED.sub(dotted, text)
    return _PATH.sub(path, text)


def files(root: Path, skip: set[Path]) -> Iterator[Path]:
    for folder, dirs, names in os.walk(root):
        here = Path(folder)
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in SKIP_DIRS
            and not d.endswith(".egg-info")
            and (here / d).relative_to(root).as_posix() not in SKIP_PATHS
            and not (here / d).is_symlink()
        )
        for name in sorted(names):
            file = here / name
            if file.suffix in SUFFIXES and not file.is_symlink() and file.resolve() not in skip:
                yield file


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", nargs="?", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--map", type=Path, help="default: ROOT/scripts/module-moves.txt")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if stale")
    args = parser.parse_args(argv)
    root: Path = args.root.resolve()
    map_file: Path = (args.map or root / "scripts" / "module-moves.txt").resolve()
    try:
        moves = read_map(map_file)
    except (OSError, ValueError) as error:
        print(f"apply-module-moves: {error}", file=sys.stderr)
        return 2
    changed = []
    for file in files(root, {map_file, Path(__file__).resolve()}):
        try:
            text = file.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if SKIP_MARK in text:
            continue
        new = rewrite(text, moves)
        if new != text:
            changed.append(file.relative_to(root).as_posix())
            if not args.check:
                file.write_text(new, encoding="utf-8")
    for name in changed:
        print(("stale: " if args.check else "rewrote: ") + name)
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
