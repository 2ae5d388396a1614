"""Files in and out: inputs read whole with one clear error line, and outputs written so
that a crash or a full disk never leaves half a file behind.

Every input is bounded before it is parsed: only a regular file is read (a FIFO would block
and ``/dev/zero`` never ends), never more than a documented size, and JSON nested beyond
the parser's stack or holding integers of thousands of digits is one clear line too (rule
and site TOML is bounded the same way in ``advisor/toml_text.py``).
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, BinaryIO

from tuneadvisor.errors import InputError

MIB = 1024 * 1024
MAX_TEXT_INPUT = 64 * MIB  # job scripts, seff text, metrics logs, sacct output, reports
MAX_CONFIG_INPUT = 1 * MIB  # rule files and site files: a few KiB each when written by hand
# Job scripts: a few KiB when written by hand. Reading one costs far more than its size (the
# launch line's words through shlex, every directive's tokens): 256 KiB reads in about a
# second, while a 1 MB script of one quoted word took 24 s.
MAX_JOB_SCRIPT = 256 * 1024
MAX_DIGITS = 1000  # digits of one number in a text input (Python's int limit is 4,300)
# Tried at the start of each run of digits only (the lookbehind): without it every digit of
# a run of 999 started a try of up to 999, and 3.5 MB of 400-digit numbers took 2 s a read.
_HUGE_NUMBER = re.compile(rf"(?<![0-9])[0-9]{{{MAX_DIGITS}}}")


def write_atomic(path: Path, data: bytes, mode_from: Path | None = None) -> Path:
    """Write ``data`` to a temporary file beside ``path``, then rename it over ``path``;
    the path written is returned.

    - A symbolic link is followed: its target is replaced and the link stays a link.
    - The new file takes ``mode_from``'s mode (a job script stays executable), else the
      replaced file's, else 0644; and the replaced file's owner and group, else
      ``mode_from``'s (root editing a user's script leaves it the user's).
    - A failed write (a full disk, a size limit) leaves the original byte for byte and no
      temporary file behind: the rename happens only after the whole file is on disk.
    """
    target = _link_target(path)
    directory = target.parent if str(target.parent) else Path(".")
    old = _stat(target)
    mode_model = (_stat(mode_from) if mode_from is not None else None) or old
    owner_model = old or mode_model
    try:
        import tempfile  # here: it loads shutil (bz2, lzma), a cost to every command's start

        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise InputError(path, f"cannot write here: {exc.strerror or exc}") from None
    try:
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        if owner_model is not None:  # before chmod: chown clears the set-id bits
            _keep_owner(tmp, owner_model, replacing=old is not None)
        os.chmod(tmp, stat.S_IMODE(mode_model.st_mode) if mode_model is not None else 0o644)
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(path, f"cannot write: {exc.strerror or exc} (left as it was)") from None
    return target


def _link_target(path: Path) -> Path:
    """``path``, or the file a symbolic link (chain) points at."""
    if not path.is_symlink():
        return path
    try:
        return path.resolve(strict=False)
    except (OSError, RuntimeError) as exc:  # a loop of links
        raise InputError(path, f"cannot follow the symbolic link: {exc}") from None


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except OSError:
        return None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _keep_owner(tmp: str, model: os.stat_result, *, replacing: bool) -> None:
    """Give the new file the original's owner and group. Replacing a file we cannot give
    back to its owner is refused (it would change hands); a new file may stay ours."""
    if (model.st_uid, model.st_gid) == (os.geteuid(), os.getegid()):
        return
    try:
        os.chown(tmp, model.st_uid, model.st_gid)
    except PermissionError:
        if replacing:
            raise OSError(errno.EPERM, "cannot keep the file's owner and group") from None


def backup_path(path: Path) -> Path:
    """``job.sbatch.bak``, or ``.bak.1``, ``.bak.2``... so no earlier backup is lost."""
    candidate = path.with_name(path.name + ".bak")
    number = 1
    while candidate.exists():
        candidate = path.with_name(f"{path.name}.bak.{number}")
        number += 1
    return candidate


# --------------------------------------------------------------------------- reading


def read_regular_file(path: str | os.PathLike[str], what: str, limit: int) -> bytes:
    """Up to ``limit + 1`` bytes of a regular file (one more than the caller accepts, so it
    can tell an oversize file); every failure to open or read one InputError."""
    with open_regular_file(path, what) as stream:
        return stream.read(limit + 1)


@contextmanager
def open_regular_file(path: str | os.PathLike[str], what: str) -> Iterator[BinaryIO]:
    """A regular file opened to read its bytes as a stream (a log of gigabytes is read a
    chunk at a time); every failure to open one is an InputError, and so is every failure to
    read it while the caller reads."""
    try:
        # Opened without blocking (a FIFO with no writer would wait forever), then checked
        # on the open file itself: only a regular file is read.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise InputError(path, f"no such file ({what})") from None
    except PermissionError:
        raise InputError(path, f"{what} is not readable (permission denied)") from None
    except OSError as exc:
        raise InputError(path, f"cannot read {what}: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise InputError(path, f"{what} is a directory, not a file")
        if not stat.S_ISREG(mode):
            raise InputError(path, f"{what} is not a regular file (a FIFO, a device...)")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as stream:
            yield stream
    except OSError as exc:
        raise InputError(path, f"cannot read {what}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def read_bytes_input(path: str | os.PathLike[str], what: str, limit: int = MAX_TEXT_INPUT) -> bytes:
    """A regular file's bytes, at most ``limit`` of them; every failure one InputError."""
    data = read_regular_file(path, what, limit)
    if len(data) > limit:
        raise InputError(path, f"{what} is larger than {_size(limit)}: not read")
    return data


