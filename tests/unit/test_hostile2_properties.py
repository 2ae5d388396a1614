"""Property (issue 23): any seff report, sacct -P line, job script or watch recording built
from issue 23's classes of values (numbers of 309-999 digits, ``1e999``, ``Infinity`` and
``NaN``, Unicode digits, control characters, zero counts) goes through the whole command
line, the advice, the plan and every renderer, and ends in exit 0 or in one line and exit 2:
never a traceback. What the user gets either way: exit 2 is one line that names the hostile
file, with nothing on stdout and nothing written (no tuned script, no other file in the
folder); exit 0 is a report with no raw control character in it (text and markdown) or JSON a
strict parser reads (no NaN or Infinity), and an `apply` that writes a whole tuned script.
Few examples by default (the test command stays fast); bench/fuzz.py's
end-to-end targets are the long campaign."""

from __future__ import annotations

import contextlib
import io
import json
import re
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tuneadvisor.cli import main

HOSTILE_NUMBERS = st.one_of(
    st.integers(0, 4096).map(str),
    st.integers(309, 999).map(lambda n: "9" * n),
    st.sampled_from(["1e999", "inf", "nan", "Infinity", "NaN", "-1", "0", "1e30", "1e308"]),
    st.sampled_from(["²", "1²", "٣", "０", "१२"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)
CONTROLS = st.sampled_from(["", "\x1b]0;t\x07", "\x1b[2J", "\x9b", "\r", "\x08"])
N = HOSTILE_NUMBERS
JOB = "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --cpus-per-task=2\nsrun python train.py\n"


@st.composite
def seff(draw: st.DrawFn) -> tuple[str, str]:
    return "seff.txt", (
        f"Job ID: {draw(N)}\nCluster: c{draw(CONTROLS)}\nUser/Group: u/g\n"
        f"State: COMPLETED (exit code {draw(N)})\nNodes: {draw(N)}\nCores per node: {draw(N)}\n"
        f"CPU Utilized: 00:{draw(N)}:10\n"
        f"CPU Efficiency: {draw(N)}% of 00:01:{draw(N)} core-walltime\n"
        f"Job Wall-time: {draw(N)}% of 01:00:00 time limit\n"
        f"Memory Utilized: {draw(N)} MB\nMemory Efficiency: {draw(N)}% of {draw(N)} GB\n"
    )


@st.composite
def sacct(draw: st.DrawFn) -> tuple[str, str]:
    head = "JobID|State|ExitCode|Elapsed|AllocTRES|ReqMem|MaxRSS|NNodes|Start|End|NTasks"
    job = draw(st.sampled_from(["5", "5_1", "5+0", f"5+{draw(N)}"]))
    return "sacct.txt", (
        f"{head}\n{job}|COMPLETED|0:{draw(N)}|00:0{draw(N)}:00|cpu={draw(N)},"
        f"mem={draw(N)}M,node={draw(N)},gres/gpu={draw(N)}|{draw(N)}M||{draw(N)}|"
        f"{draw(N)}|{draw(N)}|\n"
        f"{job}.0|COMPLETED|0:0|00:01:00|cpu=1|||{draw(N)}K|1|||{draw(N)}\n"
    )


@st.composite
def job_script(draw: st.DrawFn) -> tuple[str, str]:
    option = draw(st.sampled_from(["nodes", "ntasks", "cpus-per-task", "gpus", "mem",
                                   "ntasks-per-node", "gpus-per-task", "time"]))  # fmt: skip
    prefix = draw(st.sampled_from(["", "env " * 300, "srun " * 300]))
    return "job.sbatch", (
        f"#!/bin/bash\n#SBATCH --{option}={draw(N)}\n#SBATCH --job-name=j{draw(CONTROLS)}\n"
        f"{prefix}srun python train.py --workers {draw(N)}\n"
    )


@st.composite
def recording(draw: st.DrawFn) -> tuple[str, str]:
    head = ('{"format":"tuneadvisor-watch","version":1,"started":"2026-01-01T00:00:00+0000",'
            f'"host":"h","interval_s":{draw(N)},"target":"pid 1","gpu_no_data":null}}')  # fmt: skip
    procs = draw(st.sampled_from(['["x"]', "[5]", f'[{{"pid": {draw(N)}, "cpu_pct": 5}}]']))
    round_ = (f'{{"t":{draw(N)},"gpus":[{{"index":{draw(N)},"uuid":"GPU-1",'
              f'"util_pct":{draw(N)},"mem_used_mib":{draw(N)},"mem_total_mib":40960}}],'
              f'"procs":{procs}}}')  # fmt: skip
    return "m.jsonl", f"{head}\n{round_}\n"


def _run(folder: Path, *argv: str) -> tuple[int, str, list[str]]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue().strip().splitlines()


# a control character a terminal would act on (tab and newline are layout)
RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _strict_json(text: str) -> object:
    def refuse(constant: str) -> object:
        raise AssertionError(f"the JSON report holds {constant}")

    return json.loads(text, parse_constant=refuse)


def _check_refusal(argv: list[str], hostile: Path, out: str, said: list[str]) -> None:
    assert len(said) == 1 and said[0].startswith("tuneadvisor: "), said
    assert str(hostile) in said[0], (argv, said)  # names the file, not some other input
    assert not RAW_CONTROL.search(said[0]), said
    assert out == "", (argv, out)


def _check_output(argv: list[str], out: str, written: Path) -> None:
    if argv[0] == "apply":
        text = written.read_text(encoding="utf-8")
        assert text.startswith("#!") and text.endswith("\n"), text
        assert not RAW_CONTROL.search(out), out
    elif argv[-1] == "json":
        assert isinstance(_strict_json(out), dict)
    else:
        assert out.strip() and not RAW_CONTROL.search(out), out


OPTION = {"seff.txt": "--seff", "sacct.txt": "--sacct", "m.jsonl": "--metrics"}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(seff(), sacct(), job_script(), recording()))
def test_any_hostile_input_through_every_format_is_exit_0_or_one_line(
    named: tuple[str, str],
) -> None:
    name, text = named
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        (base / "job.sbatch").write_text(JOB)
        (base / "train.py").write_text("import torch\n")
        (base / name).write_text(text)
        given_input = [] if name == "job.sbatch" else [OPTION[name], str(base / name)]
        job = str(base / "job.sbatch")
        commands = [["report", "--job", job, *given_input, "--format", fmt]
                    for fmt in ("text", "markdown", "json")]  # fmt: skip
        commands.append(["apply", "--job", job, *given_input, "-o", str(base / "out.sbatch")])
        before = sorted(base.iterdir())
        for argv in commands:
            status, out, said = _run(base, *argv)
            assert status in (0, 2), (argv, said)
            if status == 2:
                _check_refusal(argv, base / name, out, said)
                assert sorted(base.iterdir()) == before, argv  # nothing written
            else:
                _check_output(argv, out, base / "out.sbatch")
