"""The syntax of an ``--array`` value as the controller reads it.

sbatch sends ``--array`` unchecked; slurmctld refuses a bad one at submission ("allocation
failure: Invalid job array specification"). Its reader (``_valid_array_inx`` and
``_parse_array_tok`` in ``src/slurmctld/job_mgr.c``) splits the value at commas, skipping
empty pieces, cuts each piece at its first ``%`` (a throttle: never refused, ``1,%2`` and
``5%32,٣`` show it is read per piece), and reads what is left as ``FIRST[-LAST[:STEP]]``
with C ``strtol`` (ASCII digits, leading blanks and a sign allowed; one ``[`` before and
one ``]`` after each number ignored). A piece is refused when a number has anything else
after it, FIRST is negative, LAST is below FIRST, STEP is not positive, or LAST or STEP reaches
MaxArraySize. Each case here was checked against slurmctld 22.05.8 with ``sbatch --test-only``
(tests/integration/test_array_spec_slurm.py).

MaxArraySize is the site's (1001 by default, at most 4000001): only task ids no site
accepts are refused here; ids past a default MaxArraySize are not flagged (the site's value
is not read).
"""

from __future__ import annotations

from tuneadvisor.slurm.units import strtol_prefix

__all__ = ["MOST_TASK_ID", "check_array"]

# MaxArraySize is at most 4000001 (slurm.conf(5)): a task id above this every site refuses
MOST_TASK_ID = 4_000_000
MESSAGE = "Invalid job array specification"


def check_array(value: str) -> None:
    """Raise ValueError with the controller's message when it refuses ``value``."""
    for piece in value.split(","):
        if piece and not _piece_ok(piece.split("%", 1)[0]):
            raise ValueError(MESSAGE)


def _piece_ok(piece: str) -> bool:
    first, rest = _number(piece.removeprefix("["))
    if first < 0:
        return False
    if not rest.startswith("-"):
        return rest == "" and first <= MOST_TASK_ID
    last, rest = _number(rest[1:])
    if last < first or last > MOST_TASK_ID:
        return False
    if rest.startswith(":"):
        step, rest = _number(rest[1:])
        return 0 < step <= MOST_TASK_ID and rest == ""
    return rest == ""


def _number(text: str) -> tuple[int, str]:
    """C ``strtol(text, &end, 10)`` and what follows it, one ``]`` dropped. Without digits
    strtol gives 0 and leaves ``end`` where it started (``0-`` reads as 0-0). Numbers past
    MaxArraySize are refused whatever their size (4294967297 is, so no wrap to a C int)."""
    number, rest = strtol_prefix(text)
    return (0 if number is None else number), (text if number is None else rest).removeprefix("]")
