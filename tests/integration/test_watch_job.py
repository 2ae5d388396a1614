"""`tuneadvisor watch --job ID` on the real local Slurm cluster (scripts/slurm-local.sh).

The job runs the DataLoader stand-in (tests/fixtures/watch/loader.py: a main process and two
forked workers) from its batch script, and a `sleep` as step 0 (`srun`): slurmstepd starts
that one, so it is no child of the batch script and only Slurm's `listpids` finds it. The
cluster has one node: the `--all-nodes` run merges one node's stream, which still goes
through `srun --overlap`, the stream protocol and the merge for real.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.integration.slurm_cluster import REPO, WAIT_S, Cluster, start_cluster
from tests.report_schema import checked
from tuneadvisor.metrics.recording import parse_recording
from tuneadvisor.metrics.snapshot import ROLE_LAUNCHER, ROLE_MAIN, ROLE_WORKER

# One worker runs this module: its job holds a core of the one node for the whole module, and
# two workers' jobs held both while the module's own later jobs waited behind them.
pytestmark = [pytest.mark.slurm, pytest.mark.slow, pytest.mark.xdist_group("watch_job")]

LOADER = REPO / "tests" / "fixtures" / "watch" / "loader.py"
JOB = """\
#!/bin/bash
#SBATCH --job-name=watchme
#SBATCH --cpus-per-task=1
#SBATCH --mem=200M
#SBATCH --time=00:20:00
sleep {seconds} | python loader.py fork 2 idle &
srun --ntasks=1 --mem=20M sleep {seconds} &
wait
"""


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    return Cluster(start_cluster())


def submit(cluster: Cluster, folder: Path, seconds: int) -> str:
    shutil.copy(LOADER, folder / "loader.py")
    job_id = cluster.submit(folder, "watchme.sbatch", JOB.format(seconds=seconds))
    cluster.wait_running(job_id)
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:  # the step and the workers have started
        rows = cluster.client.job_pids(job_id)
        if any(r.step == "0" for r in rows) and len(rows) >= 7:
            return job_id
        time.sleep(0.2)
    raise AssertionError(f"job {job_id}: its processes did not all start: {rows}")


@pytest.fixture(scope="module")
def job(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    # Long enough to outlast the module on a loaded machine; cancelled at its end.
    job_id = submit(cluster, tmp_path_factory.mktemp("watchme"), 900)
    yield job_id
    cluster.run("scancel", job_id)


def watch(cluster: Cluster, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = cluster.tuneadvisor(cwd, "watch", "--headless", "--interval", "0.5", *args)
    assert done.returncode == 0, done.stderr
    return done


def node_name(cluster: Cluster, job_id: str) -> str:
    placed = cluster.client.placement(job_id)
    assert placed is not None and placed.node_list is not None, placed
    return placed.node_list


def test_the_job_seen_through_listpids(cluster: Cluster, job: str, tmp_path: Path) -> None:
    record = tmp_path / "job.jsonl"
    done = watch(cluster, tmp_path, "--job", job, "--duration", "3", "--record", str(record))
    node = node_name(cluster, job)
    first = done.stdout.splitlines()[0]
    assert f"job {job} on {node} (processes from Slurm: scontrol listpids)" in first
    assert "/watchme.sbatch: " in first  # the job's script, as slurmctld has it
    assert "1 main, up to 2 DataLoader workers" in done.stdout
    # what slurmctld says the job asked for
    assert "of 1 requested; memory peak" in done.stdout and "of 200 MiB requested" in done.stdout
    rec = parse_recording(record.read_text())
    last = rec.snapshots[-1]
    roles = {(p.role, p.cmdline.split("/")[-1]) for p in last.procs}
    assert (ROLE_MAIN, "python loader.py fork 2 idle") in roles
    assert sum(1 for p in last.procs if p.role == ROLE_WORKER) == 2
    assert (ROLE_LAUNCHER, "slurm_script") in roles
    pids = {p.pid for p in last.procs}
    step0 = [p for p in last.procs if p.cmdline.endswith("sleep 900") and p.ppid not in pids]
    assert step0, "step 0's task (started by slurmstepd) was not found"


def test_a_step_started_while_watching_is_found(cluster: Cluster, job: str, tmp_path: Path) -> None:
    record = tmp_path / "later.jsonl"
    watcher = subprocess.Popen(
        [sys.executable, "-m", "tuneadvisor", "watch", "--headless", "--job", job,
         "--interval", "0.5", "--duration", "6", "--record", str(record)],
        env=cluster.env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    step = None
    try:
        while not record.exists() or len(record.read_text().splitlines()) < 3:
            assert watcher.poll() is None, watcher.communicate()
            time.sleep(0.1)
        step = subprocess.Popen(
            ["srun", "--overlap", f"--jobid={job}", "--ntasks=1", "--mem=10M", "sleep", "17"],
            env=cluster.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        _, err = watcher.communicate(timeout=120)
    finally:
        if step is not None:
            step.terminate()
            step.wait(30)
        if watcher.poll() is None:
            watcher.kill()
    assert watcher.returncode == 0, err
    seen = [any(p.cmdline == "/usr/bin/sleep 17" or p.cmdline == "sleep 17" for p in s.procs)
            for s in parse_recording(record.read_text()).snapshots]  # fmt: skip
    assert not seen[0] and seen[-1], seen  # absent at first, found by a later listpids


def test_every_node_through_srun_overlap(cluster: Cluster, job: str, tmp_path: Path) -> None:
    record = tmp_path / "nodes.jsonl"
    done = watch(
        cluster, tmp_path, "--job", job, "--all-nodes", "--duration", "3", "--record", str(record)
    )
    node = node_name(cluster, job)
    first = done.stdout.splitlines()[0]
    assert f"job {job} on 1 node ({node}; a sampler on each through srun --overlap)" in first
    assert f"Node {node}: " in done.stdout and "(1 main, 2 DataLoader workers)" in done.stdout
    assert "the busiest node's sampler thread" in done.stdout
    rec = parse_recording(record.read_text())
    assert rec.header is not None and rec.header.nodes == (node,)
    assert len(rec.snapshots) >= 4
    last = rec.snapshots[-1]
    assert {p.node for p in last.procs} == {node}
    assert sum(1 for p in last.procs if p.role == ROLE_WORKER) == 2
    assert not any("-m tuneadvisor watch" in p.cmdline for p in last.procs)  # not the sampler
    # The sampler's step ended with the watch: only the batch step and step 0 are left.
    _only_the_jobs_own_steps(cluster, job)
    report = cluster.tuneadvisor(tmp_path, "report", "--metrics", str(record), "--format", "json")
    assert report.returncode == 0, report.stderr
    assert "findings" in checked(json.loads(report.stdout))


def _only_the_jobs_own_steps(cluster: Cluster, job: str) -> None:
    """Only the batch step and step 0, both in Slurm's list of steps (a step whose tasks
    have not started yet is listed there before listpids sees it) and on the node."""
    deadline = time.monotonic() + 60
    while (steps := _steps(cluster, job)) != {f"{job}.batch", f"{job}.0"} or {
        r.step for r in cluster.client.job_pids(job)
    } != {"batch", "0"}:
        assert time.monotonic() < deadline, (steps, cluster.client.job_pids(job))
        time.sleep(0.2)


def _steps(cluster: Cluster, job: str) -> set[str]:
    listed = cluster.run("squeue", "--noheader", "--steps", f"--jobs={job}", "--format=%i")
    return set(listed.stdout.split())


def _srun_started(pid: int, timeout_s: float = 30.0) -> Any:
    """The watch's node samplers' `srun`, once started (a fixed sleep raced the interpreter's
    start-up on a loaded machine: the signal then came before the watch ran)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        children = psutil.Process(pid).children(recursive=True)
        for child in children:
            if "srun" in " ".join(_cmdline(child)):
                return child
        time.sleep(0.02)
    raise AssertionError("the watch started no srun step")


