"""The probe around a training script of one's own (training/probe_hook): a tiny script whose
loader waits 1 ms a sample and whose step sleeps as long, run unedited with the hook first on
PYTHONPATH; its probe file reads as evidence, and the program runs as it would without."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tuneadvisor.runrecord.probe import read_probe

HOOK = REPO / "training" / "probe_hook"
BATCH, STEP_S = 8, 0.008

TINY = f"""
import sys, time
import torch
from torch.utils.data import DataLoader, Dataset

class Slow(Dataset):
    def __len__(self): return 96
    def __getitem__(self, i):
        time.sleep(0.001)  # the loader's work: 1 ms a sample, {BATCH} ms a batch
        return torch.tensor([float(i)])

total = 0.0
for epoch in range(2):
    for batch in DataLoader(Slow(), batch_size={BATCH}, num_workers=0):
        time.sleep({STEP_S})  # the step's work
        total += float(batch.sum())
print("total", total)
sys.exit(3)
"""


def _run(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "tiny_train.py"
    script.write_text(TINY)
    return subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300,
        env={**os.environ, **env}, cwd=tmp_path, check=False,
    )  # fmt: skip


@pytest.mark.torch
def test_the_hook_times_an_unedited_scripts_loop(tmp_path: Path) -> None:
    out = tmp_path / "probe.json"
    path = os.pathsep.join(p for p in (str(HOOK), os.environ.get("PYTHONPATH", "")) if p)
    hooked = _run(tmp_path, {"PYTHONPATH": path, "TUNEADVISOR_PROBE_OUT": str(out)})
    plain = _run(tmp_path, {})
    # the program is not changed: the same output, the same exit status
    assert (
        (hooked.returncode, hooked.stdout)
        == (plain.returncode, plain.stdout)
        == (
            3,
            "total 9120.0\n",
        )
    ), hooked.stderr
    written = json.loads(out.read_text())
    assert written["source"] == "probe_hook" and written["pipeline"] == []
    facts = read_probe(str(out)).facts()
    assert facts["probe.batch_size"] == BATCH and facts["probe.test_mode"] is False
    # the loop waits for its batch about half the time: 8 ms of loading, 8 ms of step
    assert 0.25 < facts["probe.stall_share"] < 0.75  # type: ignore[operator]
    assert STEP_S <= facts["probe.ceiling_step_s"] < 4 * STEP_S  # type: ignore[operator]
    assert facts["probe.loop_step_s"] >= 2 * STEP_S  # type: ignore[operator]


@pytest.mark.torch
def test_without_an_output_file_the_hook_does_nothing(tmp_path: Path) -> None:
    hooked = _run(tmp_path, {"PYTHONPATH": str(HOOK)})
    assert hooked.returncode == 3 and hooked.stderr == ""
    assert not list(tmp_path.glob("*.json"))


@pytest.mark.torch
def test_a_tune_trial_sets_the_workers_and_ends_after_its_steps(tmp_path: Path) -> None:
    """tune --job's trial: num_workers replaced at DataLoader.__init__, the program ended
    cleanly (status 0, before its own end and its exit 3) after the steps, the probe written,
    the process kept on one core; a bad value is ignored, said on stderr."""
    out = tmp_path / "probe.json"
    path = os.pathsep.join(p for p in (str(HOOK), os.environ.get("PYTHONPATH", "")) if p)
    env = {"PYTHONPATH": path, "TUNEADVISOR_PROBE_OUT": str(out)}
    trial = _run(tmp_path, {**env, "TUNEADVISOR_NUM_WORKERS": "1", "TUNEADVISOR_STEPS": "5",
                            "TUNEADVISOR_CORES": "1"})  # fmt: skip
    assert trial.returncode == 0, trial.stderr
    assert "total" not in trial.stdout  # ended after 5 timed batches, not at its own end
    probe = json.loads(out.read_text())
    assert probe["num_workers"] == 1 and probe["cores"] == 1
    assert probe["steps_per_window"] == 5 // 3
    out.unlink()
    bad = _run(
        tmp_path, {**env, "TUNEADVISOR_NUM_WORKERS": "1; rm -rf /", "TUNEADVISOR_STEPS": "x"}
    )
    assert bad.returncode == 3 and "total" in bad.stdout  # as written: nothing applied
    assert "TUNEADVISOR_NUM_WORKERS='1; rm -rf /' ignored" in bad.stderr
    assert json.loads(out.read_text())["num_workers"] == 0
