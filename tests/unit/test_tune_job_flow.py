"""`tune_job` end to end against a stand-in for Slurm whose 'trials' write the probe files
the hook would: the winner written (and submitted) only beyond the noise, a failed trial said
from its log, the user's files never edited."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tuneadvisor.slurm.client.sinfo import PartitionShape
from tuneadvisor.tune.job_tune import JobTuneRequest, JobTuneResult, tune_job

TRAIN = "from torch.utils.data import DataLoader\nloader = DataLoader(range(9), num_workers=0)\n"
JOB = "#!/bin/bash\n#SBATCH --cpus-per-task=1\n#SBATCH --mem=2G\npython train.py\n"


@dataclass
class FakeSlurm:
    """Runs every trial at once when submitted: rate(cores, workers) -> samples/s windows."""

    rates: dict[tuple[int, int], list[float]]
    submitted: list[Path] = field(default_factory=list)

    def partitions(self) -> list[PartitionShape]:
        return [PartitionShape("debug", True, 2, 8000, 0, 1, None)]

    def test_only(self, script: Path, *, chdir: str | None = None) -> str:
        return "starts 2026-12-06T07:00:00 on vm"

    def submit(self, script: Path, *, chdir: str | None = None) -> str:
        self.submitted.append(script)
        if script.name == "array.sbatch":
            self._run(script)
        return str(100 + len(self.submitted))

    def _run(self, array: Path) -> None:
        for line in array.read_text().splitlines():
            if ") setting=" not in line:
                continue
            task = int(line.split(")")[0])
            cores = int(line.split("cores=")[1].split()[0])
            workers = int(line.split("workers=")[1].split()[0])
            windows = self.rates.get((cores, workers))
            if windows is None:  # this trial dies
                (array.parent / f"task-{task}.out").write_text("MemoryError: out of memory\n")
                continue
            probe = {
                "kind": "tuneadvisor-probe", "schema": 1, "batch_size": 10, "cores": cores,
                "test_mode": False, "ceiling_step_s": [0.01] * 3, "pipeline": [],
                "loop_step_s": [10 / r for r in windows], "loop_stall_share": [0.5] * 3,
                "host": "vm", "num_workers": workers,
            }  # fmt: skip
            (array.parent / f"probe-{task}.json").write_text(json.dumps(probe))

    def array_states(self, job_id: str) -> tuple[str, ...]:
        return ()

    def clock(self) -> float:
        return 0.0

    def sleep(self, seconds: float) -> None:
        pass


def _tune(tmp_path: Path, slurm: FakeSlurm, **options: object) -> JobTuneResult:
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "train.sbatch").write_text(JOB)
    request = JobTuneRequest(job=str(tmp_path / "train.sbatch"), **options)  # type: ignore[arg-type]
    result = tune_job(request, slurm, lambda line: None)  # type: ignore[arg-type]
    assert (tmp_path / "train.py").read_text() == TRAIN
    assert (tmp_path / "train.sbatch").read_text() == JOB
    return result


def test_the_winner_beyond_the_noise_is_written_and_submitted(tmp_path: Path) -> None:
    slurm = FakeSlurm({(1, 0): [100, 101, 99], (1, 1): [102, 100, 101], (2, 1): [190, 200, 195],
                       (2, 2): [150, 151, 149]})  # fmt: skip
    result = _tune(tmp_path, slurm, submit_winner=True)
    assert result.best is not None and (result.best.setting.cores, result.best.setting.workers) == (
        2,
        1,
    )
    tuned = (tmp_path / "train.tuned.sbatch").read_text()
    assert "#SBATCH --cpus-per-task=2\n" in tuned and "tuned from tune array 101" in tuned
    assert (tmp_path / "train.py.tuneadvisor.patch").is_file()
    assert slurm.submitted[-1] == (tmp_path / "train.tuned.sbatch").resolve()


@pytest.mark.parametrize("noisy", [[60, 130, 330], [100, 104, 103]])
def test_a_change_within_the_noise_writes_nothing(tmp_path: Path, noisy: list[float]) -> None:
    slurm = FakeSlurm({(1, 0): [100, 101, 99], (1, 1): noisy, (2, 1): noisy, (2, 2): noisy})
    result = _tune(tmp_path, slurm, submit_winner=True)
    assert result.best is None
    assert not (tmp_path / "train.tuned.sbatch").exists()
    assert len(slurm.submitted) == 1  # the array only


def test_a_failed_trial_says_why_and_the_others_count(tmp_path: Path) -> None:
    slurm = FakeSlurm({(1, 0): [100, 101, 99], (1, 1): [100, 100, 100], (2, 1): [190, 200, 195]})
    result = _tune(tmp_path, slurm)
    failed = [t for t in result.tasks if t.failed]
    assert failed and all("MemoryError" in (t.failed or "") for t in failed)
    assert {(t.setting.cores, t.setting.workers) for t in failed} == {(2, 2)}
    assert result.best is not None and result.best.setting.cores == 2
