"""Plots of compared runs: the training loss at each logged step and the test accuracy per
epoch (one line per run), throughput per run (bars), throughput against world size with the
speedup and scaling efficiency computed from the runs, throughput against --cpus-per-task and
GPUs, and the distribution of step times. In the terminal with plotext (small, pure Python, a core
dependency); as PNG or SVG files with matplotlib (the ``plot`` extra, imported only when a
file is written: it is the well-kept way to write both formats, and too heavy to load for a
terminal command that does not need it)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from tuneadvisor.compare.scaling import ScalePoint, steps_per_epoch, world_size
from tuneadvisor.compare.tables import Item, labelled, scale_points
from tuneadvisor.errors import InputError
from tuneadvisor.numbers import is_ascii_digits, is_finite_number
from tuneadvisor.relaunch.records import RunRecord
from tuneadvisor.runrecord.window import steady_steps

FILE_FORMATS = (".png", ".svg")


@dataclass(frozen=True)
class Series:
    label: str
    x: list[float]
    y: list[float]  # a "box" panel: the values whose distribution is drawn (x unused)
    reference: bool = False  # drawn dashed: what linear scaling would give, not measured


@dataclass(frozen=True)
class Panel:
    title: str
    xlabel: str
    ylabel: str
    series: list[Series]
    kind: Literal["line", "bars", "box"] = "line"  # bars: one series, y per category
    categories: list[str] = field(default_factory=list)  # bars and boxes: one per run
    notes: list[tuple[float, float, str]] = field(default_factory=list)  # (x, y, text)


def _loss_points(run: RunRecord) -> list[tuple[float, float]]:
    """The training loss of every logged step, at the fraction of epochs it had trained
    (a one-epoch run is a line, not a dot); else the last loss of each epoch."""
    per_epoch = steps_per_epoch(run)
    points = [
        (s.step / per_epoch, float(s.event["loss"]))
        for s in run.steps
        if per_epoch and s.step >= 1 and is_finite_number(s.event.get("loss"))
    ]  # a diverged step's NaN or infinite loss is no point to draw
    if points:
        return points
    return [
        (float(n + 1 if e.epoch is None else e.epoch), float(e.train_loss))
        for n, e in enumerate(run.epochs)
        if e.train_loss is not None
    ]


def _per_epoch(items: Sequence[tuple[str, RunRecord]]) -> list[Panel]:
    loss, acc = [], []
    for label, run in items:
        points = _loss_points(run)
        if points:
            loss.append(Series(label, [p[0] for p in points], [p[1] for p in points]))
        pa = [
            (float(n + 1 if e.epoch is None else e.epoch), 100.0 * float(e.accuracy))
            for n, e in enumerate(run.epochs)
            if e.accuracy is not None
        ]
        if pa:
            acc.append(Series(label, [p[0] for p in pa], [p[1] for p in pa]))
    out = []
    if loss:
        out.append(Panel("Training loss (each logged step)", "epochs trained", "loss", loss))
    if acc:
        out.append(Panel("Test accuracy per epoch", "epoch", "accuracy (%)", acc))
    return out


def _throughput_bars(items: Sequence[tuple[str, RunRecord]]) -> Panel | None:
    rated = [(label, run.samples_per_s) for label, run in items if run.samples_per_s]
    if not rated:
        return None
    values = [float(rate) for _, rate in rated if rate is not None]
    bars = Series("samples/s", [float(i) for i in range(len(values))], values)
    return Panel("Throughput per run (steps after the warm-up)", "samples/s", "", [bars], "bars",
                 [label for label, _ in rated])  # fmt: skip


def _scaling(items: Sequence[Item]) -> list[Panel]:
    points = scale_points(items)
    if not points:
        return []
    groups: dict[str, list[ScalePoint]] = defaultdict(list)
    for p in points:
        groups[p.group].append(p)
    rates, effs, notes = [], [], []
    for group, ps in groups.items():
        xs = [float(p.world_size) for p in ps]
        # no linear line here: it would dwarf the measured ones (the efficiency panel has it)
        rates.append(Series(group, xs, [p.samples_per_s for p in ps]))
        effs.append(Series(group, xs, [100.0 * p.efficiency for p in ps]))
        notes += [(float(p.world_size), p.samples_per_s, f"{p.speedup:.2f}x") for p in ps[1:]]
    sizes = sorted({float(p.world_size) for p in points})
    effs.append(Series("linear", sizes, [100.0] * len(sizes), reference=True))
    return [
        Panel("Throughput against world size (speedup marked)", "ranks", "samples/s", rates,
              notes=notes),
        Panel("Scaling efficiency (speedup / ranks ratio)", "ranks", "efficiency (%)", effs),
    ]  # fmt: skip


def _step_times(items: Sequence[tuple[str, RunRecord]]) -> Panel | None:
    """Each run's logged step times over its steady window (the warm-up left out)."""
    series = []
    for label, run in items:
        times = [1000.0 * s.step_time_s for s in steady_steps(run.steps) if s.step_time_s]
        if len(times) >= 2:
            series.append(Series(label, [], times))
    if not series:
        return None
    return Panel("Step time distribution (each logged interval)", "ms per step", "", series,
                 "box", [s.label for s in series])  # fmt: skip


