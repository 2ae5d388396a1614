"""Finding the profiled source files (STUB: signature fixed, body to be written)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


class SourceFinder:
    """Looks a profiled filename up: as recorded, next to the profile, in the working
    directory, then under each ``--source-root`` (profiles recorded on a cluster name paths
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

    def find(self, filename: str) -> Path | None:
        """The local file holding ``filename``'s source, or None."""
        path = Path(filename)
        return path if path.is_file() else None

    def read_lines(self, filename: str) -> tuple[Path, list[str]] | None:
        """The found path and its lines (1-based index = list index + 1), or None."""
        path = self.find(filename)
        if path is None:
            return None
        try:
            return path, path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return None
