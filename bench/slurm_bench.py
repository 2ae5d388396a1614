"""Benchmarks of the local Slurm cluster and the submit-to-advice loop (issue 4), recorded in
bench/RESULTS.md (only its own section, between the slurm-bench markers).

    .venv/bin/python bench/slurm_bench.py [--cold] [--rounds N]

1. cluster start, warm: scripts/slurm-local.sh with everything up (what every test run pays
   after the first);
2. cluster start from nothing (--cold, root only, disruptive: it stops the local cluster,
   purges the Slurm, MariaDB and munge packages with what they pulled in, and deletes the
   cluster's folder, seff included), then scripts/slurm-local.sh, with its phases; the .deb
   files stay in apt's cache, as they would on a CI image with a warm mirror;
3. `tuneadvisor apply --jobid BASE --submit` to the advice on the finished job
   (`report --jobid NEW` returning), minus the job's own run time (sacct Elapsed): the tool,
   the scheduler's start latency, noticing the end, the accounting lag and the report.
   BASE is a finished CPU job whose advice changes the script (more cores, less memory).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tuneadvisor.slurm.client import SlurmClient  # noqa: E402

RESULTS = REPO / "bench" / "RESULTS.md"
BEGIN = "<!-- slurm-bench:begin -->"
END = "<!-- slurm-bench:end -->"
ROOT = Path(os.environ.get("SLURM_ROOT", "/tmp/tuneadvisor-slurm"))
PACKAGES = ["munge", "slurmctld", "slurmd", "slurm-client", "slurmdbd", "mariadb-server",
            "libslurm-perl", "libslurmdb-perl"]  # fmt: skip
BURN = """\
import time

held = bytearray(20 << 20)
end = time.time() + 2
while time.time() < end:
    pass
