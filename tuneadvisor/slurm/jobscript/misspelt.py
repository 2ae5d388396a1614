"""Comment lines in the header that look like a misspelt ``#SBATCH`` (``#SBACTH``,
``#sbatch``, ``# SBATCH``, `` #SBATCH``): sbatch reads them as comments, so what they ask for
(a time limit, the memory) is silently lost. Which of them can be written as ``#SBATCH``
without guessing: the magic word itself misspelt by one letter or in the wrong case, in
column 1, followed by an option. ``#SBATCH--time=1:00:00`` is no near miss: sbatch reads it
(checked with sbatch 22.05.8 --test-only)."""

from __future__ import annotations

import re
from dataclasses import dataclass

# '#', blanks, a word of letters, then an option: `#SBACTH --time=1:00:00`, `# SBATCH -c 4`.
# The option after the word keeps ordinary comments ("# batch size 64") out.
_SHAPE = re.compile(r"(?P<lead>[ \t]*)#(?P<gap>[ \t]*)(?P<word>[A-Za-z]{4,8})(?=[ \t]*-)")
_MAGIC = "SBATCH"


@dataclass(frozen=True)
class MisspeltMagic:
    start: int  # offsets in the line of what would become "#SBATCH"
    end: int
    written: str  # the word as written: "#SBACTH"
    fixable: bool  # one letter off or another case, in column 1: written as #SBATCH


def misspelt_magic(text: str) -> MisspeltMagic | None:
    """The misspelt magic word of a header comment line, or None for anything else (a real
    ``#SBATCH``/``#SLURM`` line, ``##SBATCH`` kept off on purpose, an ordinary comment)."""
    found = _SHAPE.match(text)
    if found is None:
        return None
    lead, gap, word = found["lead"], found["gap"], found["word"]
    if not lead and not gap and word in (_MAGIC, "SLURM"):
        return None  # sbatch reads these
    distance = _distance(word.upper(), _MAGIC)
    if distance > 2:
        return None
    fixable = not lead and not gap and distance <= 1
    return MisspeltMagic(len(lead), found.end("word"), text[len(lead) : found.end("word")], fixable)


def _distance(a: str, b: str) -> int:
    """Optimal string alignment distance: an insertion, a deletion, a replacement or two
    neighbours swapped (SBTACH) each count one."""
    rows = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            best = min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                best = min(best, rows[i - 2][j - 2] + 1)
            rows[i][j] = best
    return rows[len(a)][len(b)]
