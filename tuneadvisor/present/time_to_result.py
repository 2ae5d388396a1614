"""How the time to result reads (``report``, ``apply`` and the ``tune --job`` ledger): when the
job as written and as tuned would start, and the end each would reach, as a range::

    now:   starts 14:02, ends ~16:40 (16:21-16:58)
    tuned: starts 14:05, ends ~15:10 (15:02-15:19)

Times are the cluster's clock as sbatch gave them; a day other than the first start's is
written out, and seconds are shown where the whole run is shorter than ten minutes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tuneadvisor.advisor.finish import Finish, Steps

HEADING = "Time to result (sbatch --test-only: nothing submitted)"


def _clock(when: datetime, day: datetime, seconds: bool) -> str:
    text = when.strftime("%H:%M:%S" if seconds else "%H:%M")
    return text if when.date() == day.date() else f"{when:%Y-%m-%d} {text}"


def finish_text(done: Finish, day: datetime) -> str:
    """``starts 14:02, ends ~16:40 (16:21-16:58)``"""
    seconds = done.run_s.high < 600
    low, high = (_clock(t, day, seconds) for t in (done.end_low, done.end_high))
    return (
        f"starts {_clock(done.start, day, seconds)}, ends ~{_clock(done.end, day, seconds)} "
        f"({low}-{high})"
    )


def time_to_result_lines(
    steps: Steps | None,
    now: Finish | None,
    tuned: Finish | None,
    verdict: str | None,
    missing: tuple[str, ...] = (),
    tuned_label: str = "tuned",
) -> list[str]:
    """The section's lines, indented under its heading; [] where nothing is known.
    ``tuned_label``: what the tuned script is called (the ledger's "winner")."""
    if now is None and tuned is None and not missing:
        return []
    first = now or tuned
    out = [HEADING + (f", on {first.start:%Y-%m-%d}:" if first is not None else ":")]
    if steps is not None:
        out.append(f"  the run: {steps.how}")
    width = len(tuned_label) + 2
    if now is not None:
        out.append(f"  {'now:':<{width}}{finish_text(now, now.start)}")
    if tuned is not None:
        day = first.start if first else tuned.start
        out.append(f"  {tuned_label + ':':<{width}}{finish_text(tuned, day)}")
    if verdict:
        out.append(f"  {verdict}")
    out += [f"  not known: {why}" for why in missing]
    return out


def finish_json(done: Finish | None) -> dict[str, Any] | None:
    if done is None:
        return None
    return {
        "start": done.start.isoformat(),
        "run_s": done.run_s.as_json(),
        "end": {
            "low": done.end_low.isoformat(),
            "expected": done.end.isoformat(),
            "high": done.end_high.isoformat(),
        },
    }


def steps_json(steps: Steps | None) -> dict[str, Any] | None:
    if steps is None:
        return None
    return {"count": steps.count, "how": steps.how, "at_most": steps.at_most}


def time_to_result_json(
    steps: Steps | None,
    now: Finish | None,
    tuned: Finish | None,
    verdict: str | None,
    not_known: list[str],
    tuned_key: str = "tuned",
) -> dict[str, Any]:
    """The JSON of a time to result: ``tuned_key`` names the second script (``winner`` in
    the tune ledger)."""
    return {
        "steps": steps_json(steps),
        "now": finish_json(now),
        tuned_key: finish_json(tuned),
        "verdict": verdict,
        "not_known": not_known,
    }
