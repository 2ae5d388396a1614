"""Issue 23, points 12-14: inputs that ended in a traceback, each through the command line.
Each class gives one line naming the file and the problem with exit status 2, or a right
result (exit 0 and what the input said, as far as it can be read). The real files these
start from are the project's fixtures (jobstats' summary of Princeton's della cluster, the
torchx heterogeneous job, NeSI's seff); the hostile part is put into them here."""

from __future__ import annotations

import base64
import gzip
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tuneadvisor.cli import main

FIX = Path(__file__).resolve().parents[1] / "fixtures"
JOBSTATS = (FIX / "realworld/accounting/jobstats-sacct-P-gpu-completed-60155093.txt").read_text()
HET = (FIX / "realworld/accounting/torchx-sacct-het-1853.txt").read_text()
SEFF = (FIX / "realworld/accounting/nesi-seff-completed.seff.txt").read_text()
SACCT_JSON = (FIX / "slurm-22.05/05-sacct.json").read_text()
RECORDING = (FIX / "watch/replay-a100.jsonl").read_text().splitlines()
NVIDIA_SMI = (FIX / "nvidia-smi/power-na.csv").read_text()
BIG = "9" * 400  # beyond float range (1.8e308), under the 1,000-digit bound of every input
JOB = "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --cpus-per-task=2\nsrun python train.py\n"


def cli(
    folder: Path, capsys: pytest.CaptureFixture[str], *argv: str, env: dict[str, str] | None = None
) -> tuple[int, str, list[str]]:
    """Exit status, stdout and the lines of stderr of one command run in ``folder``."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        for name, value in (env or {}).items():
            patch.setenv(name, value)
        try:
            status = main(list(argv))
        except SystemExit as exc:  # argparse's usage errors
            status = int(exc.code or 0)
    out, err = capsys.readouterr()
    return status, out, err.strip().splitlines()


def one_line(status: int, lines: list[str], *said: str) -> None:
    assert status == 2, lines
    assert len(lines) == 1 or lines[0].startswith("usage:"), lines  # argparse adds its usage
    for part in said:
        assert part in lines[-1], lines[-1]


def jobstats_with(change: Callable[[dict[str, Any]], object], nest: int = 0) -> str:
    """The real della summary, decoded, changed, and encoded again the way jobstats does;
    ``nest``: its first GPU's utilization map nested that deep instead."""
    blob = re.search(r"JS1:(\S+?)\|", JOBSTATS)
    assert blob is not None
    doc = json.loads(gzip.decompress(base64.b64decode(blob[1])))
    change(doc)
    text = json.dumps(doc)
    if nest:
        text = text.replace('{"1": 98.6}', "[" * nest + "]" * nest)
    payload = base64.b64encode(gzip.compress(text.encode())).decode()
    return JOBSTATS.replace(blob[1], payload)


def _node(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["nodes"]["della-l01g13"]  # type: ignore[no-any-return]


def run_record(**change: Any) -> str:
    record: dict[str, Any] = {
        "kind": "tuneadvisor-run", "schema": 1, "id": "r", "name": "mnist_ddp", "label": "r",
        "status": "completed", "launcher": "srun",
        "settings": {"ntasks": 1, "nodes": 1, "cpus_per_task": 1, "gpus": 0},
        "start": {"world_size": 1, "train_samples": 768, "batch_size": 32},
        "summary": {"samples_per_s": 100.0, "final_accuracy": 0.8},
        "steps": [{"event": "step", "epoch": 1, "step": 2 * (i + 1), "step_time_s": 0.3,
                   "samples_per_s": 100.0, "loss": 2.0 / (i + 1)} for i in range(4)],
        "epochs": [{"epoch": 1, "accuracy": 0.5, "train_loss": 1.0}],
        "paths": {"profiles": [], "metrics": []},
    }  # fmt: skip
    for dotted, value in change.items():
        *path, last = dotted.split("__")
        node: Any = record
        for key in path:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[int(last) if isinstance(node, list) else last] = value
    return json.dumps(record)


def write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)


# -------------------------------------------------------------- 12: beyond float range

