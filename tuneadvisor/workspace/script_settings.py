"""Training-script settings the plan changes, each written where it comes from: on the job's
launch line when the script takes it as an option, as a patch for the script when it is
hard-coded or left at the DataLoader's default, and as a note where neither can be changed
safely, or where num_workers follows SLURM_CPUS_PER_TASK already.

The job script is edited (it is the user's to resubmit); the training script never is: a
patch file says what to change, and the user applies it. The editors are the inputs' own
(``slurm.launch_line.edit``, ``trainscript.patch``); this module only chooses between them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.launch_line.edit import flag_words, set_flag, set_option, shell_value
from tuneadvisor.slurm.launch_line.model import LaunchLine
from tuneadvisor.slurm.safe_words import MAX_COUNT, is_option_name
from tuneadvisor.trainscript.patch import (
    LOADER_SETTINGS,
    ScriptPatch,
    python_value,
    unified_patch,
)
from tuneadvisor.trainscript.scan import ScriptScan
from tuneadvisor.trainscript.scans.results import Origin


@dataclass(frozen=True)
class ScriptEdits:
    job: JobScript | None  # the job script with launch-line options changed
    patch: str  # unified diff for the training script ("" when none)
    notes: tuple[str, ...]


@dataclass(frozen=True)
class Target:
    """The file the training DataLoader is built in, and how its settings are derived."""

    scan: ScriptScan | None
    path: str | None
    text: str | None
    patch_name: str | None = None  # as the patch names it (default: the file's name)
    reserve_main_core: bool = True  # num_workers leaves a core to the main process
    ranks_per_task: int = 1  # processes a launcher starts in each task (they share its cores)
    cores: int | None = None  # the --cpus-per-task the job will have


def _typed(setting: str, value: object) -> bool:
    """The DataLoader settings are counts and switches: nothing else is written (a rule
    pack's value could be any text, and it would land on a launch line or in code)."""
    if setting in ("pin_memory", "persistent_workers"):
        return isinstance(value, bool)
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


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


def _on_launch_line(
    job: JobScript, launch: LaunchLine, scan: ScriptScan, option: str, setting: str, value: object
) -> JobScript | str:
    """The job with the option set on its launch line, or the note saying why not."""
    action = next((o.action for o in scan.options.values() if option in o.flags), None)
    flag = flag_words(action, option, value) if isinstance(value, bool) else None
    if isinstance(value, bool) and action is not None and flag is None:
        return f"set {setting}={value} in the training script: {option} cannot"
    if flag is not None:
        edited = set_flag(job, launch, *flag)
    else:
        edited = set_option(job, launch, option, shell_value(value))
    if edited is not None:
        return edited
    return (
        f"add {option} {shell_value(value)} to the launch line "
        f"(line {launch.line}); it was too complex to edit safely"
    )


def _in_script(patch: ScriptPatch | None, target: Target, setting: str, value: object) -> bool:
    """Patch the literal, or add a keyword where the DataLoader takes its default."""
    origin = _origin(target.scan, setting)
    loader = target.scan.train_loader if target.scan is not None else None
    if patch is None or loader is None:
        return False
    line = (origin.line if origin is not None else None) or loader.line
    new = python_value(setting, value, target.reserve_main_core, target.ranks_per_task)
    source = origin.source if origin is not None else None
    if source == "literal":
        via = origin.via if origin is not None else ()
        return patch.set_literal(line, setting, new, via[-1:])
    if source == "default":
        return patch.add_keyword(loader.arguments_end, setting, new)
    return False


def _unwritable(setting: str, value: object, origin: Origin | None) -> str | None:
    """Why a setting cannot be written anywhere; None when it may be."""
    if setting not in LOADER_SETTINGS:
        return f"{setting}: change it in the training script to {value}"
    if not _typed(setting, value):
        return f"{setting}: the advised value {_shown(value)} is not valid; not written"
    option = origin.option.name if origin is not None and origin.option else None
    if option is not None and not is_option_name(option):
        # Read from the training script's add_argument: written on the launch line as
        # is, a newline or a `;` in it would become a command of the job.
        return (
            f"{setting}: the training script's option {_shown(option)} is not an option "
            "name; the launch line is not changed"
        )
    return None


def _added(scan: ScriptScan | None, setting: str) -> bool:
    """Keywords added to the call are said last (their notes, in the order they were)."""
    origin = _origin(scan, setting)
    return origin is not None and origin.source == "default"


def write_settings(
    settings: Mapping[str, object],
    target: Target,
    job: JobScript | None,
    launch: LaunchLine | None,
) -> ScriptEdits:
    """Each setting where it comes from: the launch-line option that sets it, the literal in
    the training script, or a keyword added where the DataLoader takes its default."""
    notes: list[str] = []
    scan = target.scan
    patch = ScriptPatch(target.text, scan.import_at if scan else 0) if target.text else None
    for setting, value in sorted(settings.items(), key=lambda item: _added(scan, item[0])):
        origin = _origin(scan, setting)
        why_not = _unwritable(setting, value, origin)
        if why_not is not None:
            notes.append(why_not)
            continue
        follows = _follows_cores(origin) if setting == "num_workers" else None
        if follows is not None:
            notes.append(_carries_through(follows, value, target.cores))
            continue
        option = origin.option.name if origin is not None and origin.option else None
        if origin is not None and origin.source == "argparse" and option and job and launch:
            assert scan is not None  # an origin comes from the scan
            edited = _on_launch_line(job, launch, scan, option, setting, value)
            if isinstance(edited, str):
                notes.append(edited)
            else:
                job = edited
            continue
        if not _in_script(patch, target, setting, value):
            notes.append(f"set {setting}={value} where the training DataLoader is built")
    text = target.text
    name = target.patch_name or Path(target.path or "train.py").name
    patched = unified_patch(text, patch.render(), name) if patch is not None and text else ""
    return ScriptEdits(job=job, patch=patched, notes=tuple(notes))
