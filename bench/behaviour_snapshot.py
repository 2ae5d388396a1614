"""Every report and apply output over the project's own inputs, written to one folder, so
that a restructuring can be checked to change nothing a user sees:

    .venv/bin/python bench/behaviour_snapshot.py OUT        # in the tree before, then after
    diff -r BEFORE AFTER

Cases: the bundled examples (text, markdown, JSON, apply), every job script of the fixtures
and of the real-world corpus (report and apply, alone and with each real seff file), every
real profile table and .lprof, every real accounting file with the example's job. Each case
is one command in this process (cli.main), its exit status, stdout and stderr kept; the
tmp folder the outputs go to is replaced by a fixed name, so two trees compare."""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures"
REAL = FIX / "realworld"
EX = ROOT / "examples" / "mnist"


def cases() -> list[tuple[str, list[str]]]:
    out: list[tuple[str, list[str]]] = []
    ex = [str(EX / "24752610.lprof"), "--job", str(EX / "mnist.sbatch")]
    for fmt in ("text", "markdown", "json"):
        out.append((f"example.{fmt}", ["report", *ex, "--format", fmt]))
    jobs = sorted(FIX.glob("jobscripts/*.sh")) + sorted(REAL.glob("jobscripts/*.sh"))
    seffs = sorted(REAL.glob("accounting/*.seff.txt"))
    for job in jobs:
        name = f"{job.parent.parent.name}-{job.stem}"
        out.append((f"job.{name}", ["report", "--job", str(job), "--format", "json"]))
        out.append((f"apply.{name}", ["apply", "--job", str(job), "-o", "@OUT@/t.sh"]))
        for seff in seffs[:4]:
            out.append(
                (
                    f"apply.{name}.{seff.stem}",
                    ["apply", "--job", str(job), "--seff", str(seff), "-o", "@OUT@/t.sh"],
                )
            )
    for prof in sorted(REAL.glob("profiles/*")):
        if prof.suffix in (".txt", ".lprof"):
            out.append((f"profile.{prof.name}", ["report", str(prof), "--format", "json"]))
    for acct in sorted(REAL.glob("accounting/*")):
        if acct.name != "MANIFEST.md":
            opt = "--seff" if acct.name.endswith(".seff.txt") else "--sacct"
            out.append((f"acct.{acct.name}", ["report", *ex, opt, str(acct), "--format", "json"]))
            out.append(
                (f"acctapply.{acct.name}", ["apply", *ex, opt, str(acct), "-o", "@OUT@/t.sh"])
            )
    # Training scripts under the example's job and seff: the plan's script settings written
    # as launch-line options or patches (literals, defaults, helper modules).
    seff = REAL / "accounting" / "csc-seff-puhti-2nodes.seff.txt"
    scripts = sorted(FIX.glob("scan_scripts/*.py")) + sorted(FIX.glob("training_code/*.py"))
    for script in [*scripts, FIX / "helper_loader" / "train.py"]:
        name = f"{script.parent.name}-{script.stem}"
        args = [*ex, "--script", str(script), "--seff", str(seff)]
        out.append((f"script.{name}", ["report", *args, "--format", "json"]))
        out.append((f"scriptapply.{name}", ["apply", *args, "-o", "@OUT@/t.sh"]))
    helper = FIX / "helper_loader"
    out.append(("helper.job", ["report", "--job", str(helper / "job.sbatch"), "--format", "json"]))
    out += _measured_cases(ex)
    return out


def _measured_cases(ex: list[str]) -> list[tuple[str, list[str]]]:
    """The step-time model's and the plan's other evidence (issue 29): every metrics file
    with the example and with its job alone, every trace, the multi-rank profiles, and a site
    file whose node caps the cores and memory, alone and with each real seff file."""
    out: list[tuple[str, list[str]]] = []
    job = ["--job", str(EX / "mnist.sbatch")]
    recordings = [FIX / "watch" / "replay-a100.jsonl", FIX / "watch" / "storage-a100.jsonl"]
    metrics = [
        *recordings,
        *sorted(REAL.glob("nvidia-smi/*.csv")),
        *sorted(REAL.glob("dcgm/*.txt")),
    ]
    for m in metrics:
        out.append((f"metrics.{m.name}", ["report", *ex, "--metrics", str(m), "--format", "json"]))
        out.append(
            (f"metricsjob.{m.name}", ["report", *job, "--metrics", str(m), "--format", "json"])
        )
    traces = [p for p in sorted(REAL.glob("traces*/*")) if p.name != "MANIFEST.md"]
    for t in traces:
        out.append(
            (f"trace.{t.parent.name}-{t.name}", ["report", str(t), *job, "--format", "json"])
        )
    for ranks in sorted(p for p in (FIX / "multinode").iterdir() if p.is_dir()):
        lprofs = sorted(str(p) for p in ranks.glob("*.lprof"))
        out.append((f"ranks.{ranks.name}", ["report", *lprofs, "--format", "json"]))
    site = ["--site", str(ROOT / "bench" / "snapshot-site.toml")]
    out.append(("site.replay", ["report", *ex, *site, "--metrics", str(recordings[0])]))
    for seff in sorted(REAL.glob("accounting/*.seff.txt")):
        args = [*ex, *site, "--seff", str(seff), "--metrics", str(recordings[1])]
        out.append((f"site.{seff.name}", ["report", *args, "--format", "json"]))
        out.append((f"siteapply.{seff.name}", ["apply", *args, "-o", "@OUT@/t.sh"]))
    return out


def main() -> int:
    from tuneadvisor.cli import main as cli

    dest = Path(sys.argv[1])
    dest.mkdir(parents=True, exist_ok=True)
    for name, argv in cases():
        with tempfile.TemporaryDirectory() as tmp:
            args = [a.replace("@OUT@", tmp) for a in argv]
            stdout, stderr = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                try:
                    code = cli(args)
                except SystemExit as exc:
                    code = exc.code if isinstance(exc.code, int) else 1
            written = Path(tmp, "t.sh")
            tuned = written.read_text(errors="replace") if written.exists() else ""
            text = f"exit {code}\n--- stdout\n{stdout.getvalue()}\n--- stderr\n{stderr.getvalue()}"
            text += f"\n--- written\n{tuned}"
            (dest / name).write_text(text.replace(tmp, "@OUT@").replace(str(ROOT), "@ROOT@"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