"""
BASE = """\
#!/bin/bash
#SBATCH --job-name=bench-base
#SBATCH --cpus-per-task=1
#SBATCH --mem=8G
#SBATCH --time=00:30:00
python burn.py
"""


def env() -> dict[str, str]:
    out = dict(os.environ)
    out["SLURM_CONF"] = str(ROOT / "etc" / "slurm.conf")
    out["PATH"] = os.pathsep.join([str(ROOT / "bin"), str(REPO / ".venv" / "bin"), out["PATH"]])
    return out


def start() -> tuple[float, str]:
    t0 = time.perf_counter()
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "slurm-local.sh")], capture_output=True, text=True
    )
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"slurm-local.sh failed:\n{done.stdout}\n{done.stderr}")
    return wall, done.stdout


def cold() -> tuple[float | None, list[str]]:
    """Purge everything under the start script's lock (so no test run starts the cluster
    half-way), then start it; (None, why) when another run installed it first."""
    queued = subprocess.run(["squeue", "-h"], env=env(), capture_output=True, text=True)
    if queued.stdout.strip():
        sys.exit(f"--cold: jobs are queued or running, someone uses the cluster:\n{queued.stdout}")
    subprocess.run(["bash", str(REPO / "scripts" / "slurm-local-stop.sh"), "--purge"], check=True)
    # under the start script's lock: a test run starting the cluster meanwhile waits
    purge = (
        f"apt-get purge -y -q {' '.join(PACKAGES)} && apt-get autoremove --purge -y -q"
        f" && rm -rf {ROOT}"
    )
    apt = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["flock", f"{ROOT}.lock", "bash", "-c", purge], env=apt, check=True,
                   capture_output=True)  # fmt: skip
    wall, out = start()
    if "installing:" not in out:
        return None, ["another run installed the cluster first: not measured"]
    phases = [line for line in out.splitlines() if re.match(r"\[\s*\d+\.\d+s\]", line)]
    return wall, phases


def one_round(client: SlurmClient, base: str, folder: Path, n: int) -> dict[str, float]:
    tuned = folder / f"round-{n}.sbatch"
    run = {"env": env(), "cwd": folder, "capture_output": True, "text": True}
    t0 = time.perf_counter()
    done = subprocess.run(
        ["tuneadvisor", "apply", "--jobid", base, "--submit", "-o", str(tuned)],
        **run,  # type: ignore[call-overload]
    )
    t1 = time.perf_counter()
    match = re.search(r"submitted batch job (\d+)", done.stdout)
    if match is None:
        sys.exit(f"apply --submit did not submit:\n{done.stdout}\n{done.stderr}")
    new = match.group(1)
    client.wait_finished(new, 600)
    t2 = time.perf_counter()
    report = subprocess.run(["tuneadvisor", "report", "--jobid", new], **run)  # type: ignore[call-overload]
    t3 = time.perf_counter()
    if report.returncode != 0:
        sys.exit(f"report --jobid {new} failed: {report.stderr}")
    job = client.accounting(new)
    assert job is not None and job.elapsed_s is not None
    return {
        "total": t3 - t0,
        "apply": t1 - t0,
        "until_end_seen": t2 - t1,
        "report": t3 - t2,
        "elapsed": job.elapsed_s,
        "overhead": (t3 - t0) - job.elapsed_s,
    }


def loop(rounds: int) -> list[dict[str, float]]:
    client = SlurmClient(env=env())
    folder = Path(tempfile.mkdtemp(prefix="slurm-bench-"))
    (folder / "burn.py").write_text(BURN)
    (folder / "base.sbatch").write_text(BASE)
    base = client.submit(folder / "base.sbatch", chdir=str(folder))
    client.wait_finished(base, 600)
    client.poll_accounting(base)
    return [one_round(client, base, folder, n) for n in range(rounds)]


def _median(rows: list[dict[str, float]], key: str) -> str:
    values = [r[key] for r in rows]
    return f"{statistics.median(values):.2f} s (min {min(values):.2f}, max {max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cold", action="store_true", help="also measure from nothing (root)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    load0 = os.getloadavg()[0]
    cold_wall, phases = cold() if args.cold else (None, [])
    warm = sorted(start()[0] for _ in range(5))
    rows = loop(args.rounds)
    load1 = os.getloadavg()[0]
    s1 = "not measured in this run (--cold)" if not phases else phases[0]
    if cold_wall is not None:
        s1 = f"{cold_wall:.1f} s"
    lines = [
        BEGIN,
        "## Local Slurm cluster and submit-to-advice (issue 4)",
        "",
        f"Recorded {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by "
        f"`.venv/bin/python bench/slurm_bench.py{' --cold' if args.cold else ''} "
        f"--rounds {args.rounds}` (rewrites only this section). Slurm 22.05.8 (Debian 12), one "
        f"node of {os.cpu_count()} CPUs. Load average {load0:.2f} at the start, {load1:.2f} at "
        "the end.",
        "",
        "| # | What | Measured |",
        "|---|------|----------|",
        f"| S1 | cluster start from nothing: apt install, seff, MariaDB, daemons, node idle | "
        f"{s1} |",
        f"| S2 | cluster start, warm (all up; every test run after the first) | "
        f"median {statistics.median(warm):.2f} s (max {warm[-1]:.2f}, n=5) |",
        f"| S3 | `apply --jobid --submit` to `report --jobid` done, minus the job's run time | "
        f"median {_median(rows, 'overhead')} |",
        "",
    ]
    if phases:
        lines += [
            "From nothing, as slurm-local.sh timed its phases:",
            "",
            "```",
            *phases,
            "```",
            "",
        ]
    elapsed = ", ".join(f"{r['elapsed']:.0f}" for r in rows)
    lines += [
        f"S3, {len(rows)} rounds of a 2 s CPU job (sacct Elapsed, whole seconds: {elapsed}):",
        "",
        f"- `apply --jobid BASE --submit` (scontrol, sacct, seff, sbatch script, sinfo, write, "
        f"sbatch): {_median(rows, 'apply')}",
        f"- from submission until the end is seen (queue start latency + the run + polling "
        f"scontrol every 0.25 s): {_median(rows, 'until_end_seen')}",
        f"- `report --jobid NEW` once the job has left the queue (accounting lag included): "
        f"{_median(rows, 'report')}",
        f"- total: {_median(rows, 'total')}",
        END,
    ]
    text = RESULTS.read_text()
    section = "\n".join(lines) + "\n"
    if BEGIN in text and END in text:
        text = text[: text.index(BEGIN)] + section + text[text.index(END) + len(END) + 1 :]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    RESULTS.write_text(text)
    print(section)


if __name__ == "__main__":
    main()
