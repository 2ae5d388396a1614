#!/usr/bin/env python3
"""Rewrite references to moved modules across a tree, from scripts/module-moves.txt.

Each line of the map is ``old.dotted.path new.dotted.path`` (``#`` starts a comment); a
package line moves everything under it. A name is rewritten by the longest old path it starts
with (at a dot), so a module line wins over its package's line. What is rewritten:

- dotted names that start with the root package: imports, ``mock.patch``/``monkeypatch``
  targets, import-linter contracts, docs (``tuneadvisor.slurm.seff.parse_seff``);
- ``from PARENT import MODULE`` where ``PARENT.MODULE`` moved (``as MODULE`` kept);
- a class (or other name) renamed in its module, on a line whose last part starts with a
  capital (``tuneadvisor.watch.session.Span tuneadvisor.watch.session.WatchSpan``): in the
  module itself and in every module that imports it by name (``from M import Span``: the
  import and each use; ``m.Span`` through ``from P import m`` or ``import M as m``), read
  from the syntax tree so prose and strings that merely say the word are left alone. Run
  ``ruff check --fix`` after: an import list may need sorting again;
- file paths: ``tuneadvisor/session/gather.py`` and, with at least one ``/``, the same path
  without the root (``session/gather.py``, ``session/``), as the docs write them.

Files still at an old path are moved first (``git mv`` in a git checkout): a module another
branch edited follows its move in a merge, but a file that branch added inside a moved
package (``session/readers/``) stays where it was added.

It is idempotent: a name whose longest known prefix is a new path is left alone, and the map
is refused if an old path is also a new path or the prefix of one (a second run would move
it again). A file that holds the words "apply-module-moves: skip" is left alone.

Usage: ``scripts/apply-module-moves.py [--check] [--map FILE] [ROOT]``. ROOT is the
checkout (default: this script's folder's parent), the map ROOT/scripts/module-moves.txt;
``--check`` changes nothing and exits 1 if anything would change.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import subprocess
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
        if is_name(old) and old.rpartition(".")[0] != new.rpartition(".")[0]:
            raise ValueError(f"{path}:{number}: a name is renamed inside its module: {raw!r}")
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


def is_name(dotted: str) -> bool:
    """A class or other name in a module (``...session.Span``), not a module."""
    return dotted.rpartition(".")[2][:1].isupper()


def _moved_once(name: str, moves: Mapping[str, str], news: set[str]) -> str | None:
    for prefix in _prefixes(name):
        if prefix in moves:
            return moves[prefix] + name[len(prefix) :]
        if prefix in news:
            return None
    return None


def moved(name: str, moves: Mapping[str, str], news: set[str]) -> str | None:
    """The new dotted name, or None where it did not move (or moved already). A name in a
    moved module that is renamed too takes both lines, the module's first."""
    result = None
    for _ in range(len(moves)):
        again = _moved_once(result or name, moves, news)
        if again is None:
            break
        result = again
    return result


Renames = Mapping[str, Mapping[str, str]]  # module -> {old name: new name}


