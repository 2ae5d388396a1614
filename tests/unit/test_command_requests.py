"""Each command turns its parsed arguments into one frozen, typed request (the layers below
never see the command line): the real parser's Namespace in, the request out, and a bad value
is one InputError line (exit status 2 from main)."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import pytest

from tuneadvisor.cli import build_parser, main
from tuneadvisor.commands.open import ReplayRequest, open_request
from tuneadvisor.commands.run import run_request
from tuneadvisor.commands.tune import tune_request
from tuneadvisor.commands.watch import watch_request
from tuneadvisor.errors import InputError
from tuneadvisor.relaunch.requests import RelaunchRequest, SettingsOverrides, settings_with
from tuneadvisor.tune.tuner import TuneOptions, TuneRequest
from tuneadvisor.watch.request import WatchRequest
from tuneadvisor.workspace.inputs import Inputs

REPO = Path(__file__).resolve().parents[2]
RECORDING = str(REPO / "tests" / "fixtures" / "watch" / "replay-a100.jsonl")
PROFILE = "examples/mnist/24752610.lprof"
JOB = "examples/mnist/mnist.sbatch"


def parsed(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def assert_exit_2_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err == f"tuneadvisor: {message}\n"


# ---------------------------------------------------------------------------- watch


def test_watch_a_job_here_with_its_schedule_gpus_rules_and_recording() -> None:
    request = watch_request(parsed(
        "watch", "--job", "123_4", "--this-node", "--interval", "0.5", "--window", "30",
        "--duration", "20", "--gpus", "0,1", "--rules", "extra", "--record", "w.jsonl",
        "--headless",
    ))  # fmt: skip
    assert request == WatchRequest(
        job="123_4", where="here", interval_s=0.5, window_s=30.0, duration_s=20.0,
        gpus="0,1", rules=("extra",), record="w.jsonl", headless=True,
    )  # fmt: skip
    assert not request.wants_screen
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.job = "5"  # type: ignore[misc]


def test_watch_a_command_processes_or_the_node() -> None:
    started = watch_request(parsed("watch", "--log", "out.log", "--", "python", "train.py"))
    assert (started.command, started.log, started.pids) == (("python", "train.py"), "out.log", ())
    assert started.wants_screen  # no --headless: the live screen
    assert watch_request(parsed("watch", "--pid", "7", "--pid", "9")).pids == (7, 9)
    assert watch_request(parsed("watch", "--job", "5", "--all-nodes")).where == "all"
    assert watch_request(parsed("watch")) == WatchRequest()  # the whole node, the defaults


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--interval", "0.05"], "--interval 0.05: at least 0.1 s"),
        (["--duration", "0"], "--duration 0: must be positive"),
        (["--window", "-1"], "--window -1: must be positive"),
        (["--stream", "--record", "r.jsonl"],
         "watch: --stream writes the rounds to stdout; not with --record"),
        (["--stream", "--log", "x.log", "--", "true"],
         "watch: --stream writes the rounds to stdout; not with --log"),
        (["--pid", "1", "--", "true"], "watch: give --pid, --job or -- COMMAND, not several"),
        (["--this-node"], "watch: --this-node goes with --job JOBID"),
        (["--all-nodes", "--pid", "1"], "watch: --all-nodes goes with --job JOBID"),
        (["--log", "x.log", "--pid", "1"],
         "watch: --log FILE goes with -- COMMAND (a job has its own)"),
        (["--job", "abc"], "--job abc: not a Slurm job id"),
    ],
)  # fmt: skip
def test_watch_bad_values_are_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(InputError) as caught:
        watch_request(parsed("watch", "--headless", *argv))
    assert str(caught.value) == message
    # and from the command line, before anything starts: one line, status 2
    assert_exit_2_one_line(["watch", "--headless", *argv], message, capsys)


# ---------------------------------------------------------------------------- run, tune


def test_run_request_carries_the_flags_given_and_only_those() -> None:
    request = run_request(parsed(
        "run", "mnist_ddp", "--cpus-per-task", "2", "--nodes", "2", "--ntasks-per-node", "3",
        "--mem", "8G", "--num-workers", "3", "--no-pin-memory", "--extra=--lr=0.5",
        "--label", "try", "--no-watch", "--profile", "--max-restarts", "2", "--runs", "R",
        "--synthetic", "64", "--python", "py", "--from", "report.json",
    ))  # fmt: skip
    assert request == RelaunchRequest(
        name="mnist_ddp",
        overrides=SettingsOverrides(
            cpus_per_task=2, nodes=2, ntasks_per_node=3, mem="8G",
            knobs={"num_workers": 3, "pin_memory": False}, extra=("--lr=0.5",),
        ),
        from_report="report.json", inputs=None, python="py", runs="R", synthetic=64,
        label="try", profile=True, watch=False, submit=False, max_restarts=2,
    )  # fmt: skip
    # the knobs not given stay the advice's: none of them is in the overrides
    assert "amp" not in request.overrides.knobs and request.overrides.gpus is None


def test_run_with_inputs_takes_their_advice_and_submit_asks_the_cluster() -> None:
    request = run_request(parsed("run", "mnist_single", PROFILE, "--job", JOB, "--submit"))
    assert request.inputs == Inputs(profiles=(PROFILE,), job=JOB, cluster=True)
    assert request.submit and request.overrides == SettingsOverrides()


def test_the_overrides_go_over_the_advised_settings() -> None:
    from tuneadvisor.relaunch.settings import Settings

    advised = Settings(ntasks=2, knobs={"num_workers": 1}, because={"num_workers": ("x",)})
    flags = run_request(parsed("run", "mnist_ddp", "--num-workers", "4", "--nodes", "3"))
    settings = settings_with(flags.overrides, advised)
    assert (settings.nodes, settings.ntasks, settings.knobs["num_workers"]) == (3, 6, 4)
    assert "num_workers" not in settings.because  # the user's word, not the advice's


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--cpus-per-task", "0"], "--cpus-per-task must be at least 1"),
        (["--ntasks", "0"], "--ntasks must be at least 1"),
        (["--ntasks-per-node", "0"], "--ntasks-per-node must be at least 1"),
        (["--gpus", "-1"], "--gpus must be at least 0"),
    ],
)
def test_run_and_tune_refuse_counts_below_one_in_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in ("run", "tune"):
        with pytest.raises(InputError, match=f"^{message}$"):
            (run_request if command == "run" else tune_request)(
                parsed(command, "mnist_single", *argv)
            )
        assert_exit_2_one_line([command, "mnist_single", *argv], message, capsys)


def test_tune_request_holds_the_trials_options_and_the_relaunch() -> None:
    request = tune_request(parsed(
        "tune", "mnist_single", "--stages", "workers, amp", "--min-gain", "10", "--steps", "5",
        "--warmup", "0", "--repeats", "2", "--budget", "60", "--max-cores", "4",
        "-o", "win.sbatch", "--cpus-per-task", "2",
    ))  # fmt: skip
    assert request == TuneRequest(
        RelaunchRequest(name="mnist_single", overrides=SettingsOverrides(cpus_per_task=2)),
        TuneOptions(budget_s=60.0, warmup_steps=0, measure_steps=5, repeats=2, min_gain=0.1,
                    stages=("workers", "amp"), max_cores=4),
        output="win.sbatch",
    )  # fmt: skip
    assert tune_request(parsed("tune", "mnist_single")).options == TuneOptions()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--stages", "workers,fast"], "--stages: unknown stage 'fast'"),
        (["--steps", "0"], "--steps and --repeats must be at least 1, --warmup 0 or more"),
        (["--repeats", "0"], "--steps and --repeats must be at least 1, --warmup 0 or more"),
        (["--warmup", "-1"], "--steps and --repeats must be at least 1, --warmup 0 or more"),
    ],
)
def test_tune_bad_trials_are_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(InputError) as caught:
        tune_request(parsed("tune", "mnist_single", *argv))
    assert str(caught.value) == message
    assert_exit_2_one_line(["tune", "mnist_single", *argv], message, capsys)


# ---------------------------------------------------------------------------- open


def test_open_a_recording_alone_is_a_replay() -> None:
    assert open_request(parsed("open", RECORDING)) == ReplayRequest(RECORDING)
    asked = open_request(parsed("open", "--metrics", RECORDING, "--speed", "50", "--rules", "d"))
    assert asked == ReplayRequest(RECORDING, rules=("d",), speed=50.0)


def test_open_a_recording_with_a_job_joins_the_metrics_and_leaves_the_arguments_alone() -> None:
    args = parsed("open", RECORDING, PROFILE, "--job", JOB)
    request = open_request(args)
    assert request == Inputs(profiles=(PROFILE,), job=JOB, metrics=(RECORDING,))
    assert (args.profiles, args.metrics) == ([RECORDING, PROFILE], [])  # not rewritten


def test_open_a_trace_folder_beside_a_recording_is_read_as_traces() -> None:
    """`open` takes recordings out of PROFILE first: what is left is split into .lprof files
    and torch.profiler traces as `report` splits it (a trace folder is no profile)."""
    traces = str(REPO / "tests" / "fixtures" / "realworld" / "traces" / "ddp-2rank-sampled")
    request = open_request(parsed("open", traces, PROFILE, RECORDING))
    assert request == Inputs(profiles=(PROFILE,), traces=(traces,), metrics=(RECORDING,))
    alone = open_request(parsed("open", traces))
    assert isinstance(alone, Inputs) and (alone.profiles, alone.traces) == ((), (traces,))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([RECORDING, "--speed", "0"], "--speed 0: must be a positive number"),
        ([RECORDING, RECORDING], "open: one watch recording at a time to replay it"),
        ([], "open: give at least one profile (.lprof), --job, --log, --probe or --jobid"),
    ],
)
def test_open_bad_values_are_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(InputError) as caught:
        open_request(parsed("open", *argv))
    assert str(caught.value) == message
    assert_exit_2_one_line(["open", *argv], message, capsys)


def test_tune_job_budget_is_in_minutes() -> None:
    from tuneadvisor.commands.tune_job import job_request

    assert job_request(parsed("tune", "--job", JOB)).budget_s == 30 * 60.0
    request = job_request(parsed("tune", "--job", JOB, "--budget", "2.5", "--sweep"))
    assert request.budget_s == 150.0 and not request.early
    assert job_request(parsed("tune", "--job", JOB)).early  # trials to a decision


@pytest.mark.parametrize("value", ["0", "-5", "43201", "1e9"])
def test_tune_job_budget_out_of_range_is_one_line(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_exit_2_one_line(
        ["tune", "--job", JOB, "--budget", value],
        "--budget: minutes with --job (the wait for the array), above 0 and up to 43200 "
        f"(30 days), not {float(value):g}",
        capsys,
    )


@pytest.mark.parametrize("value", ["0", "-1", "1e9"])
def test_tune_budget_in_seconds_out_of_range_is_one_line(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_exit_2_one_line(
        ["tune", "mnist_single", "--budget", value],
        f"--budget: seconds above 0 and up to 1e+08, not {float(value):g}",
        capsys,
    )