def _against(items: Sequence[tuple[str, RunRecord]], attr: str, name: str) -> Panel | None:
    """Throughput against one setting, one line per world size (the other axis)."""
    groups: dict[str, dict[float, float]] = defaultdict(dict)
    for _, run in items:
        rate = run.samples_per_s
        if rate is None:
            continue
        size = world_size(run)
        key = f"{run.name}, {size} rank{'s' if size != 1 else ''}"
        x = float(getattr(run.used_settings, attr))  # a run on the CPU is at 0 GPUs
        groups[key][x] = max(rate, groups[key].get(x, 0.0))
    # a line needs two settings: a world size measured at one is no line
    series = [Series(k, sorted(b), [b[x] for x in sorted(b)]) for k, b in groups.items()
              if len(b) >= 2]  # fmt: skip
    if not series:
        return None
    return Panel(f"Throughput against {name}", name, "samples/s", series)


def panels(items: Sequence[Item]) -> list[Panel]:
    """What to draw, from whatever the items have (a panel without data is left out); each
    run named as the tables name it (a legend of whole run ids runs off a 100-column
    screen)."""
    return [_drawable(p) for p in _panels(_told_apart(labelled(items)[0]))]


def _told_apart(items: list[Item]) -> list[Item]:
    """Labels that repeat (a tune's three ``tune workers`` trials) with their row's number in
    the throughput table in front (``#3 tune workers``), so each line of a legend is one run."""
    labels = [i.label for i in items]
    if len(set(labels)) == len(labels):
        return items
    return [replace(i, label=f"#{i.number} {i.label}") for i in items]


def _drawable(panel: Panel) -> Panel:
    """The panel without points that are NaN or infinite (neither plotext nor matplotlib
    can place them: a run's figures are finite, but what is computed from them may not be)."""
    series = []
    for s in panel.series:
        if panel.kind == "line":
            kept = [(x, y) for x, y in zip(s.x, s.y, strict=False) if math.isfinite(x + y)]
            series.append(replace(s, x=[x for x, _ in kept], y=[y for _, y in kept]))
        else:  # a bar or a box per run: a missing value is 0 (a bar) or left out (a box)
            ys = [y if math.isfinite(y) else 0.0 for y in s.y] if panel.kind == "bars" else s.y
            series.append(replace(s, y=[y for y in ys if math.isfinite(y)]))
    notes = [(x, y, t) for x, y, t in panel.notes if math.isfinite(x + y)]
    return replace(panel, series=series, notes=notes)


def _panels(items: Sequence[Item]) -> list[Panel]:
    runs = [(i.label, i.run) for i in items if i.run is not None]
    # throughput is compared between completed runs only: an interrupted or failed run is
    # no bar and no point of a trend (its loss and step times are still its own)
    completed = [(i.label, i.run) for i in items if i.run is not None and i.counted]
    out = _per_epoch(runs)
    bars = _throughput_bars(completed)
    if bars is not None:
        out.append(bars)
    out += _scaling(items)
    for attr, name in (("cpus_per_task", "--cpus-per-task"), ("gpus", "GPUs")):
        panel = _against(completed, attr, name)
        if panel is not None:
            out.append(panel)
    box = _step_times(runs)
    if box is not None:
        out.append(box)
    return out


# The lines' colours in the terminal, and their markers without colour (a pipe): the legend
# below the plot names each by it.
LINE_COLORS = ("cyan", "orange", "green", "magenta", "blue", "red")
PLAIN_MARKERS = ("•", "+", "x", "o", "*", "#")
_EIGHTHS = " ▏▎▍▌▋▊▉"


def _bar(value: float, top: float, width: int) -> str:
    """A bar of ``width`` cells at most, ``value`` of ``top``, in eighths of a cell."""
    filled = max(0.0, value) / top * width if top > 0 else 0.0
    full = min(int(filled), width)
    eighths = round((filled - full) * 8) if full < width else 0
    if eighths == 8:
        full, eighths = full + 1, 0
    return "█" * full + (_EIGHTHS[eighths] if eighths else "")


def text_bars(panel: Panel, width: int) -> str:
    """Bars one row a run, the label on the bar's own row and the value after it (plotext's
    horizontal bars put a label beside one of the two rows of its bar, issue 24 point 15)."""
    values = panel.series[0].y
    labels = panel.categories
    label_w = max(map(len, labels), default=0)
    numbers = [f"{v:,.1f}" for v in values]
    number_w = max(map(len, numbers), default=0)
    bar_w = max(8, width - label_w - number_w - 4)
    top = max(values, default=0.0)
    rows = [panel.title + (f", {panel.xlabel}" if panel.xlabel else "")]
    for label, value, number in zip(labels, values, numbers, strict=True):
        rows.append(f"{label:>{label_w}} │{_bar(value, top, bar_w):<{bar_w}} {number:>{number_w}}")
    return "\n".join(rows)


