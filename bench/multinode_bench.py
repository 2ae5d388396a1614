"""Benchmarks of the multi-node test cluster (issue 14), recorded in bench/RESULTS.md (only
its own section, between the multinode-bench markers). Root on Debian only.

    .venv/bin/python bench/multinode_bench.py [--rounds N]

1. cold start: scripts/slurm-multinode-stop.sh --purge (daemons, namespaces, state and the
   accounting database gone; packages and seff stay), then scripts/slurm-multinode.sh;
2. warm start: the start script again with everything up (what every test run pays);
3. a 2-node DDP job (the bundled slurm/mnist_ddp.sbatch with --nodes=2 --ntasks-per-node=2,
   gloo, synthetic MNIST, one epoch of 3 steps): sbatch to the end seen, and sacct's Elapsed;
4. the merged watch's cost per node: `watch --job ID` of a running 3-node job from the login
   node, each node's sampler thread CPU (the summary's busiest node) and the whole watch
   process on the login node.
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
RESULTS = REPO / "bench" / "RESULTS.md"
BEGIN, END = "<!-- multinode-bench:begin -->", "<!-- multinode-bench:end -->"
ROOT = Path("/tmp/ta-multinode")
LOGIN = str(ROOT / "bin" / "ta-login")
ENV = {
    **{k: v for k, v in os.environ.items() if k != "SLURM_CONF"},
    "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    "PYTHONPATH": str(REPO),
    "OMP_NUM_THREADS": "1",
}


def timed(*args: str, env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
    return time.perf_counter() - start, done


def login(*args: str, cwd: Path) -> str:
    return subprocess.run(
        [LOGIN, *args], env=ENV, cwd=cwd, capture_output=True, text=True, check=True
    ).stdout


def start(stop_first: bool) -> tuple[float, str]:
    if stop_first:
        subprocess.run(["bash", str(REPO / "scripts/slurm-multinode-stop.sh"), "--purge"],
                       env=ENV, capture_output=True, check=True)  # fmt: skip
    script = str(REPO / "scripts/slurm-multinode.sh")
    seconds, done = timed("bash", script, env={**ENV, "NODES": "3"})
    return seconds, done.stdout


def job_folder(tmp: Path) -> Path:
    data = tmp / "data"
    subprocess.run([sys.executable, str(REPO / "scripts/make_mnist_data.py"), str(data),
                    "--train", "768", "--test", "64", "--quiet"], env=ENV, check=True)  # fmt: skip
    (tmp / "training").symlink_to(REPO / "training")
    (tmp / "mnist_ddp.sbatch").write_text((REPO / "slurm/mnist_ddp.sbatch").read_text())
    return tmp


def wait_gone(job: str, cwd: Path) -> None:
    while login("squeue", "-h", "-j", job, cwd=cwd).strip():
        time.sleep(0.25)


def ddp_job(folder: Path) -> tuple[float, int]:
    t0 = time.perf_counter()
    out = login("sbatch", "--parsable", "--nodes=2", "--ntasks-per-node=2", "--cpus-per-task=1",
                "--mem=4000M", "mnist_ddp.sbatch", cwd=folder)  # fmt: skip
    job = out.strip().split(";")[0]
    wait_gone(job, folder)
    wall = time.perf_counter() - t0
    while True:  # accounting lags the end (README of the recipe, problem 6)
        fields = "JobName,State,ElapsedRaw"
        line = login("sacct", "-X", "-n", "-P", "-j", job, "-o", fields, cwd=folder)
        name, state, elapsed = [*line.strip().split("|"), "", "", ""][:3]
        if name == "mnist-ddp" and state not in ("", "RUNNING") and elapsed:
            assert state == "COMPLETED", line
            return wall, int(elapsed)
        time.sleep(0.25)


WATCHED = """#!/bin/bash
#SBATCH --nodes=3
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=2
#SBATCH --mem=3000M
export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export MASTER_PORT=$((10000 + SLURM_JOB_ID % 20000))
srun python training/mnist_ddp.py --epochs 1000 --num-workers 1 --batch-size 16 --log-interval 1000
"""


def watch_cost(folder: Path, seconds: int) -> str:
    (folder / "watched.sbatch").write_text(WATCHED)
    job = login("sbatch", "--parsable", "watched.sbatch", cwd=folder).strip()
    try:
        out = folder / f"slurm-{job}.out"
        while not (out.exists() and '"event": "step"' in out.read_text(errors="replace")):
            time.sleep(0.5)
        return login(sys.executable, "-m", "tuneadvisor", "watch", "--headless", "--job", job,
                     "--interval", "1", "--duration", str(seconds), cwd=folder)  # fmt: skip
    finally:
        login("scancel", job, cwd=folder)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    load0 = os.getloadavg()[0]
    cold, cold_log = start(stop_first=True)
    warm = [start(stop_first=False)[0] for _ in range(args.rounds)]
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        folder = job_folder(Path(tmp))
        jobs = [ddp_job(folder) for _ in range(args.rounds)]
        summary = watch_cost(folder, 20)
    sampler = re.search(r"^Sampler: .*$", summary, re.M)
    cores = re.search(r"^CPU: .*$", summary, re.M)
    nodes = re.findall(r"^Node .*$", summary, re.M)
    walls = [w for w, _ in jobs]
    rows = [
        ("M1", "cluster start from stopped and purged (namespaces, munged, MariaDB datadir, "
         "slurmdbd, slurmctld, 3 slurmd; packages and seff kept)", f"{cold:.1f} s"),
        ("M2", "cluster start, warm (all up; what every test run pays)",
         f"median {statistics.median(warm):.2f} s (max {max(warm):.2f}, n={len(warm)})"),
        ("M3", "2-node DDP job (mnist_ddp.sbatch, 2 nodes x 2 gloo ranks, 3 steps, kernprof "
         "per rank): sbatch to the end seen",
         f"median {statistics.median(walls):.1f} s (min {min(walls):.1f}, max "
         f"{max(walls):.1f}); sacct Elapsed {', '.join(str(e) for _, e in jobs)} s"),
        ("M4", "merged `watch --job` of a 3-node job from the login node, 20 s at 1 s",
         sampler.group(0) if sampler else "?"),
    ]  # fmt: skip
    table = "\n".join(f"| {n} | {what} | {value} |" for n, what, value in rows)
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    how = f"`.venv/bin/python bench/multinode_bench.py --rounds {args.rounds}`"
    section = f"""{BEGIN}
## Multi-node test cluster (issue 14)

Recorded {when} by {how} (rewrites only this section). Slurm 22.05 (Debian 12), 3 compute
nodes + controller + login, each a network namespace of one {os.cpu_count()}-CPU machine.
Load average {load0:.2f} at the start, {os.getloadavg()[0]:.2f} at the end (other sessions'
tests share the machine).

| # | What | Measured |
|---|------|----------|
{table}

M1, as the start script timed its phases:

```
{cold_log.strip()}
```

M4's summary lines (each node's processes; the machine's cores counted once):

```
{cores.group(0) if cores else ""}
{chr(10).join(nodes)}
```
{END}"""
    text = RESULTS.read_text()
    if BEGIN in text:
        text = text[: text.index(BEGIN)] + section + text[text.index(END) + len(END) :]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    sys.path.insert(0, str(REPO / "bench"))
    from results_index import refresh  # the index table's row for this part

    RESULTS.write_text(refresh(text))
    print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
