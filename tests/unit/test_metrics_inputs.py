"""--metrics through the command line: a noheader nvidia-smi log with --metrics-columns, and
files that are not metrics at all named for what they are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tuneadvisor.cli import main
from tuneadvisor.workspace.gather import gather
from tuneadvisor.workspace.inputs import Inputs

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


WATCH = Path(__file__).resolve().parents[1] / "fixtures" / "watch" / "replay-a100.jsonl"


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_the_report_says_what_it_read_from_a_log(
    capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    """Not only the findings: the GPUs, samples, interval, span and per-GPU figures read."""
    assert main(["report", "--format", fmt, "--metrics", str(SMI / "a100-2gpu-one-idle.csv")]) == 0
    out = capsys.readouterr().out
    assert "Metrics read" in out
    assert "nvidia-smi log: 2 GPUs, sampled every 1 s over 9.0 s" in out
    assert "10 samples, utilisation mean 77 %, memory peak 17935 of 40960 MiB" in out
    assert "10 samples, utilisation mean 0.0 %, memory peak 4 of 40960 MiB" in out


def test_the_report_says_what_it_read_from_a_recording(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--metrics", str(WATCH)]) == 0
    out = capsys.readouterr().out
    assert "watch recording: 2 GPUs, sampled every 0.5 s over 10.0 s" in out
    assert "host: 21 samples, the job's processes used 0.92 cores (mean), RSS peak 38 MiB" in out


def test_without_metrics_there_is_no_such_section(capsys: pytest.CaptureFixture[str]) -> None:
    job = Path(__file__).resolve().parents[2] / "examples" / "mnist" / "mnist.sbatch"
    assert main(["report", "--job", str(job)]) == 0
    assert "Metrics read" not in capsys.readouterr().out