def rename_names(text: str, renames: Renames, module: str) -> str:
    """Names renamed in their module, where this Python source defines or imports them by
    name; a source that does not parse is left as it is."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return text
    here = dict(renames.get(module, {}))  # bare names to rename in this source
    via: dict[str, Mapping[str, str]] = {}  # a module bound to a name: its renamed names
    lines = text.splitlines(keepends=True)
    edits: dict[tuple[int, int], tuple[int, str]] = {}  # (line, char) -> (length, new)

    def edit(line: int, byte: int, old: str, new: str) -> None:
        col = len(lines[line - 1].encode()[:byte].decode(errors="replace"))
        if lines[line - 1][col : col + len(old)] == old:
            edits[(line, col)] = (len(old), new)

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            table = renames.get(node.module, {})
            for alias in node.names:
                if alias.name in table:
                    edit(alias.lineno, alias.col_offset, alias.name, table[alias.name])
                    if alias.asname is None:
                        here[alias.name] = table[alias.name]
                if f"{node.module}.{alias.name}" in renames:
                    via[alias.asname or alias.name] = renames[f"{node.module}.{alias.name}"]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name in renames:
                    via[alias.asname] = renames[alias.name]
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in here:
            edit(node.lineno, node.col_offset, node.id, here[node.id])
        elif isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            if node.name in renames.get(module, {}):
                found = re.search(rf"\b(?:class|def)\s+({node.name})\b", lines[node.lineno - 1])
                if found:
                    edits[(node.lineno, found.start(1))] = (len(node.name), here[node.name])
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.attr in via.get(node.value.id, {})
            and node.end_lineno is not None
            and node.end_col_offset is not None
        ):
            byte = node.end_col_offset - len(node.attr.encode())
            edit(node.end_lineno, byte, node.attr, via[node.value.id][node.attr])
    for (row, col), (length, new) in sorted(edits.items(), reverse=True):
        text_line = lines[row - 1]
        lines[row - 1] = text_line[:col] + new + text_line[col + length :]
    return "".join(lines)


def rewrite(text: str, moves: Mapping[str, str], module: str | None = None) -> str:
    """``text`` with its references to moved modules and renamed names rewritten; ``module``
    is its dotted name where it is Python source ("" outside the package)."""
    news = set(moves.values())
    tops = {old.split(".")[1] for old in moves if old.count(".") >= 1}
    modules = {old: new for old, new in moves.items() if not is_name(old)}
    module_news = set(modules.values())

    def from_import(m: re.Match[str]) -> str:
        new = moved(f"{m['parent']}.{m['name']}", modules, module_news)
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
    text = _PATH.sub(path, text)
    renames: dict[str, dict[str, str]] = {}
    for old, new in moves.items():
        if is_name(old):
            parent, _, name = old.rpartition(".")
            renames.setdefault(parent, {})[name] = new.rpartition(".")[2]
    if module is not None and renames:
        text = rename_names(text, renames, module)
    return text


def module_name(root: Path, file: Path) -> str | None:
    """The dotted name of a Python source ("" for one outside the package), else None."""
    if file.suffix not in (".py", ".pyi"):
        return None
    parts = list(file.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts) if parts and parts[0] == ROOT_PACKAGE else ""


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


def strays(root: Path, moves: Mapping[str, str]) -> list[tuple[Path, Path]]:
    """(old, new) for each file still at an old path: a moved module, or any file under a
    moved package (caches aside)."""
    best: dict[Path, tuple[int, Path]] = {}  # file -> (length of its old path, target)

    def found(file: Path, old: str, target: Path) -> None:
        # a module line wins over its package's line: the longest old path
        if file not in best or best[file][0] < len(old):
            best[file] = (len(old), target)

    for old, new in moves.items():
        if is_name(old):
            continue
        old_path, new_path = root.joinpath(*old.split(".")), root.joinpath(*new.split("."))
        module = old_path.with_suffix(".py")
        if module.is_file() and not module.is_symlink():
            found(module, old, new_path.with_suffix(".py"))
        if old_path.is_dir():
            for file in sorted(old_path.rglob("*")):
                if file.is_file() and "__pycache__" not in file.parts:
                    found(file, old, new_path / file.relative_to(old_path))
    return sorted((file, target) for file, (_, target) in best.items())


def move(root: Path, file: Path, target: Path) -> None:
    if target.exists():
        raise FileExistsError(f"{file.relative_to(root)}: {target.relative_to(root)} exists")
    target.parent.mkdir(parents=True, exist_ok=True)
    tracked = subprocess.run(
        ["git", "-C", str(root), "ls-files", "--error-unmatch", str(file)],
        capture_output=True,
        check=False,
    )
    if tracked.returncode == 0:
        subprocess.run(["git", "-C", str(root), "mv", str(file), str(target)], check=True)
    else:
        file.rename(target)
    folder = file.parent
    while folder != root and not any(p.name != "__pycache__" for p in folder.iterdir()):
        for cache in folder.glob("__pycache__"):
            for entry in cache.iterdir():
                entry.unlink()
            cache.rmdir()
        folder.rmdir()
        folder = folder.parent


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
    try:
        for file, target in strays(root, moves):
            moved_to = f"{file.relative_to(root).as_posix()} -> {target.relative_to(root)}"
            changed.append(moved_to)
            if not args.check:
                print(f"moved: {moved_to}")
                move(root, file, target)
    except (OSError, subprocess.CalledProcessError) as error:
        print(f"apply-module-moves: {error}", file=sys.stderr)
        return 2
    for file in files(root, {map_file, Path(__file__).resolve()}):
        try:
            text = file.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if SKIP_MARK in text:
            continue
        new = rewrite(text, moves, module_name(root, file))
        if new != text:
            changed.append(file.relative_to(root).as_posix())
            if not args.check:
                file.write_text(new, encoding="utf-8")
    for name in changed:
        if args.check:
            print(f"stale: {name}")
        elif " -> " not in name:
            print(f"rewrote: {name}")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
