"""How a finding reads: its heading, evidence values, suggestions and rationale, and the
order findings come in (by cause, most severe first). The text report, the TUI's cards and
the watch summary all write findings with these."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tuneadvisor.advisor.findings import Evidence, Finding, Suggestion


def finding_heading(finding: Finding) -> str:
    """'[warning] dataloader-bound: The DataLoader is the bottleneck'."""
    return f"[{finding.severity.value}] {finding.id}: {finding.title}"


# count units said in the singular for a count of one ("1 core", not "1 cores")
_SINGULAR = {"cores": "core", "workers": "worker", "nodes": "node", "tasks": "task",
             "GPUs": "GPU", "gpus": "gpu", "steps": "step", "ranks": "rank",
             "threads": "thread", "jobs": "job"}  # fmt: skip


def format_value(value: object, unit: str = "") -> str:
    """An evidence value as the text report writes it: '80.1', '1 core', '4 cores', '0.5 GiB'.

    (The markdown report and the watch screen write the value as it is, ``str(value)``.)"""
    text = f"{value:g}" if isinstance(value, float) else str(value)
    if isinstance(value, int | float) and not isinstance(value, bool) and value == 1:
        unit = _SINGULAR.get(unit, unit)
    return f"{text} {unit}" if unit and unit != "fraction" else text


def evidence_text(item: Evidence) -> tuple[str, str]:
    """(label, 'value unit') of one evidence item; no unit where the label names it."""
    named = item.label.endswith(f"({item.unit})")
    return item.label, format_value(item.value, "" if named else item.unit)


def suggestion_items(suggest: Suggestion, export_env: bool = False) -> list[tuple[str, str]]:
    """(section, change): ('sbatch', '--cpus-per-task=4'), ('script', 'num_workers=3'),
    ('env', 'OMP_NUM_THREADS=4'), or 'export OMP_NUM_THREADS=4' with ``export_env`` (the
    TUI's cards; the reports name the section instead)."""
    out = [("sbatch", f"--{key}={value}") for key, value in suggest.sbatch.items()]
    out += [("script", f"{key}={value}") for key, value in suggest.script.items()]
    env = "export " if export_env else ""
    out += [("env", f"{env}{key}={value}") for key, value in suggest.env.items()]
    return out


def suggestion_texts(suggest: Suggestion) -> list[str]:
    """'--cpus-per-task=4', 'num_workers=3', 'export OMP_NUM_THREADS=4'."""
    return [change for _, change in suggestion_items(suggest, export_env=True)]


def rationale_line(rationale: str) -> str:
    """The rule's rationale as one paragraph (the reports wrap it themselves)."""
    return " ".join(rationale.split())


def rationale_text(rationale: str) -> str:
    """The rule's rationale as paragraphs to wrap (its own line breaks are only layout)."""
    paragraphs = [" ".join(p.split()) for p in rationale.strip().split("\n\n")]
    return "\n\n".join(p for p in paragraphs if p)


def ordered_findings(findings: Iterable[Finding]) -> list[Finding]:
    """The report's order: by group (the cause), then the most severe first, then by id."""
    return sorted(findings, key=lambda f: (f.group, -f.severity.rank, f.id))


def grouped_findings(findings: Iterable[Finding]) -> list[tuple[str, list[Finding]]]:
    """(group, its findings) in the report's order."""
    groups: list[tuple[str, list[Finding]]] = []
    for finding in ordered_findings(findings):
        if groups and groups[-1][0] == finding.group:
            groups[-1][1].append(finding)
        else:
            groups.append((finding.group, [finding]))
    return groups


def top_finding(findings: Sequence[Finding]) -> Finding | None:
    """The finding to show first: the most severe, the earliest of those in report order."""
    ordered = ordered_findings(findings)
    return max(ordered, key=lambda f: f.severity.rank) if ordered else None


def findings_summary(findings: Sequence[Finding]) -> str:
    """'2 findings: 1 error, 1 warning' (most severe first); 'no findings'."""
    if not findings:
        return "no findings"
    counts: dict[str, int] = {}
    for finding in sorted(findings, key=lambda f: -f.severity.rank):
        counts[finding.severity.value] = counts.get(finding.severity.value, 0) + 1
    noun = "finding" if len(findings) == 1 else "findings"
    return f"{len(findings)} {noun}: " + ", ".join(f"{n} {s}" for s, n in counts.items())
