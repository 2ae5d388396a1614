"""Unicode digits (issue 34, class 6): ``\\d`` and ``str.isdigit`` take ``²`` and ``٣`` that
``int()`` then refuses (or takes 5,000 of them past its 4,300-digit limit). Every pattern of
the package reads ASCII digits only (``[0-9]``: tests/unit/test_linear_patterns.py lists
them); here the places the campaign found, fed generated digits end to end: exit 0 or one
line and exit 2, never a traceback."""

from __future__ import annotations

import contextlib
import io
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.regex_sites import call_sites, module_patterns
from tuneadvisor.cli import main

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
    """``\\d`` matches every Unicode decimal digit; the readers convert with int() or float().
    The torch.profiler trace's own patterns (profile/trace/) are that reader's work."""
    found = [
        site.where
        for site in (*call_sites(), *module_patterns())
        if isinstance(site.pattern, str)
        and re.search(r"(?<!\\)\\d", site.pattern)
        and not site.flags & re.ASCII
        and "profile/trace" not in site.where.replace(".", "/")
    ]
    assert found == []
