"""Finding the profiled source files.

A profile names the files as they were on the machine that ran the training, say
``/home/alice/mnist/train.py`` on a cluster. ``SourceFinder.find`` looks for a local copy, in
this order, and takes the first regular file it meets:

1. the path as recorded, when it is absolute (the profile was made on this machine);
2. a relative path (kernprof records the script as it was named on its command line) under
   ``cwd``, the process's working directory unless given;
3. next to the profiles: the recorded path's trailing components under a profile's folder
   (``mnist/train.py``, then ``train.py``);
4. under the ``--source-root`` folders, the same way.

Within rules 3 and 4 the longest trailing suffix found under any of the folders wins, ties
going to the folder given first: with roots ``/tmp/other`` and ``/tmp/proj``,
``/home/alice/proj/src/train.py`` finds ``/tmp/proj/src/train.py`` before
``/tmp/other/train.py``, since a longer match is better evidence of the same file.

Suffixes never climb out of a folder: components up to the last ``..`` are dropped, and so are
``.`` and Windows drive letters (``C:\\Users\\alice\\train.py`` is split on either slash).
Directories, devices, FIFOs and files over ``MAX_SOURCE_BYTES`` are skipped; symbolic links
count as what they point to. Names such as ``<string>`` or ``<ipython-input-3>`` have no
file. Answers, found or not, are cached for the finder's life.
"""

from __future__ import annotations

import io
import os
import re
import stat
import tokenize
from collections.abc import Iterator, Sequence
from pathlib import Path

# A training script is never this big; reading one that is would only stall the TUI.
MAX_SOURCE_BYTES = 32 * 1024 * 1024

_SEPARATORS = re.compile(r"[\\/]+")
_DRIVE = re.compile(r"^[A-Za-z]:$")


class SourceFinder:
    """Looks a profiled filename up: as recorded, in the working directory, next to the
    profiles, then under each ``--source-root`` (profiles recorded on a cluster name paths
    that do not exist here)."""

    def __init__(
        self,
        profile_dirs: Sequence[Path] = (),
        source_roots: Sequence[Path] = (),
        cwd: Path | None = None,
    ) -> None:
        self.profile_dirs = tuple(profile_dirs)
        self.source_roots = tuple(source_roots)
        self.cwd = cwd
        self._found: dict[str, Path | None] = {}

    def find(self, filename: str) -> Path | None:
        """The local file holding ``filename``'s source, or None."""
        if filename not in self._found:
            self._found[filename] = next(
                (path for path in self.candidates(filename) if _is_source_file(path)), None
            )
        return self._found[filename]

    def candidates(self, filename: str) -> Iterator[Path]:
        """Every place ``find`` looks, in its order (files or not)."""
        if not filename or (filename.startswith("<") and filename.endswith(">")):
            return
        recorded = Path(filename)
        if recorded.is_absolute():
            yield recorded
        else:
            cwd = self._cwd()
            if cwd is not None:
                yield cwd / recorded
        suffixes = _suffixes(filename)
        for folders in (self.profile_dirs, self.source_roots):
            for suffix in suffixes:
                for folder in folders:
                    yield folder / suffix

    def read_lines(self, filename: str) -> tuple[Path, list[str]] | None:
        """The found path and its lines (1-based index = list index + 1), or None.

        Lines are split where Python counts lines (``\\n``, ``\\r\\n``, ``\\r``; not at form
        feeds as ``str.splitlines`` would), so that the profile's line numbers match. The text
        is decoded as Python would (BOM, ``# -*- coding: ... -*-``, else UTF-8), with
        undecodable bytes replaced.
        """
        path = self.find(filename)
        if path is None:
            return None
        try:
            data = path.read_bytes()
        except OSError:
            return None
        return path, _split_lines(_decode(data))

    def _cwd(self) -> Path | None:
        if self.cwd is not None:
            return self.cwd
        try:
            return Path.cwd()
        except OSError:  # the working directory was removed
            return None


MAX_SUFFIX_PARTS = 32


def _suffixes(filename: str) -> list[Path]:
    """Trailing parts of a recorded path, longest first, none climbing out of a folder."""
    parts = [p for p in _SEPARATORS.split(filename) if p and p != "."]
    if ".." in parts:
        parts = parts[len(parts) - parts[::-1].index("..") :]
    if parts and _DRIVE.match(parts[0]):
        parts = parts[1:]
    # Every suffix of every length is quadratic in the depth (a crafted path 10,000 parts deep
    # took 20 s and 430 MB); no source tree is deeper than MAX_SUFFIX_PARTS.
    parts = parts[-MAX_SUFFIX_PARTS:]
    return [Path(*parts[start:]) for start in range(len(parts))]


def _is_source_file(path: Path) -> bool:
    """A regular file (after symbolic links) of a plausible size; never raises."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):  # missing, unreadable folder, loop, NUL in the name
        return False
    return stat.S_ISREG(info.st_mode) and info.st_size <= MAX_SOURCE_BYTES


def _decode(data: bytes) -> str:
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding, errors="replace")
    except (SyntaxError, LookupError):  # a bad or unknown coding cookie
        return data.decode("utf-8", errors="replace")


def _split_lines(text: str) -> list[str]:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines[-1] == "":
        lines.pop()  # the final newline ends the last line; it does not start another
    return lines