def _legend(panel: Panel, color: bool) -> str:
    """The lines' names under the plot, where no curve is (plotext's legend sits in the
    plot's top left corner, over the start of a loss curve)."""
    import plotext as plt

    parts = []
    for index, series in enumerate(panel.series):
        if series.reference:
            mark = "··"
        elif color:
            mark = plt.colorize("──", LINE_COLORS[index % len(LINE_COLORS)])
        else:
            mark = PLAIN_MARKERS[index % len(PLAIN_MARKERS)] * 2
        parts.append(f"{mark} {series.label}")
    return "   ".join(parts)


def terminal_plots(items: Sequence[Item], width: int = 80, color: bool = True) -> str:
    import plotext as plt

    texts = []
    for panel in panels(items):
        if panel.kind == "bars":
            texts.append(text_bars(panel, width) + "\n")
            continue
        plt.clf()
        plt.plotsize(width, 16 if panel.kind == "line" else max(8, 3 + 3 * len(panel.categories)))
        plt.theme("clear" if not color else "pro")
        if panel.kind == "box":
            data = [s.y for s in panel.series]
            plt.box(panel.categories[::-1], data[::-1], orientation="horizontal")
        else:
            for index, series in enumerate(panel.series):
                if series.reference:
                    marker = "dot"
                else:
                    marker = "braille" if color else PLAIN_MARKERS[index % len(PLAIN_MARKERS)]
                plt.plot(series.x, series.y, marker=marker,
                         color=LINE_COLORS[index % len(LINE_COLORS)])  # fmt: skip
            for x, y, text in panel.notes:
                plt.text(text, x, y)
        plt.title(panel.title)
        plt.xlabel(panel.xlabel)
        plt.ylabel(panel.ylabel)
        text = str(plt.build())
        text = text if color else str(plt.uncolorize(text))
        texts.append(text + ("\n" + _legend(panel, color) if panel.kind == "line" else ""))
    plt.clf()
    return "\n".join(texts)


def _draw(ax: Any, panel: Panel, matplotlib_version: tuple[int, ...]) -> None:
    if panel.kind == "bars":
        values = panel.series[0].y
        ticks = list(range(len(values)))
        ax.barh(ticks, values, color="tab:blue")
        ax.set_yticks(ticks, panel.categories, fontsize="small")
        ax.invert_yaxis()  # the first run on top, as in the tables
        for tick, value in zip(ticks, values, strict=True):
            ax.annotate(f" {value:,.0f}", (value, tick), va="center", fontsize="small")
        ax.margins(x=0.15)
    elif panel.kind == "box":
        data = [s.y for s in panel.series]
        # `vert` gave way to `orientation` in matplotlib 3.10
        orient = {"orientation": "horizontal"} if matplotlib_version >= (3, 10) else {"vert": False}
        ax.boxplot(data, **orient)
        ax.set_yticks(range(1, len(data) + 1), panel.categories, fontsize="small")
        ax.invert_yaxis()
    else:
        for series in panel.series:
            if series.reference:
                ax.plot(series.x, series.y, linestyle="--", color="grey", label=series.label)
                continue
            many = len(series.x) > 12
            ax.plot(series.x, series.y, marker="." if many else "o",
                    markersize=3 if many else 6, label=series.label)  # fmt: skip
        for x, y, text in panel.notes:
            ax.annotate(text, (x, y), textcoords="offset points", xytext=(4, -12),
                        fontsize="small")  # fmt: skip
        ax.legend(fontsize="small")
    ax.set_title(panel.title)
    ax.set_xlabel(panel.xlabel)
    ax.set_ylabel(panel.ylabel)
    ax.grid(True, alpha=0.3)


def write_plot_file(items: Sequence[Item], path: Path) -> Path:
    """All panels in one figure, PNG or SVG by the file's suffix."""
    if path.suffix.lower() not in FILE_FORMATS:
        raise InputError(path, f"plot files are {' or '.join(FILE_FORMATS)}")
    drawn = panels(items)
    if not drawn:
        raise InputError(path, "nothing to plot: the runs have no epochs and no throughput")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError(
            path, "writing plot files needs matplotlib: pip install 'tuneadvisor[plot]'"
        ) from None
    version = tuple(int(p) for p in matplotlib.__version__.split(".")[:2] if is_ascii_digits(p))
    cols = min(2, len(drawn))
    rows = (len(drawn) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6.8 * cols, 4.4 * rows), squeeze=False)
    flat: list[Any] = [ax for row in axes for ax in row]
    for ax, panel in zip(flat, drawn, strict=False):
        _draw(ax, panel, version)
    for ax in flat[len(drawn) :]:
        ax.set_visible(False)
    form = labelled(items)[1]
    if form is not None:  # the short labels' long form, as the throughput table says it
        fig.suptitle(f"runs {form}", fontsize="small")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part" + path.suffix)
    fig.savefig(part, format=path.suffix.lower().lstrip("."), dpi=110)
    plt.close(fig)
    part.replace(path)
    return path
