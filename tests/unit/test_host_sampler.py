"""The psutil sampler on real processes: a DataLoader stand-in, a CPU burner, a process that
exits mid-watch, a zombie, and processes of another user (we are root: setpriv to nobody).

No timed assertions: tests wait (with a generous deadline) for a state, never for a speed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from tuneadvisor.metrics.host import HostReading, HostSampler
from tuneadvisor.metrics.snapshot import ROLE_HELPER, ROLE_LAUNCHER, ROLE_MAIN, ROLE_WORKER

LOADER = Path(__file__).resolve().parent.parent / "fixtures" / "watch" / "loader.py"
REPO = Path(__file__).resolve().parent.parent.parent
NOBODY = 65534
T = TypeVar("T")


def until(get: Callable[[], T], ok: Callable[[T], bool], what: str, deadline: float = 30) -> T:
    """Poll ``get`` until ``ok``; a deadline only so a broken test ends (never a speed check)."""
    end = time.monotonic() + deadline
    while True:
        value = get()
        if ok(value):
            return value
        if time.monotonic() > end:
            raise AssertionError(f"never saw {what}; last: {value!r}")
        time.sleep(0.05)


def spawn(*args: str, user: int | None = None) -> subprocess.Popen[str]:
    cmd = list(args)
    if user is not None:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *cmd]
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for p in started:
        if p.poll() is None:
            p.kill()
        p.wait(10)


def loader(procs: list[subprocess.Popen[str]], method: str, workers: int, main: str = "busy"):
    proc = spawn(sys.executable, str(LOADER), method, str(workers), main)
    procs.append(proc)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


def roles(reading: HostReading) -> list[str]:
    return sorted(p.role for p in reading.procs)


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_dataloader_workers_have_the_worker_role(
    procs: list[subprocess.Popen[str]], method: str
) -> None:
    main = loader(procs, method, 3)
    sampler = HostSampler([main.pid])
    reading = until(
        sampler.sample,
        lambda r: roles(r).count(ROLE_WORKER) == 3 and r.host.main_cpu_pct is not None,
        "1 main + 3 workers with CPU measured",
    )
    by_role = {p.role: p for p in reading.procs}
    assert by_role[ROLE_MAIN].pid == main.pid
    assert roles(reading).count(ROLE_MAIN) == 1
    if method != "fork":  # spawn and forkserver start multiprocessing's resource tracker
        assert ROLE_HELPER in roles(reading)
    assert reading.host.workers == 3
    assert reading.host.proc_count == len(reading.procs)
    for p in reading.procs:
        assert p.rss_mib is not None and p.rss_mib > 1
        assert p.state is not None and p.user == "root"
        assert p.denied == ()  # root reads everything, /proc/PID/io included


def test_a_cpu_burner_is_busy_and_a_sleeper_is_not(procs: list[subprocess.Popen[str]]) -> None:
    burner = spawn(sys.executable, "-c", "while True: pass")
    sleeper = spawn("sleep", "600")
    procs += [burner, sleeper]
    sampler = HostSampler([burner.pid, sleeper.pid])
    reading = until(
        sampler.sample,
        lambda r: all(p.cpu_pct is not None for p in r.procs) and len(r.procs) == 2,
        "both measured",
    )
    cpu = {p.pid: p.cpu_pct for p in reading.procs}
    assert cpu[burner.pid] is not None and cpu[burner.pid] > 1.0
    assert cpu[sleeper.pid] == 0.0
    assert len(reading.host.cpu_pct_per_core) == os.cpu_count()
    assert reading.host.busy_cores is not None and reading.host.busy_cores > 0
    assert reading.host.mem_total_mib and reading.host.mem_used_mib


def test_first_sight_of_a_process_is_no_data_not_zero(procs: list[subprocess.Popen[str]]) -> None:
    sleeper = spawn("sleep", "600")
    procs.append(sleeper)
    first = HostSampler([sleeper.pid]).sample()
    assert [p.cpu_pct for p in first.procs] == [None]
    assert first.host.cpu_pct_per_core == ()  # per-core needs two readings too


def test_a_child_that_exits_mid_watch_is_dropped(procs: list[subprocess.Popen[str]]) -> None:
    code = (
        "import subprocess, sys\n"
        "child = subprocess.Popen(['sleep', '600'])\n"
        "print(child.pid, flush=True)\n"
        "sys.stdin.readline()\n"
        "child.kill(); child.wait()\n"
        "print('gone', flush=True)\n"
        "sys.stdin.read()\n"
    )
    parent = spawn(sys.executable, "-c", code)
    procs.append(parent)
    assert parent.stdin is not None and parent.stdout is not None
    child_pid = int(parent.stdout.readline())
    sampler = HostSampler([parent.pid])
    before = until(sampler.sample, lambda r: len(r.procs) == 2, "parent and child")
    assert {p.pid for p in before.procs} == {parent.pid, child_pid}
    parent.stdin.write("\n")
    parent.stdin.flush()
    assert parent.stdout.readline().strip() == "gone"
    after = sampler.sample()
    assert [p.pid for p in after.procs] == [parent.pid]
    assert after.roots_alive and after.problems == ()
    parent.stdin.close()
    parent.wait(10)
    ended = sampler.sample()
    assert not ended.roots_alive and ended.procs == ()


def test_a_zombie_is_shown_as_one(procs: list[subprocess.Popen[str]]) -> None:
    code = (
        "import os, sys\n"
        "pid = os.fork()\n"
        "if pid == 0: os._exit(0)\n"
        "print(pid, flush=True)\n"
        "sys.stdin.read()\n"  # never reaps the child
    )
    parent = spawn(sys.executable, "-c", code)
    procs.append(parent)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    sampler = HostSampler([parent.pid])
    reading = until(
        sampler.sample,
        lambda r: any(p.pid == child and p.state == "zombie" for p in r.procs),
        "the zombie child",
    )
    zombie = next(p for p in reading.procs if p.pid == child)
    assert zombie.cpu_pct is None and zombie.rss_mib is None


def test_a_process_of_another_user(procs: list[subprocess.Popen[str]]) -> None:
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv to start a process as nobody")
    other = spawn("sleep", "600", user=NOBODY)
    procs.append(other)
    sampler = HostSampler([other.pid])
    # setpriv drops to nobody before it execs sleep: wait for the exec, then check both.
    reading = until(sampler.sample, lambda r: bool(r.procs) and r.procs[0].name == "sleep", "")
    assert reading.procs[0].user == "nobody"


def test_access_denied_is_normal_for_an_unprivileged_sampler(
    procs: list[subprocess.Popen[str]],
) -> None:
    """Run the sampler itself as nobody against root's DataLoader stand-in: /proc/PID/io and
    the environment are closed to it; everything else is still measured."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv to run the sampler as nobody")
    main = loader(procs, "fork", 2, "idle")
    code = (
        "import json, sys, time\n"
        "from tuneadvisor.metrics.host import HostSampler\n"
        f"s = HostSampler([{main.pid}])\n"
        "for _ in range(200):\n"
        "    r = s.sample()\n"
        "    if len(r.procs) == 3 and all(p.cpu_pct is not None for p in r.procs): break\n"
        "    time.sleep(0.05)\n"
        "print(json.dumps([[p.pid, p.role, p.user, p.cpu_pct, p.rss_mib, list(p.denied)]"
        " for p in r.procs] + [list(r.problems)]))\n"
    )
    out = subprocess.run(
        [
            "setpriv",
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
            sys.executable,
            "-c",
            code,
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    *rows, problems = json.loads(out.stdout)
    assert problems == []
    assert sorted(r[1] for r in rows) == [ROLE_MAIN, ROLE_WORKER, ROLE_WORKER]
    for _pid, _role, user, cpu, rss, denied in rows:
        assert user == "root" and cpu is not None and rss > 1
        assert "io" in denied and "environ" in denied


def test_whole_node_lists_the_busiest_processes(procs: list[subprocess.Popen[str]]) -> None:
    burner = spawn(sys.executable, "-c", "while True: pass")
    procs.append(burner)
    sampler = HostSampler()
    reading = until(
        sampler.sample,
        lambda r: any(p.pid == burner.pid and (p.cpu_pct or 0) > 1 for p in r.procs),
        "the burner among the busiest",
    )
    assert reading.host.proc_cpu_pct is None  # no job tree: no tree totals
    assert len(reading.procs) <= 15


def test_a_job_by_its_environment(procs: list[subprocess.Popen[str]]) -> None:
    env = {**os.environ, "SLURM_JOB_ID": "4242424", "SLURM_NTASKS": "2", "SLURM_PROCID": "1"}
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], env=env)
    procs.append(proc)  # type: ignore[arg-type]
    sampler = HostSampler(job_id="4242424")
    reading = until(sampler.sample, lambda r: bool(r.procs), "the job's process")
    assert [(p.pid, p.role, p.rank) for p in reading.procs] == [(proc.pid, ROLE_MAIN, 1)]


