"""The psutil sampler on real processes: a DataLoader stand-in, a CPU burner, a process that
exits mid-watch, a zombie, and processes of another user (we are root: setpriv to nobody).

No timed assertions: tests wait (with a generous deadline) for a state, never for a speed.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from tuneadvisor.metrics import proc_readers as readers
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
        if getattr(p, "graceful", False) and p.poll() is None and p.stdin is not None:
            with contextlib.suppress(OSError):  # end of input: it ends its own children
                p.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(10)
        if p.poll() is None:
            p.kill()
        p.wait(10)


def loader(
    procs: list[subprocess.Popen[str]], method: str, workers: int, main: str = "busy"
) -> subprocess.Popen[str]:
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
    # Waits for the burner to get a core: on a loaded machine it may wait a few rounds.
    reading = until(
        sampler.sample,
        lambda r: (
            len(r.procs) == 2
            and all(p.cpu_pct is not None for p in r.procs)
            and any(p.pid == burner.pid and (p.cpu_pct or 0) > 1.0 for p in r.procs)
        ),
        "both measured, the burner busy",
    )
    cpu = {p.pid: p.cpu_pct for p in reading.procs}
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


def test_a_command_line_read_inside_an_exec_is_read_again(
    procs: list[subprocess.Popen[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exec names the process before it lays out its arguments: a round that reads in
    between gets an empty command line. The process is read again the next round, not shown
    as a nameless command for the rest of the watch (seen in CI: `sleep` with no argv)."""
    import psutil

    sleeper = spawn("sleep", "600")
    procs.append(sleeper)
    real = psutil.Process.cmdline
    calls = {"n": 0}

    def inside_the_exec(self: psutil.Process) -> list[str]:
        calls["n"] += 1
        return [] if calls["n"] == 1 else real(self)

    monkeypatch.setattr(psutil.Process, "cmdline", inside_the_exec)
    sampler = HostSampler([sleeper.pid])
    assert sleeper.pid not in {p.pid for p in sampler.sample().procs}  # again next round
    (seen,) = sampler.sample().procs
    assert (seen.name, seen.cmdline) == ("sleep", "sleep 600")


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


# ---------------------------------------------------------------------- caching (issue 5)
#
# The sampler keeps what it read about a process (command line, user, environment, role) and
# the membership of the tree across rounds. These tests change the tree under it, with real
# processes: a pid reused by a new process (forced with /proc/sys/kernel/ns_last_pid, as
# root), an exec, a member that ends while its child lives on, and new children.

NS_LAST_PID = Path("/proc/sys/kernel/ns_last_pid")
SPAWNER = (  # the watched root: starts and kills children when told (optionally at a pid)
    "import os, shlex, subprocess, sys\n"
    "kids = {}\n"
    "print('ready', flush=True)\n"
    "for line in sys.stdin:\n"
    "    cmd, *args = shlex.split(line)\n"
    "    if cmd == 'spawn':\n"
    "        if int(args[0]) > 0:\n"
    f"            with open({str(NS_LAST_PID)!r}, 'w') as f: f.write(str(int(args[0]) - 1))\n"
    "        p = subprocess.Popen(args[1:], stdin=subprocess.DEVNULL, start_new_session=True)\n"
    "        kids[p.pid] = p\n"
    "        print(p.pid, flush=True)\n"
    "    elif cmd == 'kill':\n"
    "        p = kids.pop(int(args[0])); os.killpg(p.pid, 9); p.wait()\n"  # with its children
    "        print('ok', flush=True)\n"
    "for p in kids.values(): os.killpg(p.pid, 9); p.wait()\n"
)
SLEEPER_PY = [sys.executable, "-c", "import time; time.sleep(600)"]


def needs_pid_control() -> None:
    if os.geteuid() != 0 or not os.access(NS_LAST_PID, os.W_OK):
        pytest.skip("needs root to choose the next pid (/proc/sys/kernel/ns_last_pid)")


