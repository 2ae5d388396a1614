"""Everything one `report` or `open` looks at, loaded from the command line's inputs.

The CLI and the TUI both show a Workspace, so they never disagree.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tuneadvisor.errors import InputError
from tuneadvisor.profile.analysis import ProfileAnalysis, analyze
from tuneadvisor.profile.lprof import load_profiles
from tuneadvisor.profile.source import SourceFinder


@dataclass(frozen=True)
class JobScriptText:
    path: str
    text: str


@dataclass(frozen=True)
class WorkspaceRequest:
    """The inputs named on the command line (paths only; nothing read yet)."""

    profiles: tuple[str, ...] = ()
    job: str | None = None
    source_roots: tuple[str, ...] = ()


@dataclass(frozen=True)
class Workspace:
    analysis: ProfileAnalysis | None
    job: JobScriptText | None
    # Findings come with the advisor; until then the report says nothing was evaluated.
    findings: tuple[object, ...] = field(default=())


def read_text_input(path: str | os.PathLike[str], what: str) -> str:
    """Read a small text input, turning every failure into one InputError line."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError(path, f"no such file ({what})") from None
    except IsADirectoryError:
        raise InputError(path, f"{what} is a directory, not a file") from None
    except PermissionError:
        raise InputError(path, f"{what} is not readable (permission denied)") from None
    except OSError as exc:
        raise InputError(path, f"cannot read {what}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(path, f"{what} is not UTF-8 text (byte {exc.start})") from None


def load_workspace(request: WorkspaceRequest, cwd: Path | None = None) -> Workspace:
    job = None
    if request.job is not None:
        job = JobScriptText(request.job, read_text_input(request.job, "job script"))
    analysis = None
    if request.profiles:
        profiles = load_profiles(request.profiles)
        finder = SourceFinder(
            profile_dirs=_dirs_of(request.profiles),
            source_roots=tuple(Path(r) for r in request.source_roots),
            cwd=cwd,
        )
        analysis = analyze(profiles, finder)
    return Workspace(analysis=analysis, job=job)


def _dirs_of(paths: Sequence[str]) -> tuple[Path, ...]:
    dirs: list[Path] = []
    for p in paths:
        parent = Path(p).resolve().parent
        if parent not in dirs:
            dirs.append(parent)
    return tuple(dirs)
