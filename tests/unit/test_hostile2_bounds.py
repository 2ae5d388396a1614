"""Issue 23, points 1-8: inputs whose cost grows far faster than their size, through the
command line. Each case is one small file that took gigabytes or minutes before its bound:
the command now gives one line naming the file and exit status 2, or its right result.

Nothing here asserts a time: a hang fails at the subprocess's timeout (the sizes are chosen
so that the unbounded code runs for minutes), a runaway allocation at the child's address-
space limit. How long each takes is measured by bench/fuzz.py (bench/fuzz_bounds.py).
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.report_schema import minimal_report
from tuneadvisor.files import MAX_JOB_SCRIPT
from tuneadvisor.metrics.recording import MAX_GPUS_PER_NODE
from tuneadvisor.runrecord.measured import MAX_EVENTS
from tuneadvisor.runrecord.settings import Settings
from tuneadvisor.slurm.client.bounded_run import (
    MAX_OUTPUT_BYTES,
    MAX_STDERR_BYTES,
    OutputTooLarge,
    run_bounded,
)

REPO = Path(__file__).resolve().parents[2]
REALWORLD = REPO / "tests" / "fixtures" / "realworld"
TUNEADVISOR = [sys.executable, "-m", "tuneadvisor"]
MEMORY_BOUND_MIB = 600
RECORDING_HEAD = (
    '{"format":"tuneadvisor-watch","version":1,"started":"2026-01-01T00:00:00+0000",'
    '"host":"h","interval_s":1,"target":"pid 1","gpu_no_data":null}\n'
)


def _bounded_memory() -> None:
    """The child may not grow past the bound: a runaway allocation fails (a MemoryError and
    a traceback, exit 1) instead of swapping the machine."""
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BOUND_MIB << 20, MEMORY_BOUND_MIB << 20))


def _cli(
    cwd: Path, *argv: str, path: str | None = None, memory: bool = True
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CONFIG_HOME": str(cwd / "no-config"), "LC_ALL": "C.UTF-8"}
    for name in ("TUNEADVISOR_SITE", "TUNEADVISOR_RULES", "TUNEADVISOR_TORCH_PYTHON"):
        env.pop(name, None)
    if path is not None:
        env["PATH"] = path
    return subprocess.run(
        [*TUNEADVISOR, *argv], capture_output=True, text=True, cwd=cwd, env=env, timeout=60,
        check=False, preexec_fn=_bounded_memory if memory else None,
    )  # fmt: skip


def _facts(cwd: Path, *argv: str) -> dict[str, Any]:
    done = _cli(cwd, *argv, "--format", "json")
    assert done.returncode == 0, done.stderr[-2000:]
    facts: dict[str, Any] = json.loads(done.stdout)["advice"]["facts"]
    return facts


def _one_line(done: subprocess.CompletedProcess[str], *said: str) -> str:
    """Exit status 2 and one line on stderr holding every piece of ``said``."""
    assert done.returncode == 2, done.stderr[-2000:]
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("tuneadvisor: ") and "Traceback" not in line
    for piece in said:
        assert piece in line, line
    return line


# --------------------------------------------------------------------------- 1. variables


def test_a_variable_that_doubles_forty_times_is_forgotten_not_expanded(tmp_path: Path) -> None:
    lines = ["#!/bin/bash", "#SBATCH --time=1:00:00", "A=xxxxxxxxxxxxxxxx"]
    lines += ["A=$A$A"] * 40 + ["export B=$A$A$A", "srun python $A/train.py"]
    (tmp_path / "job.sbatch").write_text("\n".join(lines) + "\n")  # 16 x 2^40 bytes expanded
    done = _cli(tmp_path, "report", "--job", "job.sbatch")
    assert done.returncode == 0, done.stderr[-2000:]
    # Unknown from the line where it outgrew its bound: named as written, once.
    assert "the job runs $A/train.py" in done.stdout


def test_a_variable_under_the_bound_is_still_followed(tmp_path: Path) -> None:
    lines = ["#!/bin/bash", "#SBATCH --time=1:00:00", "D=dd", *["D=$D$D"] * 8]
    lines += ["SCRIPT=$D/train.py", "srun python $SCRIPT"]  # 512 characters: a long path
    (tmp_path / "job.sbatch").write_text("\n".join(lines) + "\n")
    done = _cli(tmp_path, "report", "--job", "job.sbatch")
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"the job runs {'d' * 512}/train.py" in done.stdout


# --------------------------------------------------------------------------- 2. jobstats


def _sacct_with_admin_comment(folder: Path, blob: bytes) -> Path:
    """A real sacct -P row of jobstats' (Princeton's della) with its AdminComment replaced."""
    real = REALWORLD / "accounting" / "jobstats-sacct-P-gpu-completed-60155093.txt"
    header, row = real.read_text().splitlines()[:2]
    fields = row.split("|")
    fields[header.split("|").index("AdminComment")] = "JS1:" + base64.b64encode(blob).decode()
    path = folder / "sacct.txt"
    path.write_text(f"{header}\n{'|'.join(fields)}\n")
    return path


def test_a_jobstats_summary_inflating_to_a_gibibyte_is_refused_naming_the_file(
    tmp_path: Path,
) -> None:
    # gzip members concatenated (gzip reads them as one): 1.4 MB that inflates to 1 GiB of
    # valid JSON, as in the issue.
    padding = gzip.compress(b" " * (16 << 20), 9)
    blob = b"".join(
        [gzip.compress(b'{"gpus": 1, "nodes": {}, "pad": "'), padding * 64, gzip.compress(b'"}')]
    )
    _sacct_with_admin_comment(tmp_path, blob)
    done = _cli(tmp_path, "report", "--sacct", "sacct.txt")
    _one_line(done, "sacct.txt", "job 60155093", "inflates to more than 1 MiB")


def test_a_jobstats_summary_in_several_gzip_members_reads_as_gzip_does(tmp_path: Path) -> None:
    real = REALWORLD / "accounting" / "jobstats-sacct-P-gpu-completed-60155093.txt"
    blob = real.read_text().split("JS1:")[1].split("|")[0]
    document = gzip.decompress(base64.b64decode(blob))
    half = len(document) // 2
    _sacct_with_admin_comment(
        tmp_path, gzip.compress(document[:half]) + gzip.compress(document[half:])
    )
    facts = _facts(tmp_path, "report", "--sacct", "sacct.txt")
    assert facts == _facts(tmp_path, "report", "--sacct", str(real))  # the same summary
    assert facts["gpu.source"] == "jobstats" and facts["gpu.util.mean"] == 98.6


# --------------------------------------------------------------------------- 3. Slurm output


@pytest.fixture
def endless_slurm(tmp_path: Path) -> str:
    """A PATH whose Slurm commands print without end (a broken site wrapper, a crafted
    command): read whole, they took all memory."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for name in ("scontrol", "sacct", "sstat", "squeue", "sinfo"):
        path = folder / name
        path.write_text('#!/bin/sh\nexec /usr/bin/yes "JobId=1 JobName=x JobState=RUNNING"\n')
        path.chmod(0o755)
    return f"{folder}:/usr/bin:/bin"


