"""A one-line chart on a fixed scale, with the current value beside it.

Textual's Sparkline scales each chart to its own minimum and maximum, so a core at a steady
100 % draws as a flat ``▁▁▁`` and looks idle. Here every chart runs from 0 to ``top`` (100 %
for utilisation, the total for memory): a full bar is a busy core, whatever the others do.
The newest value is at the right; with fewer rounds than columns the chart fills from the
right, with more each column is the mean of its stretch of rounds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.widget import Widget

BARS = "▁▂▃▄▅▆▇█"


def columns(values: Sequence[float], width: int) -> list[float]:
    """``values`` fitted to ``width`` columns: as they are when they fit, else the mean of
    each of ``width`` equal stretches."""
    if width <= 0:
        return []
    n = len(values)
    if n <= width:
        return list(values)
    out = []
    for i in range(width):
        part = values[i * n // width : (i + 1) * n // width]
        out.append(sum(part) / len(part))
    return out


def bar(value: float, top: float) -> str:
    """The bar of one column: ``▁`` (0 included) to ``█`` (``top`` and more)."""
    level = min(max(value / top, 0.0), 1.0) if top > 0 else 0.0
    return BARS[round(level * (len(BARS) - 1))]


def chart_text(values: Sequence[float], width: int, top: float) -> str:
    """The bars alone (right-aligned), as a test or a caption reads them."""
    cols = columns(values, width)
    return " " * (width - len(cols)) + "".join(bar(v, top) for v in cols)


class LevelChart(Widget):
    """``label ▁▂▅█████ value``: one line; ``show`` sets the values and the value text."""

    DEFAULT_CSS = """
    LevelChart {
        height: 1;
    }
    LevelChart > .level--label {
        color: $text-muted;
    }
    LevelChart > .level--bars {
        color: $primary;
    }
    LevelChart > .level--idle {
        color: $primary 40%;
    }
    LevelChart > .level--value {
        text-style: bold;
    }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "level--label",
        "level--bars",
        "level--idle",
        "level--value",
    }

    def __init__(
        self, label: str, *, label_width: int = 5, value_width: int = 5, top: float = 100.0,
        id: str | None = None, classes: str | None = None,
    ) -> None:  # fmt: skip
        super().__init__(id=id, classes=classes)
        self.label = label
        self.label_width = label_width
        self.value_width = value_width
        self.top = top
        self.values: tuple[float, ...] = ()
        self.value_text = ""

    def show(self, values: Sequence[float], value_text: str, top: float | None = None) -> None:
        if top is not None:
            self.top = top
        self.values = tuple(values)
        self.value_text = value_text
        self.refresh()

    def render(self) -> Text:
        def style(name: str) -> Style:
            return self.get_component_rich_style(f"level--{name}", partial=True)

        width = max(0, self.size.width - self.label_width - self.value_width - 2)
        cols = columns(self.values, width)
        text = Text(no_wrap=True, overflow="crop")
        text.append(self.label.ljust(self.label_width)[: self.label_width] + " ", style("label"))
        text.append(" " * (width - len(cols)))
        for value in cols:
            text.append(bar(value, self.top), style("bars" if value > 0 else "idle"))
        text.append(" " + self.value_text.rjust(self.value_width), style("value"))
        return text
