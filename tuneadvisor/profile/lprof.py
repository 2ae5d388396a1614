"""Loading profile files without trusting them (STUB: signature fixed, body to be written)."""

from __future__ import annotations

import os
from collections.abc import Iterable

from tuneadvisor.errors import InputError
from tuneadvisor.profile.model import Profile, ProfileSet


def load_profile(path: str | os.PathLike[str]) -> Profile:
    """Read one .lprof pickle (line_profiler 4.x/5.x) or a printed line_profiler table.

    Raises InputError (naming the file and the problem) for anything else.
    """
    raise InputError(path, "profile loading is not written yet")


def load_profiles(paths: Iterable[str | os.PathLike[str]]) -> ProfileSet:
    return ProfileSet.of(load_profile(p) for p in paths)