def _cmdline(process: Any) -> list[str]:
    try:
        return list(process.cmdline())
    except Exception:  # gone, or a zombie: not the srun we wait for
        return []


@pytest.mark.parametrize(("signum", "after_s"), [(signal.SIGINT, 0.0), (signal.SIGHUP, 3.0)])
def test_an_interrupted_watch_leaves_no_sampler_step(
    cluster: Cluster, job: str, tmp_path: Path, signum: int, after_s: float
) -> None:
    """Ctrl-C while the node samplers start, or the terminal hanging up mid-watch: the
    `srun --overlap` step ends with the watch instead of running on in the job."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tuneadvisor", "watch", "--headless", "--interval", "0.5",
         "--job", job, "--all-nodes"],
        env=cluster.env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    srun = _srun_started(proc.pid)
    time.sleep(after_s)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert "Traceback" not in err
    # srun ended with the watch (an orphaned srun ran its sampler on in the job, in CI)
    _, alive = psutil.wait_procs([srun], timeout=30)
    assert not alive, f"the watch's srun outlived it: {_cmdline(srun)}"
    if signum == signal.SIGHUP:  # mid-watch: the session stops and still summarises
        assert proc.returncode == 0, err
        assert "rounds over" in out and "(stopped)" in out, out
    elif proc.returncode == 130:  # Ctrl-C before the session existed: it unwound, no summary
        assert "rounds over" not in out, out
    else:  # Ctrl-C once sampling had begun: the rounds so far, summarised as interrupted
        assert proc.returncode == 0, err
        assert "rounds over" in out and "(interrupted)" in out, out
    _only_the_jobs_own_steps(cluster, job)


def test_a_step_whose_srun_was_killed_is_cancelled_by_its_name(cluster: Cluster, job: str) -> None:
    """What the watch does when it ends: an srun killed (here with SIGKILL, as a watch's srun
    is when it does not end on SIGTERM) leaves its tasks running in the job; the steps with the
    watch's name are cancelled, and a step with another name is left alone."""
    ours = [subprocess.Popen(
        ["srun", "--overlap", f"--jobid={job}", "--ntasks=1", "--mem=10M",
         "--job-name=tuneadvisor-watch-test", "sleep", "300"],
        env=cluster.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    ) for _ in range(2)]  # fmt: skip
    other = subprocess.Popen(
        ["srun", "--overlap", f"--jobid={job}", "--ntasks=1", "--mem=10M",
         "--job-name=someone-else", "sleep", "301"],
        env=cluster.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + WAIT_S
        while len({r.step for r in cluster.client.job_pids(job)}) < 5:  # batch, 0 and these 3
            assert time.monotonic() < deadline, cluster.client.job_pids(job)
            time.sleep(0.2)
        for proc in ours:
            proc.kill()
            proc.wait(30)
        cancelled = cluster.client.cancel_steps_named(job, "tuneadvisor-watch-test")
        assert len(cancelled) == 2 and all(s.startswith(f"{job}.") for s in cancelled)
        deadline = time.monotonic() + 60
        while {r.step for r in cluster.client.job_pids(job)} & {s.split(".")[1] for s in cancelled}:
            assert time.monotonic() < deadline, cluster.client.job_pids(job)
            time.sleep(0.2)
        assert other.poll() is None  # someone else's step runs on
    finally:
        other.terminate()
        other.wait(30)
    _only_the_jobs_own_steps(cluster, job)


INSIDE = """\
#!/bin/bash
#SBATCH --job-name=inside
#SBATCH --cpus-per-task=1
#SBATCH --mem=300M
#SBATCH --time=00:05:00
sleep 30 | python loader.py fork 1 idle &
python -m tuneadvisor watch --headless --interval 0.5 --duration 4 --job "$SLURM_JOB_ID" \\
  --all-nodes --record inside.jsonl > inside.out 2>&1
kill %1
"""


def test_a_watch_inside_the_job_is_not_counted_as_its_training(
    cluster: Cluster, tmp_path: Path
) -> None:
    """The bundled job scripts start `tuneadvisor watch --job` in the batch script: that
    watch, its srun and its children live in the job's process tree but are no training."""
    shutil.copy(LOADER, tmp_path / "loader.py")
    job = cluster.submit(tmp_path, "inside.sbatch", INSIDE)
    cluster.wait(job)
    rec = parse_recording((tmp_path / "inside.jsonl").read_text())
    assert rec.snapshots, (tmp_path / "inside.out").read_text()
    seen = {p.cmdline for s in rec.snapshots for p in s.procs}
    assert not [c for c in seen if "tuneadvisor watch" in c or "srun" in c], seen
    assert any("loader.py fork 1 idle" in c for c in seen), seen


def test_a_job_that_is_not_running_is_one_line_and_status_2(
    cluster: Cluster, tmp_path: Path
) -> None:
    done = cluster.tuneadvisor(tmp_path, "watch", "--headless", "--job", "999999")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        "tuneadvisor: --job 999999: Slurm does not know this job (a wrong id, or it ended a "
        "while ago: tuneadvisor report --jobid 999999 reads an ended job)\n"
    )
    held = cluster.submit(tmp_path, "held.sbatch", "#!/bin/bash\nsleep 1\n", "--hold", "--mem=10M")
    try:
        done = cluster.tuneadvisor(tmp_path, "watch", "--headless", "--job", held)
    finally:
        cluster.run("scancel", held)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        f"tuneadvisor: --job {held}: the job is PENDING (JobHeldUser), not running\n"
    )


def test_without_slurm_the_environment_is_matched(
    cluster: Cluster, job: str, tmp_path: Path
) -> None:
    env = {**cluster.env, "PATH": str(Path(sys.executable).parent)}  # no scontrol
    done = subprocess.run(
        [sys.executable, "-m", "tuneadvisor", "watch", "--headless", "--job", job,
         "--interval", "0.5", "--duration", "3"],
        env=env, cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (
        f"job {job} on this node (processes matched by their cgroup or SLURM_JOB_ID: "
        "Slurm's scontrol is not on PATH)"
    ) in done.stdout
    # the whole summary when it fails: which processes were matched, and as what
    assert "1 main, up to 2 DataLoader workers" in done.stdout, done.stdout


def test_the_watch_ends_with_the_job(cluster: Cluster, tmp_path: Path) -> None:
    job_id = submit(cluster, tmp_path, 8)
    started = time.monotonic()
    done = watch(cluster, tmp_path, "--job", job_id)
    assert "(the watched processes ended)" in done.stdout
    assert time.monotonic() - started < 60
