"""Time to result (issue 32): sbatch --test-only's start read from real outputs, the run's
steps from the training script's options and a profile's whole epochs, the arithmetic of
the end (properties), and the workspace asking a Slurm of small fake commands."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import REPO
from tuneadvisor.advisor.advice import Advice
from tuneadvisor.advisor.fact_view import view
from tuneadvisor.advisor.finish import (
    NO_LENGTH,
    NO_SCRIPT,
    NO_STEP_TIME,
    finish,
    run_length,
    run_steps,
    times,
    verdict,
)
from tuneadvisor.advisor.prediction import Prediction, Span
from tuneadvisor.advisor.sizing import step_model
from tuneadvisor.profile.analysis import ProfileAnalysis
from tuneadvisor.profile.facts import profile_facts
from tuneadvisor.slurm.client import SlurmClient, SlurmError
from tuneadvisor.slurm.client.will_run import WillRunError, parse_will_run
from tuneadvisor.trainscript.scan import scan_script
from tuneadvisor.workspace.inputs import Inputs
from tuneadvisor.workspace.load import load_workspace
from tuneadvisor.workspace.time_to_result import time_to_result
from tuneadvisor.workspace.tuned_files import TunedFiles

TEST_ONLY = REPO / "tests" / "fixtures" / "slurm-local" / "test-only"
REALWORLD = REPO / "tests" / "fixtures" / "realworld" / "test-only"
EXAMPLE = REPO / "examples" / "mnist"


def _stderr(name: str) -> str:
    """The stderr part of a recorded transcript (``--- stderr`` to ``[exit N]``)."""
    text = (TEST_ONLY / name).read_text()
    return text.split("--- stderr\n", 1)[1].rsplit("[exit ", 1)[0]


# --------------------------------------------------------------------------- the reader


def test_the_start_sbatch_22_05_gave_on_the_local_cluster() -> None:
    said = parse_will_run(_stderr("busy.txt"))
    assert said is not None
    assert said.start == datetime(2026, 12, 6, 10, 19, 44)
    assert (said.job_id, said.processors, said.nodes, said.partition) == (1941, 1, "vm", "debug")
    two = parse_will_run(_stderr("busy-standard.txt"))
    assert two is not None and two.processors == 2 and two.start == said.start


def test_a_start_in_another_time_format_is_refused_not_guessed() -> None:
    # SLURM_TIME_FORMAT=relative: "10:19:44" (today); the day is not in it
    with pytest.raises(WillRunError, match="10:19:44"):
        parse_will_run(_stderr("busy-relative.txt"))


def test_a_refused_script_says_no_start() -> None:
    assert parse_will_run(_stderr("too-large.txt")) is None
    assert parse_will_run("") is None


def test_other_slurm_versions_wording() -> None:
    # a site's documentation (Slurm 20.x): the same words, a larger machine
    archer2 = parse_will_run((REALWORLD / "archer2-docs-350.txt").read_text())
    assert archer2 is not None
    assert (archer2.processors, archer2.nodes, archer2.partition) == (256, "nid001294", "standard")
    assert archer2.start == datetime(2021, 11, 13, 4, 47, 2)
    # Slurm 17.02 and before: no partition (src/api/allocate.c's format without it)
    old = parse_will_run("sbatch: Job 77 to start at 2017-03-01T08:00:00 using 4 processors "
                         "on nodes n[01-02]\n")  # fmt: skip
    assert old is not None and old.partition is None and old.nodes == "n[01-02]"
    # a heterogeneous job: "on HOSTS" without "nodes", then the jobs it preempts
    het = parse_will_run("sbatch: Job 9 to start at 2024-05-01T12:30:00 using 8 processors on "
                         "n[1-2]\nsbatch:   Preempts: 4,5\n")  # fmt: skip
    assert het is not None and het.nodes == "n[1-2]" and het.processors == 8
    with pytest.raises(WillRunError, match="not a real date"):
        parse_will_run("Job 1 to start at 2026-13-45T99:00:00 using 1 processors on nodes a")


# --------------------------------------------------------------------------- the steps


def _scan_length(launch: dict[str, str] | None) -> dict[str, object]:
    source = (EXAMPLE / "mnist_classify.py").read_text()
    facts = scan_script(source, launch).facts()
    return {k: v for k, v in facts.items() if k.startswith(("script.max_steps", "script.epochs"))}


def test_the_steps_and_epochs_the_launch_line_passes_else_the_defaults() -> None:
    passed = _scan_length({"--epochs": "1", "--max-steps": "120"})
    assert passed["script.max_steps"] == 120 and passed["script.epochs"] == 1
    assert passed["script.max_steps.how"] == "--max-steps 120 on the launch line"
    default = _scan_length(None)
    assert default["script.epochs"] == 14 and "default" in str(default["script.epochs.how"])
    assert "script.max_steps" not in default  # default=None: no cap
    # a shell variable is known only when the job runs: not read as a number
    assert "script.max_steps" not in _scan_length({"--max-steps": "$STEPS"})


@pytest.mark.parametrize(
    ("loop", "epochs"),
    [("for epoch in range(10):", 10), ("for epoch in range(1, 11):", 10),
     ("for n_epoch in range(0, 10, 3):", 4), ("for epoch in range(n):", None),
     ("for step in range(10):", None), ("for epoch in range(5, 1):", None)],
)  # fmt: skip
def test_an_epoch_loop_over_a_literal_range(loop: str, epochs: int | None) -> None:
    facts = scan_script(f"def train():\n    {loop}\n        pass\n").facts()
    assert facts.get("script.epochs") == epochs


def test_a_profile_of_whole_epochs_gives_the_steps_of_one(
    tutorial_analysis: ProfileAnalysis,
) -> None:
    facts = profile_facts(tutorial_analysis)  # the loop line: 939 hits for 938 steps
    assert (facts["profile.epochs"], facts["profile.epoch_steps"]) == (1, 938)


def test_the_steps_from_what_was_read() -> None:
    def steps(**facts: object) -> object:
        return run_steps(view({k.replace("__", "."): v for k, v in facts.items()}))

    how = {"script.epochs.how": "--epochs 3 on the launch line"}
    by_epochs = steps(**{"script.epochs": 3, "profile.epoch_steps": 938, **how})
    assert getattr(by_epochs, "count", None) == 3 * 938
    capped = steps(**{"script.epochs": 3, "profile.epoch_steps": 938, "script.max_steps": 100})
    assert getattr(capped, "count", None) == 100 and not getattr(capped, "at_most", True)
    at_most = steps(**{"script.epochs": 1, "script.max_steps": 120})
    assert getattr(at_most, "at_most", False) and "1 epoch may end it sooner" in str(
        getattr(at_most, "how", "")
    )
    assert "the steps of an epoch" in str(steps(**{"script.epochs": 3, **how}))
    assert steps(**{"script.dataloaders": 1}) == NO_LENGTH
    assert steps() == NO_SCRIPT  # no training script read at all


# --------------------------------------------------------------------------- the arithmetic

spans = st.tuples(st.floats(0, 1e4, allow_nan=False), st.floats(0, 1e4), st.floats(0, 1e4)).map(
    lambda t: Span(*sorted(t))
)
starts = st.datetimes(datetime(2000, 1, 1), datetime(2100, 1, 1))
step_counts = st.integers(1, 10**7)


@given(starts, step_counts, spans)
def test_the_end_is_never_before_the_start_and_keeps_its_order(
    start: datetime, steps: int, step: Span
) -> None:
    done = finish(start, times(steps, step))
    assert done is not None
    assert start <= done.end_low <= done.end <= done.end_high


@given(starts, step_counts, spans, spans)
def test_the_tuned_end_follows_the_predictions_range(
    start: datetime, steps: int, one: Span, other: Span
) -> None:
    """A prediction lower (higher) at each end ends no later (no sooner) at that end, and the
    end range is the prediction's range times the steps, from the start."""
    a, b = finish(start, times(steps, one)), finish(start, times(steps, other))
    assert a is not None and b is not None
    tick = timedelta(microseconds=1)
    for (x, y), (ex, ey) in zip(
        ((one.low, other.low), (one.expected, other.expected), (one.high, other.high)),
        ((a.end_low, b.end_low), (a.end, b.end), (a.end_high, b.end_high)),
        strict=True,
    ):
        assert abs((ex - start) - timedelta(seconds=steps * x)) <= tick
        if x <= y:
            assert ex <= ey