# name -> (files, argv, what the one line says besides the file's name)
REFUSED: dict[str, tuple[dict[str, str], list[str], str]] = {
    "sacct -P End of 400 digits": (
        {"s.txt": JOBSTATS.replace("|1730774311|", f"|{BIG}|")}, ["--sacct", "s.txt"],
        "not a finite number",
    ),
    "sacct -P GPU TRES of 400 digits": (
        {"s.txt": JOBSTATS.replace("gres/gpu=1", f"gres/gpu={BIG}")}, ["--sacct", "s.txt"],
        "gres/gpu in TRES",
    ),
    "sacct -P MaxRSS of 400 digits": (
        {"s.txt": f"JobID|State|Elapsed|MaxRSS\n5|COMPLETED|00:01:00|\n"
                  f"5.0|COMPLETED|00:01:00|{BIG}K\n"}, ["--sacct", "s.txt"], "the size",
    ),
    "sacct -P elapsed of 400 digits": (
        {"s.txt": f"JobID|State|Elapsed\n5|COMPLETED|{BIG}:00:00\n"}, ["--sacct", "s.txt"],
        "the duration",
    ),
    "sacct --json Infinity": (
        {"s.json": re.sub(r'"elapsed": \d+', '"elapsed": Infinity', SACCT_JSON, count=1)},
        ["--sacct", "s.json"], "elapsed is inf, not a finite number",
    ),
    "sacct --json NaN": (
        {"s.json": re.sub(r'"elapsed": \d+', '"elapsed": NaN', SACCT_JSON, count=1)},
        ["--sacct", "s.json"], "elapsed is nan, not a finite number",
    ),
    "sacct --json 1e999": (
        {"s.json": re.sub(r'"elapsed": \d+', '"elapsed": 1e999', SACCT_JSON, count=1)},
        ["--sacct", "s.json"], "not a finite number",
    ),
    "sacct --json an integer of 400 digits": (
        {"s.json": re.sub(r'"elapsed": \d+', f'"elapsed": {BIG}', SACCT_JSON, count=1)},
        ["--sacct", "s.json"], "beyond the range of a number",
    ),
    "seff cores of 400 digits": (
        {"seff.txt": SEFF.replace("Cores: 1", f"Cores: {BIG}")}, ["--seff", "seff.txt"],
        "beyond the range of a number",
    ),
    "seff memory of 400 digits": (
        {"seff.txt": SEFF.replace("111.00 MB", f"{BIG} MB")}, ["--seff", "seff.txt"],
        "not a finite number",
    ),
    'a recording whose "procs" is ["x"]': (
        {"m.jsonl": "\n".join([RECORDING[0], '{"t": 0, "procs": ["x"]}']) + "\n"},
        ["--metrics", "m.jsonl"], "line 2",
    ),
    "a recording whose GPU utilisation has 400 digits": (
        {"m.jsonl": "\n".join([RECORDING[0], RECORDING[1].replace('"util_pct":97.0',
                                                                  f'"util_pct":{BIG}')]) + "\n"},
        ["--metrics", "m.jsonl"], "util_pct",
    ),
    "a recording whose t is Infinity": (
        {"m.jsonl": "\n".join([RECORDING[0], RECORDING[1].replace('"t":0.0', '"t":Infinity')])
         + "\n"}, ["--metrics", "m.jsonl"], "t is inf",
    ),
    "an nvidia-smi CSV value of 400 digits": (
        {"m.csv": NVIDIA_SMI.replace("88 %", f"{BIG} %")}, ["--metrics", "m.csv"],
        "utilization.gpu",
    ),
    # 13: Unicode digits
    "seff Nodes: ²": ({"seff.txt": SEFF.replace("Nodes: 1", "Nodes: ²")}, ["--seff", "seff.txt"],
                      "'²' is not a whole number"),
    # 14: a node count of 0
    "seff Nodes: 0": ({"seff.txt": SEFF.replace("Nodes: 1", "Nodes: 0")}, ["--seff", "seff.txt"],
                      "'0' is not a whole number of 1 or more"),
}  # fmt: skip


