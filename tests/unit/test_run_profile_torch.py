"""`run --profile torch` without running anything (issue 22, point 7): the option beside
kernprof's, the bundled script's --torch-profile in every launch, and the traces recorded in
run.json (records written before them still read)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from tuneadvisor.cli import build_parser
from tuneadvisor.commands.run import run_request
from tuneadvisor.errors import InputError
from tuneadvisor.relaunch.bundled import bundled
from tuneadvisor.relaunch.local_allocation import emulate
from tuneadvisor.relaunch.runner import RunRequest, plan_tasks, trace_notes, traces_in
from tuneadvisor.relaunch.settings import Settings
from tuneadvisor.relaunch.submit import launch_line
from tuneadvisor.runrecord.record import read_record


def parsed(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


@pytest.mark.parametrize(
    ("given", "line", "torch"),
    [((), False, False), (("--profile",), True, False), (("--profile", "line"), True, False),
     (("--profile", "torch"), False, True)],
)  # fmt: skip
def test_profile_picks_one_profiler_and_bare_is_still_kernprof(
    given: tuple[str, ...], line: bool, torch: bool
) -> None:
    request = run_request(parsed("run", "mnist_single", *given, "--max-restarts", "0"))
    assert (request.profile, request.torch_profile) == (line, torch)


def test_an_unknown_profiler_is_refused_by_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        parsed("run", "mnist_single", "--profile", "perf")
    assert exit_.value.code == 2
    assert "invalid choice: 'perf'" in capsys.readouterr().err


def _request(tmp_path: Path, name: str, settings: Settings, **kw: Any) -> RunRequest:
    return RunRequest(bundled(name), settings, tmp_path, "/opt/py/bin/python", tmp_path, **kw)


def _after(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_each_srun_rank_traces_into_the_run_folder(tmp_path: Path) -> None:
    settings = Settings(ntasks=2)
    req = _request(tmp_path, "mnist_ddp", settings, torch_profile=True)
    alloc = emulate(settings, name="t", submit_dir=str(tmp_path), cores=[0, 1])
    tasks, profiles = plan_tasks(req, alloc, tmp_path / "run")
    assert profiles == [] and len(tasks) == 2  # no kernprof
    for task in tasks:
        assert "kernprof" not in task.argv
        assert _after(task.argv, "--torch-profile") == str((tmp_path / "run").resolve())


def test_torchrun_passes_the_trace_folder_to_every_rank(tmp_path: Path) -> None:
    settings = Settings(ntasks=2)
    req = _request(tmp_path, "mnist_torchrun", settings, torch_profile=True)
    alloc = emulate(settings, name="t", submit_dir=str(tmp_path), cores=[0, 1])
    (task,), _ = plan_tasks(req, alloc, tmp_path)
    assert _after(task.argv, "--torch-profile") == str(tmp_path.resolve())
    assert task.argv.index("--torch-profile") > task.argv.index("--data-dir")  # script's own


def test_unasked_no_run_traces(tmp_path: Path) -> None:
    req = _request(tmp_path, "mnist_single", Settings())
    alloc = emulate(req.settings, name="t", submit_dir=str(tmp_path), cores=[0])
    (task,), _ = plan_tasks(req, alloc, tmp_path)
    assert "--torch-profile" not in task.argv
    assert "--torch-profile" not in launch_line(req)


def test_a_submitted_job_traces_into_its_working_folder(tmp_path: Path) -> None:
    line = launch_line(_request(tmp_path, "mnist_ddp", Settings(ntasks=2), torch_profile=True))
    assert line[0] == "srun" and _after(line, "--torch-profile") == "."


def test_the_traces_of_the_run_folder_are_found_by_name(tmp_path: Path) -> None:
    for name in ("rank1.17.pt.trace.json.gz", "rank0.18.pt.trace.json.gz", "profile.lprof",
                 "rank0.18.pt.trace.json"):  # fmt: skip
        (tmp_path / name).write_bytes(b"")
    assert traces_in(tmp_path) == ("rank0.18.pt.trace.json.gz", "rank1.17.pt.trace.json.gz")
    assert trace_notes(traces_in(tmp_path), 2) == []
    (note,) = trace_notes(("rank0.18.pt.trace.json.gz",), 4)
    assert note.startswith("torch.profiler wrote 1 traces for 4 ranks")


def _record(folder: Path, paths: dict[str, Any]) -> Path:
    folder.mkdir()
    data = {"kind": "tuneadvisor-run", "schema": 1, "id": "r", "status": "completed",
            "settings": Settings().to_json(),
            "paths": {"dir": str(folder), "log": "o", **paths}}  # fmt: skip
    (folder / "run.json").write_text(json.dumps(data))
    return folder


def test_the_record_keeps_its_traces_and_old_records_have_none(tmp_path: Path) -> None:
    old = read_record(_record(tmp_path / "old", {"profiles": [], "metrics": []}))
    assert old.paths.traces == () and old.trace_paths() == []
    assert "traces" not in old.paths.to_json()  # records without traces keep their shape
    new = read_record(_record(tmp_path / "new", {"traces": ["rank0.1.pt.trace.json.gz"]}))
    assert new.paths.traces == ("rank0.1.pt.trace.json.gz",)
    assert new.trace_paths() == [tmp_path / "new" / "rank0.1.pt.trace.json.gz"]
    assert new.paths.to_json()["traces"] == ["rank0.1.pt.trace.json.gz"]


def test_a_record_with_traces_of_the_wrong_type_is_one_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="traces"):
        read_record(_record(tmp_path / "bad", {"traces": "rank0.json.gz"}))
