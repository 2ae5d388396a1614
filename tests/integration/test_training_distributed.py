"""The DDP scripts as real processes on the CPU: two gloo ranks launched the srun way (Slurm's
variables per task) and by torchrun, where a rank killed mid-run comes back from its snapshot.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_training_mnist import PREFIX, REPO, _make_data

pytestmark = [pytest.mark.torch, pytest.mark.slow]

DDP_SCRIPT = REPO / "training" / "mnist_ddp.py"
TORCHRUN_SCRIPT = REPO / "training" / "mnist_torchrun.py"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _records(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(x[len(PREFIX) :]) for x in stdout.splitlines() if x.startswith(PREFIX)]


def _env() -> dict[str, str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    for name in list(env):
        if name.startswith(("SLURM_", "MASTER_", "TORCHELASTIC_")) or name in (
            "RANK",
            "LOCAL_RANK",
            "WORLD_SIZE",
        ):
            del env[name]
    return env


@pytest.fixture(scope="module")
def tiny_mnist(tmp_path_factory: pytest.TempPathFactory, torch_python: str) -> Path:
    root = tmp_path_factory.mktemp("mnist")
    _make_data(torch_python, root, 256, 64)
    return root


def test_mnist_ddp_two_gloo_ranks_from_slurm_variables(
    torch_python: str, tiny_mnist: Path, tmp_path: Path
) -> None:
    port = str(_free_port())
    argv = [torch_python, str(DDP_SCRIPT), "--data-dir", str(tiny_mnist), "--max-steps", "3",
            "--epochs", "1", "--batch-size", "16", "--log-interval", "1", "--num-workers", "0",
            "--max-eval-batches", "1"]  # fmt: skip
    procs = []
    for rank in range(2):
        env = {
            **_env(),
            "SLURM_PROCID": str(rank),
            "SLURM_LOCALID": str(rank),
            "SLURM_NTASKS": "2",
            "SLURM_JOB_ID": "4242",
            "SLURM_JOB_NODELIST": "localhost",
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": port,
        }
        procs.append(
            subprocess.Popen(
                argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
                cwd=tmp_path,
            )
        )
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err[-3000:]
    rank0, rank1 = (_records(out) for out, _ in outs)
    assert rank1 == [], "only rank 0 reports progress"
    start, *steps, epoch, end = rank0
    assert start["event"] == "start" and start["script"] == "mnist_ddp"
    assert start["launcher"] == "srun" and start["world_size"] == 2
    assert start["backend"] == "gloo" and start["slurm_job_id"] == "4242"
    assert [s["step"] for s in steps] == [1, 2, 3]
    assert epoch["event"] == "epoch" and epoch["steps"] == 3
    # every rank trained on its own 16 samples per step: the job saw twice the batch
    assert end["event"] == "end" and end["samples"] == 3 * 16 * 2


def test_mnist_ddp_as_one_task_trains_without_a_process_group(
    torch_python: str, tiny_mnist: Path, tmp_path: Path
) -> None:
    """srun --ntasks=1: the world size 1 that scaling is measured against."""
    env = {**_env(), "SLURM_PROCID": "0", "SLURM_LOCALID": "0", "SLURM_NTASKS": "1"}
    done = subprocess.run(
        [torch_python, str(DDP_SCRIPT), "--data-dir", str(tiny_mnist), "--max-steps", "2",
         "--epochs", "1", "--batch-size", "16", "--num-workers", "0", "--max-eval-batches", "1"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    start, *_, end = _records(done.stdout)
    assert start["world_size"] == 1 and end["event"] == "end" and end["samples"] == 2 * 16


def test_mnist_torchrun_resumes_from_its_snapshot_after_a_rank_is_killed(
    torch_python: str, tiny_mnist: Path, tmp_path: Path
) -> None:
    launcher = [torch_python, "-m", "torch.distributed.run"]  # what `torchrun` runs
    snapshot = tmp_path / "snapshot.pt"
    proc = subprocess.run(
        [*launcher, "--standalone", "--nproc-per-node", "2", "--max-restarts", "1",
         str(TORCHRUN_SCRIPT), "--data-dir", str(tiny_mnist), "--epochs", "3",
         "--batch-size", "64", "--log-interval", "1", "--num-workers", "0",
         "--max-eval-batches", "1", "--snapshot-path", str(snapshot),
         "--kill-rank", "1", "--kill-at-epoch", "2"],
        capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = _records(proc.stdout)
    events = [r["event"] for r in records]
    assert {"event": "killed", "rank": 1, "epoch": 2} in records
    starts = [r for r in records if r["event"] == "start"]
    assert [s["restart"] for s in starts] == [0, 1], "torchrun restarted the workers once"
    # the second attempt picked up after epoch 1 (256 samples / 2 ranks / 64 = 2 steps each)
    after = records[events.index("start", events.index("killed")) :]
    resume = next(r for r in after if r["event"] == "resume")
    assert (resume["epoch"], resume["steps"], resume["restart"]) == (1, 2, 1)
    assert [r["epoch"] for r in after if r["event"] == "epoch"] == [2, 3]
    assert [r["step"] for r in after if r["event"] == "step"] == [3, 4, 5, 6]
    assert after[-1]["event"] == "end" and after[-1]["steps"] == 6
    assert snapshot.exists() and not snapshot.with_name("snapshot.pt.part").exists()


def test_torchrun_script_documents_its_own_flags_and_the_shared_knobs(torch_python: str) -> None:
    """The torchrun-only flags and the shared knobs are both on --help."""
    out = subprocess.run(
        [torch_python, str(TORCHRUN_SCRIPT), "--help"], capture_output=True, text=True,
        timeout=120, check=True, env=_env(),
    ).stdout  # fmt: skip
    for flag in ("--snapshot-path", "--save-every", "--num-workers", "--input-cost"):
        assert flag in out
