"""--metrics through the command line: a noheader nvidia-smi log with --metrics-columns, and
files that are not metrics at all named for what they are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tuneadvisor.cli import main
from tuneadvisor.session.gather import gather
from tuneadvisor.session.inputs import Inputs

SMI = Path(__file__).resolve().parents[1] / "fixtures" / "nvidia-smi"
COLUMNS = "timestamp,index,utilization.gpu,memory.used,memory.total,power.draw"


def report(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["report", "--format", "json", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_noheader_log_is_read_with_its_column_list(capsys: pytest.CaptureFixture[str]) -> None:
    log = str(SMI / "noheader-nounits.csv")
    code, out, err = report(capsys, "--metrics", log, "--metrics-columns", COLUMNS)
    assert code == 0, err
    assert json.loads(out)["tool"]["name"] == "tuneadvisor"
    # What the command line hands the session reaches the reader.
    gathered = gather(Inputs(metrics=(log,), metrics_columns=COLUMNS), None, env={})
    assert gathered.metrics is not None
    assert [g.key for g in gathered.metrics.gpus] == ["gpu0", "gpu1"]
    util = gathered.facts["gpu.util.mean"]
    assert isinstance(util, float) and util > 0


def test_a_noheader_log_without_it_says_what_to_type(capsys: pytest.CaptureFixture[str]) -> None:
    log = str(SMI / "noheader-nounits.csv")
    code, out, err = report(capsys, "--metrics", log)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"tuneadvisor: {log}: ")
    assert "--metrics-columns timestamp,index,utilization.gpu,memory.used" in err


def test_an_empty_column_list_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = report(capsys, "--metrics", str(SMI / "noheader-nounits.csv"),
                          "--metrics-columns", " , ")  # fmt: skip
    assert code == 2 and "--metrics-columns: give the --query-gpu list" in err


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"gpus": [{"index": 0, "utilization": 93}]}', "is JSON, not an nvidia-smi CSV log"),
        ("[1, 2, 3]\n", "is JSON, not an nvidia-smi CSV log"),
        ('<?xml version="1.0" ?>\n<nvidia_smi_log>\n', "is XML (nvidia-smi -q -x?)"),
    ],
)
def test_other_formats_are_named_for_what_they_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, said: str
) -> None:
    path = tmp_path / "gpu.log"
    path.write_text(text)
    code, out, err = report(capsys, "--metrics", str(path))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and said in err and str(path) in err
    assert "--query-gpu=timestamp,index,utilization.gpu,memory.used --format=csv -l 1" in err