@given(
    st.fixed_dictionaries(
        {},
        optional={
            "profile.step_s": st.floats(0.001, 10),
            "profile.loader_share": st.floats(0, 1),
            "profile.compute_share": st.floats(0, 1),
            "profile.steps": st.integers(1, 10**6),
            "profile.epoch_steps": st.integers(1, 10**6),
            "script.batch_size": st.integers(1, 4096),
            "script.num_workers": st.integers(0, 64),
            "job.cpus_per_task": st.integers(1, 256),
            "script.dataloaders": st.integers(0, 4),
        },
    )
)
def test_unknown_steps_give_no_time(facts: dict[str, object]) -> None:
    """Whatever timed the step, without the run's steps (no --max-steps, no --epochs) no
    length is given, and the line says which piece is missing."""
    v = view(facts)
    step = Span(0.1, 0.2, 0.3)
    prediction = Prediction({"num_workers": 2}, step, Span(1, 1, 1))
    length = run_length(v, step_model(v), prediction)
    assert length.now_s is None and length.tuned_s is None and length.steps is None
    assert (NO_LENGTH if "script.dataloaders" in facts else NO_SCRIPT) in length.missing


def test_no_step_time_says_so() -> None:
    v = view({"script.max_steps": 100, "script.max_steps.how": "--max-steps 100"})
    length = run_length(v, step_model(v), None)
    assert length.now_s is None and length.missing == (NO_STEP_TIME,)
    assert length.steps is not None and length.steps.count == 100


