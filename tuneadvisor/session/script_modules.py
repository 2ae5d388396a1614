"""The training program as files: the script and the local modules it imports from beside it
(``from config import get_args``, ``from project_pkg.data import get_data``), each read once,
bounded, for the facts of the program as a whole (`trainscript.program_facts`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from tuneadvisor.errors import InputError
from tuneadvisor.files import read_text_input
from tuneadvisor.trainscript.local_imports import local_module_paths
from tuneadvisor.trainscript.parsed import ParsedScript, parse_script

MAX_MODULES = 20  # a script's folder may hold a whole package
MAX_DEPTH = 2  # the script's imports, and theirs


@dataclass(frozen=True)
class ProgramFiles:
    parsed: tuple[ParsedScript, ...]  # the script first, then each module read
    names: tuple[str, ...]  # the same order: paths relative to the script's folder


def read_program(script_path: str, first: ParsedScript) -> ProgramFiles:
    folder = Path(script_path).parent
    modules = [first]
    names = [Path(script_path).name]
    level = [(first, PurePosixPath())]
    for _ in range(MAX_DEPTH):
        following: list[tuple[ParsedScript, PurePosixPath]] = []
        for source, package in level:
            for relative in local_module_paths(source, package):
                name = relative.as_posix()
                path = folder / relative
                if name in names or len(names) > MAX_MODULES or not path.is_file():
                    continue
                try:
                    module = parse_script(read_text_input(str(path), "module"))
                except InputError:  # a helper that cannot be read is one not followed
                    continue
                modules.append(module)
                names.append(name)
                following.append((module, relative.parent))
        level = following
    return ProgramFiles(tuple(modules), tuple(names))
