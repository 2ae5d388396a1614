"""A training script that builds no DataLoader itself: follow its imports of local modules
(`from dataset_utils import load_cifar100`, beside the script) to the one that does, or say
that none does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from tuneadvisor.errors import InputError
from tuneadvisor.files import is_regular_file, read_text_input
from tuneadvisor.trainscript.local_imports import (
    MAX_MODULE_BYTES,
    LoaderModule,
    local_module_paths,
)
from tuneadvisor.trainscript.parsed import parse_script
from tuneadvisor.trainscript.resolve_names import Elsewhere
from tuneadvisor.trainscript.scan import ScriptScan, scan_script
from tuneadvisor.trainscript.script_facts import helper_loader_facts

# Modules read at most: a script's folder may hold a whole package.
MAX_MODULES = 20
# Imports followed from the training script: its helpers, and the helpers' own helpers.
MAX_DEPTH = 2


@dataclass(frozen=True)
class Followed:
    module: LoaderModule | None
    note: str | None  # what the report says when no DataLoader was found


def follow_loader(
    script_path: str,
    text: str,
    scan: ScriptScan,
    elsewhere: Callable[[str], Elsewhere] | None = None,
) -> Followed:
    """The first local module, in import order (the script's own imports first), that builds
    a DataLoader; or a note naming where none was found. ``elsewhere``: what the rest of
    the program says for a module (by its relative name): the script's calls of its
    functions, the options and values of the other modules."""
    if scan.parse_error is not None or scan.dataloaders:
        return Followed(None, None)
    folder = Path(script_path).parent
    seen: dict[Path, None] = {}  # ordered, and a set
    level = [(text, PurePosixPath())]
    for _ in range(MAX_DEPTH):
        following: list[tuple[str, PurePosixPath]] = []
        for source, package in level:
            for relative in local_module_paths(parse_script(source), package):
                if len(seen) >= MAX_MODULES:
                    break  # no more is read: nor looked for
                path = folder / relative
                if path in seen or not is_regular_file(path):
                    continue
                seen[path] = None
                name = relative.as_posix()
                context = elsewhere(name) if elsewhere is not None else None
                found = _scan_module(path, name, scan, context)
                if isinstance(found, LoaderModule):
                    return Followed(found, None)
                if found is not None:
                    following.append((found, relative.parent))
        level = following
    return Followed(
        None, _none_found(Path(script_path).name, [p.relative_to(folder) for p in seen])
    )


def _scan_module(
    path: Path, name: str, script: ScriptScan, elsewhere: Elsewhere | None
) -> LoaderModule | str | None:
    """The module if it builds the training DataLoader, else its text (to follow its own
    imports); None when it cannot be read."""
    try:
        text = read_text_input(str(path), "module", MAX_MODULE_BYTES)
    except InputError:  # a helper that cannot be read is one not followed
        return None
    helper = scan_script(text, None, elsewhere)
    facts = helper_loader_facts(helper, script, name)
    if not facts:
        return text
    return LoaderModule(str(path), name, text, helper, facts)


def _none_found(script: str, read: list[Path]) -> str:
    # Said of what was read, never "imports nothing local": a module may sit elsewhere on
    # sys.path (a package installed in development mode, a folder added to the path).
    where = (
        f"nor in the modules it imports from beside it ({', '.join(p.as_posix() for p in read)})"
        if read
        else "and none of the modules it imports was found as a file beside it"
    )
    return (
        f"{script}: no DataLoader is built in it, {where}: num_workers, pin_memory and the "
        "other DataLoader settings were not checked"
    )
