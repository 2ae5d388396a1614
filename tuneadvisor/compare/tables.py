"""Runs, profiles and recordings side by side: throughput and speedup, share of time by line
kind, resources requested and used, loss and accuracy per epoch."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rich.table import Table

from tuneadvisor.advisor.prediction import Span
from tuneadvisor.compare.scaling import ScalePoint, scaling
from tuneadvisor.compare.speedup_check import speedup_checks, speedup_table
from tuneadvisor.errors import InputError
from tuneadvisor.files import is_directory, is_regular_file
from tuneadvisor.relaunch.predicted import Measure, PredictionCheck, check
from tuneadvisor.relaunch.records import RECORD_NAME, RunRecord, read_record
from tuneadvisor.relaunch.usage import read_usage
from tuneadvisor.runrecord.record import is_run_record
from tuneadvisor.slurm.units import parse_memory_mib


@dataclass(frozen=True)
class Item:
    """One thing compared: a run (with its profile and metrics if it has them), a profile or
    a recording alone."""

    label: str
    path: str
    run: RunRecord | None = None
    kinds: dict[str, float] = field(default_factory=dict)  # line kind -> percent of train()
    metrics: dict[str, float] = field(default_factory=dict)  # launch/usage.py: watch's samples
    predicted: PredictionCheck | None = None  # the run against the prediction it recorded
    number: int = 0  # its row in the throughput table (the key of the other tables); 0: none

    @property
    def key(self) -> str:
        """What the narrower tables call it: ``#2`` (the throughput table says which run that
        is), never a run id cut to the same ``20261206…`` in every row."""
        return f"#{self.number}" if self.number else self.label

    @property
    def samples_per_s(self) -> float | None:
        return self.run.samples_per_s if self.run else None

    @property
    def counted(self) -> bool:
        """A run that completed: only such a run is a speedup's baseline or a point of a
        trend (scaling, throughput against a setting); an interrupted or failed run is shown,
        marked, with what it measured before it stopped."""
        return self.run is not None and self.run.ok


def baseline(items: Sequence[Item]) -> Item | None:
    """What speedups are against: the first completed run with a throughput."""
    return next((i for i in items if i.counted and i.samples_per_s), None)


def _speedup(item: Item, base: Item | None) -> float | None:
    rate, base_rate = item.samples_per_s, base.samples_per_s if base is not None else None
    return rate / base_rate if item.counted and rate and base_rate else None


def _status(run: RunRecord) -> str:
    return run.status if run.ok else f"{run.status}: not compared"


def _kinds_of(paths: Sequence[Path]) -> dict[str, float]:
    from tuneadvisor.profile.analysis import analyze
    from tuneadvisor.profile.lprof import load_profiles
    from tuneadvisor.profile.source import SourceFinder

    profiles = load_profiles(paths)
    finder = SourceFinder(profile_dirs=tuple({p.parent for p in paths}), cwd=Path.cwd())
    analysis = analyze(profiles, finder)
    return {share.kind.value: share.percent for share in analysis.kinds}


def load_item(path_text: str) -> Item:
    path = Path(path_text)
    if is_directory(path) or path.name == RECORD_NAME or is_run_record(path):
        run = read_record(path)
        kinds: dict[str, float] = {}
        profiles = [p for p in run.profile_paths() if is_regular_file(p)]
        if profiles:
            kinds = _kinds_of(profiles)
        # the recordings themselves where they are (a submitted job writes its own later),
        # else what the run recorded from them
        recordings = [p for p in run.metrics_paths() if is_regular_file(p)]
        metrics = read_usage(recordings) if recordings else dict(run.sampled)
        return Item(run.display_label, str(path), run, kinds, metrics, check(run, metrics))
    if path.suffix == ".lprof" or path.suffix == ".txt":
        return Item(path.stem, str(path), kinds=_kinds_of([path]))
    if is_regular_file(path):
        return Item(path.stem, str(path), metrics=read_usage([path]))
    raise InputError(path, "no such run, profile or recording")


def _fmt(value: Any, spec: str = "", none: str = "-") -> str:
    if value is None:
        return none
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float) and spec:
        return format(value, spec)
    return str(value)


def throughput_table(items: Sequence[Item], form: str | None = None) -> Table:
    base = baseline(items)
    against = f"speedup against {base.label}" if base is not None else "no completed run"
    table = Table(
        title=f"Throughput ({against})",
        title_justify="left",
        caption="#: the run's name in the tables below"
        + (f"; run: the time and suffix of its id, {form}" if form else ""),
        caption_justify="left",
    )
    numbered = any(i.number for i in items)
    if numbered:
        table.add_column("#", justify="right", no_wrap=True)
    for name in ("run", "settings", "samples/s", "speedup", "step time", "accuracy", "status"):
        figure = name not in ("run", "settings", "status")  # a figure with its unit: never split
        table.add_column(name, justify="right" if figure else "left", no_wrap=figure)
    for item in items:
        run = item.run
        rate = item.samples_per_s
        speedup = _speedup(item, base)
        step = run.step_s if run else None  # the same steady window as samples/s
        acc = run.summary.final_accuracy if run else None
        table.add_row(
            *([str(item.number)] if numbered else []),
            item.label,
            run.describe() if run else "(profile/recording)",
            _fmt(rate, ",.1f"),
            f"{speedup:.2f}x" if speedup is not None else "-",
            f"{1000 * step:.1f} ms" if isinstance(step, int | float) else "-",
            f"{100 * acc:.1f} %" if isinstance(acc, int | float) else "-",
            _status(run) if run else "-",
        )
    return table


def _span(span: Span | None, scale: float, spec: str, unit: str = "") -> str:
    if span is None:
        return "-"
    return f"{format(scale * span.low, spec)}-{format(scale * span.high, spec)}{unit}"


def _measured(m: Measure | None, scale: float, spec: str, unit: str = "") -> str:
    return "-" if m is None else f"{format(scale * m.value, spec)}{unit} +-{100 * m.spread:.0f} %"


# a prediction's setting names, as Settings.describe words them: "2 cpu, workers 2"
_SETTING_WORDS = {
    "cpus_per_task": "{} cpu",
    "ntasks": "{} tasks",
    "nodes": "{} nodes",
    "gpus": "{} gpu",
    "num_workers": "workers {}",
    "batch_size": "batch {}",
}


def _setting(setting: Mapping[str, Any]) -> str:
    words = [_SETTING_WORDS.get(k, k.replace("_", " ") + " {}").format(v)
             for k, v in sorted(setting.items())]  # fmt: skip
    return ", ".join(words) or "-"


def prediction_table(items: Sequence[Item]) -> Table | None:
    """Each run that recorded a prediction: the predicted range against the steady-state
    figure (its steady window, after the warm-up) and its spread."""
    checked = [(i, i.predicted) for i in items if i.predicted is not None]
    if not checked:
        return None
    table = Table(
        title="Predicted against measured",
        title_justify="left",
        caption="measured: the run's figure, over the steps after the warm-up, +- half the "
        "range of its blocks",
        caption_justify="left",
    )
    # the units in the headings: the figures stay narrow enough for 100 columns
    for name in ("run", "setting", "step ms\npredicted", "step ms\nmeasured",
                 "samples/s\npredicted", "samples/s\nmeasured", "verdict"):  # fmt: skip
        figure = name not in ("run", "setting")  # a figure with its unit: never split
        table.add_column(name, justify="right" if figure else "left", no_wrap=figure)
    for item, c in checked:
        p = c.prediction
        table.add_row(
            item.key,
            _setting(p.setting),
            _span(p.step_s, 1000, ".1f"),
            _measured(c.step_s, 1000, ".1f"),
            _span(p.samples_per_s, 1, ",.1f"),
            _measured(c.samples_per_s, 1, ",.1f"),
            c.verdict(),
        )
    return table


def findings(items: Sequence[Item]) -> list[str]:
    """The compare-level findings, one line each: ``prediction-missed`` for each run outside
    its predicted range, with what differed; each run named as the tables name it (its row's
    number and its short label: ``#2 143506-6fdf``), not by its whole id."""
    out = []
    for item in labelled(items)[0]:
        text = item.predicted.finding() if item.predicted is not None else None
        if text is not None:
            out.append(f"#{item.number} {item.label}: {text}")
    return out


def scale_points(items: Sequence[Item]) -> list[ScalePoint]:
    return scaling([(i.label, i.run) for i in items if i.run is not None and i.counted])


def scaling_table(items: Sequence[Item]) -> Table | None:
    """Speedup and scaling efficiency against the smallest world size of each setting."""
    points = scale_points(items)
    if not points:
        return None
    table = Table(
        title="Scaling against world size (ranks)",
        title_justify="left",
        caption="speedup: samples/s over the setting's smallest world size; efficiency: "
        "speedup / (ranks / its ranks), 100 % = linear",
        caption_justify="left",
    )
    for name in ("setting", "ranks", "nodes", "run", "samples/s", "speedup", "efficiency"):
        figure = name not in ("setting", "run")
        table.add_column(name, justify="right" if figure else "left", no_wrap=figure)
    for p in points:
        table.add_row(p.group, str(p.world_size), str(p.nodes), p.run, f"{p.samples_per_s:,.1f}",
                      f"{p.speedup:.2f}x", f"{100 * p.efficiency:.0f} %")  # fmt: skip
    return table


def _share(used: float | None, asked: float | None) -> str:
    return f" ({100 * used / asked:.0f} %)" if used is not None and asked else ""


def resources_table(items: Sequence[Item]) -> Table:
    """Cores and memory asked for against what the run used: ``watch``'s samples of the
    training tree where the run has them, else its CPU time over its wall time."""
    table = Table(
        title="Resources: requested and used",
        title_justify="left",
        caption="used: sampled by tuneadvisor watch (mean / p95 of the training tree) where "
        "recorded, else CPU time / wall time",
        caption_justify="left",
    )
    # a heading of two lines, the unit on the second: the cells hold figures alone, and the
    # table fits 100 columns
    for name in ("run", "tasks", "cores\nasked", "cores used\nmean / p95", "mem\nasked",
                 "peak RSS\nMiB", "gpus", "gpu\nutil %", "sampled\nrounds"):  # fmt: skip
        words = name == "run"
        table.add_column(name, justify="left" if words else "right", no_wrap=not words)
    for item in items:
        run = item.run
        settings = run.settings if run else None
        cpu = run.resources.cpu if run and run.resources else None
        sampled = "cores_used" in item.metrics
        asked = settings.ntasks * settings.cpus_per_task if settings else None
        mean = item.metrics.get("cores_used", cpu.cores_used if cpu else None)
        p95 = item.metrics.get("cores_used_p95")
        cores = _fmt(mean, ".2f") + (f" / {p95:.2f}" if p95 is not None else "")
        rss = item.metrics.get("max_rss_mib", cpu.max_rss_mib if cpu else None)
        mem_mib = parse_memory_mib(settings.mem) if settings and settings.mem else None
        gpu = item.metrics.get("gpu_util_pct")
        samples = item.metrics.get("samples")
        table.add_row(
            item.key,
            _fmt(settings.ntasks if settings else None),
            _fmt(asked),
            cores + _share(mean, asked),
            _fmt(settings.mem if settings else None),
            (f"{rss:,.0f}" if isinstance(rss, int | float) else "-") + _share(rss, mem_mib),
            _fmt(run.used_settings.gpus if run else None),  # a run on the CPU had none
            f"{gpu:.0f}" if isinstance(gpu, int | float) else "-",
            f"{samples:.0f}" if sampled and samples else "no",
        )
    return table


def kinds_table(items: Sequence[Item]) -> Table | None:
    with_kinds = [i for i in items if i.kinds]
    if not with_kinds:
        return None
    kinds = sorted(
        {k for i in with_kinds for k in i.kinds}, key=lambda k: -with_kinds[0].kinds.get(k, 0)
    )
    title = "Share of profiled time by line kind"
    table = Table(title=title, title_justify="left", min_width=len(title))
    table.add_column("kind")
    for item in with_kinds:
        table.add_column(item.key, justify="right")
    for kind in kinds:
        table.add_row(kind, *(f"{i.kinds.get(kind, 0.0):.1f} %" for i in with_kinds))
    return table


def epochs_tables(items: Sequence[Item], width: int = 100) -> list[Table]:
    """A row a run, a column an epoch (a first hour's runs have one to three epochs; a tune's
    many trials then fit, where a column a run was cut to ``1056…``); a run of more epochs
    than ``width`` columns hold is shown in blocks of epochs, each table within the width
    (twelve epochs once cut every cell to ``2.30…``)."""
    runs = [i for i in items if i.run and i.run.epochs]
    if not runs:
        return []
    rows = {
        item.key: [
            f"{_fmt(e.train_loss, '.3f')} / {100 * float(e.accuracy or 0):.1f} %"
            for e in item.run.epochs
        ]
        for item in runs
        if item.run is not None
    }
    n = max(len(cells) for cells in rows.values())
    # a cell's text, its padding and its border: rich's heavy-headed table draws each
    cell_w = max(len(f"epoch {n}"), *(len(c) for cells in rows.values() for c in cells)) + 3
    run_w = max(len("run"), *map(len, rows)) + 3
    per_table = max(1, (width - 1 - run_w) // cell_w)
    title = "Per epoch: train loss / test accuracy"
    out = []
    for first in range(0, n, per_table):
        last = min(n, first + per_table)
        part = title if last - first == n else f"{title}, epochs {first + 1}-{last} of {n}"
        table = Table(title=part, title_justify="left", min_width=min(width, len(part)))
        table.add_column("run", no_wrap=True)
        for index in range(first, last):
            table.add_column(f"epoch {index + 1}", justify="right", no_wrap=True)
        for key, cells in rows.items():
            shown = cells[first:last]
            table.add_row(key, *shown, *([""] * (last - first - len(shown))))
        out.append(table)
    return out


def _run_id(label: str) -> tuple[str, str, str, str] | None:
    """A run id as `run` names its folder, date-time-name-suffix, in its parts; None where
    ``label`` is no such id (split on its dashes: no pattern to backtrack over a long one)."""
    date, _, rest = label.partition("-")
    time, _, rest = rest.partition("-")
    name, _, suffix = rest.rpartition("-")
    digits = date.isascii() and date.isdigit() and time.isascii() and time.isdigit()
    hex_suffix = len(suffix) == 4 and all(c in "0123456789abcdef" for c in suffix)
    if digits and len(date) == 8 and len(time) == 6 and name and hex_suffix:
        return date, time, name, suffix
    return None


def short_labels(labels: Sequence[str]) -> tuple[list[str], str | None]:
    """Run ids less the parts all of them share (their date, their script's name), so that a
    narrow table shows what tells them apart and never cuts each to the same
    ``20261206…``; with the form of the id they stand for (None: shown whole)."""
    found = [_run_id(label) for label in labels]
    parts = [p for p in found if p]  # the run ids among them (a tune's trials have labels)
    if len(labels) < 2 or not parts:
        return list(labels), None
    same_date = len({p[0] for p in parts}) == 1
    same_name = len({p[2] for p in parts}) == 1
    if not (same_date or same_name):
        return list(labels), None
    dropped = {0} if same_date else set()
    dropped |= {2} if same_name else set()
    shown = [
        "-".join(x for i, x in enumerate(p) if i not in dropped) if p else label
        for label, p in zip(labels, found, strict=True)
    ]
    if len(set(shown)) < len(set(labels)):
        return list(labels), None
    date = parts[0][0] if same_date else "DATE"
    name = parts[0][2] if same_name else "NAME"
    return shown, f"{date}-TIME-{name}-SUFFIX"


def _without_settings(item: Item) -> str:
    """A label that ends in the run's own settings (a tune trial's ``tune batch: 2 cpu, ...``)
    less them: the settings column says them once."""
    if item.run is not None:
        head, sep, tail = item.label.partition(": ")
        if sep and tail in (item.run.settings.describe(), item.run.describe()):
            return head
    return item.label


def labelled(items: Sequence[Item]) -> tuple[list[Item], str | None]:
    """The items as the tables and the plots name them: numbered in order, each run id less
    what all share (``short_labels``), with the form of the id they stand for."""
    shown, form = short_labels([_without_settings(i) for i in items])
    numbered = [replace(i, label=label, number=n)
                for n, (i, label) in enumerate(zip(items, shown, strict=True), 1)]  # fmt: skip
    return numbered, form


def tables(items: Sequence[Item], width: int = 100) -> list[Table]:
    """Every table of the comparison, each within ``width`` columns where it can be."""
    items, form = labelled(items)
    out = [throughput_table(items, form), resources_table(items)]
    more = (
        prediction_table(items),
        speedup_table(speedup_checks(items)),
        scaling_table(items),
        kinds_table(items),
    )
    for extra in more:
        if extra is not None:
            out.append(extra)
    return out + epochs_tables(items, width)


def to_json(items: Sequence[Item]) -> list[dict[str, Any]]:
    base = baseline(items)
    out = []
    for item in items:
        out.append(
            {
                "label": item.label,
                "path": item.path,
                "status": item.run.status if item.run else None,
                # false: an interrupted or failed run, never a baseline or a trend point
                "counted": item.counted,
                "baseline": item is base,
                "samples_per_s": item.samples_per_s,
                "step_time_s": item.run.step_s if item.run else None,
                "speedup": _speedup(item, base),
                "settings": item.run.settings.to_json() if item.run else None,
                "summary": _summary_json(item.run) if item.run else None,
                "resources": _resources_json(item.run) if item.run else None,
                "kinds": item.kinds,
                "metrics": item.metrics,
                "prediction": item.predicted.as_json() if item.predicted else None,
            }
        )
    return out


def _summary_json(run: RunRecord) -> dict[str, Any]:
    """As the record has it, with the run's figures (its steady window: an older record's
    summary had others); {} for a run not measured yet."""
    if run.measured is None:
        return {}
    return {
        **run.measured.summary.to_json(),
        "samples_per_s": run.samples_per_s,
        "step_time_s": run.step_s,
    }


def _resources_json(run: RunRecord) -> dict[str, Any]:
    return run.resources.to_json() if run.resources is not None else {}