def read_text_input(path: str | os.PathLike[str], what: str, limit: int = MAX_TEXT_INPUT) -> str:
    """Read a UTF-8 text input, turning every failure into one InputError line."""
    data = read_bytes_input(path, what, limit)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(path, f"{what} is not UTF-8 text (byte {exc.start})") from None
    return checked_text(text, path, what)


def checked_text(text: str, path: str | os.PathLike[str] | None, what: str) -> str:
    """The bounds a text input passes before any parser sees it (beyond its size)."""
    huge = _HUGE_NUMBER.search(text)
    if huge is not None:
        # Python refuses to convert such a number (int's 4,300-digit limit) deep inside
        # whichever parser meets it; no job, log or script has one.
        line = text.count("\n", 0, huge.start()) + 1
        raise InputError(path, f"{what}: line {line} holds a number of {MAX_DIGITS}+ digits")
    return text


def open_append(path: str | os.PathLike[str], what: str) -> IO[str]:
    """A regular file opened to append text (made when missing); a FIFO, a device or a
    folder is refused at once (opening a FIFO to write blocks until someone reads it)."""
    # open() with an opener keeps the path as the file's name (os.fdopen names it by its fd)
    return open(path, "a", encoding="utf-8", opener=lambda p, _: _append_fd(p, what))


def open_append_bytes(path: str | os.PathLike[str], what: str) -> BinaryIO:
    """``open_append`` for bytes, unbuffered (a program's output, written as it comes)."""
    return open(path, "ab", buffering=0, opener=lambda p, _: _append_fd(p, what))


def _append_fd(path: str | os.PathLike[str], what: str) -> int:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o644)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO nobody reads
            raise InputError(path, f"{what}: not a regular file (a FIFO)") from None
        raise InputError(path, f"cannot write the {what}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise InputError(path, f"{what}: not a regular file (a FIFO, a device...)")
    os.set_blocking(fd, True)
    return fd


def peek(path: str | os.PathLike[str], size: int = 4096) -> bytes:
    """The first ``size`` bytes of a regular file, to tell what it is; b"" for anything else
    and for a file that cannot be read. A sniff never blocks (a FIFO) and never fails: the
    file is refused with its one line where it is read as what it was given as."""
    if not is_regular_file(Path(path)):
        return b""
    try:
        with open(path, "rb") as stream:
            return stream.read(size)
    except OSError:
        return b""


def is_regular_file(path: Path) -> bool:
    """Whether a path named inside an input (a script on a launch line) is a file here:
    a name too long for the system or in a folder we may not read is simply not one."""
    try:
        return path.is_file()
    except OSError:
        return False


def is_directory(path: Path) -> bool:
    """Whether a path given or named is a folder here: a name too long for the system
    (ENAMETOOLONG, which ``Path.is_dir`` raises) or in a folder we may not read is none."""
    try:
        return path.is_dir()
    except OSError:
        return False


def path_exists(path: Path, what: str) -> bool:
    """Whether ``path`` exists; a folder we may not look into is one line, not a crash."""
    try:
        path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return False
    except PermissionError:
        raise InputError(path, f"cannot look for the {what} (permission denied)") from None
    except OSError as exc:
        raise InputError(path, f"cannot look for the {what}: {exc.strerror or exc}") from None
    return True


def _size(limit: int) -> str:
    return f"{limit // MIB} MiB" if limit >= MIB else f"{limit // 1024} KiB"


# --------------------------------------------------------------------------- structured text


def parse_json(text: str, where: str | os.PathLike[str] | None, what: str) -> Any:
    """``json.loads`` with every failure one InputError: bad syntax, nesting beyond the
    parser's stack, integers of thousands of digits."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(where, f"{what} is not JSON (line {exc.lineno}): {exc.msg}") from None
    except RecursionError:
        raise InputError(where, f"{what} is nested too deeply to read") from None
    except ValueError as exc:  # "Exceeds the limit (4300 digits) for integer string conversion"
        raise InputError(where, f"{what}: {str(exc).split(':')[0]}") from None


def load_json_input(path: str | os.PathLike[str], what: str, limit: int = MAX_TEXT_INPUT) -> Any:
    return parse_json(read_text_input(path, what, limit), path, what)
