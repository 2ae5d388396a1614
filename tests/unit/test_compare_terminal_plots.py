"""`compare`'s plots in the terminal (issue 24, point 15): each bar on its label's row with
its value, and the lines' legend under the plot, not over the start of the loss curves."""

from __future__ import annotations

import itertools
import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tuneadvisor.compare import plots
from tuneadvisor.compare.plots import Panel, Series, terminal_plots, text_bars

LABELS = ["mnist_single-1", "mnist_single-2 w4", "mnist_single-3 amp"]


def bars(values: list[float], labels: list[str]) -> Panel:
    series = Series("samples/s", [float(i) for i in range(len(values))], values)
    title = "Throughput per run (steps after the warm-up)"
    return Panel(title, "samples/s", "", [series], "bars", labels)


def loss_panel() -> Panel:
    xs = [i / 40 for i in range(41)]
    return Panel("Training loss (each logged step)", "epochs trained", "loss", [
        Series("run-1 mnist_single", xs, [2.3 * math.exp(-3 * x) + 0.1 for x in xs]),
        Series("run-2 mnist_single w4", xs, [2.2 * math.exp(-2.5 * x) + 0.15 for x in xs]),
    ])  # fmt: skip


def test_each_bar_is_on_its_labels_row_with_its_value() -> None:
    text = text_bars(bars([133.8, 250.2, 410.5], LABELS), width=80)
    rows = text.splitlines()[1:]
    assert len(rows) == len(LABELS)  # one row a run: nothing between a label and its bar
    for row, label, value in zip(rows, LABELS, ["133.8", "250.2", "410.5"], strict=True):
        assert re.fullmatch(rf"\s*{re.escape(label)} │█+[▏▎▍▌▋▊▉]?\s* {value}", row), row
    lengths = [len(row.split("│")[1].rstrip(" 0123456789.,")) for row in rows]
    assert lengths == sorted(lengths) and lengths[-1] > 2 * lengths[0]


@given(
    st.lists(
        st.tuples(st.text("abcdefgh-_ 0123", min_size=1, max_size=20), st.floats(0, 1e6)),
        min_size=1,
        max_size=8,
    ),
    st.integers(60, 200),
)
def test_bars_fit_the_width_and_grow_with_the_value(
    runs: list[tuple[str, float]], width: int
) -> None:
    labels = [label for label, _ in runs]
    values = [value for _, value in runs]
    rows = text_bars(bars(values, labels), width).splitlines()[1:]
    assert all(len(row) <= width for row in rows)
    cells = [len(row.split(" │", 1)[1].rstrip(" 0123456789.,")) for row in rows]
    pairs = list(zip(cells, values, strict=True))
    for (a, va), (b, vb) in itertools.pairwise(pairs):
        if va < vb:
            assert a <= b
        elif va > vb:
            assert a >= b


@pytest.mark.parametrize("color", [False, True])
def test_the_legend_is_under_the_plot(monkeypatch: pytest.MonkeyPatch, color: bool) -> None:
    monkeypatch.setattr(plots, "panels", lambda items: [loss_panel()])
    text = terminal_plots([], width=80, color=color)
    plain = re.sub(r"\x1b\[[0-9;]*m", "", text)
    frame_end = plain.index("└")
    for label in ("run-1 mnist_single", "run-2 mnist_single w4"):
        assert plain.index(label) > frame_end  # not inside the frame, over the curves
    assert ("\x1b[" in text) is color
    if not color:  # without colour each line has its own marker, which the legend names
        legend = plain.splitlines()[-1]
        assert legend.startswith("•• run-1") and "++ run-2" in legend
        inside = plain[:frame_end]
        assert "•" in inside and "+" in inside
