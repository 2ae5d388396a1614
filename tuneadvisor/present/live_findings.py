"""How a watch's live findings read: each with the evidence window it rests on, in the
headless summary (several lines) and on the watch screen (one line)."""

from __future__ import annotations

from tuneadvisor.present.advice_text import finding_lines
from tuneadvisor.present.counts import counted
from tuneadvisor.present.findings import finding_heading
from tuneadvisor.watch.session import LiveFinding


def findings_heading(window_s: float) -> str:
    return f"Findings (evidence: the last {window_s:g} s):"


# Without a GPU sampled the rules on the GPU's idle time or use cannot fire (every live
# input-pipeline rule but loader-workers-busy-live weighs it against the cores' use). Said,
# so that "none" does not read as "nothing wrong"; short, so that the summary's line fits 100
# columns.
NO_GPU = "no GPU sampled: the GPU rules cannot fire"


def no_findings(window_s: float, brief: bool = False, gpu: bool = True) -> str:
    """'Findings: none (evidence: the last 60 s)'; ``brief`` (the screen): '... none in the
    last 60 s'; ``gpu`` False: why none could show."""
    why = "" if gpu else f"; {NO_GPU}"
    if brief:
        return f"Findings: none in the last {window_s:g} s{why}"
    return f"Findings: none (evidence: the last {window_s:g} s{why})"


def summary_lines(live: LiveFinding) -> list[str]:
    """The finding as the text report writes it, with its window under the heading."""
    lines = finding_lines(live.finding)
    lines.insert(
        1,
        f"    window: {live.window_start:.1f}-{live.window_end:.1f} s, "
        f"{counted(live.rounds, 'round')}; firing since {live.since:.1f} s",
    )
    return lines


def screen_line(live: LiveFinding, evidence: int = 3) -> str:
    """One line: heading, the first ``evidence`` values as they are, window and since."""
    f = live.finding
    values = ", ".join(f"{e.label} {e.value}" for e in f.evidence[:evidence])
    return (
        f"{finding_heading(f)} · {values} · window "
        f"{live.window_start:.0f}-{live.window_end:.0f} s ({counted(live.rounds, 'round')}), "
        f"since {live.since:.0f} s"
    )