def test_a_step_timed_without_a_budget_still_gives_the_length() -> None:
    """A profile whose run's workers are not known makes no budget (no prediction), but it
    timed the step: the job as written has a length, with the profile's assumed spread."""
    v = view({"profile.step_s": 0.5, "script.max_steps": 100, "script.max_steps.how": "x"})
    length = run_length(v, step_model(v), None)
    assert length.now_s is not None and length.missing == ()
    assert length.now_s.expected == 50.0 and length.now_s.low < 50.0 < length.now_s.high
    assert length.tuned_s is None  # no prediction: no tuned length


def test_a_larger_request_that_waits_longer_than_it_saves_is_said() -> None:
    start = datetime(2026, 12, 6, 14, 2)
    now = finish(start, Span(9000, 9500, 10000))  # ends ~16:40
    waits = finish(start + timedelta(hours=3), Span(3600, 3900, 4200))
    soon = finish(start + timedelta(minutes=3), Span(3600, 3900, 4200))
    assert now is not None and waits is not None and soon is not None
    assert "the job as written gives the result first" in verdict(now, waits)
    assert "waits 3 h 00 min longer" in verdict(now, waits)
    said = verdict(now, soon)
    assert "sooner" in said and "after waiting 3 min longer" in said


# --------------------------------------------------------------------------- asking Slurm


def _fake_sbatch(folder: Path, body: str) -> SlurmClient:
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    sbatch = bin_dir / "sbatch"
    sbatch.write_text("#!/bin/sh\n" + body)
    sbatch.chmod(0o755)
    return SlurmClient(env={"PATH": str(bin_dir), "LC_ALL": "C"}, timeout_s=10)


