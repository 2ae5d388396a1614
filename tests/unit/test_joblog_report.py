"""`tuneadvisor report|apply --log FILE` end to end: every real log of
tests/fixtures/realworld/joblogs/ gives the finding a careful reader expects (the rule, the
line quoted, its numbers), a log with no known cause says so, an unreadable one is one line
and exit status 2, and the OOM killer's --mem applied twice writes the same script."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import tutorial_seff
from tuneadvisor.cli import main
from tuneadvisor.slurm.joblog.causes import KEYWORDS

JOBLOGS = Path(__file__).resolve().parents[1] / "fixtures" / "realworld" / "joblogs"


@dataclass(frozen=True)
class Died:
    """The finding: its rule, the line it quotes (number, a part of the text), the numbers."""

    rule: str
    line: int
    says: str
    numbers: dict[str, object] = field(default_factory=dict)


# Read from the files (see MANIFEST.md), not from the tool's output.
EXPECTED: dict[str, Died | tuple[Died, ...] | None] = {
    "cuda-oom-ipassr-issue9.log": Died(
        "log-cuda-out-of-memory", 1, "Tried to allocate 10.73 GiB",
        {"GPU": 0, "tried to allocate (MiB)": 10.73 * 1024, "GPU total (MiB)": 8 * 1024,
         "free (MiB)": 0, "reserved, unallocated (MiB)": (19.15 - 17.20) * 1024},
    ),
    "cuda-oom-pytorch-issue16417.log": Died(
        "log-cuda-out-of-memory", 1, "Tried to allocate 22.00 MiB",
        {"GPU": 0, "tried to allocate (MiB)": 22.0, "GPU total (MiB)": 23.65 * 1024,
         "free (MiB)": 11.06,
         "reserved, unallocated (MiB)": 194.87},
    ),
    "cuda-oom-neurolens-issue2.log": Died(
        "log-cuda-out-of-memory", 2, "Tried to allocate 55.57 GiB",
        {"GPU": 0, "tried to allocate (MiB)": 55.57 * 1024, "GPU total (MiB)": 12 * 1024,
         "free (MiB)": 9.02 * 1024, "reserved, unallocated (MiB)": 463.48},
    ),
    "host-oom-arjuna-issue52.err": Died("log-host-out-of-memory", 1, "8156 Killed"),
    "host-oom-arjuna-issue52-interactive.log": Died("log-host-out-of-memory", 5, "Killed"),
    "host-oom-tusas-issue149.log": Died("log-host-out-of-memory", 1, "1 oom_kill event"),
    "nccl-timeout-ofa-issue271.log": Died(
        "log-nccl-timeout", 1, "[Rank 1] Watchdog caught",
        {"rank": 1, "collective": "ALLREDUCE", "sequence number": 469508, "timeout (s)": 1800},
    ),
    "nccl-timeout-basicsr-issue737.log": Died(
        "log-nccl-timeout", 1, "[Rank 1] Watchdog caught",
        {"rank": 1, "collective": "ALLREDUCE", "sequence number": 808, "timeout (s)": 600},
    ),
    "nccl-timeout-pytorch-issue118369.log": Died(
        "log-nccl-timeout", 1, "[Rank 0] Watchdog caught",
        {"rank": 0, "collective": "ALLREDUCE", "sequence number": 96120, "timeout (s)": 1800},
    ),
    "shm-bus-error-megatron-issue878.log": Died(
        "log-shared-memory", 5, "DataLoader worker (pid 56811) is killed by signal: Bus error"
    ),
    "shm-bus-error-mmf-issue441.log": Died("log-shared-memory", 3, "insufficient shared memory"),
    "time-limit-zetta-issue671.log": Died("log-time-limit", 2, "*** JOB 494583 ON"),
    "time-limit-canu-issue1052.log": Died("log-time-limit", 3, "*** JOB 3884617 ON node023"),
    "unrecognized-arguments-babylm-issue2.log": Died(
        "log-unrecognized-arguments", 17, "general_train.py: error",
        {"refused": "--local-rank=0"},
    ),
    "unrecognized-arguments-hrnet-issue61.log": Died(
        "log-unrecognized-arguments", 2, "train.py: error", {"refused": "--local_rank=1 -m"}
    ),
    "missing-module-weathergenerator-issue1104.log": Died(
        "log-missing-module", 9, "0: ModuleNotFoundError", {"module": "torch"}
    ),
    "no-kernel-image-featdepth-issue68.log": Died(
        "log-no-kernel-image", 2, "CUDA capability sm_86 is not compatible",
        {"GPU capability": "sm_86", "the build supports": "sm_37 sm_50 sm_60 sm_70"},
    ),
    "no-kernel-image-ai-toolkit-issue530.log": Died(
        "log-no-kernel-image", 2, "sm_120",
        {"GPU capability": "sm_120",
         "the build supports": "sm_50 sm_60 sm_61 sm_70 sm_75 sm_80 sm_86 sm_90"},
    ),
    "no-cause-trixie-issue19-slurm-22217.out": None,
    # issue 30's new causes: a port another process holds, a file or a command not there
    "port-in-use-dist-kd-issue10.log": Died(
        "log-port-in-use", 4, "failed to bind to [::]:25641 (errno: 98", {"port": 25641}
    ),
    "port-in-use-colossalai-issue5049.log": Died(
        "log-port-in-use", 1, "[::]:29601 (errno: 98 - Address already in use)", {"port": 29601}
    ),
    "port-in-use-torchtune-issue1025.log": Died(
        "log-port-in-use", 1, "[::]:29500 (errno: 98", {"port": 29500}
    ),
    "port-in-use-pytorch-issue85604.log": Died(
        "log-port-in-use", 3, "failed to listen on [::]:47531 (errno: 98", {"port": 47531}
    ),
    "port-in-use-mmpretrain-issue960.log": Died(
        "log-port-in-use", 2, "failed to bind to [::]:22 (errno: 98", {"port": 22}
    ),
    "port-in-use-accelerate-issue2246.log": Died(
        "log-port-in-use", 1, "failed to bind to [::]:12211 (errno: 98", {"port": 12211}
    ),
    "port-in-use-drivelm-issue40.log": Died(
        "log-port-in-use", 1, "failed to listen on [::]:38429 (errno: 98", {"port": 38429}
    ),
    # srun's own socket, no rendezvous port: the line, no port
    "port-in-use-srun-rnaseq-pipeline-issue91.log": Died(
        "log-port-in-use", 1, "unable to initialize step context socket: Address already in use"
    ),
    "missing-file-dask-drmaa-issue87.log": Died(
        "log-missing-file", 1, "line 2: ./dask-worker-scriptz8gmf_cpsh: No such file",
        {"file": "./dask-worker-scriptz8gmf_cpsh"},
    ),
    # the batch script itself gone from the node's spool (an NFS hiccup, the site said)
    "missing-file-arjuna-issue21.err": Died(
        "log-missing-file", 1, "execve(): /tmp/slurmd/job2997814/slurm_script: No such",
        {"file": "/tmp/slurmd/job2997814/slurm_script"},
    ),
    # srun's step could not start the program: not on the node's PATH (the module lacked it)
    "missing-file-csc-ddp-examples-issue1.log": Died(
        "log-missing-file", 11, "execve(): torchrun: No such file", {"file": "torchrun"}
    ),
    "missing-file-itwinai-issue472.err": Died(
        "log-missing-file", 3, "error: execve(): bash: No such file", {"file": "bash"}
    ),
    "missing-file-accelerate-issue2192.log": Died(
        "log-missing-file", 1, "execve(): accelerate: No such file", {"file": "accelerate"}
    ),
    "command-not-found-auto-reid-issue3.log": Died(
        "log-command-not-found", 1, "bash: srun: command not found", {"command": "srun"}
    ),
    # a program's own message about its input (not bash's): no cause is claimed
    "no-cause-robertslab-issue1526.log": None,
    # srun without its slurm.conf (not the training's files): not claimed as a cause
    "no-cause-megatron-issue172.log": None,
    "missing-file-windninja-issue624.log": Died(
        "log-missing-file", 1, "execve(): mkdir: No such file or directory", {"file": "mkdir"}
    ),
    "command-not-found-robertslab-issue512.log": Died(
        "log-command-not-found", 2, "line 30: -task: command not found", {"command": "-task"}
    ),
    "module-unavailable-trixie-issue17.log": Died(
        "log-module-unavailable", 1, "Unable to locate a modulefile for 'conda'",
        {"module": "conda"},
    ),
    # a script with Windows line ends: bash's "\r: No such file" printed without its name
    "no-cause-deformable-detr-issue47.log": None,
    # two jobs on one node, the second's fixed rendezvous port held by the first
    "port-in-use-wekws-issue93.log": Died(
        "log-port-in-use", 2, "failed to bind to [::]:29400 (errno: 98", {"port": 29400}
    ),
    "port-in-use-pytorch-issue126510.log": Died(
        "log-port-in-use", 1, "failed to bind to [::]:29400 (errno: 98", {"port": 29400}
    ),
    "module-unavailable-rrfs-workflow-issue962.log": Died(
        "log-module-unavailable", 3, 'module(s) are unknown: "libfabric/1.20.1"',
        {"module": "libfabric/1.20.1"},
    ),
    # the node's module system itself missing, so the job's program is not on the PATH:
    # both lines, the missing file (the root) and the command it left unfound
    "command-not-found-lmod-issue645.log": (
        Died("log-command-not-found", 2, "line 14: fastqc: command not found",
             {"command": "fastqc"}),
        Died("log-missing-file", 1, "/usr/share/lmod/lmod/libexec/lmod: No such file",
             {"file": "/usr/share/lmod/lmod/libexec/lmod"}),
    ),
    "command-not-found-jetstream-cluster-issue18.log": (
        Died("log-command-not-found", 3, "line 8: mpirun: command not found",
             {"command": "mpirun"}),
        Died("log-missing-file", 1, "/usr/share/lmod/lmod/libexec/lmod: No such file",
             {"file": "/usr/share/lmod/lmod/libexec/lmod"}),
    ),
}  # fmt: skip


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def _report(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code, out, err = _run(capsys, "report", *args, "--format", "json")
    assert code == 0, err
    report: dict[str, Any] = json.loads(out)
    return report


def test_every_real_log_has_one_row() -> None:
    files = sorted(p.name for p in JOBLOGS.iterdir() if p.name != "MANIFEST.md")
    assert files == sorted(EXPECTED)
    manifest = (JOBLOGS / "MANIFEST.md").read_text()
    assert all(f"`{name}`" in manifest for name in files)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_what_a_careful_reader_concludes(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(JOBLOGS / name)
    report = _report(capsys, "--log", path)
    logged = [f for f in report["findings"] if f["id"].startswith("log-")]
    expected = EXPECTED[name]
    if expected is None:
        assert logged == []
        lines = len((JOBLOGS / name).read_bytes().splitlines())
        said = f"{path}: read, {lines} lines, no known cause of death found"
        assert any(item.endswith(said) for item in report["advice"]["not_read"])
        return
    wanted = expected if isinstance(expected, tuple) else (expected,)
    assert sorted(f["id"] for f in logged) == sorted(d.rule for d in wanted)
    for died in wanted:
        (finding,) = [f for f in logged if f["id"] == died.rule]
        _check(finding, died, path)


def _check(finding: dict[str, Any], expected: Died, path: str) -> None:
    assert finding["severity"] == "error"
    line = finding["evidence"]["line"]
    assert line.startswith(f"{path}:{expected.line}: ") and expected.says in line, line
    numbers = {k: v for k, v in finding["evidence"].items() if k != "line"}
    assert numbers.keys() == expected.numbers.keys()
    for label, value in expected.numbers.items():
        if isinstance(value, float):
            assert numbers[label] == pytest.approx(value, abs=0.01), label
        else:
            assert numbers[label] == value, label


def test_the_text_report_quotes_the_line_with_the_fix(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(JOBLOGS / "host-oom-tusas-issue149.log")
    code, out, _ = _run(capsys, "report", "--log", path)
    assert code == 0
    assert "[error] log-host-out-of-memory" in out
    assert f"line: {path}:1: slurmstepd: error: Detected 1 oom_kill event" in out
    assert "fewer or lighter" in out  # the fix, in the rationale


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo.out"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda tmp: tmp / "no-such.out", "no such file"),
        (lambda tmp: tmp, "is a directory"),
        (_fifo, "not a regular file"),
    ],
)
def test_an_unreadable_log_is_one_line_and_exit_2(
    make: Any, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = make(tmp_path)
    code, out, err = _run(capsys, "report", "--log", str(path))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and str(path) in err and says in err, err


def test_the_oom_killer_sizes_mem_from_the_accounting_and_applying_twice_is_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A job FAILED under its request (seff saw 3 of 8 GB: the spike came between samples)
    and the log says the OOM killer ended it: --mem twice the request, and the same log and
    seff applied to the tuned script change nothing more."""
    job = tmp_path / "job.sbatch"
    job.write_text("#!/bin/bash\n#SBATCH --mem=8G\n#SBATCH --time=01:00:00\npython train.py\n")
    seff = tmp_path / "seff.txt"
    seff.write_text(tutorial_seff(state="FAILED", used="3.00 GB", requested="8.00 GB"))
    log = str(JOBLOGS / "host-oom-tusas-issue149.log")
    tuned = tmp_path / "once.sbatch"
    code, _, err = _run(capsys, "apply", "--job", str(job), "--seff", str(seff), "--log", log,
                        "-o", str(tuned))  # fmt: skip
    assert code == 0, err
    assert "#SBATCH --mem=16G" in tuned.read_text()
    again = tmp_path / "twice.sbatch"
    code, out, err = _run(capsys, "apply", "--job", str(tuned), "--seff", str(seff), "--log",
                          log, "-o", str(again))  # fmt: skip
    assert code == 0, err
    assert not again.exists() or again.read_text() == tuned.read_text(), out