def test_endless_scontrol_output_is_one_line_not_gigabytes(
    tmp_path: Path, endless_slurm: str
) -> None:
    done = _cli(tmp_path, "report", "--jobid", "123", path=endless_slurm)
    _one_line(done, "job 123", f"scontrol printed more than {MAX_OUTPUT_BYTES >> 20} MiB")


def test_endless_sacct_output_in_the_jobs_list_is_one_line(
    tmp_path: Path, endless_slurm: str
) -> None:
    done = _cli(tmp_path, "jobs", "--user", "someone", path=endless_slurm)
    _one_line(done, "printed more than")


def test_the_bounded_reader_gives_what_subprocess_run_gave_within_its_bounds() -> None:
    script = "printf 'a\\r\\nb\\rc\\n\\377'; head -c 200000 /dev/zero >&2; exit 3"
    done = run_bounded(["/bin/sh", "-c", script], env={"PATH": "/usr/bin:/bin"}, timeout_s=30)
    assert done.returncode == 3 and done.stdout == "a\nb\nc\n\ufffd"
    assert done.stderr == "\0" * MAX_STDERR_BYTES  # the start kept, the rest read and dropped


def test_the_bounded_reader_stops_a_command_past_its_bounds() -> None:
    with pytest.raises(OutputTooLarge):
        run_bounded(["/usr/bin/yes"], env={}, timeout_s=30, limit=1 << 20)
    with pytest.raises(subprocess.TimeoutExpired):
        run_bounded(["/bin/sleep", "30"], env={}, timeout_s=0.2)