# The fake (shell builtins only: PATH holds nothing else) answers in ISO only when asked so;
# the job as written (1 core) at 14:02, the tuned one (its --cpus-per-task other than 1)
# three hours later.
SAID = "sbatch: Job 5 to start at {} using 2 processors on nodes vm in partition debug"
ANSWER = f"""
for last; do :; done
if [ "$SLURM_TIME_FORMAT" != standard ]; then echo "{SAID.format("14:02:11")}" >&2; exit 0; fi
when=2026-12-06T17:05:00
while read -r line; do
  case "$line" in "#SBATCH --cpus-per-task=1 "*) when=2026-12-06T14:02:11;; esac
done < "$last"
echo "{SAID.format("$when")}" >&2
"""


def _example() -> tuple[Advice, TunedFiles]:
    workspace = load_workspace(
        Inputs(profiles=(str(EXAMPLE / "24752610.lprof"),), job=str(EXAMPLE / "mnist.sbatch")),
        cwd=REPO,
    )
    assert workspace.advice is not None
    return workspace.advice, workspace.tuned


def test_both_starts_and_ends_from_the_scheduler(tmp_path: Path) -> None:
    advice, tuned = _example()
    when = time_to_result(advice, tuned, _fake_sbatch(tmp_path, ANSWER))
    assert when.not_read == ()
    assert when.now is not None and when.tuned is not None
    assert when.now.start == datetime(2026, 12, 6, 14, 2, 11)
    assert when.tuned.start == datetime(2026, 12, 6, 17, 5)
    length = advice.run_length
    assert length is not None and length.now_s is not None and length.tuned_s is not None
    assert when.now.end == when.now.start + timedelta(seconds=length.now_s.expected)
    assert when.tuned.end == when.tuned.start + timedelta(seconds=length.tuned_s.expected)
    assert when.verdict is not None and "gives the result first" in when.verdict


def test_without_slurm_the_missing_piece_is_named(tmp_path: Path) -> None:
    advice, tuned = _example()
    (tmp_path / "empty").mkdir()
    nothing = SlurmClient(env={"PATH": str(tmp_path / "empty")})
    when = time_to_result(advice, tuned, nothing)
    assert when.now is None and when.tuned is None
    assert [n.why for n in when.not_read] == [
        "the start: Slurm's sbatch is not on PATH (run this on a login node of the cluster)"
    ]
    refusing = _fake_sbatch(
        tmp_path, 'echo "allocation failure: More processors requested than permitted" >&2\n'
        "exit 1\n",
    )  # fmt: skip
    refused = time_to_result(advice, tuned, refusing)
    assert refused.now is None and len(refused.not_read) == 2
    assert "More processors requested than permitted" in refused.not_read[0].why


def test_will_run_refuses_what_sbatch_refuses(tmp_path: Path) -> None:
    client = _fake_sbatch(tmp_path, 'echo "sbatch: error: Invalid partition name" >&2\nexit 1\n')
    with pytest.raises(SlurmError, match="Invalid partition name"):
        client.will_run(tmp_path / "job.sbatch")


# --------------------------------------------------------------------------- the ledger

TRAIN_WITH_STEPS = (
    "import argparse\nfrom torch.utils.data import DataLoader\n"
    "parser = argparse.ArgumentParser()\n"
    "parser.add_argument('--max-steps', type=int, default=10)\n"
    "args = parser.parse_args()\n"
    "loader = DataLoader(range(9), num_workers=0)\n"
)


