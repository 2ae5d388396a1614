"""Worst search time of the package's backtracking-suspect patterns (issue 34, class 5).

For each pattern that tests/unit/test_linear_patterns.py listed in ``KNOWN`` at a base commit
(patterns that fail the linearity rule of tests/regex_linearity.py), time its search over
20,000-character strings built from its own characters, at the base commit (before) and in
the working tree (after: the pattern now held under the same module name, or none where the
regular expression gave way to string methods).

The adversarial strings: one "unit" repeated to the length. Units are each character of the
pattern's literals (plus digits, a letter, spaces, a line break, ``_``, ``-``), each literal
word of the pattern ("gemm", "No space left"), pairs of those, and 40 random units of 2-12
of those characters (seeded). Every unit is screened over 2,000 characters; the 3 slowest are
then timed over the full length, each search stopped at ``--cap`` seconds (shown as ">cap").
A pattern is run as its module runs it: all its matches, one ``match`` from the start, or one
``search`` (``_runner``).

Rerun (from the repository root; ``--record`` writes its part of bench/RESULTS.md):

    .venv/bin/python bench/regex_worst.py --base 4318e5e --record
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- regex-worst:begin -->", "<!-- regex-worst:end -->"
EXTRA = "0a =\n\t_-"


class _Cap(BaseException):
    pass


def _on_alarm(signum: int, frame: object) -> None:
    raise _Cap


def _literal_words(pattern: str) -> list[str]:
    """The runs of plain characters in a pattern (``gemm``, ``No space left``)."""
    plain = re.sub(
        r"\\[A-Za-z]|\[[^\]]*\]|\{[0-9,]*\}|\(\?P<[a-z_]+>|\(\?[:=!<>]*", "\x00", pattern
    )
    plain = re.sub(r"\\(.)", r"\1", plain)
    words = re.split(r"[\x00()|?*+^$.]+", plain)
    return sorted({w for w in words if len(w) >= 2})[:20]


# Units a pattern's characters rarely make by chance: a construct opened and never closed.
SHAPES = {
    "tuneadvisor.slurm.launch_line.variables._REFERENCE": ["${A:-", "${A:-$"],
    "tuneadvisor.trainscript.argparse_options._SHELL_ARITHMETIC": ["$((", "$((x"],
    "tuneadvisor.advisor.toml_text._TOML_TOKENS": ['"\\"', "'", '"""\\"', "'" * 3, '"'],
    "tuneadvisor.metrics.dcgm_exporter._LABEL": ['a="\\"', "a ="],
    "tuneadvisor.slurm.jobscript.tuned_from._LINE": [" (sha256:abcdef12) measured with  "],
}


def units(pattern: str, name: str = "") -> list[str]:
    chars = sorted(set(re.sub(r"\\.", "", pattern)) - set("()[]{}?*+|^$\\") | set(EXTRA))
    words = _literal_words(pattern)
    found = list(chars) + words + [a + b for a in words for b in [*words, " ", "0"]][:60]
    rng = random.Random(34)
    found += ["".join(rng.choices(chars, k=rng.randint(2, 12))) for _ in range(40)]
    return list(dict.fromkeys([*SHAPES.get(name, []), *found]))


def _time(run: object, text: str | bytes, cap: float) -> float:
    signal.setitimer(signal.ITIMER_REAL, cap)
    start = time.perf_counter()
    try:
        run(text)  # type: ignore[operator]
    except _Cap:
        return float("inf")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return time.perf_counter() - start


