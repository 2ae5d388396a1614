"""Other processes' load beside a local run (issue 31): measured on the CPUs the run could
use (relaunch/cpu_meter.py), kept in run.json (runrecord/others_use.py), read as the run.*
facts, and counted by the step-time model: the setting gets the cores the others left, the
range's fast side is the node without them, and on CPUs of the job's own nothing changes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tuneadvisor.advisor.forecast import predict
from tuneadvisor.advisor.plan import Change, Plan
from tuneadvisor.advisor.steptime import OTHERS_MIN, step_budget
from tuneadvisor.errors import InputError
from tuneadvisor.relaunch.cpu_meter import CpuMeter, cpu_busy_ticks, others_cores
from tuneadvisor.relaunch.local_allocation import available_cores
from tuneadvisor.relaunch.records import read_record
from tuneadvisor.runrecord.json_fields import JsonFields
from tuneadvisor.runrecord.others_use import OthersUse

STAT = """cpu  900 0 300 5000 10 0 5 0 0 0
cpu0 100 0 50 1000 5 0 0 0 0 0
cpu2 200 10 20 900 5 3 2 7 4 0
intr 123
cpufreq 5
"""


def test_the_kernels_counters_are_read_by_label_busy_without_idle_or_iowait() -> None:
    # cpu1 offline: cpu2 keeps its id; the total line and other cpu* lines are not CPUs
    assert cpu_busy_ticks(STAT) == {0: 150, 2: 200 + 10 + 20 + 3 + 2 + 7}


def test_others_are_the_busy_time_less_the_runs_own() -> None:
    before, after = {0: 0, 1: 0}, {0: 1000, 1: 600}  # 16 s busy at 100 Hz
    figures = others_cores(before, after, [0, 1], own_s=6.0, wall_s=10.0, hz=100.0)
    assert not isinstance(figures, str)
    assert figures == pytest.approx((1.6, 0.6, 1.0))
    # the kernel's ticks may count less than the run's own exact time: never below zero
    ticked = others_cores(before, after, [0, 1], own_s=20.0, wall_s=10.0, hz=100.0)
    assert not isinstance(ticked, str) and ticked[2] == 0.0
    # a CPU the counters do not show is said, never taken as idle
    assert others_cores(before, after, [0, 3], 1.0, 10.0, 100.0) == (
        "no busy counter for CPU 3 in /proc/stat"
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/stat")
def test_a_real_meter_counts_its_own_childrens_cpu_as_the_runs() -> None:
    """A child of ours that burns a core is the run's own, never the others'."""
    meter = CpuMeter(available_cores())
    subprocess.run(
        [sys.executable, "-c", "import time\nt = time.process_time()\n"
         "while time.process_time() - t < 0.5: pass"],
        check=True, timeout=60,
    )  # fmt: skip
    use = meter.finish()
    assert use.not_read == {} and use.allowed_cpus == tuple(available_cores())
    assert use.own_cores is not None and use.wall_s is not None
    assert use.own_cores * use.wall_s >= 0.5  # the child's CPU, counted as ours
    assert use.others_cores is not None and use.busy_cores is not None
    assert 0 <= use.others_cores <= len(use.allowed_cpus)
    assert use.others_cores == pytest.approx(max(0.0, use.busy_cores - use.own_cores), abs=2e-3)


def test_an_unread_figure_is_absent_and_said_never_a_zero() -> None:
    use = OthersUse((0, 1), wall_s=3.0, not_read={"others_cores": "no per-CPU counters"})
    data = use.to_json()
    assert "others_cores" not in data and data["not_read"] == {
        "others_cores": "no per-CPU counters"
    }
    assert OthersUse.from_json(JsonFields(data, None)) == use


def test_a_negative_figure_in_a_record_is_refused() -> None:
    data = OthersUse((0,), 1.0, 0.5, -0.5, 2.0).to_json()
    with pytest.raises(InputError, match=r"others_cores is -0\.5, out of range"):
        OthersUse.from_json(JsonFields(data, Path("run.json")))


def _record(tmp_path: Path, others: dict[str, Any] | None) -> Path:
    steps = [{"event": "step", "step": i, "step_time_s": 0.1, "samples_per_s": 320.0}
             for i in range(1, 21)]  # fmt: skip
    resources: dict[str, Any] = {"cpu_s": 2.0, "cores_used": 1.0, "cores_allowed": 1}
    if others is not None:
        resources["cpu_others"] = others
    data = {
        "kind": "tuneadvisor-run", "id": "r1", "status": "completed", "steps": steps,
        "settings": {"cpus_per_task": 1, "knobs": {"num_workers": 1, "batch_size": 32}},
        "resources": resources,
    }  # fmt: skip
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data))
    return path


def test_the_record_gives_the_facts_and_an_unread_figure_gives_none(tmp_path: Path) -> None:
    held = OthersUse((0, 1), 1.9, 1.0, 0.9, 10.0).to_json()
    facts = read_record(_record(tmp_path, held)).facts()
    assert facts["run.others_cores"] == 0.9 and facts["run.allowed_cpus"] == 2
    unread = OthersUse((0, 1), not_read={"others_cores": "x"}).to_json()
    assert "run.others_cores" not in read_record(_record(tmp_path, unread)).facts()
    assert "run.others_cores" not in read_record(_record(tmp_path, None)).facts()


def _facts(others: float | None, pool: int = 2) -> dict[str, object]:
    """The bench's case: a one-core, one-worker run waiting 85 % of its step for data."""
    more: dict[str, object] = {"run.samples_per_s": 200.0, "run.batch_size": 32}
    if others is not None:
        more |= {"run.others_cores": others, "run.allowed_cpus": pool}
    return {
        "profile.loader_share": 0.85, "profile.compute_share": 0.15, "profile.step_s": 0.16,
        "profile.steps": 40, "alloc.workers": 1, "alloc.cpus_per_task": 1,
        "job.ranks_per_task": 1, **more,
    }  # fmt: skip