def test_the_ledger_times_the_job_and_the_winner_from_their_trials(tmp_path: Path) -> None:
    from tests.unit.test_tune_job_flow import JOB, FakeSlurm
    from tuneadvisor.commands.tune_job import _when_lines
    from tuneadvisor.slurm.client.will_run import WillRun
    from tuneadvisor.tune.job_finish import ledger_time_to_result
    from tuneadvisor.tune.job_tune import JobTuneRequest, tune_job

    class Timed(FakeSlurm):
        def will_run(self, script: Path, *, chdir: str | None = None) -> WillRun:
            one_core = "#SBATCH --cpus-per-task=1\n" in script.read_text()
            start = datetime(2026, 12, 6, 7, 0) if one_core else datetime(2026, 12, 6, 9, 0)
            return WillRun(1, start, 1, "vm", "debug")

    # the start measures 100 samples/s, the winner (2 cores, 1 worker) ~195, batch 10
    slurm = Timed({(1, 0): [100, 101, 99], (1, 1): [102, 100, 101], (2, 1): [190, 200, 195],
                   (2, 2): [150, 151, 149]})  # fmt: skip
    (tmp_path / "train.py").write_text(TRAIN_WITH_STEPS)
    job = tmp_path / "train.sbatch"
    job.write_text(JOB.replace("python train.py", "python train.py --max-steps 6000"))
    result = tune_job(JobTuneRequest(job=str(job)), slurm, lambda line: None)  # type: ignore[arg-type]
    assert result.best is not None
    when = ledger_time_to_result(result, job, tmp_path / "train.tuned.sbatch", slurm)  # type: ignore[arg-type]
    assert when.not_read == () and when.steps is not None and when.steps.count == 6000
    assert when.now is not None and when.tuned is not None
    assert when.now.end == datetime(2026, 12, 6, 7, 10)  # 6000 steps of 10 samples at 100/s
    assert when.tuned.start == datetime(2026, 12, 6, 9, 0)
    assert when.tuned.end_low <= when.tuned.end <= when.tuned.end_high
    assert when.verdict is not None and "gives the result first" in when.verdict
    lines = _when_lines(when)
    assert any(line.startswith("  now:    starts 07:00, ends ~07:10") for line in lines), lines
    assert any(line.startswith("  winner: starts 09:00") for line in lines), lines


# --------------------------------------------------------------------------- the commands

EXAMPLE_ARGS = [str(EXAMPLE / "24752610.lprof"), "--job", str(EXAMPLE / "mnist.sbatch")]


def _on_path(monkeypatch: pytest.MonkeyPatch, folder: Path, sbatch: str | None) -> None:
    """PATH of this folder alone: a fake sbatch (or none), nothing else of Slurm's."""
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    if sbatch is not None:
        (bin_dir / "sbatch").write_text("#!/bin/sh\n" + sbatch)
        (bin_dir / "sbatch").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))


def test_report_queue_without_slurm_says_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from tuneadvisor.cli import main

    _on_path(monkeypatch, tmp_path, None)
    assert main(["report", *EXAMPLE_ARGS, "--queue"]) == 0
    text = capsys.readouterr().out
    assert "time to result: the start: Slurm's sbatch is not on PATH" in text
    assert "Time to result" not in text  # no section without a time: never a guessed one
    assert main(["report", *EXAMPLE_ARGS, "--queue", "--format", "json"]) == 0
    when = json.loads(capsys.readouterr().out)["time_to_result"]
    assert when["now"] is None and when["tuned"] is None and when["steps"]["count"] == 120
    assert when["not_known"] == [
        "the start: Slurm's sbatch is not on PATH (run this on a login node of the cluster)"
    ]
    assert main(["report", *EXAMPLE_ARGS, "--format", "json"]) == 0
    assert "time_to_result" not in json.loads(capsys.readouterr().out)  # asked only with --queue


def test_apply_queue_prints_both_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tuneadvisor.cli import main

    _on_path(monkeypatch, tmp_path, ANSWER)
    out = tmp_path / "mnist.tuned.sbatch"
    assert main(["apply", *EXAMPLE_ARGS, "--queue", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "  now:   starts 14:02:11, ends ~14:03:20" in printed, printed
    assert "  tuned: starts 17:05:00, ends ~17:05:" in printed
    assert "the job as written gives the result first" in printed
    assert out.is_file()
