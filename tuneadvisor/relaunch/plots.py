"""Plots of compared runs: loss and accuracy per epoch, throughput against --cpus-per-task and
against the number of GPUs. In the terminal with plotext (small, pure Python, a core
dependency); as PNG or SVG files with matplotlib (the ``plot`` extra, imported only when a
file is written: it is the well-kept way to write both formats, and too heavy to load for a
terminal command that does not need it)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuneadvisor.errors import InputError
from tuneadvisor.relaunch.compare import Item

FILE_FORMATS = (".png", ".svg")


@dataclass(frozen=True)
class Series:
    label: str
    x: list[float]
    y: list[float]


@dataclass(frozen=True)
class Panel:
    title: str
    xlabel: str
    ylabel: str
    series: list[Series]


def panels(items: Sequence[Item]) -> list[Panel]:
    """What to draw, from whatever the items have (a panel without data is left out)."""
    runs = [i for i in items if i.run is not None]
    out: list[Panel] = []
    loss, acc = [], []
    for item in runs:
        assert item.run is not None
        epochs = item.run.epochs
        xs = [float(n + 1 if e.epoch is None else e.epoch) for n, e in enumerate(epochs)]
        losses = [(x, e.train_loss) for x, e in zip(xs, epochs, strict=True)]
        accs = [(x, e.accuracy) for x, e in zip(xs, epochs, strict=True)]
        pl = [(x, float(v)) for x, v in losses if v is not None]
        pa = [(x, 100.0 * float(v)) for x, v in accs if v is not None]
        if pl:
            loss.append(Series(item.label, [p[0] for p in pl], [p[1] for p in pl]))
        if pa:
            acc.append(Series(item.label, [p[0] for p in pa], [p[1] for p in pa]))
    if loss:
        out.append(Panel("Training loss per epoch", "epoch", "loss", loss))
    if acc:
        out.append(Panel("Test accuracy per epoch", "epoch", "accuracy (%)", acc))
    for attr, name in (("cpus_per_task", "--cpus-per-task"), ("gpus", "GPUs")):
        groups: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for item in runs:
            assert item.run is not None
            rate = item.samples_per_s
            if rate is None:
                continue
            settings = item.run.settings
            key = item.run.name or "run"
            groups[key].append((float(getattr(settings, attr)), rate))
        distinct = {x for points in groups.values() for x, _ in points}
        if len(distinct) > 1:
            series = []
            for key, points in groups.items():
                best: dict[float, float] = {}
                for x, y in points:
                    best[x] = max(y, best.get(x, 0.0))
                xs = sorted(best)
                series.append(Series(key, xs, [best[x] for x in xs]))
            out.append(Panel(f"Throughput against {name}", name, "samples/s", series))
    return out


def terminal_plots(items: Sequence[Item], width: int = 80, color: bool = True) -> str:
    import plotext as plt

    texts = []
    for panel in panels(items):
        plt.clf()
        plt.plotsize(width, 16)
        plt.theme("clear" if not color else "pro")
        for series in panel.series:
            plt.plot(series.x, series.y, label=series.label, marker="braille")
        plt.title(panel.title)
        plt.xlabel(panel.xlabel)
        plt.ylabel(panel.ylabel)
        text = str(plt.build())
        texts.append(text if color else str(plt.uncolorize(text)))
    plt.clf()
    return "\n".join(texts)


def write_plot_file(items: Sequence[Item], path: Path) -> Path:
    """All panels in one figure, PNG or SVG by the file's suffix."""
    if path.suffix.lower() not in FILE_FORMATS:
        raise InputError(path, f"plot files are {' or '.join(FILE_FORMATS)}")
    drawn = panels(items)
    if not drawn:
        raise InputError(path, "nothing to plot: no epochs and no throughput to set against cores")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError(
            path, "writing plot files needs matplotlib: pip install 'tuneadvisor[plot]'"
        ) from None
    cols = min(2, len(drawn))
    rows = (len(drawn) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6.4 * cols, 4.2 * rows), squeeze=False)
    flat: list[Any] = [ax for row in axes for ax in row]
    for ax, panel in zip(flat, drawn, strict=False):
        for series in panel.series:
            ax.plot(series.x, series.y, marker="o", label=series.label)
        ax.set_title(panel.title)
        ax.set_xlabel(panel.xlabel)
        ax.set_ylabel(panel.ylabel)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    for ax in flat[len(drawn) :]:
        ax.set_visible(False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part" + path.suffix)
    fig.savefig(part, format=path.suffix.lower().lstrip("."), dpi=110)
    plt.close(fig)
    part.replace(path)
    return path