def _plan(cores: int, workers: int) -> Plan:
    return Plan(
        sbatch={"cpus-per-task": Change(cores, ("x",))},
        script={"num_workers": Change(workers, ("x",))},
    )


def test_others_on_the_cpus_take_the_cores_the_setting_would_add() -> None:
    """Other processes held 0.9 of the 2 CPUs: the 2-core setting gets the kernel's fair
    share, 2 x 2 / 2.9 = 1.38 cores, the expected speedup falls to what that buys, and the
    range's fast side keeps the idle node's; the basis names the figure and where it was
    measured."""
    idle, _ = predict(_facts(None), _plan(2, 2))
    loaded, _ = predict(_facts(0.9), _plan(2, 2))
    assert idle is not None and loaded is not None
    assert loaded.speedup.expected < 0.7 * idle.speedup.expected
    assert loaded.speedup.high >= idle.speedup.expected  # they may leave
    assert loaded.speedup.low <= loaded.speedup.expected <= loaded.speedup.high
    said = [b for b in loaded.basis if b.startswith("other processes held")]
    assert said == [
        "other processes held 0.9 of the 2 CPUs the run could use: measured, the run record; "
        "the setting shares them, the kernel's fair share (each runnable thread alike: the "
        "expected value, they keep their load, assumed; the range's fast side: they leave)"
    ]
    budget = step_budget(_facts(0.9))
    assert budget is not None
    assert budget.cores_left(2) == pytest.approx(2 * 2 / 2.9)
    assert budget.cores_left(1) == 1.0  # the measured 1 core fitted beside them
    # a setting that fits in the CPUs the others left: the same figures
    fits, _ = predict(_facts(0.9, pool=4), _plan(2, 2))
    assert fits is not None
    assert (fits.speedup, fits.step_s, fits.samples_per_s) == (
        idle.speedup,
        idle.step_s,
        idle.samples_per_s,
    )


@given(
    others=st.floats(0.0, OTHERS_MIN, exclude_max=True),
    cores=st.integers(1, 16),
    workers=st.integers(1, 16),
    pool=st.integers(1, 64),
)
def test_on_cpus_of_the_jobs_own_nothing_changes(
    others: float, cores: int, workers: int, pool: int
) -> None:
    """A Slurm job's cgroup: others' load on its CPUs is about nothing; the prediction is the
    one without the figure, whatever the setting."""
    assert predict(_facts(others, pool), _plan(cores, workers)) == predict(
        _facts(None), _plan(cores, workers)
    )


@given(
    others=st.floats(OTHERS_MIN, 8.0),
    cores=st.integers(1, 8),
    workers=st.integers(1, 8),
    pool=st.integers(1, 8),
)
def test_others_never_make_a_setting_faster_and_their_leaving_is_inside_the_range(
    others: float, cores: int, workers: int, pool: int
) -> None:
    """Whatever the others held: the expected speedup is no better than on the idle node,
    that idle node's expected value lies inside the range (its fast side: they leave), and
    the measured setting still predicts the measured step."""
    idle, _ = predict(_facts(None), _plan(cores, workers))
    loaded, _ = predict(_facts(others, pool), _plan(cores, workers))
    assert idle is not None and loaded is not None
    assert loaded.speedup.expected <= idle.speedup.expected + 1e-9
    assert loaded.speedup.low <= idle.speedup.expected * (1 + 1e-9)
    assert idle.speedup.expected <= loaded.speedup.high * (1 + 1e-9)
    budget = step_budget(_facts(others, pool))
    assert budget is not None and budget.step_at(1, 1) == pytest.approx(1.0)


def test_a_change_the_others_load_vetoes_says_so_with_the_fast_side() -> None:
    """Others held more than the CPUs the setting would add: no change is made, and the line
    names the measured load and what the node without it would give."""
    from tuneadvisor.advisor.advice import advise
    from tuneadvisor.advisor.evidence import Gathered
    from tuneadvisor.workspace.rule_files import default_rules_dir, load_rules

    facts = {**_facts(1.5), "node.cores": 2, "job.cpus_per_task": 1, "job.tasks_per_node": 1}
    advice = advise(Gathered(facts=facts), load_rules([default_rules_dir()]))
    assert advice.prediction is None and advice.no_prediction is not None
    assert advice.no_prediction.startswith("no change to the workers or cores")
    assert "other processes held 1.5 of the 2 CPUs the run could use during the measured run" in (
        advice.no_prediction
    )
    assert "if they leave" in advice.no_prediction
