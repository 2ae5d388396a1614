"""One analysis of a profile set, shared by `report` and the TUI.

Joins timings with source text and line kinds, computes the percentages line_profiler
prints, and sums time by kind.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tuneadvisor.profile.alignment import SourceLines, align
from tuneadvisor.profile.model import FunctionKey, FunctionTiming, Profile, ProfileSet
from tuneadvisor.profile.source import SourceFinder
from tuneadvisor.records import record
from tuneadvisor.trainscript.kinds import LineKind, SourceInfo, analyze_source, classify_source
from tuneadvisor.trainscript.parsed import ParsedScript, parse_script

KIND_LABELS: Mapping[LineKind, str] = {
    LineKind.DATALOADER: "DataLoader",
    LineKind.TRANSFER: "transfer",
    LineKind.FORWARD: "forward",
    LineKind.LOSS: "loss",
    LineKind.BACKWARD: "backward",
    LineKind.OPTIMIZER: "optimizer",
    LineKind.SYNC: "sync",
    LineKind.OTHER: "other",
}

# A sync line above this share of its function gets a note instead of blame.
SYNC_NOTE_PERCENT = 5.0


# one per profiled line (50,000 in the 50,000-line report): a dataclass's generated
# __init__ builds it faster than a record's (~1 ms once at import, against ~0.1 s there)
@dataclass(frozen=True)
class AnnotatedLine:
    """One profiled line with its kind and share of time."""

    lineno: int
    hits: int
    time_s: float
    per_hit_s: float
    percent: float  # of the function, as line_profiler prints it
    percent_total: float  # of the whole profile
    kind: LineKind
    source: str | None


@record
class KindShare:
    """The time of one line kind and its share."""

    kind: LineKind
    time_s: float
    percent: float

    @property
    def label(self) -> str:
        return KIND_LABELS[self.kind]


@record
class AnnotatedFunction:
    """One profiled function, its lines annotated."""

    name: str
    filename: str
    first_lineno: int
    total_s: float
    percent_total: float
    lines: tuple[AnnotatedLine, ...]  # the timed lines, in line order
    block: tuple[tuple[int, str], ...]  # the whole function's source, when found
    source_path: str | None  # where the source was found, or None
    kinds: tuple[KindShare, ...]  # largest first

    @property
    def qualified(self) -> str:
        return f"{self.name}()"

    @property
    def key(self) -> FunctionKey:
        """As line_profiler keys it: the same function in every stage and every rank."""
        return (self.filename, self.first_lineno, self.name)


@record
class PartSummary:
    """One input file of a merged set, kept for comparison (one rank each)."""

    origin: str
    total_s: float
    kinds: tuple[KindShare, ...]


@record
class ProfileAnalysis:
    """Every profiled function of one or more profiles, annotated."""

    origins: tuple[str, ...]
    unit_s: float
    total_s: float
    functions: tuple[AnnotatedFunction, ...]  # most time first
    kinds: tuple[KindShare, ...]  # over all functions, largest first
    parts: tuple[PartSummary, ...]  # empty for a single file
    missing_sources: tuple[str, ...]  # profiled files whose source was not found
    notes: tuple[str, ...]
    # The parse of each source file read, by the path it was found at: the script scan
    # reuses the training script's, so one command parses that file once.
    parsed_sources: Mapping[str, ParsedScript] = field(
        default_factory=dict, compare=False, repr=False
    )

    def function(self, name: str) -> AnnotatedFunction | None:
        return next((f for f in self.functions if f.name == name), None)


def _percent(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole > 0 else 0.0


def kind_shares(pairs: Iterable[tuple[LineKind, float]]) -> tuple[KindShare, ...]:
    """Sum (kind, seconds) pairs into shares, largest first; kinds with no time left out."""
    sums: dict[LineKind, float] = {}
    for kind, time_s in pairs:
        sums[kind] = sums.get(kind, 0.0) + time_s
    whole = sum(sums.values())
    shares = [KindShare(k, t, _percent(t, whole)) for k, t in sums.items() if t > 0]
    return tuple(sorted(shares, key=lambda s: (-s.time_s, s.kind.value)))


def kind_summary_text(function: AnnotatedFunction, limit: int = 4) -> str:
    """'DataLoader 84.5 % of train(), forward 6.1 %, backward 4.1 %, ...'."""
    if not function.kinds:
        return f"no time recorded in {function.qualified}"
    first, *rest = function.kinds[:limit]
    parts = [f"{first.label} {first.percent:.1f} % of {function.qualified}"]
    parts += [f"{s.label} {s.percent:.1f} %" for s in rest]
    return ", ".join(parts)


class _SourceCache:
    def __init__(self, finder: SourceFinder) -> None:
        self.finder = finder
        self._files: dict[str, tuple[Path, list[str], SourceInfo] | None] = {}
        self.parsed: dict[str, ParsedScript] = {}  # by the path each file was found at
        self._lines: dict[str, SourceLines] = {}  # likewise: checked against each function

    def lines_of(self, path: Path, lines: list[str]) -> SourceLines:
        found = self._lines.get(str(path))
        if found is None:
            found = self._lines[str(path)] = SourceLines(path, lines)
        return found

    def get(self, filename: str) -> tuple[Path, list[str], SourceInfo] | None:
        if filename not in self._files:
            found = self.finder.read_lines(filename)
            if found is None:
                self._files[filename] = None
            else:
                path, lines = found
                parsed = self.parsed.get(str(path))
                if parsed is None:
                    parsed = self.parsed[str(path)] = parse_script("\n".join(lines))
                self._files[filename] = (path, lines, analyze_source(parsed))
        return self._files[filename]


def _embedded_kinds(func: FunctionTiming) -> dict[int, LineKind]:
    """Kinds from source carried inside the profile (the text table), re-indented to parse."""
    if not func.embedded_source:
        return {}
    first = min(func.embedded_source)
    last = max(func.embedded_source)
    text = "\n".join(func.embedded_source.get(n, "") for n in range(first, last + 1))
    import textwrap

    kinds = classify_source(textwrap.dedent(text))
    return {lineno + first - 1: kind for lineno, kind in kinds.items()}


def _analyze_function(
    func: FunctionTiming, grand_total: float, cache: _SourceCache, notes: list[str] | None = None
) -> AnnotatedFunction:
    """``notes``: where to say that the file found differs from the profiled source."""
    found = cache.get(func.filename)
    block: tuple[tuple[int, str], ...] = ()
    alignment = align(func, cache.lines_of(found[0], found[1])) if found is not None else None
    if alignment is not None and alignment.note is not None and notes is not None:
        notes.append(alignment.note)
    if found is not None and alignment is not None and alignment.offset is not None:
        path, file_lines, info = found
        # The profile's line n is the file's line n + shift; the recorded numbers are kept
        # for display, so the block is renumbered to them.
        shift = alignment.offset
        source_path: str | None = str(path)
        start = func.first_lineno + shift
        # The def's extent from the parse; without it (source changed since the profile
        # was taken), up to the last timed line.
        last = max((ln.lineno for ln in func.lines), default=func.first_lineno) + shift
        end = min(info.function_ends.get(start, last), len(file_lines))
        block = tuple((n - shift, file_lines[n - 1]) for n in range(max(start, 1), end + 1))

        def text_of(lineno: int) -> str | None:
            at = lineno + shift
            return file_lines[at - 1] if 0 < at <= len(file_lines) else None

        def kind_of(lineno: int) -> LineKind:
            # looked up, not the file's kinds renumbered per function: a 50,000-line file
            # of 500 functions made that quadratic
            return info.kinds.get(lineno + shift, LineKind.OTHER)
    else:
        # No file, or one that disagrees with the table's own text: that text is used.
        source_path = str(found[0]) if found is not None else None
        embedded = _embedded_kinds(func)
        if func.embedded_source:
            block = tuple(sorted(func.embedded_source.items()))

        def text_of(lineno: int) -> str | None:
            return func.embedded_source.get(lineno)

        def kind_of(lineno: int) -> LineKind:
            return embedded.get(lineno, LineKind.OTHER)

    total = func.total_s
    # by position, in the fields' order (keywords cost a tenth of the 50,000-line analysis)
    lines = tuple(
        AnnotatedLine(
            line.lineno,
            line.hits,
            line.time_s,
            line.time_s / line.hits if line.hits else 0.0,  # per hit
            _percent(line.time_s, total),  # of the function
            _percent(line.time_s, grand_total),  # of the whole profile
            kind_of(line.lineno),
            text_of(line.lineno),
        )
        for line in sorted(func.lines, key=lambda ln: ln.lineno)
    )
    return AnnotatedFunction(
        name=func.name,
        filename=func.filename,
        first_lineno=func.first_lineno,
        total_s=total,
        percent_total=_percent(total, grand_total),
        lines=lines,
        block=block,
        source_path=source_path,
        kinds=kind_shares((ln.kind, ln.time_s) for ln in lines),
    )


def _sync_notes(functions: Iterable[AnnotatedFunction]) -> list[str]:
    notes = []
    for func in functions:
        for line in func.lines:
            if line.kind is LineKind.SYNC and line.percent >= SYNC_NOTE_PERCENT:
                notes.append(
                    f"{func.qualified} line {line.lineno} ({line.percent:.1f} %) waits for "
                    "the GPU: with asynchronous CUDA it absorbs the time of earlier "
                    "forward/backward kernels, so do not read it as its own cost."
                )
    return notes


def _analyze_profile(
    profile: Profile, cache: _SourceCache, notes: list[str] | None = None
) -> list[AnnotatedFunction]:
    grand_total = profile.total_s
    funcs = [_analyze_function(f, grand_total, cache, notes) for f in profile.functions]
    return sorted(funcs, key=lambda f: (-f.total_s, f.filename, f.first_lineno))


def analyze(profiles: ProfileSet, finder: SourceFinder) -> ProfileAnalysis:
    cache = _SourceCache(finder)
    source_notes: list[str] = []
    functions = _analyze_profile(profiles.merged, cache, source_notes)
    parts: tuple[PartSummary, ...] = ()
    if len(profiles.parts) > 1:
        parts = tuple(
            PartSummary(
                origin=part.origin,
                total_s=part.total_s,
                kinds=kind_shares(
                    (ln.kind, ln.time_s) for f in _analyze_profile(part, cache) for ln in f.lines
                ),
            )
            for part in profiles.parts
        )
    missing = sorted({f.filename for f in functions if f.source_path is None and not f.block})
    notes = list(dict.fromkeys(source_notes)) + _sync_notes(functions)
    if missing:
        notes.append(
            "source not found for " + ", ".join(missing) + ": numbers are shown without "
            "source text or line kinds (use --source-root DIR to point at a copy)"
        )
    return ProfileAnalysis(
        origins=tuple(p.origin for p in profiles.parts),
        unit_s=profiles.merged.unit_s,
        total_s=profiles.merged.total_s,
        functions=tuple(functions),
        kinds=kind_shares((ln.kind, ln.time_s) for f in functions for ln in f.lines),
        parts=parts,
        missing_sources=tuple(missing),
        notes=tuple(notes),
        parsed_sources=dict(cache.parsed),
    )
