"""profile.* facts of a profile analysis: shares of the training function's time by line
kind, its slowest DataLoader line and the rank skew. The profile says what it measured;
what that means is the rules' business."""

from __future__ import annotations

from pathlib import PurePath

from tuneadvisor.profile.analysis import AnnotatedFunction, ProfileAnalysis
from tuneadvisor.profile.skew import rank_skews
from tuneadvisor.trainscript.kinds import LineKind

_COMPUTE = (LineKind.FORWARD, LineKind.LOSS, LineKind.BACKWARD, LineKind.OPTIMIZER)


def training_function(analysis: ProfileAnalysis) -> AnnotatedFunction | None:
    """The function holding the step loop: most DataLoader time, else most time."""

    def loader_time(func: AnnotatedFunction) -> float:
        return sum(ln.time_s for ln in func.lines if ln.kind is LineKind.DATALOADER)

    with_loader = [f for f in analysis.functions if loader_time(f) > 0]
    if with_loader:
        return max(with_loader, key=loader_time)
    return analysis.functions[0] if analysis.functions else None


def training_steps(func: AnnotatedFunction) -> int | None:
    """The steps the profile timed: the hits of the loop's compute lines (each runs once a
    step; the `for ... in loader` line is hit once more at each epoch's end), else the
    DataLoader line's. Several ranks' files merged count each rank's steps."""
    compute = [ln.hits for ln in func.lines if ln.kind in _COMPUTE and ln.hits > 0]
    if compute:
        return max(compute)
    loader = [ln.hits for ln in func.lines if ln.kind is LineKind.DATALOADER and ln.hits > 0]
    return max(loader) if loader else None


def epoch_steps(func: AnnotatedFunction) -> tuple[int, int] | None:
    """(epochs, steps an epoch) where the profile timed whole epochs: the `for ... in loader`
    line is hit once more than the step's compute lines at each epoch's end (a loop left
    with `break` adds nothing); None where it shows no epoch's end."""
    compute = [ln.hits for ln in func.lines if ln.kind in _COMPUTE and ln.hits > 0]
    loops = [
        ln.hits for ln in func.lines
        if ln.kind is LineKind.DATALOADER and (ln.source or "").lstrip().startswith("for ")
    ]  # fmt: skip
    if not compute or len(loops) != 1:
        return None
    steps, epochs = max(compute), loops[0] - max(compute)
    if epochs < 1 or steps % epochs:  # several ranks' files each end their epochs alike
        return None
    return epochs, steps // epochs


def profiled_files(analysis: ProfileAnalysis) -> tuple[str, ...]:
    """The source files of the functions that took time, as the profile names them (not
    ``<string>`` and such, which name no file)."""
    files = {f.filename for f in analysis.functions if f.total_s > 0}
    return tuple(sorted(name for name in files if name and not name.startswith("<")))


def profile_facts(analysis: ProfileAnalysis) -> dict[str, object]:
    func = training_function(analysis)
    if func is None or func.total_s <= 0 or (func.source_path is None and not func.block):
        return {}  # without source there are no kinds, and shares would all read "other"
    share = {s.kind: s.time_s / func.total_s for s in func.kinds}
    facts: dict[str, object] = {
        "profile.function": func.name,
        "profile.total_s": func.total_s,
        "profile.ranks": max(1, len(analysis.parts)),
        "profile.compute_share": sum(share.get(k, 0.0) for k in _COMPUTE),
    }
    files = profiled_files(analysis)
    if files:
        facts["profile.files"] = ", ".join(PurePath(name).name for name in files)
    for kind in LineKind:
        if kind is not LineKind.OTHER:
            name = "loader" if kind is LineKind.DATALOADER else kind.value
            facts[f"profile.{name}_share"] = share.get(kind, 0.0)
    loader_lines = [ln for ln in func.lines if ln.kind is LineKind.DATALOADER]
    if loader_lines:
        facts["profile.loader_line"] = max(loader_lines, key=lambda ln: ln.time_s).lineno
    steps = training_steps(func)
    if steps:
        facts["profile.steps"] = steps
        facts["profile.step_s"] = func.total_s / steps
    whole = epoch_steps(func)
    if whole is not None:
        facts["profile.epochs"], facts["profile.epoch_steps"] = whole
    skews = rank_skews(analysis.parts)
    if skews and skews[0].ratio != float("inf"):  # the larger excess of the two measures
        skew = skews[0]
        facts.update({
            "profile.skew.measure": skew.measure,
            "profile.skew.rank": skew.slowest,
            "profile.skew.slowest_s": skew.slowest_s,
            "profile.skew.others_median_s": skew.others_median_s,
            "profile.skew.ratio": skew.ratio,
            "profile.skew.excess_share": skew.excess_share,
        })  # fmt: skip
    return facts
