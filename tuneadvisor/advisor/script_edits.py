"""Training-script settings the plan changes: passed on the job's launch line when the
script takes them as options, or written as a patch for the script when they are hard-coded.

The job script is edited (it is the user's to resubmit); the training script never is:
a patch file says what to change, and the user applies it.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.launch_line.edit import set_flag, set_option
from tuneadvisor.slurm.launch_line.model import LaunchLine
from tuneadvisor.slurm.safe_words import MAX_COUNT, is_option_name
from tuneadvisor.trainscript.pyast import dotted_name

if TYPE_CHECKING:
    from tuneadvisor.trainscript.scan import ScriptScan
    from tuneadvisor.trainscript.scan_results import ArgOption, Origin

# DataLoader settings the advisor changes, and how a value reads in Python source.
LOADER_SETTINGS = ("num_workers", "pin_memory", "persistent_workers", "prefetch_factor")


@dataclass(frozen=True)
class ScriptEdits:
    job: JobScript | None  # the job script with launch-line options changed
    patch: str  # unified diff for the training script ("" when none)
    notes: tuple[str, ...]


def _python_value(setting: str, value: object, reserve_main_core: bool, ranks: int = 1) -> str:
    if setting == "num_workers":
        # Follow the allocation instead of a number (as the plan couples them).
        cores = 'int(os.environ.get("SLURM_CPUS_PER_TASK", "1"))'
        if ranks > 1:  # torchrun & co. start several ranks in one task: share its cores
            cores += ' // int(os.environ.get("LOCAL_WORLD_SIZE", "1"))'
        return f"max(1, {cores} - 1)" if reserve_main_core else cores
    return repr(value)


def _shell_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _typed(setting: str, value: object) -> bool:
    """The DataLoader settings are counts and switches: nothing else is written (a rule
    pack's value could be any text, and it would land on a launch line or in code)."""
    if setting in ("pin_memory", "persistent_workers"):
        return isinstance(value, bool)
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT


def _flag(action: str | None, option: str, value: bool) -> tuple[str, set[str]] | None:
    """The word that says ``value`` for a flag option (store_true and friends take no
    value: ``--pin-memory true`` would stop argparse), and the words it replaces. None when
    the option is no flag, or its action cannot say ``value``."""
    name = (action or "").rsplit(".", 1)[-1]
    negative = "--no-" + option[2:] if option.startswith("--") else option
    if name == "store_true":
        return (option, set()) if value else None
    if name == "store_false":
        return (option, set()) if not value else None
    if name == "BooleanOptionalAction":
        return (option, {negative}) if value else (negative, {option})
    return None


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


def _value_patterns(setting: str, names: tuple[str, ...]) -> list[re.Pattern[str]]:
    """Where a literal setting is written: ``num_workers=1``; ``{'num_workers': 1}`` (the
    kwargs dict of PyTorch's MNIST example); ``kwargs['num_workers'] = 1``; or the variable
    it was read through (``NUM_WORKERS = 8``)."""
    key = re.escape(setting)
    patterns = [
        re.compile(r"(\b" + key + r"\s*=\s*)([^,)\s]+)"),
        re.compile(r"""(['"]""" + key + r"""['"]\s*:\s*)([^,})\s]+)"""),
        re.compile(r"""(\[\s*['"]""" + key + r"""['"]\s*\]\s*=\s*)([^,)\s]+)"""),
    ]
    for name in names:
        patterns.append(re.compile(r"(\b" + re.escape(name) + r"\s*=\s*)([^,)\s]+)"))
    return patterns


def _patch_literal(
    text: str, line: int, setting: str, new: str, names: tuple[str, ...] = ()
) -> str | None:
    lines = text.splitlines(keepends=True)
    if not 0 < line <= len(lines):
        return None
    patterns = _value_patterns(setting, names)
    for index in range(line - 1, min(line + 3, len(lines))):  # the call may span lines
        for pattern in patterns:
            match = pattern.search(lines[index])
            if match:
                lines[index] = lines[index][: match.start(2)] + new + lines[index][match.end(2) :]
                return "".join(lines)
    return None


def _add_keyword(text: str, line: int, setting: str, new: str) -> str | None:
    """``text`` with ``setting=new`` added to the DataLoader call on ``line`` (the setting
    is left at its default there); None when that call cannot be found or takes none."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and node.lineno == line
        and (dotted_name(node.func) or "").rsplit(".", 1)[-1] == "DataLoader"
    ]
    arguments: list[ast.expr | ast.keyword] = [*calls[0].args, *calls[0].keywords] if calls else []
    if not arguments:
        return None
    last = max(arguments, key=lambda node: (node.end_lineno or 0, node.end_col_offset or 0))
    if last.end_lineno is None or last.end_col_offset is None:
        return None
    lines = text.splitlines(keepends=True)
    first = lines[last.lineno - 1].encode("utf-8")  # ast counts columns in UTF-8 bytes
    raw = lines[last.end_lineno - 1].encode("utf-8")
    cut = last.end_col_offset
    indent = first[: last.col_offset]
    if last.lineno > calls[0].lineno and not indent.strip():
        # One argument a line: the new one goes on a line of its own, with a comma after
        # the last argument unless it has one.
        comma = raw[cut:].lstrip().startswith(b",")
        lines[last.end_lineno - 1] = (raw if comma else raw[:cut] + b"," + raw[cut:]).decode()
        lines.insert(last.end_lineno, f"{indent.decode()}{setting}={new},\n")
        return "".join(lines)
    added = f", {setting}={new}".encode()
    lines[last.end_lineno - 1] = (raw[:cut] + added + raw[cut:]).decode("utf-8")
    return "".join(lines)


def _with_import_os(text: str) -> str:
    """``text`` with ``import os`` added where imports may go, unless it has one."""
    if re.search(r"^\s*import os\b", text, re.M):
        return text
    lines = text.splitlines(keepends=True)
    lines.insert(_import_line(text), "import os\n")
    return "".join(lines)


def _import_line(text: str) -> int:
    """Where a new top-level import goes (0-based line index): after the module docstring
    and any ``from __future__`` imports, which must stay first; else after a shebang and
    coding comments."""
    try:
        body = ast.parse(text).body
    except (SyntaxError, ValueError):
        body = []
    end = 0
    for index, node in enumerate(body):
        docstring = (
            index == 0
            and isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        )
        future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if not (docstring or future):
            break
        end = node.end_lineno or node.lineno
    if end:
        return end
    lines = text.splitlines()
    while end < len(lines) and lines[end].startswith("#"):
        end += 1
    return end


def _origin(scan: ScriptScan | None, setting: str) -> Origin | None:
    """Where the training DataLoader's ``setting`` comes from, as the scan read it."""
    loader = scan.train_loader if scan is not None else None
    return loader.params.get(setting) if loader is not None else None


def _follows_cores(origin: Origin | None) -> Origin | None:
    """The origin that reads SLURM_CPUS_PER_TASK when num_workers follows it (in the script,
    or passed on the launch line as ``--num-workers $SLURM_CPUS_PER_TASK``); else None."""
    for candidate in (origin, origin.passed_origin if origin is not None else None):
        if candidate is not None and candidate.env == "SLURM_CPUS_PER_TASK":
            return candidate
    return None


def _carries_through(origin: Origin, value: object, cores: int | None) -> str:
    """The note for a num_workers that follows --cpus-per-task: no script change, and
    whether the main process keeps a core of its own."""
    expr = origin.expr.strip()
    where = f" (line {origin.line}: {expr})" if origin.line else f" ({expr})"
    less_one = re.search(r"-\s*1\b", expr) is not None
    if not origin.derived:
        main = "every core runs a worker and the main process has no core of its own"
    elif less_one:
        main = "one core stays with the main process"
    else:
        main = "as the script derives them"
    if cores is not None and not origin.derived:
        workers = f"{cores} workers"
    elif cores is not None and less_one:
        workers = f"{max(1, cores - 1)} workers"
    else:
        workers = f"workers (advised: {value})"
    cpus = f"--cpus-per-task={cores}" if cores is not None else "--cpus-per-task"
    return (
        f"num_workers follows SLURM_CPUS_PER_TASK{where}: no script change, {cpus} carries "
        f"through to {workers}; {main}"
    )


def plan_script_edits(
    settings: Mapping[str, object],
    scan: ScriptScan | None,
    job: JobScript | None,
    launch: LaunchLine | None,
    script_path: str | None,
    script_text: str | None,
    reserve_main_core: bool = True,
    ranks_per_task: int = 1,
    patch_name: str | None = None,
    cores: int | None = None,
) -> ScriptEdits:
    """Each setting where it comes from: the launch-line option that sets it, the literal in
    the training script, or a keyword added where the DataLoader takes its default (a patch);
    a note where none can be changed safely, or where num_workers follows SLURM_CPUS_PER_TASK
    already. ``ranks_per_task``: processes a launcher starts in each task (they share its
    cores); ``patch_name``: the patched file as the patch names it (default: the script's
    file name); ``cores``: the --cpus-per-task the job will have."""
    notes: list[str] = []
    patched = script_text
    options: Mapping[str, ArgOption] = scan.options if scan is not None else {}

    # Keywords added to a call may add lines: after every edit at a line the scan gave.
    def added_last(item: tuple[str, object]) -> bool:
        origin = _origin(scan, item[0])
        return origin is not None and origin.source == "default"

    for setting, value in sorted(settings.items(), key=added_last):
        if setting not in LOADER_SETTINGS:
            notes.append(f"{setting}: change it in the training script to {value}")
            continue
        if not _typed(setting, value):
            notes.append(f"{setting}: the advised value {_shown(value)} is not valid; not written")
            continue
        origin = _origin(scan, setting)
        source = origin.source if origin is not None else None
        option = origin.option.name if origin is not None and origin.option else None
        follows = _follows_cores(origin) if setting == "num_workers" else None
        if follows is not None:
            notes.append(_carries_through(follows, value, cores))
            continue
        if option is not None and not is_option_name(option):
            # Read from the training script's add_argument: written on the launch line as
            # is, a newline or a `;` in it would become a command of the job.
            notes.append(
                f"{setting}: the training script's option {_shown(option)} is not an option "
                "name; the launch line is not changed"
            )
            continue
        if source == "argparse" and option is not None and job is not None and launch:
            action = next((o.action for o in options.values() if option in o.flags), None)
            flag = _flag(action, option, value) if isinstance(value, bool) else None
            if isinstance(value, bool) and action is not None and flag is None:
                notes.append(f"set {setting}={value} in the training script: {option} cannot")
                continue
            if flag is not None:
                edited = set_flag(job, launch, *flag)
            else:
                edited = set_option(job, launch, option, _shell_value(value))
            if edited is not None:
                job = edited
                continue
            notes.append(
                f"add {option} {_shell_value(value)} to the launch line "
                f"(line {launch.line}); it was too complex to edit safely"
            )
            continue
        loader = scan.train_loader if scan is not None else None
        line = (origin.line if origin is not None else None) or (loader.line if loader else None)
        python = _python_value(setting, value, reserve_main_core, ranks_per_task)
        new = None
        if source == "literal" and patched is not None and isinstance(line, int):
            via = origin.via if origin is not None else ()
            new = _patch_literal(patched, line, setting, python, via[-1:])
        elif source == "default" and patched is not None and loader is not None:
            new = _add_keyword(patched, loader.line, setting, python)
        if new is not None:
            patched = new
            continue
        notes.append(f"set {setting}={value} where the training DataLoader is built")
    if patched is not None and patched != script_text and "os.environ" in patched:
        # After every edit, so the line numbers the scan gave stay right while patching.
        patched = _with_import_os(patched)
    patch = ""
    if script_text is not None and patched is not None and patched != script_text:
        name = patch_name or Path(script_path or "train.py").name
        patch = "".join(difflib.unified_diff(
            script_text.splitlines(keepends=True), patched.splitlines(keepends=True),
            fromfile=f"a/{name}", tofile=f"b/{name}",
        ))  # fmt: skip
    return ScriptEdits(job=job, patch=patch, notes=tuple(notes))
