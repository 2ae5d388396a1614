"""How a prediction reads, the same in the text and markdown reports and the TUI: one
headline ("expected 480-650 samples/s, 4.4-5.8x"), then where each figure came from and the
ceiling where a cap binds."""

from __future__ import annotations

from tuneadvisor.advisor.advice import Advice
from tuneadvisor.advisor.prediction import Prediction, Span
from tuneadvisor.present.terminal_safe import name_safe, one_line_safe


def _range(span: Span, fmt: str, unit: str = "") -> str:
    low, high = format(span.low, fmt), format(span.high, fmt)
    return f"{low}{unit}" if low == high else f"{low}-{high}{unit}"


def _step(span: Span) -> str:
    if span.high < 1:
        ms = Span(span.low * 1000, span.expected * 1000, span.high * 1000)
        # whole ms from 10 ms on; below, a tenth (a 1 ms step read "0-1 ms")
        return _range(ms, ",.0f" if ms.low >= 10 else ",.1f", " ms")
    return _range(span, ",.2f", " s")


def _setting(prediction: Prediction) -> str:
    names = {"num_workers": "num_workers", "cpus_per_task": "--cpus-per-task"}
    # a name from a saved report is text, never a format string ("{1}" raised IndexError)
    # nor a terminal escape (issue 34)
    return one_line_safe(
        ", ".join(f"{names.get(k) or name_safe(k, 60)}={v}" for k, v in prediction.setting.items())
    )


def headline(prediction: Prediction) -> str:
    """``expected 4.4-5.8x over the measured run (step 98-133 ms; 480-650 samples/s if the
    node performs as in the measured run) with num_workers=7, ...``: the speedup first (a
    ratio over the same machine, robust to its load), the absolute figures as conditional;
    and the node sized for where it was assumed."""
    step = f"step {_step(prediction.step_s)}"
    if prediction.samples_per_s is not None:
        rate = _range(prediction.samples_per_s, ",.0f", " samples/s")
        step += f"; {rate} if the node performs as in the measured run"
    line = (
        f"expected {_range(prediction.speedup, '.2f', 'x')} over the measured run ({step}) "
        f"with {_setting(prediction)}"
    )
    return f"{line}, {prediction.assumed_node}" if prediction.assumed_node else line


def prediction_lines(advice: Advice) -> tuple[str | None, list[str]]:
    """The headline (None without a prediction: the line saying why instead) and the
    lines below it: the basis, the ceiling and notes."""
    prediction = advice.prediction
    if prediction is None:
        return None, [advice.no_prediction] if advice.no_prediction else []
    details = list(prediction.basis)
    if prediction.ceiling:
        details.append(prediction.ceiling)
    return headline(prediction), details + list(prediction.notes)
