"""The comment a tuned job script carries about what it was tuned from: the evidence (named,
and its digest) and the allocation that evidence was measured under.

```
# tuneadvisor: tuned from profile 24752610.lprof (sha256:1a2b3c4d5e6f) measured with
#   --cpus-per-task=1 --mem=8G num_workers=1     (one line in the script)
```

A profile says nothing of the cores and memory its run had. Without this line, applying the
same profile to the script it wrote reads the measured run's allocation from the script as it
is now, and the advice compounds (4, 8, 16 ... cores). With it, the same evidence (same
digest) is read as measured under the recorded allocation, and the script stays as it is.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.jobscript.syntax import Line
from tuneadvisor.slurm.units import parse_memory, render_memory

PREFIX = "# tuneadvisor: tuned from "
# PREFIX, the evidence, then this, then the allocation as words after single spaces, then
# blanks. Read from the last such part back (as ``(?P<evidence>.*)`` took the longest): no
# pattern over the whole line, whose ``.*`` and ``(?: \S+)*`` backtracked.
_DIGEST = re.compile(r" \(sha256:(?P<digest>[0-9a-f]{8,64})\) measured with")
_UNTIDY = re.compile(r"[^\S ]| (?= )")  # a blank other than a space, or two spaces
_CORES = re.compile(r"--cpus-per-task=([1-9][0-9]{0,5})")
_MEM = re.compile(r"--mem=([0-9]+[KMGTkmgt]?)")
_WORKERS = re.compile(r"num_workers=([0-9]{1,6})")


@dataclass(frozen=True)
class TunedFrom:
    """What a tuned script was tuned from; the allocation is per task (cores) and per node
    (memory), as ``alloc.*``."""

    evidence: str  # "profile 24752610.lprof": names only, for the reader
    digest: str  # the evidence's sha256, in hex (a prefix of it)
    cpus_per_task: int | None = None
    mem_mib: float | None = None
    workers: int | None = None

    def line(self) -> str:
        alloc = []
        if self.cpus_per_task:
            alloc.append(f"--cpus-per-task={self.cpus_per_task}")
        if self.mem_mib:
            # rounded up: a recorded allocation is never less than the one measured
            alloc.append(f"--mem={render_memory(math.ceil(self.mem_mib))}")
        if self.workers is not None:
            alloc.append(f"num_workers={self.workers}")
        text = " ".join(alloc) if alloc else "the job script's request"
        return f"{PREFIX}{self.evidence} (sha256:{self.digest}) measured with {text}"

    def facts(self) -> dict[str, object]:
        facts: dict[str, object] = {"job.tuned_from.digest": self.digest}
        if self.cpus_per_task:
            facts["job.tuned_from.cpus_per_task"] = self.cpus_per_task
        if self.mem_mib:
            facts["job.tuned_from.mem_mib"] = float(self.mem_mib)
        if self.workers is not None:
            facts["job.tuned_from.workers"] = self.workers
        return facts


def _header(job: JobScript) -> tuple[Line, ...]:
    """The lines sbatch reads directives from (the line is only looked for there)."""
    end = job.first_command_line
    return job.lines if end is None else job.lines[: end - 1]


def _split(text: str) -> tuple[str, str, str] | None:
    """(evidence, digest, allocation) of a "tuned from" line, None if it is not one."""
    if not text.startswith(PREFIX):
        return None
    words_end = len(text.rstrip())
    # from ``tidy`` to ``words_end``: words after single spaces, wherever one starts
    tidy = max((m.end() for m in _UNTIDY.finditer(text, 0, words_end)), default=0)
    end = len(text)
    while (at := text.rfind(" (sha256:", len(PREFIX), end)) >= 0:
        digest = _DIGEST.match(text, at)
        after = digest.end() if digest is not None else 0
        if digest is not None and (
            after >= words_end or (after >= tidy and text.startswith(" ", after))
        ):
            evidence = text[len(PREFIX) : at]
            alloc = text[after:words_end]
            return None if "\n" in evidence else (evidence, digest["digest"], alloc)
        end = at + len(" (sha256:") - 1  # the next one back
    return None


def _parse(text: str) -> TunedFrom | None:
    parts = _split(text)
    if parts is None:
        return None
    evidence, digest, alloc = parts
    cores = _CORES.search(alloc)
    mem = _MEM.search(alloc)
    workers = _WORKERS.search(alloc)
    return TunedFrom(
        evidence=evidence,
        digest=digest,
        cpus_per_task=int(cores[1]) if cores else None,
        mem_mib=float(parse_memory(mem[1])) if mem else None,
        workers=int(workers[1]) if workers else None,
    )


def read_tuned_from(job: JobScript) -> TunedFrom | None:
    """The script's tuned-from line (the last one of its header, as a later apply wrote it)."""
    found = None
    for line in _header(job):
        if line.text.startswith(PREFIX):
            found = _parse(line.text) or found
    return found


def with_tuned_from(job: JobScript, stamp: TunedFrom) -> JobScript:
    """``job`` with its tuned-from line replaced (in place), else added after the last
    ``#SBATCH`` line (a comment between directives is skipped by sbatch), else after ``#!``."""
    lines = list(job.lines)
    text = stamp.line()
    ours = [line.number for line in _header(job) if line.text.startswith(PREFIX)]
    if ours:
        for number in ours[1:]:  # one line, however many an edited file had
            lines[number - 1] = Line(number, "", "")
        old = lines[ours[0] - 1]
        lines[ours[0] - 1] = Line(old.number, text, old.ending)
    else:
        anchor = max((t.line for t in job.tokens), default=1 if job.text.startswith("#!") else 0)
        ending = job.line_ending
        if anchor and lines[anchor - 1].ending == "":
            last = lines[anchor - 1]
            lines[anchor - 1] = Line(last.number, last.text, ending)
            lines.insert(anchor, Line(0, text, ""))
        else:
            lines.insert(anchor, Line(0, text, ending))
    return JobScript.parse("".join(line.text + line.ending for line in lines), job.path)
