"""Issue 23, points 1-8, as properties: what the bounds keep whatever the input, and that
the bounded code gives what the unbounded code gave wherever that fitted."""

from __future__ import annotations

import gzip
import itertools
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tuneadvisor.errors import InputError
from tuneadvisor.relaunch.local_processes import (
    LOCAL_PROCESSES_PER_CORE,
    MIN_LOCAL_PROCESSES,
    check_local_processes,
)
from tuneadvisor.relaunch.settings import checked_settings
from tuneadvisor.runrecord.settings import Settings
from tuneadvisor.slurm.accounting.jobstats import MAX_SUMMARY_BYTES, JobstatsTooLarge, _gunzipped
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.jobscript.repair import _fixed, _values_repaired, _why_not, repair_directives
from tuneadvisor.slurm.launch_line.search import find_launches
from tuneadvisor.slurm.launch_line.variables import MAX_EXPANDED_CHARS, MAX_VALUE_CHARS
from tuneadvisor.slurm.safe_words import MAX_COUNT
from tuneadvisor.trainscript.local_imports import MAX_IMPORT_PATHS, local_module_paths
from tuneadvisor.trainscript.parsed import parse_script

# --------------------------------------------------------------------------- 1. variables

NAMES = ("A", "B", "C")
_assignment = st.tuples(
    st.sampled_from(NAMES),
    st.lists(st.sampled_from(["$A", "$B", "${C}", "x" * 300, "/p"]), min_size=1, max_size=6),
)


@settings(max_examples=60, deadline=None, database=None)
@given(st.lists(_assignment, min_size=1, max_size=60), st.sampled_from(NAMES))
def test_no_expanded_word_passes_its_bound(
    assignments: list[tuple[str, list[str]]], used: str
) -> None:
    lines = ["#!/bin/bash", "#SBATCH --time=1:00"]
    lines += [f"{'export ' if i % 3 == 0 else ''}{name}={''.join(parts)}"
              for i, (name, parts) in enumerate(assignments)]  # fmt: skip
    lines.append(f"srun python ${used}/train.py --data ${used}")
    (launch,) = find_launches("\n".join(lines) + "\n")
    words = [launch.script or "", *launch.args, *launch.exported.values()]
    assert all(len(word) <= MAX_EXPANDED_CHARS for word in words)
    assert all(len(value) <= MAX_VALUE_CHARS for value in launch.exported.values())


def test_a_known_variable_under_the_bound_expands_as_before() -> None:
    script = "#!/bin/bash\nD=/data\nSCRIPT=$D/train.py\nsrun python $SCRIPT --root $D\n"
    (launch,) = find_launches(script)
    assert launch.script == "/data/train.py" and launch.args == ("--root", "/data")


# --------------------------------------------------------------------------- 2. jobstats


@settings(max_examples=60, deadline=None, database=None)
@given(st.binary(max_size=4000), st.lists(st.integers(0, 4000), max_size=4))
def test_bounded_gunzip_reads_what_gzip_reads(data: bytes, cuts: list[int]) -> None:
    edges = sorted({0, len(data), *(min(c, len(data)) for c in cuts)})
    members = b"".join(gzip.compress(data[a:b]) for a, b in itertools.pairwise(edges))
    blob = members or gzip.compress(b"")
    assert _gunzipped(blob) == gzip.decompress(blob) == data


