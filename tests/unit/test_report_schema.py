"""The JSON report is a contract (issue 29): its schema ships in the package, every report
the tests write keeps to it (tests/report_schema.py), reports of generated inputs too, and
`run --from` reads a saved report through one module that refuses, in one line, what breaks
the schema."""

from __future__ import annotations

import copy
import json
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from tests.conftest import REPO
from tests.report_schema import checked, checking, minimal_report, schema_errors
from tuneadvisor.cli import main
from tuneadvisor.errors import InputError
from tuneadvisor.relaunch.saved_report import (
    SCHEMA_FILE,
    SCHEMA_VERSION,
    parse_report,
    read_report,
    report_schema,
    schema_path,
)
from tuneadvisor.report import json_report

GOLDEN = json.loads((REPO / "tests" / "golden" / "example-report.json").read_text())


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    for name in ("TUNEADVISOR_SITE", "TUNEADVISOR_RULES"):
        monkeypatch.delenv(name, raising=False)


# ------------------------------------------------------------------------------ the file


def test_the_schema_is_a_json_schema_of_its_version_and_ships_in_the_package() -> None:
    schema = report_schema()
    Draft202012Validator.check_schema(schema)
    assert schema_path().name == SCHEMA_FILE == f"report-v{SCHEMA_VERSION}.json"
    assert f"schema {SCHEMA_VERSION}" in schema["title"]
    assert schema_path().is_file()
    package_data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["tuneadvisor"]
    assert "schema/*.json" in package_data  # in the wheel, where scripts can read it


def test_the_report_says_its_schema_version() -> None:
    assert GOLDEN["tool"]["schema"] == SCHEMA_VERSION  # the writer's is the reader's


# --------------------------------------------------------------- the tests' reports checked


def test_the_golden_report_keeps_to_the_schema() -> None:
    checked(GOLDEN)


@pytest.mark.parametrize(
    ("change", "place"),
    [
        (lambda d: d["findings"][0].update(hint="x"), "findings[0]"),  # a key not in the schema
        (lambda d: d["advice"]["plan"].update(sbatch={"mem": {"value": "4G"}}), "plan.sbatch"),
        (lambda d: d["findings"][0].update(severity="fatal"), "severity"),
        (lambda d: d.pop("findings"), "findings"),
        (lambda d: d["profile"]["functions"][0]["lines"][0].update(hits="3"), "hits"),
    ],
)
def test_a_report_off_the_schema_fails_the_tests_check(change: Any, place: str) -> None:
    """The check every test's report goes through can fail, and says where."""
    doc = copy.deepcopy(GOLDEN)
    change(doc)
    errors = schema_errors(doc)
    assert errors and any(place in e for e in errors), errors


def test_every_report_a_test_writes_is_checked() -> None:
    """The fixture wraps the writer, and the wrapper fails a report with a key the schema
    does not name."""
    assert hasattr(json_report.to_json, "__wrapped__")
    careless = checking(lambda: {**GOLDEN, "surprise": 1})
    with pytest.raises(AssertionError, match="surprise"):
        careless()


# -------------------------------------------------------------- reports of generated inputs

SEFF = """\
Job ID: {jobid}
Cluster: della
User/Group: alice/users
State: {state} (exit code 0)
Cores: {cores}
CPU Utilized: 00:{cpu_min:02d}:00
CPU Efficiency: {cpu_pct:.2f}% of 01:00:00 core-walltime
Job Wall-clock time: 00:20:00
Memory Utilized: {mem_gb:.2f} GB
Memory Efficiency: {mem_pct:.2f}% of {req_gb:.2f} GB
"""

JOB = """\
#!/bin/bash
#SBATCH --job-name=gen
#SBATCH --nodes={nodes}
#SBATCH --ntasks-per-node={tasks}
#SBATCH --cpus-per-task={cpus}
#SBATCH --mem={mem}G
#SBATCH --gres=gpu:{gpus}
#SBATCH --time=0{hours}:00:00
{launch} train.py --num-workers {workers}
"""

TRAIN = """\
from torch.utils.data import DataLoader
loader = DataLoader(dataset, batch_size={batch}, num_workers=int(__import__("sys").argv[-1]),
                    pin_memory={pin})
for data, target in loader:
    data = data.cuda()
"""