def test_torchrun_like_launcher_and_ranks(
    procs: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    """A launcher (named torchrun) starting two ranks with RANK set, each with a worker."""
    launcher = tmp_path / "torchrun"
    launcher.write_text(
        f"#!{sys.executable}\n"
        "import os, subprocess, sys\n"
        f"ranks = [subprocess.Popen([sys.executable, {str(LOADER)!r}, 'fork', '1', 'idle'],\n"
        "    env={**os.environ, 'RANK': str(r), 'LOCAL_RANK': str(r)}, stdin=subprocess.PIPE,\n"
        "    stdout=subprocess.PIPE, text=True) for r in range(2)]\n"
        "for r in ranks: r.stdout.readline()\n"
        "print('ready', flush=True)\n"
        "sys.stdin.read()\n"
    )
    launcher.chmod(0o755)
    top = spawn(str(launcher))
    procs.append(top)
    assert top.stdout is not None and top.stdout.readline().strip() == "ready"
    sampler = HostSampler([top.pid])
    reading = until(sampler.sample, lambda r: len(r.procs) == 5, "launcher, 2 ranks, 2 workers")
    got = sorted((p.role, p.rank) for p in reading.procs)
    assert got == [
        (ROLE_LAUNCHER, None),
        (ROLE_MAIN, 0),
        (ROLE_MAIN, 1),
        (ROLE_WORKER, None),
        (ROLE_WORKER, None),
    ]