def test_bounded_gunzip_stops_at_its_bound_whatever_the_members() -> None:
    member = gzip.compress(b"{" * (MAX_SUMMARY_BYTES // 4), 9)
    with pytest.raises(JobstatsTooLarge):
        _gunzipped(member * 5)
    with pytest.raises((EOFError, zlib.error)):
        _gunzipped(member[:-9])  # cut short: damaged, not too large


# --------------------------------------------------------------------------- 6. repair


def _repaired_token_by_token(job: JobScript, keep: frozenset[str]) -> tuple[JobScript, list[str]]:
    """The directive repair as it was: one edit and one parse per refused token."""
    notes: list[str] = []
    for index in reversed(job.unread_tokens()):
        token = job.tokens[index]
        fixed = _fixed(token.value)
        why = _why_not(job, fixed[0], keep) if fixed is not None else None
        if fixed is not None and why is None:
            job = job.with_text([(token.line, token.start, token.end, fixed[1])])
            notes.append(
                f"line {token.line}: {token.value} is no sbatch option: written as {fixed[1]}"
            )
        elif fixed is not None:
            job = job.without_tokens([index])
            notes.append(
                f"line {token.line}: {token.value} removed (sbatch refuses it); not "
                f"written as {fixed[1]}: {why}"
            )
        else:
            job = job.without_tokens([index])
            notes.append(f"line {token.line}: {token.value} removed: sbatch refuses it")
    return _values_repaired(job, keep, notes), notes


_TOKENS = st.sampled_from([
    "--job-nme=a", "--job-name=b", "--jobname=c", "--zzz", "--partitoin=gpu", "--time=1:00",
    "--time=01:00:00x", "--mem=8GG", "--cpus-per-tsk=4", "-c", "2", "stray", "--nodes=1",
    "--output=o.txt", "--outptu=p.txt", "--mail-type=END", "--gres=gpu:1",
])  # fmt: skip


@settings(max_examples=80, deadline=None, database=None)
@given(st.lists(st.lists(_TOKENS, min_size=1, max_size=4), min_size=1, max_size=6), st.booleans())
def test_one_edit_repairs_as_one_edit_per_token_did(lines: list[list[str]], keep: bool) -> None:
    text = "#!/bin/bash\n" + "".join(f"#SBATCH {' '.join(t)}\n" for t in lines) + "srun x\n"
    job = JobScript.parse(text)
    kept = frozenset({"cpus-per-task", "mem"} if keep else ())
    notes: list[str] = []
    expected, _ = _repaired_token_by_token(job, kept)
    assert repair_directives(job, kept, notes).text == expected.text


# --------------------------------------------------------------------------- 7. imports


def test_imports_are_looked_for_once_each_and_at_most_the_bound() -> None:
    source = "".join(f"import m{i % 700}\nfrom pkg import m{i}\n" for i in range(3000))
    paths = local_module_paths(parse_script(source))
    assert len(paths) == len(set(paths)) == MAX_IMPORT_PATHS
    assert [str(p) for p in paths[:4]] == [
        "m0.py",
        "m0/__init__.py",
        "pkg/m0.py",
        "pkg/m0/__init__.py",
    ]


# --------------------------------------------------------------------------- 8. run


@settings(max_examples=200, deadline=None, database=None)
@given(
    st.integers(1, 10_000), st.integers(0, 10_000), st.integers(1, 512),
    st.booleans(), st.booleans(),
)  # fmt: skip
def test_a_run_here_starts_more_processes_only_when_the_command_line_says_so(
    tasks: int, workers: int, cores: int, tasks_given: bool, workers_given: bool
) -> None:
    settings_ = Settings(ntasks=tasks).with_knobs(num_workers=workers)
    processes = tasks * (1 + workers)
    allowed = processes <= max(MIN_LOCAL_PROCESSES, LOCAL_PROCESSES_PER_CORE * cores) or (
        (tasks == 1 or tasks_given) and (workers == 0 or workers_given)
    )
    try:
        check_local_processes(
            settings_, cores, "r.json", tasks_given=tasks_given, workers_given=workers_given
        )
    except InputError as exc:
        assert not allowed and exc.path == "r.json" and f"{processes:,} processes" in str(exc)
    else:
        assert allowed


@given(st.integers(1, MAX_COUNT), st.integers(1, MAX_COUNT))
def test_tasks_times_cores_is_bounded_as_each_is(tasks: int, cpus: int) -> None:
    settings_ = Settings(ntasks=tasks, cpus_per_task=cpus)
    if tasks * cpus <= MAX_COUNT:
        assert checked_settings(settings_, "r.json") == settings_
    else:
        with pytest.raises(InputError, match="cores: more than"):
            checked_settings(settings_, "r.json")
