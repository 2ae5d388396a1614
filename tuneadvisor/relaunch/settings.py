"""What a run asks for: the allocation (tasks, cores, GPUs, memory, time) and the knobs of the
training script, from explicit flags or from the advice (of the inputs, or of a saved
``report --format json``).

Later sources win: the bundled defaults, then the job's directives (what the profiled run
had), then the advice's plan (what it changes), then flags given on the command line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuneadvisor.advisor.plan import Plan
from tuneadvisor.errors import InputError
from tuneadvisor.numbers import is_ascii_digits

# runrecord holds the run record's model (below the session); named here too for
# relaunch's importers.
from tuneadvisor.runrecord.settings import KNOBS as KNOBS
from tuneadvisor.runrecord.settings import Settings as Settings
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.safe_words import (
    MAX_COUNT,
    checked_count,
    checked_directive,
    checked_text,
    shell_word,
)

if TYPE_CHECKING:
    from tuneadvisor.relaunch.saved_report import SavedReport

# --input-cost: a level, or a decode size in pixels (as the bundled trainkit reads it).
INPUT_COST_LEVELS = ("none", "low", "medium", "high")
MAX_INPUT_COST_PX = 4096


class Expands(str):
    """A word of a launch line that the job's shell expands (``${SLURM_JOB_ID}.lprof``):
    written as is. Every other word is shell-quoted."""

    __slots__ = ()


def checked_knob(name: str, value: object, where: str | None) -> object:
    """A knob's value checked against its kind: a bounded whole number, a bool, or an
    --input-cost level; InputError naming ``where`` otherwise. It goes on a command line."""
    _, kind = KNOBS[name]
    what = f"{name} ({KNOBS[name][0]})"
    if value is None:
        return None
    if kind == "int":
        return checked_count(value, what, where)
    if kind in ("bool", "flag"):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise InputError(where, f"{what} must be true or false, not {_shown(value)}")
    text = checked_text(value, what, where)
    if text in INPUT_COST_LEVELS or (
        is_ascii_digits(text) and len(text) <= 4 and int(text) <= MAX_INPUT_COST_PX
    ):
        return text
    raise InputError(
        where,
        f"{what} must be one of {', '.join(INPUT_COST_LEVELS)} or a size in pixels "
        f"(0..{MAX_INPUT_COST_PX}), not {_shown(value)}",
    )


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


def checked_cores(settings: Settings, where: str | None) -> Settings:
    """The job's cores (tasks x cores per task) bounded as each count is (``MAX_COUNT``):
    each alone under a million, their product would be looped over before anything runs."""
    cores = settings.ntasks * settings.cpus_per_task
    if cores > MAX_COUNT:
        raise InputError(
            where,
            f"{settings.ntasks:,} tasks x {settings.cpus_per_task:,} cores per task is "
            f"{cores:,} cores: more than {MAX_COUNT:,}",
        )
    return settings


def checked_settings(settings: Settings, where: str | None) -> Settings:
    """Every value that reaches a job script or a command line, checked (see safe_words):
    the settings as they will be written, or InputError naming ``where``."""
    knobs = {
        name: checked_knob(name, value, where)
        for name, value in settings.knobs.items()
        if name in KNOBS
    }
    checked = replace(
        settings,
        ntasks=checked_count(settings.ntasks, "ntasks", where, minimum=1),
        nodes=checked_count(settings.nodes, "nodes", where, minimum=1),
        cpus_per_task=checked_count(settings.cpus_per_task, "cpus-per-task", where, minimum=1),
        gpus=checked_count(settings.gpus, "gpus", where),
        mem=None if settings.mem is None else checked_directive("mem", settings.mem, where),
        time=None if settings.time is None else checked_directive("time", settings.time, where),
        knobs={**settings.knobs, **knobs},
        extra_args=tuple(
            checked_text(arg, "an --extra argument", where) for arg in settings.extra_args
        ),
    )
    return checked_cores(checked, where)


def _positive(value: object, what: str, source: str) -> int:
    return checked_count(value, what, source)


def _gpus_of(directives: Mapping[str, Any], source: str) -> int | None:
    for key in ("gpus", "gpus-per-node", "gpus-per-task"):
        if key in directives:
            text = str(directives[key]).rsplit(":", 1)[-1]
            return _positive(text, f"--{key}", source)
    gres = directives.get("gres")
    if gres:
        for item in str(gres).split(","):
            parts = item.split(":")
            if parts[0] == "gpu":
                return _positive(parts[-1] if len(parts) > 1 else "1", "--gres", source)
    return None


def _apply_sbatch(settings: Settings, table: Mapping[str, Any], source: str) -> Settings:
    changes: dict[str, Any] = {}
    if "cpus-per-task" in table:
        changes["cpus_per_task"] = max(
            1, _positive(table["cpus-per-task"], "cpus-per-task", source)
        )
    # --nodes=2 or a range (2-4): the fewest, what the job is sure to get
    nodes = settings.nodes
    if "nodes" in table:
        nodes = max(1, _positive(str(table["nodes"]).split("-", 1)[0], "nodes", source))
        changes["nodes"] = nodes
    if "ntasks" in table:
        changes["ntasks"] = max(1, _positive(table["ntasks"], "ntasks", source))
    elif "ntasks-per-node" in table:
        per_node = max(1, _positive(table["ntasks-per-node"], "ntasks-per-node", source))
        changes["ntasks"] = per_node * nodes
    elif nodes != settings.nodes:  # as many tasks on each node as before
        changes["ntasks"] = settings.tasks_per_node * nodes
    gpus = _gpus_of(table, source)
    if gpus is not None:
        changes["gpus"] = gpus
    if "mem" in table:
        changes["mem"] = checked_directive("mem", table["mem"], source)
    if "time" in table:
        changes["time"] = checked_directive("time", table["time"], source)
    return replace(settings, **changes)


def _plain(value: object) -> object:
    """A plan value as a knob: the advisor writes Python literals such as ``True``."""
    if isinstance(value, str) and value in ("True", "False"):
        return value == "True"
    return value


def settings_from_advice(
    base: Settings, directives: Mapping[str, object], plan: Plan, source: str
) -> Settings:
    """``base`` with the job's directives (what the profiled run had), then the advice's plan
    (what it changes), applied: how advice becomes settings, whether it comes from the
    inputs (``run`` with the inputs of ``report``) or from a saved report (``--from``)."""
    settings = _apply_sbatch(base, directives, source)
    settings = _apply_sbatch(settings, {k: c.value for k, c in plan.sbatch.items()}, source)
    knobs = dict(settings.knobs)
    because: dict[str, tuple[str, ...]] = dict(settings.because)
    notes = list(settings.notes)
    for key, change in plan.script.items():
        if key in KNOBS:
            knobs[key] = checked_knob(key, _plain(change.value), source)
            because[key] = change.because
        else:
            notes.append(
                f"advice {key} = {change.value!r} ({', '.join(change.because)}) is not a "
                "setting of the bundled scripts: they already do it right"
            )
    for key, change in plan.sbatch.items():
        because["sbatch." + key] = change.because
    for key, change in plan.env.items():
        notes.append(f"advice: export {key}={change.value} (not applied to local runs)")
    return checked_cores(
        replace(settings, knobs=knobs, because=because, notes=tuple(notes)), source
    )


def settings_from_report(base: Settings, report: SavedReport) -> Settings:
    """``base`` with a saved report's job directives, then its plan, applied."""
    return settings_from_advice(base, report.directives, report.plan, report.source)


