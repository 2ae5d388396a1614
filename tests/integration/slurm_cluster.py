"""The local Slurm cluster for the `slurm` tests (scripts/slurm-local.sh): started when need
be, where it can be (root on Debian); skipped with the reason elsewhere.

Jobs are short CPU jobs (seconds) in the test's tmp_path, submitted with the project's venv
on PATH (sbatch exports the environment). The node has the machine's cores (2 here) and
other tests' jobs share it, so waits are bounded generously but never timed.
"""

from __future__ import annotations

import getpass
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tuneadvisor.slurm.accounting.sacct.records import SacctJob
from tuneadvisor.slurm.client import SlurmClient
from tuneadvisor.slurm.client.scontrol import JobInfo

REPO = Path(__file__).resolve().parents[2]
SLURM_ROOT = Path(os.environ.get("SLURM_ROOT", "/tmp/tuneadvisor-slurm"))
WAIT_S = 300.0  # one job from submission to its end, queueing behind others' included

# A bundled-style training stand-in: burns one core for SECONDS, holding MIB of memory.
BURN_PY = """\
import sys
import time

seconds, mib = float(sys.argv[1]), int(sys.argv[2])
held = bytearray(mib << 20)
end = time.time() + seconds
n = 0
while time.time() < end:
    n += 1
print(f"burned {n} loops holding {len(held) >> 20} MiB")
"""


def _why_not_installable() -> str | None:
    if sys.platform != "linux" or not Path("/etc/debian_version").exists():
        return "not Debian"
    if os.geteuid() != 0:
        return "not root"
    if shutil.which("apt-get") is None:
        return "no apt-get"
    return None


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["SLURM_CONF"] = str(SLURM_ROOT / "etc" / "slurm.conf")
    paths = [str(SLURM_ROOT / "bin"), str(Path(sys.executable).parent), env.get("PATH", "")]
    env["PATH"] = os.pathsep.join(paths)
    return env


def _answers(env: dict[str, str]) -> bool:
    try:
        done = subprocess.run(
            ["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and any(
        state.strip() in ("idle", "mixed", "allocated", "completing")
        for state in done.stdout.splitlines()
    )


def start_cluster() -> dict[str, str]:
    """The cluster's environment (SLURM_CONF, seff and the venv on PATH); starts it where
    it can be installed (idempotent, 0.4 s when up), else skips the test."""
    env = _environment()
    why = _why_not_installable()
    if why is None:
        done = subprocess.run(
            ["bash", str(REPO / "scripts" / "slurm-local.sh")],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            pytest.fail(
                f"scripts/slurm-local.sh failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
            )
    elif not _answers(env):
        pytest.skip(
            f"needs the local Slurm cluster (scripts/slurm-local.sh as root on Debian): {why}"
        )
    elif not _associated(env):
        pytest.skip(
            f"the local Slurm cluster has no account for {getpass.getuser()}: start it with "
            f"ACCT_USERS={getpass.getuser()} bash scripts/slurm-local.sh"
        )
    return env


def _associated(env: dict[str, str]) -> bool:
    """This user may submit (root always can; others need an association in accounting)."""
    user = getpass.getuser()
    done = subprocess.run(
        ["sacctmgr", "-n", "-P", "show", "assoc", f"user={user}", "format=user"],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    return os.geteuid() == 0 or user in done.stdout.split()


@dataclass
class Cluster:
    env: dict[str, str]

    @property
    def client(self) -> SlurmClient:
        return SlurmClient(env=self.env)

    def test_only(self, path: Path) -> str | None:
        """None when ``sbatch --test-only`` (which queues nothing) accepts the script, else
        what it said."""
        done = subprocess.run(
            ["sbatch", "--test-only", str(path)], env=self.env, capture_output=True,
            text=True, cwd=path.parent, check=False, timeout=60,
        )  # fmt: skip
        return None if done.returncode == 0 else (done.stderr or done.stdout).strip()

    def submit(self, folder: Path, name: str, script: str, *options: str) -> str:
        path = folder / name
        path.write_text(script)
        return self.client.submit(path, chdir=str(folder), options=options)

    def show(self, job_id: str) -> JobInfo:
        shown = self.client.show_job(job_id)
        assert shown is not None, f"slurmctld does not know job {job_id}"
        return shown

    def wait_running(self, job_id: str) -> JobInfo:
        shown = self.show(job_id)
        deadline = self.client.clock() + WAIT_S
        while shown.state == "PENDING" and self.client.clock() < deadline:
            self.client.sleep(0.2)
            shown = self.show(job_id)
        assert shown.state == "RUNNING", f"job {job_id} is {shown.state}, not running"
        return shown

    def wait(self, job_id: str) -> SacctJob:
        """The job's complete accounting once it has ended."""
        shown = self.client.wait_finished(job_id, WAIT_S)
        assert shown is None or not shown.active, f"job {job_id} still {shown.state}"
        job = self.client.poll_accounting(job_id)
        assert job is not None and job.complete, f"accounting of {job_id}: {job}"
        return job

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """A Slurm command (scontrol update, scancel), checked."""
        return subprocess.run(args, env=self.env, capture_output=True, text=True, check=True)

    def tuneadvisor(self, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tuneadvisor", *args],
            env=self.env,
            cwd=cwd,
            capture_output=True,
            text=True,
            check=False,
        )


def burner(seconds: float = 3, mib: int = 60, directives: str = "") -> str:
    """A job script running burn.py (written beside it by `with_burner`)."""
    return (
        "#!/bin/bash\n"
        "#SBATCH --job-name=burn\n"
        "#SBATCH --cpus-per-task=1\n"
        "#SBATCH --mem=200M\n"
        "#SBATCH --time=00:05:00\n"
        f"{directives}"
        f"python burn.py {seconds} {mib}\n"
    )


def with_burner(folder: Path) -> Path:
    (folder / "burn.py").write_text(BURN_PY)
    return folder
