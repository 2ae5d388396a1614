"""The index at the top of bench/RESULTS.md: one rerun command per section, with the date and
the load average of the run that wrote it.

RESULTS.md is written by several scripts, each owning one part: ``bash bench/run.sh`` (the
profile-viewer targets 1-3d) writes the head of the file, and ``watch_bench.py``,
``slurm_bench.py`` and ``training_advice.py`` each replace only the text between their own
``<!-- NAME:begin -->`` / ``<!-- NAME:end -->`` markers. The index sits between
``<!-- index:begin -->`` / ``<!-- index:end -->`` and is rebuilt from the file itself (each
part's "Recorded ... by `COMMAND`" line and its load average), so any script may refresh it:
``refresh(text)`` returns the text with a fresh index.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

INDEX_BEGIN = "<!-- index:begin -->"
INDEX_END = "<!-- index:end -->"
MARKER_RE = re.compile(r"<!-- ([a-z0-9-]+):begin -->")


@dataclass(frozen=True)
class Part:
    marker: str | None  # None: the head of the file, written by bench/run.sh
    what: str
    default_cmd: str
    needs: str = ""


PARTS = (
    Part(None, "profile viewer, targets 1-3d", "bash bench/run.sh"),
    Part(
        "training-bench",
        "relaunch / grid / `tune` / re-apply, T1-T4 (issues 6, 12)",
        ".venv/bin/python bench/training_advice.py --steps 12 --repeats 2",
    ),
    Part(
        "watch-bench",
        "`tuneadvisor watch`, W1-W4 (issue 5)",
        ".venv/bin/python bench/watch_bench.py --duration 30",
        "tmux",
    ),
    Part(
        "gpm-bench",
        "GPM in a `watch` round, G1-G3 (issue 25)",
        ".venv/bin/python bench/gpm_bench.py --rounds 2000",
    ),
    Part(
        "slurm-bench",
        "local Slurm cluster, S1-S3 (issue 4)",
        ".venv/bin/python bench/slurm_bench.py --rounds 2",
        "the local cluster (`scripts/slurm-local.sh`); `--cold` is root-only and disruptive",
    ),
    Part(
        "multinode-bench",
        "multi-node test cluster, M1-M4 (issue 14)",
        ".venv/bin/python bench/multinode_bench.py --rounds 3",
        "root on Debian: it stops, purges and restarts `scripts/slurm-multinode.sh`",
    ),
    Part(
        "fuzz",
        "hostile-input campaign, per parser and end to end (issues 13, 23)",
        ".venv/bin/python bench/fuzz.py --inputs 3000 --e2e-inputs 1000 --seed 23 --record",
    ),
    Part(
        "fuzz-bounds",
        "inputs that grow too fast, end to end (issue 23, points 1-8)",
        ".venv/bin/python bench/fuzz_bounds.py --record",
    ),
    Part(
        "restructure-bench",
        "before and after the restructuring (issue 10)",
        ".venv/bin/python bench/restructure_compare.py --before ca2a38a",
    ),
    Part(
        "startup-bench",
        "`report` start-up vs line_profiler, the 50,000-line report and its memory, S1-S3 "
        "(issues 19, 29)",
        ".venv/bin/python bench/startup_bench.py --before fca2d76",
    ),
    Part(
        "joblog-bench",
        "`report --log` on a large job log (issue 20)",
        ".venv/bin/python bench/joblog_bench.py --mb 100 --runs 3",
    ),
    Part(
        "prediction-bench",
        "step-time model's prediction from each kind of evidence, idle machine (issues 21, 31)",
        ".venv/bin/python bench/prediction_bench.py --steps 40 --warmup 8 --repeats 3",
    ),
    Part(
        "prediction-bench-load",
        "the same on a loaded machine: CPU burners beside every run (issue 31)",
        ".venv/bin/python bench/prediction_bench.py --steps 40 --warmup 8 --repeats 3 --load 1",
    ),
    Part(
        "receive-cost",
        "receiving a batch from a DataLoader worker, the model's RECEIVE_S (issue 31)",
        ".venv/bin/python bench/receive_cost.py --batches 80",
    ),
    Part(
        "omp-oversubscription",
        "intra-op threads following the cores beside workers, the model's OVERSUBSCRIBED_MOST "
        "(issue 31)",
        ".venv/bin/python bench/omp_oversubscription.py --repeats 3",
    ),
    Part(
        "regex-worst",
        "backtracking patterns, worst search before and after (issue 34, class 5)",
        ".venv/bin/python bench/regex_worst.py --base 4318e5e --record",
    ),
    Part(
        "trace-bench",
        "torch.profiler traces: HTA agreement, speed and memory, 1 GB, `report` (issue 22)",
        "bench/.hta-venv/bin/python bench/trace_bench.py",
        "HolisticTraceAnalysis 0.5.0 in a venv of its own: `bash bench/hta_venv.sh`; "
        "~2 GB free in the temp folder",
    ),
    Part(
        "tune-job-bench",
        "`tune --job`: trials to a decision against a plain sweep (issue 32)",
        ".venv/bin/python bench/tune_job_bench.py --pairs 3 --steps 60 --repeats 3 --record",
        "the local cluster (`scripts/slurm-local.sh`)",
    ),
)

RECORDED_RE = re.compile(r"Recorded (\d{4}-\d\d-\d\d \d\d:\d\d) UTC by `([^`]+)`")
LOAD_RE = re.compile(r"[Ll]oad average ([\d.]+) at the start, ([\d.]+) at the end")
HEAD_LOAD_RE = re.compile(r"\| load average at (start|end) \| ([\d.]+)")


def split_sections(text: str) -> tuple[str, str]:
    """(head, the marked sections and anything after them). The head is run.sh's part."""
    for m in MARKER_RE.finditer(text):
        if m.group(1) != "index":
            return text[: m.start()], text[m.start() :]
    return text, ""


