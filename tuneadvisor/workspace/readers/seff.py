"""seff.*: saved `seff JOBID` output (--seff)."""

from __future__ import annotations

from collections.abc import Sequence

from tuneadvisor.errors import InputError
from tuneadvisor.files import read_text_input
from tuneadvisor.workspace.gpu_source import seff_gpu_note
from tuneadvisor.workspace.readers.base import Gathering, Reader


def _read(state: Gathering) -> None:
    from tuneadvisor.slurm.accounting.seff import SeffError, parse_seff

    path = state.inputs.seff
    assert path is not None
    try:
        seff = parse_seff(read_text_input(path, "seff output"))
    except SeffError as exc:
        raise InputError(path, f"not seff output: {exc}") from None
    state.facts.update(seff.facts())
    if not seff.job_id:  # pasted in part: what it has is read, what it lacks is said
        lacks = [f"'{line}:'" for line in seff.missing_lines()]
        state.cannot_read(
            path,
            f"seff output without its {', '.join(lacks)} "
            f"line{'s' if len(lacks) > 1 else ''}: read as far as it goes",
        )
    if seff.unread:  # a site's seff adds lines: say what was left out, not half silently
        state.cannot_read(path, unread(seff.unread))
    if seff.gpu_util_pct is not None or seff.gpu_mem_used_mib is not None:
        state.notes.append(f"{path}: {seff_gpu_note(seff)}")


def unread(lines: Sequence[str], shown: int = 3) -> str:
    more = f" and {len(lines) - shown} more" if len(lines) > shown else ""
    return f"lines not understood, left out: {'; '.join(lines[:shown])}{more}"


READER = Reader("seff output", _read, given=lambda state: state.inputs.seff is not None)