def test_doctor_says_a_slurm_command_printed_too_much_and_goes_on(
    tmp_path: Path, endless_slurm: str
) -> None:
    done = _cli(tmp_path, "doctor", path=endless_slurm)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "scontrol printed more than" in done.stdout
    assert "sacct printed more than" in done.stdout


# --------------------------------------------------------------------------- 4. recordings


def _round(t: int, gpus: list[dict[str, Any]]) -> str:
    return json.dumps({"t": t, "gpus": gpus}) + "\n"


def test_a_round_of_more_gpus_than_a_node_has_is_refused(tmp_path: Path) -> None:
    (tmp_path / "rec.jsonl").write_text(RECORDING_HEAD + _round(0, [{}] * 300_000))
    done = _cli(tmp_path, "report", "--metrics", "rec.jsonl")
    _one_line(done, "rec.jsonl", "line 2", "300000 gpus on one node", f"{MAX_GPUS_PER_NODE}")


def test_a_merged_round_counts_gpus_per_node(tmp_path: Path) -> None:
    # Two nodes of 40 GPUs each: 80 in the round, but no node has more than 40.
    gpus = [{"uuid": f"n{n}:GPU-{i}", "util_pct": 90.0} for n in (1, 2) for i in range(40)]
    text = RECORDING_HEAD + "".join(_round(t, gpus) for t in range(3))
    (tmp_path / "rec.jsonl").write_text(text)
    assert _facts(tmp_path, "report", "--metrics", "rec.jsonl")["gpu.count"] == 80


def _run_record(folder: Path, name: str, steps: int) -> Path:
    data = {
        "kind": "tuneadvisor-run", "schema": 1, "id": name, "name": "mnist_single",
        "label": name, "status": "completed", "launcher": "python",
        "settings": Settings().to_json(),
        "start": {"batch_size": 64, "train_samples": 60000},
        "summary": {"samples_per_s": 100.0},
        "steps": [{"event": "step", "epoch": 1, "step": i, "step_time_s": 0.1,
                   "samples_per_s": 640.0} for i in range(1, steps + 1)],
        "paths": {"profiles": [], "metrics": []},
    }  # fmt: skip
    run = folder / name
    run.mkdir()
    (run / "run.json").write_text(json.dumps(data))
    return run


def test_compare_refuses_a_run_record_of_more_steps_than_its_bound(tmp_path: Path) -> None:
    _run_record(tmp_path, "small", 50)
    _run_record(tmp_path, "huge", 100_000)
    done = _cli(tmp_path, "compare", "small", "huge", "--no-plots")
    _one_line(done, "huge/run.json", "100,000 entries", f"{MAX_EVENTS:,}")


def test_compare_reads_a_record_at_its_bound(tmp_path: Path) -> None:
    _run_record(tmp_path, "a", 50)
    _run_record(tmp_path, "b", MAX_EVENTS)
    done = _cli(tmp_path, "compare", "a", "b", "--no-plots", "--format", "json")
    assert done.returncode == 0, done.stderr[-2000:]


# --------------------------------------------------------------------------- 5. wrappers


def test_wrappers_calling_each_other_hundreds_of_times_are_read_once(tmp_path: Path) -> None:
    (tmp_path / "job.sbatch").write_text(
        "#!/bin/bash\n#SBATCH --time=1:00\n" + "srun ./a.sh\n" * 200
    )
    for me, other in (("a", "b"), ("b", "c"), ("c", "a")):
        body = f"./{other}.sh\n" * 200 + f"./{me}.sh\n" * 50  # and itself
        (tmp_path / f"{me}.sh").write_text("#!/bin/bash\n" + body)
    done = _cli(tmp_path, "report", "--job", "job.sbatch")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "a.sh, the job's own shell script, starts no Python program" in done.stdout