@st.composite
def inputs(draw: st.DrawFn) -> dict[str, str]:
    cores = draw(st.integers(1, 128))
    req_gb = draw(st.floats(0.5, 2048, allow_nan=False))
    mem_pct = draw(st.floats(0, 150, allow_nan=False))
    return {
        "seff": SEFF.format(
            jobid=draw(st.integers(1, 10**9)),
            state=draw(st.sampled_from(["COMPLETED", "FAILED", "OUT_OF_MEMORY", "TIMEOUT"])),
            cores=cores,
            cpu_min=draw(st.integers(0, 59)),
            cpu_pct=draw(st.floats(0, 100, allow_nan=False)),
            mem_gb=req_gb * mem_pct / 100,
            mem_pct=mem_pct,
            req_gb=req_gb,
        ),
        "job": JOB.format(
            nodes=draw(st.integers(1, 8)),
            tasks=draw(st.integers(1, 8)),
            cpus=draw(st.integers(1, 64)),
            mem=draw(st.integers(1, 1024)),
            gpus=draw(st.integers(0, 8)),
            hours=draw(st.integers(0, 9)),
            launch=draw(st.sampled_from(["python", "srun python", "torchrun --nproc-per-node 2"])),
            workers=draw(st.integers(0, 32)),
        ),
        "train": TRAIN.format(
            batch=draw(st.integers(1, 4096)), pin=draw(st.sampled_from(["True", "False"]))
        ),
    }


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inputs())
def test_the_report_of_generated_inputs_keeps_to_the_schema_and_reads_back(
    given_inputs: dict[str, str],
) -> None:
    """Whatever the inputs say, the report keeps to its schema, and `run --from` reads back
    the plan it wrote, value for value and reason for reason."""
    from tuneadvisor.workspace.inputs import Inputs
    from tuneadvisor.workspace.load import load_workspace

    with tempfile.TemporaryDirectory() as folder:
        paths = {}
        for name, text in given_inputs.items():
            paths[name] = Path(folder) / {"seff": "seff.txt", "job": "job.sbatch",
                                          "train": "train.py"}[name]  # fmt: skip
            paths[name].write_text(text)
        workspace = load_workspace(
            Inputs(job=str(paths["job"]), seff=str(paths["seff"]), script=str(paths["train"])),
            cwd=Path(folder),
        )
        doc = json.loads(json.dumps(json_report.to_json(workspace)))  # checked on the way
    checked(doc)
    saved = parse_report(doc, "generated.json")
    advice = workspace.advice
    assert advice is not None
    assert saved.plan.sbatch == dict(advice.plan.sbatch)
    assert saved.plan.script == dict(advice.plan.script)
    assert saved.plan.env == dict(advice.plan.env)
    assert saved.prediction == advice.prediction
    assert workspace.tuned.original_job is not None
    assert saved.directives == workspace.tuned.original_job.directives()


# ------------------------------------------------------------------- reading a report back


def _write(tmp_path: Path, doc: object) -> str:
    path = tmp_path / "report.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_the_saved_golden_report_reads_back(tmp_path: Path) -> None:
    saved = read_report(_write(tmp_path, GOLDEN))
    assert saved.schema == SCHEMA_VERSION
    assert saved.directives["cpus-per-task"] == "1"
    assert saved.plan.script["num_workers"].value == 7
    assert saved.plan.script["num_workers"].because == ("dataloader-bound",)
    assert saved.prediction is not None and saved.prediction.setting["num_workers"] == 7


def test_a_report_of_schema_1_still_reads() -> None:
    """Schema 2 only added keys: a schema-1 report is read as it was before."""
    old = minimal_report({"cpus-per-task": "2"})
    old["tool"]["schema"] = 1
    assert parse_report(old, "old.json").directives == {"cpus-per-task": "2"}


@pytest.mark.parametrize(
    ("doc", "says"),
    [
        ([], "not a report of `tuneadvisor report --format json`"),
        ({"findings": []}, "not a report"),
        ({**minimal_report(), "tool": {"name": "tuneadvisor", "version": "9", "schema": 3}},
         "a report of schema 3: this tuneadvisor reads schema 2 and older"),
        ({k: v for k, v in minimal_report().items() if k != "findings"}, "the top: no findings"),
        (minimal_report({"nodes": 2}), "job.directives.nodes: must be string"),
        (minimal_report(plan={"script": {"num_workers": {"value": 3}}}),
         "advice.plan.script.num_workers: no because"),
        (minimal_report(plan={}, prediction="fast"), "advice.prediction: must be null or"),
        ({**minimal_report(), "findings": [{"id": "x", "severity": "fatal", "title": "t",
                                           "evidence": {}, "suggest": {"sbatch": {}, "script": {},
                                                                       "env": {}}}]},
         'findings[0].severity: must be "info" or "warning" or "error"'),
    ],
)  # fmt: skip
def test_a_file_off_the_schema_is_one_line_naming_the_place(
    tmp_path: Path, doc: object, says: str
) -> None:
    with pytest.raises(InputError) as caught:
        read_report(_write(tmp_path, doc))
    line = str(caught.value)
    assert line.startswith(str(tmp_path / "report.json") + ": ") and says in line, line
    assert "\n" not in line and len(line.splitlines()) == 1


def test_what_a_report_holds_is_never_echoed_into_the_message(tmp_path: Path) -> None:
    """A hostile report's keys and values reach the terminal only as printable, bounded
    text; its values not at all."""
    doc = minimal_report({"\x1b]0;pwned\x07" + "k" * 200: ["\x1b[2J"]})
    with pytest.raises(InputError) as caught:
        read_report(_write(tmp_path, doc))
    line = str(caught.value)
    assert "\x1b" not in line and "\x07" not in line and "[2J" not in line
    assert len(line) < 300 and "must be string" in line


def test_run_from_a_report_off_the_schema_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = copy.deepcopy(GOLDEN)
    doc["advice"]["plan"]["sbatch"]["cpus-per-task"]["because"] = "dataloader-bound"
    path = _write(tmp_path, doc)
    code = main(["run", "mnist_single", "--from", path, "--runs", str(tmp_path / "runs"),
                 "--data-dir", str(tmp_path)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert (
        f"{path}: " in err and "advice.plan.sbatch.cpus-per-task.because: must be array" in err
    ), err
    assert not (tmp_path / "runs").exists()
