"""The multi-node Slurm cluster for the `multinode` tests (scripts/slurm-multinode.sh): three
compute nodes, a controller and a login node, each in its own network and UTS namespace on
this one machine. Started when need be where it can be (root on Debian, as scripts/test does);
skipped with the reason elsewhere.

Everything Slurm-side runs on the login node, as a user of a real cluster would: tuneadvisor
itself through `ta-login`, and the test's own Slurm calls (SlurmClient) through small shims
that exec `ta-login /usr/bin/<command>`. The cluster's addresses exist only inside its
namespaces, so a Slurm command in the root namespace cannot reach it. The one-node cluster
(/tmp/tuneadvisor-slurm) is another cluster: its SLURM_CONF never reaches these tests.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tuneadvisor.slurm.accounting.sacct.records import SacctJob
from tuneadvisor.slurm.client import SlurmClient

REPO = Path(__file__).resolve().parents[2]
ROOT = Path(os.environ.get("TA_MULTINODE_ROOT", "/tmp/ta-multinode"))
NODES = 3
WAIT_S = 300.0  # one job from submission to its end on two shared cores
COMMANDS = ("sbatch", "srun", "squeue", "sacct", "scontrol", "sinfo", "scancel", "sstat",
            "sacctmgr")  # fmt: skip


def why_not() -> str | None:
    if sys.platform != "linux" or not Path("/etc/debian_version").exists():
        return "not Debian"
    if os.geteuid() != 0:
        return "not root (entering the nodes' namespaces needs root)"
    if shutil.which("nsenter") is None or shutil.which("ip") is None:
        return "no nsenter or ip"
    return None


def start() -> None:
    """Start (or check, 0.3 s when up) the cluster, else skip the test saying why."""
    why = why_not()
    if why is not None:
        pytest.skip(f"needs the multi-node Slurm cluster (scripts/slurm-multinode.sh): {why}")
    env = {k: v for k, v in os.environ.items() if k != "SLURM_CONF"}
    env.update(SLURM_ROOT=str(ROOT), NODES=str(NODES))
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "slurm-multinode.sh")],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.fail(
            f"scripts/slurm-multinode.sh failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
        )


def _shims(folder: Path) -> Path:
    """A folder of `sbatch`, `srun`... that run the real command on the login node. Each drops
    its folder from PATH first: a job inherits PATH and must find the real commands."""
    folder.mkdir(parents=True, exist_ok=True)
    login = ROOT / "bin" / "ta-login"
    targets = {name: f"/usr/bin/{name}" for name in COMMANDS}
    targets["seff"] = str(ROOT / "bin" / "seff")
    for name, target in targets.items():
        shim = folder / name
        shim.write_text(
            f'#!/bin/sh\nPATH=${{PATH#{folder}:}}; export PATH\nexec {login} {target} "$@"\n'
        )
        shim.chmod(0o755)
    return folder


@dataclass
class MultiCluster:
    env: dict[str, str]  # for the test's own Slurm calls: the shims first on PATH

    @property
    def client(self) -> SlurmClient:
        return SlurmClient(env=self.env)

    def login(
        self, cwd: Path, *args: str, timeout: float = WAIT_S
    ) -> subprocess.CompletedProcess[str]:
        """ARGS run on the login node (exit status and output pass through ta-login)."""
        return subprocess.run(
            [str(ROOT / "bin" / "ta-login"), *args],
            env=self.job_env, cwd=cwd, capture_output=True, text=True, check=False,
            timeout=timeout,
        )  # fmt: skip

    @property
    def job_env(self) -> dict[str, str]:
        """What jobs inherit: the venv first on PATH, no shims (ta-login sets SLURM_CONF)."""
        env = dict(self.env)
        env["PATH"] = env["PATH"].split(os.pathsep, 1)[1]
        return env

    def tuneadvisor(
        self, cwd: Path, *args: str, timeout: float = WAIT_S
    ) -> subprocess.CompletedProcess[str]:
        return self.login(cwd, sys.executable, "-m", "tuneadvisor", *args, timeout=timeout)

    def submit(self, folder: Path, script: Path, *options: str) -> str:
        return self.client.submit(script, chdir=str(folder), options=options)

    def wait(self, job_id: str) -> SacctJob:
        """The job's complete accounting once it has ended (polled: it lags the end)."""
        shown = self.client.wait_finished(job_id, WAIT_S)
        assert shown is None or not shown.active, f"job {job_id} still {shown.state}"
        job = self.client.poll_accounting(job_id)
        assert job is not None and job.complete, f"accounting of {job_id}: {job}"
        return job


def cluster(shim_dir: Path) -> MultiCluster:
    start()
    env = {k: v for k, v in os.environ.items() if k != "SLURM_CONF"}
    env["OMP_NUM_THREADS"] = "1"
    paths = [str(_shims(shim_dir)), str(Path(sys.executable).parent), env.get("PATH", "")]
    env["PATH"] = os.pathsep.join(paths)
    return MultiCluster(env)
