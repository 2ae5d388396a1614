"""Reading trace files: real ones (ranks, no rank, gzip, folders) and hostile bytes, which
are one InputError naming the file or a result, never a traceback."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tuneadvisor.errors import InputError
from tuneadvisor.profile.trace import stream
from tuneadvisor.profile.trace.reader import read_trace_set

REAL = Path(__file__).parents[1] / "fixtures" / "realworld" / "traces"


def test_a_folder_of_ranks_is_ordered_by_distributed_rank() -> None:
    ts = read_trace_set([str(REAL / "ddp-2rank-sampled")])
    assert ts.ordered_by == "rank" and [r.rank for r in ts.ranks] == [0, 1]
    assert all(r.world_size == 128 and len(r.steps) == 2 for r in ts.ranks)
    assert [s.step for s in ts.ranks[0].steps] == [551, 552]


def test_without_distributed_info_the_files_are_ordered_by_name_and_said(tmp_path: Path) -> None:
    a = REAL / "a100-no-distributed-info.json.gz"
    ts = read_trace_set([str(a), str(REAL / "cpu-pageable-sync.pt.trace.json.gz")])
    assert ts.ordered_by == "file" and [r.rank for r in ts.ranks] == [None, None]
    assert any("not initialised" in n for n in ts.notes)
    assert any("distributedInfo" in n for n in ts.ranks[0].notes)


def test_plain_json_reads_as_its_gzip(tmp_path: Path) -> None:
    plain = tmp_path / "rank0.json"
    plain.write_bytes(
        gzip.decompress((REAL / "cpu-only-gloo-rank34.pt.trace.json.gz").read_bytes())
    )
    a = read_trace_set([str(plain)]).ranks[0]
    b = read_trace_set([str(REAL / "cpu-only-gloo-rank34.pt.trace.json.gz")]).ranks[0]
    assert (a.rank, a.steps, a.events) == (b.rank, b.steps, b.events) == (34, b.steps, 30)


def test_progress_reaches_the_total() -> None:
    seen: list[tuple[int, int]] = []
    read_trace_set([str(REAL / "a100-nccl-rank0.json.gz")], lambda n, t: seen.append((n, t)))
    assert seen and seen[-1][0] == seen[-1][1] == (REAL / "a100-nccl-rank0.json.gz").stat().st_size


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"", "ends early"),
        (b"[1, 2]", "no trace events"),
        (b'{"schemaVersion": 1}', "no traceEvents"),
        (b'{"traceEvents": [{"ph": "X", "ts": NaN}]}', "not JSON"),
        (b'{"traceEvents": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}", "nested deeper"),
        (b'{"a": ' + b"[" * 100 + b"]" * 100 + b', "traceEvents": []}', "nested deeper"),
        # mtime=0: the same bytes in every pytest-xdist worker (the ids must match)
        (gzip.compress(b'{"traceEvents": [{"ph": "X"}, ' * 200, mtime=0)[:300], "ends early"),
        (b"\x1f\x8bnot gzip at all", "gzip"),
    ],
    ids=["empty", "array", "no-events", "nan", "deep-events", "deep-head", "cut-gz", "bad-gz"],
)
def test_hostile_files_are_one_line_naming_the_file(
    tmp_path: Path, content: bytes, says: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(InputError) as err:
        read_trace_set([str(path)])
    assert err.value.path == str(path) and says in err.value.one_line()
    assert "\n" not in err.value.one_line()


def test_a_string_longer_than_the_bound_is_refused_before_it_is_buffered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stream, "MAX_STRING_BYTES", 1 << 20)
    path = tmp_path / "long.json"
    path.write_bytes(b'{"traceEvents": [{"name": "' + b"x" * (3 << 20) + b'"}]}')
    with pytest.raises(InputError, match="longer than"):
        read_trace_set([str(path)])


def test_numbers_no_trace_has_are_left_out_with_a_note(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_text('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", '
                    '"ts": 1e300, "dur": 5}, {"ph": "X", "cat": "cpu_op", '
                    '"name": "aten::mm", "ts": 1, "dur": 1e300}]}')  # fmt: skip
    r = read_trace_set([str(path)]).ranks[0]
    assert r.steps == () and any("2 events" in n and "left out" in n for n in r.notes)


def test_an_integer_past_64_bits_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    path.write_text('{"traceEvents": [{"ph": "X", "ts": 1' + "0" * 400 + "}]}")
    with pytest.raises(InputError, match="not a trace") as err:
        read_trace_set([str(path)])
    assert err.value.path == str(path)


def test_a_folder_without_traces_names_the_folder(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(InputError, match=r"no torch\.profiler traces") as err:
        read_trace_set([str(tmp_path)])
    assert err.value.path == str(tmp_path)


_JSON = st.recursive(
    st.none() | st.booleans() | st.floats() | st.text(max_size=5),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
    max_leaves=20,
)


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.one_of(
        st.binary(max_size=300),
        st.builds(lambda b: b'{"traceEvents": [' + b, st.binary(max_size=200)),
        _JSON.map(lambda v: json.dumps({"traceEvents": [v, {"ph": "X", "args": v}]}).encode()),
    )
)
def test_any_bytes_are_an_input_error_or_a_result(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "any.json"
    path.write_bytes(data)
    try:
        read_trace_set([str(path)])
    except InputError as exc:
        assert exc.path == str(path)


def test_progress_shows_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import sys

    from tuneadvisor.commands.inputs import trace_progress

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert trace_progress() is None
    tty = Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    show = trace_progress()
    assert show is not None
    read_trace_set([str(REAL / "a100-nccl-rank0.json.gz")], show)
    assert tty.getvalue().startswith("\rreading traces:") and tty.getvalue().endswith(
        "100 % of 1 MiB\n"
    )


def test_a_run_folder_reads_its_traces_and_compares_as_a_run(tmp_path: Path) -> None:
    """`run --profile torch` writes run.json beside the ranks' traces: `report FOLDER` reads
    the traces (not run.json as one), and `compare` takes the folder as a run."""
    from tuneadvisor.workspace.inputs import is_run_folder, split_profiles

    trace = next((REAL / "cpu-ddp-gloo").iterdir())
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text('{"schema": 1}')
    (run / trace.name).write_bytes(trace.read_bytes())
    assert split_profiles([str(run)]) == ((), (str(run),))
    assert is_run_folder(str(run))
    traces = read_trace_set([str(run)])
    assert [r.path for r in traces.ranks] == [str(run / trace.name)]
    only_records = tmp_path / "tune"
    only_records.mkdir()
    (only_records / "tune.json").write_text("{}")
    assert split_profiles([str(only_records)]) == ((str(only_records),), ())


def test_telling_a_trace_from_a_profile_never_blocks_on_a_fifo(tmp_path: Path) -> None:
    """PROFILE is split by a peek at each file's start: a FIFO given there is no trace, and
    the peek does not wait for a writer; `report` refuses it in one line."""
    import os
    import subprocess
    import sys

    from tests.conftest import REPO
    from tuneadvisor.workspace.inputs import split_profiles

    fifo = tmp_path / "profile"
    os.mkfifo(fifo)
    assert split_profiles([str(fifo)]) == ((str(fifo),), ())
    done = subprocess.run(
        [sys.executable, "-m", "tuneadvisor", "report", str(fifo)],
        capture_output=True, text=True, timeout=60, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "not a regular file" in done.stderr


def test_a_gzipped_trace_without_its_suffix_is_told_by_what_it_holds(tmp_path: Path) -> None:
    from tuneadvisor.workspace.inputs import split_profiles

    named = tmp_path / "rank0.data"
    named.write_bytes((REAL / "h200-pinned.pt.trace.json.gz").read_bytes())
    assert split_profiles([str(named)]) == ((), (str(named),))
    broken = tmp_path / "broken.data"
    broken.write_bytes(b"\x1f\x8b" + b"\x00" * 64)
    assert split_profiles([str(broken)]) == ((str(broken),), ())