def _section(text: str, marker: str | None) -> str | None:
    if marker is None:
        return split_sections(text)[0]
    begin, end = f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"
    if begin not in text or end not in text:
        return None
    return text.split(begin, 1)[1].split(end, 1)[0]


def _row(text: str, part: Part) -> str:
    body = _section(text, part.marker)
    cmd, when, load = part.default_cmd, "not recorded yet", "-"
    if body is not None:
        if part.marker is None:
            body = body.split(INDEX_END, 1)[-1]
        rec = RECORDED_RE.search(body)
        if rec:
            when, cmd = rec.group(1), rec.group(2)
        if part.marker is None:
            loads = dict(HEAD_LOAD_RE.findall(body))
            if loads:
                load = f"{loads.get('start', '?')} → {loads.get('end', '?')}"
        else:
            m = LOAD_RE.search(body)
            if m:
                load = f"{m.group(1)} → {m.group(2)}"
    needs = f" (needs {part.needs})" if part.needs else ""
    return f"| {part.what} | `{cmd}`{needs} | {when} | {load} |"


def render_index(text: str) -> str:
    return "\n".join(
        [
            INDEX_BEGIN,
            "## How to rerun",
            "",
            "Each part of this file is written by its own command, which replaces only that part "
            "(run them one at a time: they compete for the same cores). From the repository "
            "root:",
            "",
            "| Part | Rerun with | Last recorded (UTC) | 1-min load average, start → end |",
            "|---|---|---|---|",
            *(_row(text, part) for part in PARTS),
            "",
            f"The machine ({os.cpu_count()} CPUs here) is shared with other work: a load "
            "average near or above the CPU count means the timings of that run are inflated "
            "(each part gives its own details). This index is rebuilt whenever "
            "`bench/run.sh` or `bench/training_advice.py` writes this file; each part's own "
            '"Recorded" line is the authority.',
            INDEX_END,
        ]
    )


def with_section(text: str, section: str, begin: str, end: str) -> str:
    """``text`` with the part from ``begin`` to ``end`` replaced by ``section`` (which holds
    both markers), or ``section`` appended when the part is not there yet."""
    if begin in text:
        head, rest = text.split(begin, 1)
        return head + section + rest.split(end, 1)[1]
    return text.rstrip() + "\n\n" + section + "\n"


def record_section(section: str, begin: str, end: str) -> None:
    """Write ``section`` (which holds both markers) into bench/RESULTS.md in place of the part
    between them, and rebuild the index: what every bench's ``--record`` does."""
    results = Path(__file__).resolve().parent / "RESULTS.md"
    results.write_text(refresh(with_section(results.read_text(), section, begin, end)))


def refresh(text: str) -> str:
    """``text`` with its index rebuilt (inserted after the first heading if absent)."""
    index = render_index(text)
    if INDEX_BEGIN in text and INDEX_END in text:
        before, rest = text.split(INDEX_BEGIN, 1)
        after = rest.split(INDEX_END, 1)[1]
        return before + index + after
    lines = text.split("\n", 1)
    if lines[0].startswith("# "):
        return lines[0] + "\n\n" + index + "\n" + (lines[1] if len(lines) > 1 else "")
    return index + "\n\n" + text
