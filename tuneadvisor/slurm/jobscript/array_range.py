"""An ``--array`` whose task ids run past the bash array the script picks its work from.

``files=(a.csv b.csv c.csv)`` and ``${files[$SLURM_ARRAY_TASK_ID]}`` under ``--array=0-15``:
tasks 3 to 15 get an empty string and run on nothing (or fail). Read conservatively: only a
literal array set once in the body (no ``+=``, no element assignment, no ``mapfile``), whose
elements are plain words (no unquoted expansion, glob or brace that could become several),
indexed by the task id itself or the task id plus or minus a number.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from tuneadvisor.slurm.jobscript.model import JobScript

__all__ = ["ArrayList", "array_task_ids", "indexed_list", "largest_task_id"]

_MOST_IDS = 1_000_000  # far over any MaxArraySize; a hostile value is not expanded
_RANGE = re.compile(r"([0-9]+)(?:-([0-9]+)(?::([0-9]+))?)?")
# blanks of one line only (``[^\S\n]``): a try from a line's start never reads the next line
_LITERAL = re.compile(
    r"^[ \t]*(?:(?:declare|local|typeset)[^\S\n]+-a[^\S\n]+)?([A-Za-z_]\w*)=\(", re.M
)
_TASK_ID = r"\$?(?:\{SLURM_ARRAY_TASK_ID\}|SLURM_ARRAY_TASK_ID)"
_OFFSET = r"(?:\s*([-+])\s*([0-9]+))?"
# ${name[$SLURM_ARRAY_TASK_ID]}, ${name[SLURM_ARRAY_TASK_ID-1]}, ${name[$((SLURM_ARRAY_TASK_ID-1))]}
_INDEXED = re.compile(
    r"\$\{([A-Za-z_]\w*)\[\s*(?:\$\(\(\s*"
    + _TASK_ID
    + _OFFSET
    + r"\s*\)\)|"
    + _TASK_ID
    + _OFFSET
    + r")\s*\]\}"
)
_UNSURE = re.compile(r"[*?\[{]|\$")  # a word that may become several, or none


@dataclass(frozen=True)
class ArrayList:
    """A literal bash array the script indexes with the array task id."""

    name: str
    size: int  # its elements
    line: int  # where it is set
    offset: int  # the index is the task id + offset


def array_task_ids(value: str) -> list[int] | None:
    """The task ids of an ``--array`` value (``0-15``, ``1-10:2``, ``0-99%10``, ``1,3,5-7``);
    None when it does not read as plain numbers."""
    ids: list[int] = []
    for part in value.split("%", 1)[0].split(","):
        match = _RANGE.fullmatch(part.strip())
        if match is None:
            return None
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) is not None else first
        step = int(match.group(3)) if match.group(3) is not None else 1
        if last < first or step < 1 or len(ids) + (last - first) // step > _MOST_IDS:
            return None
        ids.extend(range(first, last + 1, step))
    return ids or None


def largest_task_id(value: str) -> int | None:
    ids = array_task_ids(value)
    return max(ids) if ids else None


def indexed_list(job: JobScript) -> ArrayList | None:
    """The literal array the body indexes with the task id that has the fewest elements to
    spare (size - offset); None when there is none that reads for sure."""
    if job.first_command_line is None:
        return None
    start = job.first_command_line - 1
    body = "\n".join(line.text for line in job.lines[start:])
    found: list[ArrayList] = []
    for match in _INDEXED.finditer(_without_comments(body)):
        name = match.group(1)
        sign, number = (match.group(2), match.group(3)) if match.group(2) else match.group(4, 5)
        offset = int(number) * (-1 if sign == "-" else 1) if number else 0
        literal = _literal(body, name)
        if literal is not None:
            size, at = literal
            found.append(ArrayList(name, size, start + body.count("\n", 0, at) + 1, offset))
    return min(found, key=lambda item: item.size - item.offset, default=None)


_READS = re.compile(r"\b(?:mapfile|readarray)\b")


def _read_into(body: str, name: str) -> bool:
    """A line that runs mapfile or readarray and names ``name`` after it. Not one pattern
    ``(mapfile|readarray)\\b.*\\bNAME``: that retried ``.*`` from every mapfile on a line
    (a 160 KB job script took 14-28 s); here one search per line, each linear."""
    word = re.compile(rf"\b{re.escape(name)}\b")
    for line in body.splitlines():
        reads = _READS.search(line)
        if reads is not None and word.search(line, reads.end()):
            return True
    return False


def _without_comments(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


def _literal(body: str, name: str) -> tuple[int, int] | None:
    """(elements, offset of the assignment) of ``name=(...)``, set once and never changed."""
    # name=x, name[3]=x, name+=x, name+=(x), mapfile/readarray name (a word like --name=x
    # matches too: then the list is left alone, which is the safe side; so is an index of
    # 256+ characters)
    changed = rf"\b{name}(\[[^\]\n]{{0,256}}\])?\+?=(?!\()|\b{name}\+=|\b{name}\[[^\]\n]{{256}}"
    if re.search(changed, body) or _read_into(body, name):
        return None
    sets = [m for m in _LITERAL.finditer(body) if m.group(1) == name]
    if len(sets) != 1:
        return None
    opened = sets[0].end()
    closed = _closing(body, opened)
    if closed is None:
        return None
    inner = "\n".join(line.split(" #", 1)[0] for line in body[opened:closed].splitlines())
    try:
        words = shlex.split(inner, comments=True, posix=True)
        raw = shlex.split(inner, comments=True, posix=False)
    except ValueError:
        return None
    if any(_UNSURE.search(word) and word[:1] not in "'\"" for word in raw):
        return None
    if any("$(" in word or "`" in word for word in raw):
        return None
    return len(words), sets[0].start()


def _closing(text: str, pos: int) -> int | None:
    """The ``)`` that closes an array literal opened just before ``pos`` (quotes skipped)."""
    quote: str | None = None
    while pos < len(text):
        char = text[pos]
        if quote is not None:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == ")":
            return pos
        elif char == "(":
            return None  # nested parentheses: a substitution, not a plain list
        pos += 1
    return None