@pytest.mark.parametrize("fmt", ["text", "json"])
@pytest.mark.parametrize("case", REFUSED.values(), ids=REFUSED.keys())
def test_numbers_that_ended_in_a_traceback_are_one_line_naming_the_file(
    case: tuple[dict[str, str], list[str], str], fmt: str, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    files, argv, said = case
    write(tmp_path, files)
    status, _, lines = cli(tmp_path, capsys, "report", *argv, "--format", fmt)
    one_line(status, lines, f"tuneadvisor: {argv[1]}: ", said)


@pytest.mark.parametrize(
    ("change", "nest", "said"),
    [
        (lambda d: d.__setitem__("total_time", int("9" * 400)), 0,
         "total_time is beyond the range of a number"),
        (lambda d: _node(d).__setitem__("cpus", int("9" * 400)), 0,
         "cpus is beyond the range of a number"),
        (lambda d: d.__setitem__("total_time", float("inf")), 0, "not a finite number"),
        (lambda d: _node(d)["gpu_utilization"].__setitem__("1", float("nan")), 0,
         "not a finite number"),
        (lambda d: None, 20_000, "nested too deeply"),  # 14: RecursionError in json.loads
    ],
    ids=["total_time of 400 digits", "cpus of 400 digits", "total_time Infinity",
         "a utilization NaN", "nested 20,000 deep"],
)  # fmt: skip
def test_a_jobstats_summary_that_cannot_be_read_is_a_note_and_the_rest_of_the_job_is_read(
    change: Callable[[dict[str, Any]], object], nest: int, said: str, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    write(tmp_path, {"s.txt": jobstats_with(change, nest)})
    status, out, lines = cli(tmp_path, capsys, "report", "--sacct", "s.txt", "--format", "json")
    assert status == 0, lines
    notes = json.loads(out)["advice"]["notes"]
    assert any(n.startswith("job 60155093: the jobstats summary") and said in n for n in notes)
    assert not any(n.startswith("GPU: from jobstats") for n in notes)
    status, out, lines = cli(tmp_path, capsys, "report", "--sacct", "s.txt")
    assert status == 0 and "asked: 1 node" in out, lines  # the job's own accounting


# ---------------------------------------------------------------- 13: Unicode digits


def test_a_jobstats_gpu_index_in_unicode_digits_is_a_gpu_of_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def add_gpu(doc: dict[str, Any]) -> None:
        for key in ("gpu_utilization", "gpu_used_memory", "gpu_total_memory"):
            _node(doc)[key]["²"] = _node(doc)[key]["1"]

    write(tmp_path, {"s.txt": jobstats_with(add_gpu)})
    status, out, lines = cli(tmp_path, capsys, "report", "--sacct", "s.txt")
    assert status == 0, lines
    assert "GPU 1 on della-l01g13" in out and "GPU ² on della-l01g13" in out


@pytest.mark.parametrize("offset", ["²", "0²", "٣"])
def test_a_heterogeneous_job_id_in_unicode_digits_is_another_job(
    offset: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, {"s.txt": HET.replace("1853+1", f"1853+{offset}")})
    status, _, lines = cli(tmp_path, capsys, "report", "--sacct", "s.txt", "--jobid", "1853")
    assert status == 0, lines  # components +0 and +2, merged (int('²') was a ValueError)
    status, _, lines = cli(tmp_path, capsys, "report", "--sacct", "s.txt")
    one_line(status, lines, "s.txt: 2 jobs in the sacct output", f"1853+{offset}")


# ------------------------------------------------------- 14: division, depth, long names


@pytest.mark.parametrize(
    "launch",
    ["env " * 2000 + "python train.py", "srun " * 2000 + "python train.py",
     "time env A=1 nohup " * 700 + "python train.py"],
    ids=["env x 2000", "srun x 2000", "mixed prefixes x 2100"],
)  # fmt: skip
def test_a_launch_line_of_2000_prefix_words_is_read_down_to_its_script(
    launch: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, {"job.sh": "#!/bin/bash\n#SBATCH -N1\n" + launch + "\n",
                     "train.py": "import torch\n"})  # fmt: skip
    status, out, lines = cli(tmp_path, capsys, "report", "--job", "job.sh")
    assert status == 0, lines
    assert "Training script: " in out and "train.py" in out
    assert "srun -> srun" not in out  # a launcher repeated in a row is said once, counted
    status, _, lines = cli(tmp_path, capsys, "apply", "--job", "job.sh", "-o", "tuned.sh")
    assert status == 0, lines
    assert (tmp_path / "tuned.sh").read_text().rstrip().endswith(launch)


@pytest.mark.parametrize(
    "job",
    ["#!/bin/bash\n#SBATCH --nodes=0\n#SBATCH --ntasks=4\n#SBATCH --gres=gpu:2\n"
     "srun python train.py\n",
     "#!/bin/bash\n#SBATCH -N1\naccelerate launch --num_machines 0 --num_processes 4 train.py\n"],
    ids=["--nodes=0", "accelerate --num_machines 0"],
)  # fmt: skip
def test_a_count_of_zero_nodes_is_no_division_by_zero(
    job: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, {"job.sh": job, "train.py": "import torch\n", "seff.txt": SEFF})
    for fmt in ("text", "markdown", "json"):
        status, _, lines = cli(tmp_path, capsys, "report", "--job", "job.sh", "--seff",
                               "seff.txt", "--format", fmt)  # fmt: skip
        assert status == 0, lines


LONG = "n" * 5000  # longer than any file name the system allows (255)


def test_a_name_too_long_for_the_system_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, {"job.sh": JOB, "train.py": "import torch\n"})
    for argv, env in (
        (["report", "--job", "job.sh", "--rules", LONG], {}),
        (["report", "--job", "job.sh"], {"TUNEADVISOR_RULES": LONG}),
        (["compare", LONG, LONG], {}),
        (["compare", f"{LONG}/run.json"], {}),
        (["compare", "--runs", LONG], {}),
        (["report", "--job", "job.sh", "--source-root", LONG], {}),
        (["report", "--metrics", LONG], {}),
    ):
        status, _, lines = cli(tmp_path, capsys, *argv, env=env)
        one_line(status, lines, f"tuneadvisor: {LONG[:100]}")


def test_a_helper_import_too_long_for_a_file_name_is_not_followed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = (f"import torch\nimport {LONG}\nfrom {LONG} import x\nfrom helper import make\n"
              "for batch in make():\n    pass\n")  # fmt: skip
    helper = (
        "from torch.utils.data import DataLoader\n"
        "def make():\n    return DataLoader(range(9), batch_size=2, num_workers=0)\n"
    )
    write(tmp_path, {"train.py": script, "helper.py": helper})
    status, out, lines = cli(tmp_path, capsys, "report", "--script", "train.py", "--format",
                             "json")  # fmt: skip
    assert status == 0, lines
    # the helper beside it is still followed: its hard-coded num_workers is found
    assert "num-workers-hardcoded" in [f["id"] for f in json.loads(out)["findings"]]


def test_infinity_in_a_run_record_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, {"base/run.json": run_record()})
    for field, value, said in (
        ("steps__0__step_time_s", float("inf"), "steps[0].step_time_s is inf"),
        ("summary__samples_per_s_median", int(BIG), "summary.samples_per_s_median is 999"),
        ("settings__nodes", float("inf"), "settings.nodes is inf"),
        ("start__world_size", int(BIG), "start.world_size is 999"),
        ("epochs__0__accuracy", float("nan"), "epochs[0].accuracy is nan"),
    ):
        write(tmp_path, {"r/run.json": run_record(**{field: value})})
        status, _, lines = cli(tmp_path, capsys, "compare", "r", "base", "--no-plots")
        one_line(status, lines, "r/run.json: run record", said)


def test_a_diverged_loss_is_left_out_of_compares_plots(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, {"base/run.json": run_record(),
                     "r/run.json": run_record(steps__1__loss=float("nan"),
                                              steps__2__loss=float("inf"),
                                              epochs__0__train_loss=float("nan"))})  # fmt: skip
    status, out, lines = cli(tmp_path, capsys, "compare", "r", "base")
    assert status == 0, lines
    assert "Training loss" in out and "nan" not in out.lower().replace("nanos", "")


@pytest.mark.parametrize("option", ["--window", "--interval", "--duration"])
@pytest.mark.parametrize("value", ["inf", "nan", "-inf", "1e400"])
def test_watch_times_that_are_not_finite_are_usage_errors(
    option: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ("watch", "--headless", f"{option}={value}", "--", "true")
    status, _, lines = cli(tmp_path, capsys, *argv)
    one_line(status, lines, f"argument {option}", f"'{value}'", "finite")


@pytest.mark.parametrize("value", ["nan", "inf", "1e300"])
def test_doctor_timeout_is_a_finite_number(
    value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, lines = cli(tmp_path, capsys, "doctor", "--timeout", value)
    one_line(status, lines, "argument --timeout", "finite")
