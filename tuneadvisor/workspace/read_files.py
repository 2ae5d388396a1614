"""The job script and the training script, read: each once, bounded, a bad one one InputError
line. The training script is the one given, else the one the job's launch line runs (or the
file of that name beside a job copied from the cluster)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tuneadvisor.errors import InputError
from tuneadvisor.files import MAX_JOB_SCRIPT, is_regular_file, read_text_input
from tuneadvisor.workspace.inputs import Inputs

if TYPE_CHECKING:
    from tuneadvisor.profile.analysis import ProfileAnalysis
    from tuneadvisor.slurm.jobscript.model import JobScript
    from tuneadvisor.slurm.launch_line.model import LaunchLine
    from tuneadvisor.slurm.launch_line.search import Unfollowed
    from tuneadvisor.trainscript.parsed import ParsedScript


def read_job(path: str) -> JobScript:
    from tuneadvisor.slurm.jobscript.model import JobScript

    text = read_text_input(path, "job script", MAX_JOB_SCRIPT)
    job = JobScript.parse(text, path)
    if job.not_a_script is not None:  # a Python file, an empty one: nothing to advise on
        raise InputError(path, job.not_a_script)
    return job


def _cannot_follow(command: str, reason: str | None = None) -> str:
    why = f": {reason};" if reason else ":"
    return (
        f"the job runs `{command}`; tuneadvisor could not find the training script in "
        f"it{why} give --script"
    )


def read_training_script(
    inputs: Inputs,
    launch: LaunchLine | None,
    notes: list[str],
    unfollowed: Unfollowed | None = None,
) -> tuple[str | None, str | None]:
    """The training script: --script, else the one the job's launch line runs.
    ``unfollowed``: the job's launch-like command that led to no script, to say so."""
    if inputs.script is not None:
        return inputs.script, read_text_input(inputs.script, "training script")
    if launch is None:
        if unfollowed is not None:
            notes.append(_cannot_follow(unfollowed.command, unfollowed.reason))
        return None, None
    if launch.script_path is not None and is_regular_file(launch.script_path):
        path = str(launch.script_path)
        return path, read_text_input(path, "training script")
    if launch.script and inputs.job is not None:
        # A job copied from the cluster names a path that is not here: look beside it.
        beside = Path(inputs.job).parent / Path(launch.script).name
        if is_regular_file(beside):
            return str(beside), read_text_input(beside, "training script")
    name = Path(launch.script).name if launch.script else ""
    if "$" in name or "`" in name:  # `python $SCRIPT` set from outside, `$(pick_script)`
        notes.append(_cannot_follow(launch.text.strip()))
    elif launch.script:
        notes.append(f"the job runs {launch.script}, which is not here: give --script to read it")
    return None, None


def script_parse(
    path: str | None, text: str, analysis: ProfileAnalysis | None
) -> ParsedScript | str:
    """The profile analysis's parse of the training script when it read that very file (one
    parse for line kinds and the scan), else the text, for the scan to parse."""
    if analysis is None or path is None or not analysis.parsed_sources:
        return text
    try:
        wanted = Path(path).resolve()
        for found, parsed in analysis.parsed_sources.items():
            if (
                parsed.tree is not None
                and parsed.same_source(text)
                and Path(found).resolve() == wanted
            ):
                return parsed
    except (OSError, RuntimeError, ValueError):  # an unresolvable path: parse it again
        pass
    return text
