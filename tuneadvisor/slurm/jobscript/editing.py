"""Writing values back into ``#SBATCH`` lines so sbatch reads them as meant, and pending
edits of a script's lines applied at once (untouched bytes stay)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tuneadvisor.slurm.jobscript.syntax import HETJOB_WORD, Line
from tuneadvisor.slurm.options import C_SPACE


def render_value(value: str, style: str | None, at_start: bool) -> str:
    """A value as _get_argument will read it back; ``style`` is the quote the old value
    used (kept), else quotes are added only when needed."""
    needs_quotes = (
        not value
        or any(c in C_SPACE or c in "\"'#\\" for c in value)
        or (at_start and (value.startswith(":") or bool(HETJOB_WORD.match(value))))
    )
    if style is None and not needs_quotes:
        return value
    quote = style or '"'
    return quote + value.replace("\\", "\\\\").replace(quote, "\\" + quote) + quote


def quote_state(raw: str) -> str:
    """The quote still open after ``raw`` ("" when none), by _get_argument's rules."""
    quote, escape = "", False
    for char in raw:
        if escape:
            escape = False
        elif char == "\\":
            escape = True
        elif quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
    return quote


@dataclass
class Edit:
    """Pending changes to a script's lines, applied all at once."""

    lines: list[Line]
    replace: dict[int, list[tuple[int, int, str]]] = field(default_factory=dict)
    delete: set[int] = field(default_factory=set)

    def span(self, line: int, start: int, end: int, text: str) -> None:
        self.replace.setdefault(line, []).append((start, end, text))

    def render(self) -> str:
        out: list[str] = []
        for line in self.lines:
            if line.number in self.delete:
                continue
            text = line.text
            for start, end, new in sorted(self.replace.get(line.number, []), reverse=True):
                text = text[:start] + new + text[end:]
            out.append(text + line.ending)
        return "".join(out)


def deletion_spans(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans of deleted tokens on one line, merged when only blanks separate them and widened
    to the blanks before them (or after, at the start) so the rest stays tidy."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and not text[merged[-1][1] : start].strip(C_SPACE):
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    widened: list[tuple[int, int]] = []
    for start, end in merged:
        before = start
        while before > 0 and text[before - 1] in C_SPACE:
            before -= 1
        after = end
        while before == start and after < len(text) and text[after] in C_SPACE:
            after += 1
        widened.append((before, after))
    return widened


def quote_style(raw: str) -> str | None:
    return raw[0] if raw[:1] in ('"', "'") else None