def worst(
    pattern: str, run: Callable[[str], object], length: int, cap: float, name: str = ""
) -> dict[str, Any]:
    """The slowest unit (made from ``pattern``) and its time through ``run`` over ``length``
    characters."""

    def subject(unit: str, size: int) -> str:
        return (unit * (size // len(unit) + 1))[:size]

    screened = sorted(
        ((_time(run, subject(u, 2_000), cap), u) for u in units(pattern, name)), reverse=True
    )
    best = (0.0, "")
    for _, unit in screened[:3]:
        best = max(best, (_time(run, subject(unit, length), cap), unit))
    return {"seconds": best[0], "unit": best[1]}


# Patterns that gave way to code: the function that now does their work, timed over the
# same strings (made from the old pattern's characters).
REPLACED = {  # tuneadvisor.MODULE.NAME: the function in MODULE
    "advisor.toml_text._TOML_TOKENS": "toml_shape_problem",
    "metrics.dcgm_exporter._LINE": "_parse_line",
    "metrics.dcgm_exporter._LABEL": "_labels",
    "slurm.jobscript.tuned_from._LINE": "_split",
    "slurm.launch_line.commands._SITE_WRAPPER": "_site_wrapper",
    "slurm.launch_line.search._SHEBANG": "_names_a_shell",
    "slurm.launch_line.variables._REFERENCE": "references",
    "trainscript.argparse_options._SHELL_ARITHMETIC": "_arithmetic",
    "trainscript.names._MODEL_NAME": "_model_name",
    "trainscript.parsed._LINE": "_lines",
    "workspace.site_checks.gpu._SHORT": "short_uuid",
}


def _runner(name: str, compiled: re.Pattern[str]) -> Callable[[str], object]:
    """How the module runs ``NAME``: every match (``finditer``/``findall`` anywhere), or
    ``match`` where it only ever matches from the start (``NAME.match(``, ``.fullmatch(``,
    or seff's old ``_match(NAME, ...)``, which called fullmatch), else ``search``. Read in
    that module only (tests/regex_sites.py pools every module's uses of a name)."""
    module, _, attr = name.rpartition(".")
    source = Path(importlib.import_module(module).__file__ or "").read_text()
    uses = set(re.findall(rf"\b{re.escape(attr)}\.([a-z]+)\(", source))
    if re.search(rf"\b_match\({re.escape(attr)},", source):
        uses.add("fullmatch")
    if uses & {"finditer", "findall"}:
        return lambda text: sum(1 for _ in compiled.finditer(text))
    return compiled.match if uses and uses <= {"match", "fullmatch"} else compiled.search


def measure(
    names: list[str], length: int, cap: float, old: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Each ``module.NAME`` (or ``path:line``) site's pattern, timed: in this interpreter's
    tuneadvisor and tests/regex_sites.py (the ones first on sys.path). A name no longer
    there: the function in REPLACED, over strings made from its ``old`` pattern."""
    from tests import regex_sites

    sites = {s.where: s for s in [*regex_sites.module_patterns(), *regex_sites.call_sites()]}
    signal.signal(signal.SIGALRM, _on_alarm)
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        site = sites.get(name)
        if site is not None and isinstance(site.pattern, str):
            compiled = re.compile(site.pattern, site.flags)
            run = _runner(name, compiled)
            made_from = old[name]["pattern"] if name in old else site.pattern  # same strings
            out[name] = {"pattern": site.pattern, **worst(made_from, run, length, cap, name)}
        elif (short := name.removeprefix("tuneadvisor.")) in REPLACED and name in old:
            function = REPLACED[short]
            run = getattr(importlib.import_module(name.rsplit(".", 1)[0]), function)
            found = worst(old[name]["pattern"], run, length, cap, name)
            out[name] = {"pattern": old[name]["pattern"], "code": f"{function}()", **found}
        else:
            out[name] = {"pattern": None}
            continue
        print(f"  {name}: {out[name]['seconds']:.4f} s ({out[name]['unit']!r})", file=sys.stderr)
    return out


def known_sites(commit: str) -> list[str]:
    """The module-level names of the patterns in ``KNOWN`` at ``commit``."""
    source = subprocess.run(
        ["git", "show", f"{commit}:tests/unit/test_linear_patterns.py"],
        cwd=REPO, check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    tree = ast.parse(source)
    known: set[str | bytes] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "KNOWN":
            call = node.value
            assert isinstance(call, ast.Call)
            known = set(ast.literal_eval(call.args[0]))
    with tempfile.TemporaryDirectory() as tree_dir:
        _checkout(commit, tree_dir)
        names = _run_in(tree_dir, ["--list-names"])
    # one name a pattern: its module-level name where it has one (listed first)
    first = {p: w for w, p in reversed(names)}
    return sorted(w for p, w in first.items() if p in known)


def _checkout(commit: str, into: str) -> None:
    archive = subprocess.run(
        [
            "git", "archive", commit, "tuneadvisor", "tests/__init__.py",
            "tests/regex_sites.py", "scripts", "slurm", "training",  # bundled/ links there
        ],
        cwd=REPO, check=True, capture_output=True,
    ).stdout  # fmt: skip
    subprocess.run(["tar", "-x", "-C", into], input=archive, check=True)


def _run_in(tree_dir: str, args: list[str]) -> Any:
    """This script, run with ``tree_dir``'s tuneadvisor and tests/regex_sites.py."""
    env = {**os.environ, "PYTHONPATH": tree_dir}
    out = subprocess.run(
        [sys.executable, __file__, "--tree", tree_dir, *args],
        env=env, check=False, capture_output=True, text=True, cwd=tree_dir,
    )  # fmt: skip
    sys.stderr.write(out.stderr)
    out.check_returncode()
    return json.loads(out.stdout)


def _fmt(entry: dict[str, Any], cap: float) -> str:
    if entry.get("pattern") is None:
        return "not found"
    seconds = entry["seconds"]
    shown = f">{cap:g} s" if seconds == float("inf") else f"{seconds * 1000:.1f} ms"
    code = f"`{entry['code']}` " if "code" in entry else ""
    return f"{code}{shown} ({entry['unit'][:16]!r})".replace("|", "\\|")


def render(
    base: str,
    names: list[str],
    before: dict[str, Any],
    after: dict[str, Any],
    args: argparse.Namespace,
) -> str:
    load = os.getloadavg()
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
    rows = [
        f"| `{name}` | {_fmt(before[name], args.cap)} | {_fmt(after[name], args.cap)} |"
        for name in names
    ]
    return "\n".join(
        [
            BEGIN,
            "## Backtracking patterns, worst search before and after (issue 34, class 5)",
            "",
            f"Recorded {now} UTC by `.venv/bin/python bench/regex_worst.py --base {base} "
            f"--record` (load average {args.load_start:.2f} at the start, {load[0]:.2f} at the "
            f"end, {os.cpu_count()} CPUs, shared). Each pattern that the linearity rule's "
            f"`KNOWN` list held at {base}, run as its module runs it (every match for "
            "finditer/findall, match where it only matches from the start, else search) over "
            f"{args.chars:,} characters of one unit repeated (the slowest unit of its own "
            "characters and literal words, after a 2,000-character screen); each search "
            f"stopped at {args.cap:g} s. After: the pattern now under the same name, or, "
            "named, the function that now does its work (string methods, a scanner), over "
            "the same strings.",
            "",
            "| site | before (slowest unit) | after (slowest unit) |",
            "|---|---|---|",
            *rows,
            END,
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="4318e5e", help="the commit whose KNOWN is timed")
    parser.add_argument("--chars", type=int, default=20_000)
    parser.add_argument("--cap", type=float, default=10.0, help="seconds a search may run")
    parser.add_argument("--record", action="store_true", help="write bench/RESULTS.md")
    parser.add_argument("--tree", help=argparse.SUPPRESS)
    parser.add_argument("--list-names", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--names", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.tree:  # a child: the tuneadvisor of ``--tree`` is first on sys.path
        sys.path.insert(0, args.tree)
        from tests import regex_sites

        if args.list_names:
            sites = [*regex_sites.module_patterns(), *regex_sites.call_sites()]
            print(json.dumps([(s.where, s.pattern) for s in sites if isinstance(s.pattern, str)]))
        else:
            print(json.dumps(measure(json.loads(args.names), args.chars, args.cap, {})))
        return
    sys.path.insert(0, str(REPO))
    args.load_start = os.getloadavg()[0]
    names = known_sites(args.base)
    print(f"{len(names)} sites of {args.base}'s KNOWN; before:", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tree_dir:
        _checkout(args.base, tree_dir)
        common = ["--chars", str(args.chars), "--cap", str(args.cap), "--names", json.dumps(names)]
        before = _run_in(tree_dir, common)
    print("after:", file=sys.stderr)
    after = measure(names, args.chars, args.cap, before)
    section = render(args.base, names, before, after, args)
    print(section)
    if args.record:
        sys.path.insert(0, str(REPO / "bench"))
        from results_index import record_section

        record_section(section, BEGIN, END)


if __name__ == "__main__":
    main()
