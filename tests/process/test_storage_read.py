"""The sampler's storage read rate on a real read (issue 31 §4): a child reads a file dropped
from the page cache; the tree's rate over the round is what the kernel counted for it.
Skipped where the file system does not count reads (tmpfs: nothing comes from storage)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tuneadvisor.metrics.host import MIB, HostSampler

READER = """
import os, sys
path = sys.argv[1]
with open(path, "wb") as f:
    f.write(os.urandom(16 << 20))
    f.flush()
    os.fsync(f.fileno())
    os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
def read_bytes():
    with open("/proc/self/io") as io:
        return next(int(l.split()[1]) for l in io if l.startswith("read_bytes:"))
print("ready", flush=True)
sys.stdin.readline()
before = read_bytes()
with open(path, "rb") as f:
    while f.read(1 << 20):
        pass
print(read_bytes() - before, flush=True)
sys.stdin.read()
"""


@pytest.mark.skipif(not Path("/proc/self/io").is_file(), reason="needs /proc/PID/io")
def test_a_real_read_from_storage_is_the_trees_read_rate(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", READER, str(tmp_path / "data.bin")],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert child.stdin is not None and child.stdout is not None
    try:
        assert child.stdout.readline().strip() == "ready"
        times = iter([0.0, 2.0])
        sampler = HostSampler([child.pid], clock=lambda: next(times))
        first = sampler.sample()  # the counters' start: no rate yet
        assert first.host.proc_read_mib_s is None
        child.stdin.write("go\n")
        child.stdin.flush()
        counted = int(child.stdout.readline())  # what the kernel counted for the read
        if counted == 0:
            pytest.skip("this file system counts no reads from storage (tmpfs?)")
        rate = sampler.sample().host.proc_read_mib_s
        assert rate is not None
        # over the 2 s the clock said: the read, and no more than a MiB besides
        assert counted / MIB <= 2 * rate <= counted / MIB + 1
    finally:
        child.stdin.close()
        child.wait(10)


NOBODY = 65534
REPO = Path(__file__).resolve().parent.parent.parent


@pytest.mark.skipif(not Path("/proc/self/io").is_file(), reason="needs /proc/PID/io")
def test_a_sampler_denied_the_trees_io_says_nothing_of_its_reads() -> None:
    """The sampler as nobody, the tree root's: /proc/PID/io is closed to it, and the tree's
    read rate is absent (never 0), its CPU still measured."""
    import os
    import shutil

    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv to run the sampler as nobody")
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)  # fmt: skip
    code = (
        "import json, time\n"
        "from tuneadvisor.metrics.host import HostSampler\n"
        f"s = HostSampler([{child.pid}])\n"
        "for _ in range(200):\n"
        "    r = s.sample()\n"
        "    if r.procs and all(p.cpu_pct is not None for p in r.procs): break\n"
        "    time.sleep(0.05)\n"
        "print(json.dumps([r.host.proc_cpu_pct, r.host.proc_read_mib_s,"
        " [list(p.denied) for p in r.procs]]))\n"
    )
    try:
        out = subprocess.run(
            ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
             sys.executable, "-c", code],
            capture_output=True, text=True, check=True, cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )  # fmt: skip
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(10)
    cpu, read, denied = json.loads(out.stdout)
    assert cpu is not None and read is None
    assert denied and all("io" in d for d in denied)