@pytest.fixture
def pid_cursor() -> Iterator[None]:
    """The kernel's pid cursor to this test alone (across pytest-xdist workers): the tests
    that move it back would make a sampler in a test running beside them walk the whole
    table (it takes a cursor that went back for a wrap-around)."""
    with open(Path(tempfile.gettempdir()) / "tuneadvisor-tests-pid-cursor.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def spawner(procs: list[subprocess.Popen[str]]) -> subprocess.Popen[str]:
    proc = spawn(sys.executable, "-c", SPAWNER)
    proc.graceful = True  # type: ignore[attr-defined]
    procs.append(proc)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def ask(proc: subprocess.Popen[str], line: str) -> str:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(line + "\n")
    proc.stdin.flush()
    return proc.stdout.readline().strip()


def psutil_tree(root: int) -> set[int]:
    """What psutil says the tree is (the old way, one full walk): the oracle."""
    import psutil

    return {root} | {p.pid for p in psutil.Process(root).children(recursive=True)}


def test_a_reused_pid_does_not_inherit_the_old_process(
    procs: list[subprocess.Popen[str]], pid_cursor: None
) -> None:
    """A member (Python: role main) ends and a new program (sleep: role child) gets its pid
    before the next round: the new one is read afresh, and its CPU share is not computed
    from the old process's CPU time."""
    needs_pid_control()
    root = spawner(procs)
    sampler = HostSampler([root.pid])
    for _ in range(10):
        old = int(ask(root, "spawn 0 " + shlex.join(SLEEPER_PY)))

        def measured(r: HostReading, pid: int = old) -> bool:
            return any(p.pid == pid and p.cpu_pct is not None for p in r.procs)

        reading = until(sampler.sample, measured, "the Python child measured")
        before = next(p for p in reading.procs if p.pid == old)
        assert before.role == ROLE_MAIN and "time.sleep(600)" in before.cmdline
        assert ask(root, f"kill {old}") == "ok"
        new = int(ask(root, f"spawn {old} sleep 600"))
        if new == old:
            break
        ask(root, f"kill {new}")  # another process took the pid first: try again
    else:
        pytest.skip("could not get the same pid twice (a busy machine)")
    # Found in this round or the next (when nothing else took a pid meanwhile, only the
    # member's start time tells: it is dropped for a round and the tree walked again).
    reading = until(sampler.sample, lambda r: new in {p.pid for p in r.procs}, "the new one")
    after = next(p for p in reading.procs if p.pid == new)
    assert (after.name, after.cmdline, after.role) == ("sleep", "sleep 600", "child")
    assert after.cpu_pct is None  # a new process: first sight
    assert {p.pid for p in sampler.sample().procs} == psutil_tree(root.pid)


def test_a_pid_freed_outside_the_tree_and_reused_inside_it_is_found(
    procs: list[subprocess.Popen[str]], pid_cursor: None
) -> None:
    """The /proc listing is the same before and after (the pid was listed already); only
    the kernel's last pid tells that it was handed out again. Found without a full walk.

    On a live node the pid is reused after the kernel's cycle wrapped around; here the
    cursor is moved back below the outsider's pid first (the sampler sees that as a
    wrap-around and looks at everything), then forward onto it once the outsider ended."""
    needs_pid_control()
    root = spawner(procs)
    sampler = HostSampler([root.pid])
    for _ in range(10):
        outsider = spawn("sleep", "600")
        NS_LAST_PID.write_text(str(outsider.pid - 2))
        until(sampler.sample, lambda r: len(r.procs) == 1, "the root alone")
        walks, last = sampler.walks, sampler._listed_last_pid
        outsider.kill()
        outsider.wait()
        new = int(ask(root, f"spawn {outsider.pid} sleep 600"))
        reading = sampler.sample()
        clean = last is not None and last < new <= (sampler._listed_last_pid or 0)
        if new == outsider.pid and clean:
            break
        ask(root, f"kill {new}")  # another process took a pid first: try again
    else:
        pytest.skip("could not get the same pid twice (a busy machine)")
    assert {p.pid for p in reading.procs} == {root.pid, new} == psutil_tree(root.pid)
    assert sampler.walks == walks  # incremental: the new child's parent is a member


def test_a_job_process_pid_reused_by_another_process_leaves_the_job(
    procs: list[subprocess.Popen[str]], pid_cursor: None
) -> None:
    needs_pid_control()
    env = {**os.environ, "SLURM_JOB_ID": "4343434"}
    sampler = HostSampler(job_id="4343434")
    for _ in range(10):
        job = subprocess.Popen(SLEEPER_PY, env=env)
        procs.append(job)  # type: ignore[arg-type]

        # Measured twice: it lived longer than one clock tick, the start time's unit (a new
        # process on the same pid in the same tick could not be told apart, by psutil either).
        def alone_measured(r: HostReading, pid: int = job.pid) -> bool:
            return [(p.pid, p.cpu_pct is not None) for p in r.procs] == [(pid, True)]

        until(sampler.sample, alone_measured, "the job measured")
        job.kill()
        job.wait()
        NS_LAST_PID.write_text(str(job.pid - 1))
        other = subprocess.Popen(SLEEPER_PY)  # no SLURM_JOB_ID: not the job's
        procs.append(other)  # type: ignore[arg-type]
        if other.pid == job.pid:
            break
        other.kill()
    else:
        pytest.skip("could not get the same pid twice (a busy machine)")
    assert sampler.sample().procs == ()


def test_an_exec_reads_the_new_program_and_keeps_measuring(
    procs: list[subprocess.Popen[str]],
) -> None:
    code = "import os, sys; sys.stdin.readline(); os.execvp('sleep', ['sleep', '600'])"
    proc = spawn(sys.executable, "-c", code)
    procs.append(proc)
    sampler = HostSampler([proc.pid])
    first = until(
        sampler.sample,
        lambda r: len(r.procs) == 1 and r.procs[0].cpu_pct is not None,
        "the Python process measured",
    )
    assert first.procs[0].role == ROLE_MAIN
    assert proc.stdin is not None
    proc.stdin.write("\n")
    proc.stdin.flush()
    after = until(sampler.sample, lambda r: r.procs[0].name == "sleep", "the exec").procs[0]
    assert (after.cmdline, after.role) == ("sleep 600", "child")
    assert after.cpu_pct is not None  # the same process: its CPU time goes on


def test_the_tree_is_walked_again_only_when_it_changes(
    procs: list[subprocess.Popen[str]], pid_cursor: None
) -> None:
    """Steady state: no full walk of the process table, even while other processes come and
    go on the node; a new child is found from its parent; a member that ends while its own
    child lives on makes one walk (the child moves to another parent: out of the tree), and
    every round agrees with psutil's own full walk."""
    if os.geteuid() != 0:
        pytest.skip("the reaper's children are killed by pid")
    # A reaper above the watched root adopts the orphan (so nothing leaks to pid 1).
    reaper_code = (
        "import ctypes, os, subprocess, sys\n"
        "ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)\n"  # PR_SET_CHILD_SUBREAPER
        "subprocess.Popen(sys.argv[1:])\n"
        "while True:\n"
        "    try: os.wait()\n"
        "    except ChildProcessError: break\n"
    )
    reaper = spawn(sys.executable, "-c", reaper_code, sys.executable, "-c", SPAWNER)
    reaper.graceful = True  # type: ignore[attr-defined]
    procs.append(reaper)
    assert reaper.stdout is not None and reaper.stdout.readline().strip() == "ready"
    import psutil

    (root_proc,) = psutil.Process(reaper.pid).children()
    root = root_proc.pid
    now = [0.0]  # the sampler's clock: only the safety-net walk (REWALK_S) depends on it
    sampler = HostSampler([root], clock=lambda: now[0])

    def check() -> set[int]:
        now[0] += 0.1
        pids = {p.pid for p in sampler.sample().procs}
        assert pids == psutil_tree(root)
        return pids

    from tuneadvisor.metrics import host

    check()
    check()
    assert sampler.walks == 1
    churn = [spawn("true") for _ in range(3)]  # the node changes, the tree does not
    for p in churn:
        p.wait()
    check()
    assert sampler.walks == 1
    middle = int(ask(reaper, "spawn 0 sh -c 'sleep 600 & wait'"))
    # Waited for until it runs sleep: caught between sh's fork and its exec, the sampler drops
    # it for that round (it changed program while being read), and psutil's tree has it.
    grandchild = until(
        lambda: psutil.Process(middle).children(),
        lambda c: len(c) == 1 and c[0].name() == "sleep",
        "sleep",
    )[0].pid
    assert until(check, lambda pids: grandchild in pids, "the new grandchild") >= {
        middle,
        grandchild,
    }
    assert sampler.walks == 1
    try:
        os.kill(middle, 9)  # not reaped yet: a zombie; its child goes to the reaper
        until(lambda: psutil.Process(grandchild).ppid(), lambda pp: pp == reaper.pid, "")
        pids = check()
        assert middle in pids and grandchild not in pids
        zombie = next(p for p in sampler.sample().procs if p.pid == middle)
        assert zombie.state == "zombie"
        walks = sampler.walks
        assert walks == 2
        check()
        assert sampler.walks == walks  # a zombie that stays is no reason to walk again
        assert ask(reaper, f"kill {middle}") == "ok"  # reaped: gone
        assert check() == {root}
        walks = sampler.walks
        now[0] += host.REWALK_S  # the safety net: the whole table now and then
        check()
        assert sampler.walks == walks + 1
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(grandchild, 9)


def test_values_agree_with_psutil(procs: list[subprocess.Popen[str]]) -> None:
    """What the sampler reads from /proc itself is what psutil reports for the same process
    (a sleeping process: nothing changes between the two readings)."""
    import psutil

    from tuneadvisor.metrics import host

    sleeper = spawn(*SLEEPER_PY)
    procs.append(sleeper)
    until(lambda: psutil.Process(sleeper.pid).status(), lambda s: s == "sleeping", "asleep")
    sampler = HostSampler([sleeper.pid])
    reading = until(sampler.sample, lambda r: r.procs[0].cpu_pct is not None, "measured")
    (got,) = reading.procs
    p = psutil.Process(sleeper.pid)
    assert got.name == p.name() and got.cmdline == " ".join(p.cmdline())
    assert got.user == p.username() and got.ppid == p.ppid() and got.state == p.status()
    assert got.threads == p.num_threads()
    assert got.rss_mib == p.memory_info().rss / host.MIB
    assert reading.host.mem_total_mib == psutil.virtual_memory().total / host.MIB
    assert len(reading.host.cpu_pct_per_core) == psutil.cpu_count()
    assert readers.STATES.get("S") == psutil.STATUS_SLEEPING
    assert readers.STATES.get("Z") == psutil.STATUS_ZOMBIE == readers.ZOMBIE
    ours, theirs = readers.PROC.stat(sleeper.pid), readers.PSUTIL.stat(sleeper.pid)
    assert ours is not None and theirs is not None
    assert ours.image[0] == theirs.image[0] == p.name()
    assert ours._replace(start=0.0, rss=0, image=("", 0, 0)) == theirs._replace(
        start=0.0, rss=0, image=("", 0, 0)
    )
    assert readers.PROC.rss(sleeper.pid) == theirs.rss == p.memory_info().rss
    cpu = p.cpu_times()
    assert ours.cpu_s == cpu.user + cpu.system


def test_the_psutil_readers_give_the_same_tree(
    procs: list[subprocess.Popen[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where there is no /proc, every value comes from psutil: the same roles and values."""
    main = loader(procs, "spawn", 2, "idle")
    sampler = HostSampler([main.pid], readers=readers.PSUTIL)
    reading = until(
        sampler.sample,
        lambda r: roles(r).count(ROLE_WORKER) == 2 and all(p.cpu_pct is not None for p in r.procs),
        "1 main + 2 workers measured",
    )
    assert {p.pid for p in reading.procs} == psutil_tree(main.pid)
    assert ROLE_MAIN in roles(reading) and ROLE_HELPER in roles(reading)
    assert len(reading.host.cpu_pct_per_core) == os.cpu_count()
    for p in reading.procs:
        assert p.rss_mib and p.threads and p.read_mib_s is not None and p.denied == ()