# --------------------------------------------------------------------------- job scripts


def render_job_script(
    settings: Settings,
    *,
    name: str,
    launch: list[str],
    workdir: Path,
    output: str,
    watch: Sequence[str] | None = None,
) -> str:
    """A job script that runs ``launch`` with these settings, as the bundled ones are
    written: directives, OMP_NUM_THREADS from the job, then the launch line. With ``watch``
    (how to start tuneadvisor), ``tuneadvisor watch`` records the training beside it.

    Every value is checked and quoted here, whatever checked it before: a word of the
    launch line is shell-quoted unless it is an :class:`Expands`, a directive's value is
    one sbatch accepts, and a control character anywhere is refused (InputError)."""
    settings = checked_settings(settings, None)
    settings.check_shape()
    # several nodes: as many tasks on each (--ntasks alone may pile them on the first)
    tasks = (
        ("ntasks-per-node", settings.tasks_per_node)
        if settings.nodes > 1
        else ("ntasks", settings.ntasks)
    )
    # #SBATCH lines have one writer, the job-script model (it quotes what sbatch would split).
    header = JobScript.parse("#!/bin/bash\n", "job.sbatch")
    for option, value in _directives(settings, tasks, name, output):
        header = header.with_directive(option, checked_directive(option, str(value)))
    command = " ".join(_launch_word(a) for a in launch)
    lines = [
        *header.render_text().splitlines(),
        "",
        "# Written by tuneadvisor from these settings:",
        f"#   {checked_text(settings.describe(), 'the settings')}",
        *(
            f"#   {checked_text(k, 'a setting')}: from "
            + checked_text(", ".join(v), "a finding id")
            for k, v in settings.because.items()
            if v
        ),
        "export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK:-1}",
        f"cd {shell_word(str(workdir), 'the run folder')}",
        *(_watched(command, watch, srun=launch[:1] == ["srun"]) if watch else [command]),
        "",
    ]
    return "\n".join(lines)


def _directives(
    settings: Settings, tasks: tuple[str, int], name: str, output: str
) -> list[tuple[str, object]]:
    """The directives of a relaunched job, in the order they are written."""
    out: list[tuple[str, object]] = [
        ("job-name", name),
        ("nodes", settings.nodes),
        tasks,
        ("cpus-per-task", settings.cpus_per_task),
    ]
    if settings.mem:
        out.append(("mem", settings.mem))
    if settings.gpus:
        out.append(("gres", f"gpu:{settings.gpus}"))
    if settings.time:
        out.append(("time", settings.time))
    out.append(("output", output))
    return out


def _launch_word(word: str) -> str:
    if isinstance(word, Expands):
        return checked_text(word, "a launch word")
    return shell_word(word, "a word of the launch line")


METRICS_FILE = '"metrics-${SLURM_JOB_ID}.jsonl"'


def _watched(command: str, watch: Sequence[str], *, srun: bool) -> list[str]:
    """The launch line in the background and ``tuneadvisor watch`` recording it. The launch
    line comes first so that it stays the job's first command (``report --job`` reads it).
    srun's tasks are children of slurmstepd, not of srun: then the job's processes are
    watched, else the training's own tree."""
    target = '--job "$SLURM_JOB_ID"' if srun else '--pid "$train_pid"'
    tool = " ".join(shell_word(a, "the tuneadvisor command") for a in watch)
    return [
        f"{command} &",
        "train_pid=$!",
        "# tuneadvisor watch samples the training beside it (report/compare read the file)",
        f"{tool} watch --headless --interval 1 {target} --record {METRICS_FILE} \\",
        '  > "watch-${SLURM_JOB_ID}.log" 2>&1 &',
        "watch_pid=$!",
        'wait "$train_pid"',
        "status=$?",
        'kill -TERM "$watch_pid" 2>/dev/null',
        'wait "$watch_pid"',
        'exit "$status"',
    ]
