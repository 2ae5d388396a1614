"""Files in and out: inputs read whole with one clear error line, and outputs written so
that a crash or a full disk never leaves half a file behind."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from tuneadvisor.errors import InputError


def write_atomic(path: Path, data: bytes, mode_from: Path | None = None) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it over ``path``.
    The new file takes ``mode_from``'s permission bits (a job script stays executable)."""
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise InputError(path, f"cannot write here: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        if mode_from is not None and mode_from.exists():
            os.chmod(tmp, mode_from.stat().st_mode & 0o7777)
        else:
            os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(path, f"cannot write: {exc.strerror or exc}") from None


def backup_path(path: Path) -> Path:
    """``job.sbatch.bak``, or ``.bak.1``, ``.bak.2``... so no earlier backup is lost."""
    candidate = path.with_name(path.name + ".bak")
    number = 1
    while candidate.exists():
        candidate = path.with_name(f"{path.name}.bak.{number}")
        number += 1
    return candidate


MAX_TEXT_INPUT = 64 * 1024 * 1024  # job scripts, seff text, metrics logs


def read_text_input(path: str | os.PathLike[str], what: str, limit: int = MAX_TEXT_INPUT) -> str:
    """Read a text input, turning every failure into one InputError line."""
    file = Path(path)
    try:
        # A FIFO or device would block or never end: only regular files are read.
        if file.exists() and not file.is_file() and not file.is_dir():
            raise InputError(path, f"{what} is not a regular file")
        with file.open("rb") as stream:
            data = stream.read(limit + 1)
        if len(data) > limit:
            raise InputError(path, f"{what} is larger than {limit // (1024 * 1024)} MiB")
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