def test_without_accounting_the_oom_killer_changes_no_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The script's own --mem is no measure of the run: doubling it would double again on
    every apply of the same log."""
    job = tmp_path / "job.sbatch"
    job.write_text("#!/bin/bash\n#SBATCH --mem=8G\npython train.py\n")
    report = _report(
        capsys, "--job", str(job), "--log", str(JOBLOGS / "host-oom-tusas-issue149.log")
    )
    assert "log-host-out-of-memory" in [f["id"] for f in report["findings"]]
    assert "mem" not in report["advice"]["plan"]["sbatch"]


_GARBAGE = st.binary(max_size=4000) | st.text(max_size=2000).map(str.encode)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=_GARBAGE, long_line=st.integers(0, 300_000))
def test_any_bytes_are_read_and_garbage_is_no_cause(
    data: bytes,
    long_line: int,
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Binary, invalid UTF-8, a line of hundreds of KiB: exit 0, no traceback, and where
    none of the messages' words occurs, no finding (the note says the log was read)."""
    path = tmp_path_factory.mktemp("log") / "slurm-9.out"
    path.write_bytes(data + b"z" * long_line)
    code, out, err = _run(capsys, "report", "--log", str(path), "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    logged = [f["id"] for f in report["findings"] if f["id"].startswith("log-")]
    if KEYWORDS.search(path.read_bytes()) is None:
        assert logged == []
        assert any(
            note.startswith(f"{path}: read, ") and "no known cause of death" in note
            for note in report["advice"]["not_read"]
        )
