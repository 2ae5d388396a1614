"""Unicode digits (issue 34, class 6): ``\\d`` and ``str.isdigit`` take ``²`` and ``٣`` that
``int()`` then refuses (or takes 5,000 of them past its 4,300-digit limit). Every pattern of
the package reads ASCII digits only (``[0-9]``: tests/unit/test_linear_patterns.py lists
them); here the places the campaign found, fed generated digits end to end: exit 0 or one
line and exit 2, never a traceback."""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.regex_sites import call_sites, module_patterns
from tuneadvisor.cli import main
from tuneadvisor.numbers import (
    MAX_NUMBER,
    MAX_NUMBER_TEXT,
    ascii_int,
    finite_float,
    is_ascii_number,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

UNICODE_DIGITS = st.sampled_from(["²", "٣", "０", "۵", "१", "߁", "¹", "𝟎"])
NUMBER = st.one_of(
    st.tuples(UNICODE_DIGITS, st.sampled_from([1, 2, 5000])).map(lambda t: t[0] * t[1]),
    st.tuples(st.integers(0, 9).map(str), UNICODE_DIGITS).map("".join),
    st.integers(0, 99).map(str),
)


def _run(args: list[str]) -> tuple[int, list[str]]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(args)
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 1
    return status, err.getvalue().strip().splitlines()


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(first=NUMBER, last=NUMBER, gpu=NUMBER)
def test_unicode_digits_in_a_job_script_end_well(
    first: str, last: str, gpu: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("job")
    job = folder / "job.sbatch"
    job.write_text(
        "#!/bin/bash\n"
        f"#SBATCH --array={first}-{last}\n#SBATCH --gres=gpu:{gpu}\n#SBATCH --nodes=1\n"
        f"A=(a b c)\nsrun -n{gpu} python train.py ${{A[$SLURM_ARRAY_TASK_ID]}}\n"
    )
    status, said = _run(["report", "--job", str(job), "--format", "text"])
    assert status == 0 or (status == 2 and len(said) == 1), (status, said)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(gpu=NUMBER, value=NUMBER)
def test_unicode_digits_in_dcgm_text_end_well(
    gpu: str, value: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("dcgm")
    job = folder / "job.sbatch"
    job.write_text("#!/bin/bash\n#SBATCH --nodes=1\nsrun python train.py\n")
    for name, text in (
        ("d.prom", f'DCGM_FI_DEV_GPU_UTIL{{gpu="{gpu}",UUID="GPU-1"}} {value}\n'),
        ("d.txt", f"#Entity   GPUTL\nID\nGPU {gpu}  {value}\n"),
    ):
        path = folder / name
        path.write_text(text)
        status, said = _run(["report", "--job", str(job), "--metrics", str(path)])
        assert status == 0 or (status == 2 and len(said) == 1), (name, status, said)


def test_no_pattern_of_the_package_reads_unicode_digits_with_backslash_d() -> None:
    """``\\d`` matches every Unicode decimal digit; the readers convert with int() or float()."""
    found = [
        site.where
        for site in (*call_sites(), *module_patterns())
        if isinstance(site.pattern, str)
        and re.search(r"(?<!\\)\\d", site.pattern)
        and not site.flags & re.ASCII
    ]
    assert found == []


# ------------------------------------------- the one conversion (tuneadvisor/numbers.py)

_EVERY_DIGIT = ["²", "٣", "٤", "０", "۵", "१", "߁", "¹", "𝟎", "৪"]
_SPACES = ["", " ", "\t", "\u00a0", "\u2003"]  # ASCII, then Unicode spaces float() strips


@st.composite
def _number_texts(draw: st.DrawFn) -> str:
    """Digit strings as a hostile file writes them: ASCII or Unicode digits, 0 to 5,000 of
    them (past float's range at 309, past int()'s limit at 4,300), signs, spaces, an
    underscore, a fraction or an exponent."""
    alphabet = draw(st.lists(st.sampled_from([*"0123456789", *_EVERY_DIGIT]), min_size=1,
                             max_size=4))  # fmt: skip
    length = draw(st.sampled_from([0, 1, 3, 31, 32, 309, 999, 1001, 4301, 5000]))
    body = ("".join(alphabet) * length)[:length]
    if body and draw(st.booleans()):
        at = draw(st.integers(0, len(body)))
        body = body[:at] + draw(st.sampled_from(["_", ".", "e5", "e-400", "٫"])) + body[at:]
    sign = draw(st.sampled_from(["", "", "+", "-"]))
    return draw(st.sampled_from(_SPACES)) + sign + body + draw(st.sampled_from(_SPACES))


class _ReaderError(ValueError):
    """A reader's own error, as finite_float raises it."""


@given(_number_texts())
@settings(max_examples=300, deadline=None)
def test_only_ascii_numbers_within_the_bounds_are_read(text: str) -> None:
    unicode_digit = any(c.isdigit() and not "0" <= c <= "9" for c in text)
    whole = ascii_int(text)
    if whole is not None:  # ASCII digits alone: no sign, space, or Unicode digit
        assert text.isascii() and text.isdigit() and whole == int(text) <= MAX_NUMBER
    elif text.isascii() and text.isdigit():  # refused only past the bound
        assert len(text.lstrip("0")) > 31 or int(text) > MAX_NUMBER
    if is_ascii_number(text):
        assert not unicode_digit and "_" not in text and len(text) <= MAX_NUMBER_TEXT
        float(text)  # never raises on what is_ascii_number takes
    try:
        value = finite_float(text, "the value", _ReaderError)
    except _ReaderError as error:  # the reader's own one line, whatever the text
        assert str(error).startswith("the value ")
    else:
        assert is_ascii_number(text) and not unicode_digit
        assert math.isfinite(value) and abs(value) <= MAX_NUMBER and value == float(text)
    if unicode_digit:  # int() and float() read some of them ("٣" is 3): never here
        assert whole is None and not is_ascii_number(text)


# --------------------------------------------------- end to end: three readers, one line


def _report_json(args: list[str]) -> tuple[int, dict[str, Any], list[str]]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([*args, "--format", "json"])
    said = err.getvalue().strip().splitlines()
    return status, (json.loads(out.getvalue()) if status == 0 else {}), said


@pytest.mark.parametrize("digit", ["²", "٤", "４"])
def test_a_unicode_digit_in_cpus_per_task_and_array_is_no_count(digit: str, tmp_path: Path) -> None:
    """sbatch refuses ``--cpus-per-task=٤``; int() would read it as 4 and the advice would
    plan for 4 cores."""
    job = tmp_path / "job.sbatch"
    job.write_text(
        f"#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --cpus-per-task={digit}\n"
        f"#SBATCH --array=0-{digit}\nsrun python train.py\n"
    )
    status, report, said = _report_json(["report", "--job", str(job)])
    assert status == 0, said
    facts = report["advice"]["facts"]
    assert "job.cpus_per_task" not in facts
    assert digit in facts["job.invalid_directive.first"]
    assert "invalid-directive" in [f["id"] for f in report["findings"]]


def test_a_dcgm_timestamp_of_400_digits_is_one_line_and_exit_2(tmp_path: Path) -> None:
    job = tmp_path / "job.sbatch"
    job.write_text("#!/bin/bash\n#SBATCH --nodes=1\nsrun python train.py\n")
    metrics = tmp_path / "dcgm.prom"
    metrics.write_text(f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",UUID="GPU-1"}} 50 {"9" * 400}\n')
    status, _, said = _report_json(["report", "--job", str(job), "--metrics", str(metrics)])
    assert status == 2 and len(said) == 1 and "dcgm.prom" in said[0], said
    assert "timestamp" in said[0]


def test_arabic_indic_digits_in_dcgm_values_are_not_read_as_numbers(tmp_path: Path) -> None:
    """float("٣٤") is 34.0: a utilization dcgm never wrote."""
    job = tmp_path / "job.sbatch"
    job.write_text("#!/bin/bash\n#SBATCH --nodes=1\nsrun python train.py\n")
    exporter = tmp_path / "dcgm.prom"
    exporter.write_text(
        "".join(
            f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",UUID="GPU-1"}} ٣٤ 170000000{i}000\n' for i in range(3)
        )
    )
    status, report, said = _report_json(["report", "--job", str(job), "--metrics", str(exporter)])
    assert status == 0, said
    assert not any(k.startswith("gpu.util") for k in report["advice"]["facts"])
    dmon = tmp_path / "dmon.txt"
    dmon.write_text("#Entity   GPUTL\nID\nGPU 0  ٣٤\n")
    status, _, said = _report_json(["report", "--job", str(job), "--metrics", str(dmon)])
    assert status == 2 and len(said) == 1 and "dmon.txt" in said[0] and "٣٤" in said[0], said


@pytest.mark.parametrize(
    ("name", "ascii_text", "hostile"),
    [("seff.txt", "Cores: 1", "Cores: ١٢"),
     ("seff.txt", "CPU Efficiency: 94.67%", "CPU Efficiency: ٩٤.٦٧%"),
     ("sacct.txt", "|12|", "|١٢|")],
)  # fmt: skip
def test_arabic_indic_digits_in_seff_and_sacct_are_one_line_and_exit_2(
    name: str, ascii_text: str, hostile: str, tmp_path: Path
) -> None:
    source = {
        "seff.txt": FIXTURES / "seff" / "one-busy-core.txt",
        "sacct.txt": FIXTURES / "realworld/accounting/jobstats-sacct-P-gpu-completed-60155093.txt",
    }[name]
    text = source.read_text()
    assert ascii_text in text  # the fixture's own line, read well as it is
    path = tmp_path / name
    path.write_text(text.replace(ascii_text, hostile, 1))
    job = tmp_path / "job.sbatch"
    job.write_text("#!/bin/bash\n#SBATCH --nodes=1\nsrun python train.py\n")
    option = "--seff" if name == "seff.txt" else "--sacct"
    status, _, said = _report_json(["report", "--job", str(job), option, str(path)])
    assert status == 2 and len(said) == 1 and name in said[0], said


def test_a_plain_job_id_beside_a_heterogeneous_one_is_no_component(tmp_path: Path) -> None:
    """``1853`` beside ``1853+0``: its offset, "", went to int() (a traceback)."""
    fixture = FIXTURES / "realworld/accounting/torchx-sacct-het-1853.txt"
    lines = [x for x in fixture.read_text().splitlines() if not x.startswith("$ ")]
    sacct = tmp_path / "sacct.txt"
    sacct.write_text("\n".join([*lines, "1853|x|compute||1|COMPLETED|0:0"]) + "\n")
    job = tmp_path / "job.sbatch"
    job.write_text("#!/bin/bash\n#SBATCH --nodes=1\nsrun python train.py\n")
    status, _, said = _report_json(["report", "--job", str(job), "--sacct", str(sacct)])
    assert status == 2 and len(said) == 1 and "sacct.txt" in said[0], said


@pytest.mark.parametrize("core", ["٣", "3", True, 1e308, -1])
def test_a_run_records_cores_are_cpu_numbers_not_what_int_takes(
    core: object, tmp_path: Path
) -> None:
    import sys

    sys.path.insert(0, str(FIXTURES.parents[1] / "bench"))
    from fuzz_e2e import run_record

    for name in ("run", "base"):
        record = run_record(name=name)
        record["allocation"] = {"job_id": "1", "hostname": "n", "cores": [[0, core]]}
        (tmp_path / name).mkdir()
        (tmp_path / name / "run.json").write_text(json.dumps(record))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["compare", str(tmp_path / "run"), str(tmp_path / "base")])
    said = err.getvalue().strip().splitlines()
    assert status == 2 and len(said) == 1 and "allocation" in said[0], said
