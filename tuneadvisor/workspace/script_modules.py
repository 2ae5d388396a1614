"""The training program as files: the script and the local modules it imports from beside it
(``from config import get_args``, ``from project_pkg.data import get_data``), each read once,
bounded; and what only the whole program shows (`trainscript.program_facts`), with whether a
profile measured it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath, PurePosixPath
from typing import TYPE_CHECKING

from tuneadvisor.errors import InputError
from tuneadvisor.files import is_regular_file, read_text_input
from tuneadvisor.trainscript.local_imports import MAX_MODULE_BYTES, local_module_paths
from tuneadvisor.trainscript.parsed import ParsedScript, parse_script
from tuneadvisor.trainscript.program_facts import ProgramIndex, program_facts
from tuneadvisor.trainscript.resolve_names import Elsewhere

if TYPE_CHECKING:
    from tuneadvisor.profile.analysis import ProfileAnalysis
    from tuneadvisor.slurm.launch_line.model import LaunchLine

MAX_MODULES = 20  # a script's folder may hold a whole package
MAX_DEPTH = 2  # the script's imports, and theirs


@dataclass(frozen=True)
class ProgramFiles:
    parsed: tuple[ParsedScript, ...]  # the script first, then each module read
    names: tuple[str, ...]  # the same order: paths relative to the script's folder
    index: ProgramIndex = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", ProgramIndex(self.parsed, self.names))

    def elsewhere(self, name: str) -> Elsewhere:
        """What the program's other files say for the file ``name`` (by its relative path)."""
        return self.index.elsewhere(self.names.index(name) if name in self.names else -1)


def read_program(script_path: str, first: ParsedScript) -> ProgramFiles:
    folder = Path(script_path).parent
    modules = [first]
    names = [Path(script_path).name]
    level = [(first, PurePosixPath())]
    for _ in range(MAX_DEPTH):
        following: list[tuple[ParsedScript, PurePosixPath]] = []
        for source, package in level:
            for relative in local_module_paths(source, package):
                if len(names) > MAX_MODULES:
                    break  # no more is read: nor looked for
                name = relative.as_posix()
                path = folder / relative
                if name in names or not is_regular_file(path):
                    continue
                try:
                    module = parse_script(read_text_input(str(path), "module", MAX_MODULE_BYTES))
                except InputError:  # a helper that cannot be read is one not followed
                    continue
                modules.append(module)
                names.append(name)
                following.append((module, relative.parent))
        level = following
    return ProgramFiles(tuple(modules), tuple(names))


def program_evidence(
    program: ProgramFiles,
    launch: LaunchLine | None,
    analysis: ProfileAnalysis | None,
    programs: int = 1,
) -> tuple[dict[str, object], list[str]]:
    """The program's facts (the launch line's options its parser refuses, the GPUs it can
    drive) and whether the profile measured it, with the note when it did not.
    ``programs``: the Python programs the job runs."""
    # The launch line's options go to the script read: the one it runs, or --script for it.
    words = list(launch.options) if launch is not None and launch.script is not None else None
    facts = program_facts(program.parsed, words)
    if programs > 1 or (launch is not None and _picks_gpus(launch)):
        # Several programs side by side (`CUDA_VISIBLE_DEVICES=1 python b.py &`) share the
        # GPUs between them: one device each is not one device for the job.
        facts["script.single_gpu"] = False
        facts.pop("script.single_gpu.line", None)
    notes: list[str] = []
    if analysis is not None:
        notes += _profiled_program(facts, analysis, program.names)
    return facts, notes


def _profiled_program(
    facts: dict[str, object], analysis: ProfileAnalysis, names: Sequence[str]
) -> list[str]:
    """One of the profiled files is the training script or a local module it imports,
    compared by the path's end (the profile was taken on the cluster, under another root)."""
    from tuneadvisor.profile.facts import profiled_files

    files = profiled_files(analysis)
    if not files:
        return []
    posix = [PurePath(f).as_posix() for f in files]
    ours = any(f == n or f.endswith("/" + n) for f in posix for n in names)
    facts["profile.other_program"] = not ours
    if ours:
        return []
    shown = ", ".join(PurePath(f).name for f in files[:3])
    more = f" and {len(files) - 3} more" if len(files) > 3 else ""
    return [
        f"the profile measured {shown}{more}, not {names[0]} or a module it imports: "
        "the training-script changes are not planned from it (profile-other-program)"
    ]


def _picks_gpus(launch: LaunchLine) -> bool:
    return "CUDA_VISIBLE_DEVICES" in launch.env or "CUDA_VISIBLE_DEVICES" in launch.exported