def test_a_wrapper_that_calls_itself_before_training_is_followed(tmp_path: Path) -> None:
    (tmp_path / "job.sbatch").write_text("#!/bin/bash\n#SBATCH --time=1:00:00\nsrun ./a.sh\n")
    (tmp_path / "a.sh").write_text("#!/bin/bash\n" + "./a.sh\n" * 100 + "./b.sh --lr 0.1\n")
    (tmp_path / "b.sh").write_text('#!/bin/bash\npython train.py "$@"\n')
    (tmp_path / "train.py").write_text("print('training')\n")
    done = _cli(tmp_path, "report", "--job", "job.sbatch")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Training script: " in done.stdout and "train.py" in done.stdout
    assert "not read" not in done.stdout.split("Training script:")[1].splitlines()[0]


# --------------------------------------------------------------------------- 6. repair


def test_thousands_of_refused_options_are_repaired_in_one_parse(tmp_path: Path) -> None:
    lines = ["#!/bin/bash", "#SBATCH --time=1:00:00"]
    lines += [
        "#SBATCH " + " ".join(f"--zq{j:04d}x" for j in range(i, i + 10)) for i in range(0, 4000, 10)
    ]
    lines += ["#SBATCH --job-nme=mnist", "srun python train.py"]
    text = "\n".join(lines) + "\n"
    assert len(text) < MAX_JOB_SCRIPT
    (tmp_path / "job.sbatch").write_text(text)
    done = _cli(tmp_path, "apply", "--job", "job.sbatch", "--output", "tuned.sbatch")
    assert done.returncode == 0, done.stderr[-2000:]
    tuned = (tmp_path / "tuned.sbatch").read_text()
    assert "--zq" not in tuned and "#SBATCH --job-name=mnist" in tuned
    assert "#SBATCH --time=1:00:00" in tuned and "srun python train.py" in tuned


# --------------------------------------------------------------------------- 7. imports


def test_a_script_of_twenty_thousand_imports_is_read_in_bounded_work(tmp_path: Path) -> None:
    imports = "".join(f"import mod{i:05d}\n" for i in range(20_000))
    (tmp_path / "train.py").write_text(imports + "print(1)\n")
    for i in range(3):  # a few of them beside it, importing the same thousands
        (tmp_path / f"mod{i:05d}.py").write_text(imports)
    (tmp_path / "job.sbatch").write_text("#!/bin/bash\n#SBATCH --time=1:00\nsrun python train.py\n")
    done = _cli(tmp_path, "report", "--job", "job.sbatch")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "mod00000.py, mod00001.py, mod00002.py" in " ".join(done.stdout.split())


# --------------------------------------------------------------------------- 8. run --from


def _report(folder: Path, directives: dict[str, str], script: dict[str, Any]) -> Path:
    plan = {"script": {k: {"value": v, "because": ["x"]} for k, v in script.items()}}
    doc = minimal_report(directives, plan)  # a report the schema takes: its values are the test
    path = folder / "report.json"
    path.write_text(json.dumps(doc))
    (folder / "data" / "MNIST" / "raw").mkdir(parents=True, exist_ok=True)
    (folder / "data" / "MNIST" / "raw" / "train-images-idx3-ubyte").write_bytes(b"")
    return path


def _run_from(folder: Path, name: str = "mnist_ddp") -> subprocess.CompletedProcess[str]:
    return _cli(folder, "run", name, "--from", "report.json", "--data-dir", "data",
                "--no-watch", "--runs", "runs")  # fmt: skip


def test_a_report_whose_cores_multiply_past_the_bound_is_refused(tmp_path: Path) -> None:
    _report(tmp_path, {"ntasks": "200000", "cpus-per-task": "100000"}, {})
    _one_line(_run_from(tmp_path), "report.json", "20,000,000,000 cores")
    assert not (tmp_path / "runs").exists()  # refused before anything ran


@pytest.mark.parametrize(
    ("directives", "script", "said"),
    [
        ({"ntasks": "200"}, {}, "200 tasks would start 200 processes here"),
        ({}, {"num_workers": 100_000}, "(1 + 100,000 DataLoader workers)"),
    ],
)
def test_a_report_does_not_decide_alone_how_many_processes_start_here(
    tmp_path: Path, directives: dict[str, str], script: dict[str, Any], said: str
) -> None:
    _report(tmp_path, directives, script)
    line = _one_line(_run_from(tmp_path), "report.json", said)
    assert "--ntasks, --num-workers" in line
    assert not (tmp_path / "runs").exists()
