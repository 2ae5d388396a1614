"""Loading real .lprof pickles from line_profiler 4.x and 5.x, and refusing everything else."""

from __future__ import annotations

import os
import pickle
import random
import shutil
import struct
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import line_profiler
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tuneadvisor.errors import InputError
from tuneadvisor.profile import safe_pickle
from tuneadvisor.profile.lprof import NO_FUNCTIONS, load_profile, load_profiles
from tuneadvisor.profile.model import Profile
from tuneadvisor.profile.safe_pickle import PickleLimits, PickleRejected

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "lprof"
VERSIONS = ("4.1.3", "4.2.0", "5.1.0")
PICKLES = [FIXTURES / f"lp{v}.lprof" for v in VERSIONS]
RANK1 = FIXTURES / "lp5.1.0-rank1.lprof"


Table = dict[tuple[str, int, str], list[tuple[int, int, float]]]


def reference(path: Path) -> tuple[float, Table]:
    """What line_profiler's own (trusting) loader reads from our own recorded file."""
    stats = line_profiler.load_stats(str(path))
    return stats.unit, {
        key: [(lineno, hits, time * stats.unit) for lineno, hits, time in entries]
        for key, entries in stats.timings.items()
    }


def as_table(profile: Profile) -> Table:
    return {
        f.key: [(line.lineno, line.hits, line.time_s) for line in f.lines]
        for f in profile.functions
    }


def assert_same_numbers(got: Table, want: Table) -> None:
    """Same functions, lines and hits; times equal up to float rounding."""
    assert list(got) == list(want)
    for key, lines in got.items():
        assert [(lineno, hits) for lineno, hits, _ in lines] == [
            (lineno, hits) for lineno, hits, _ in want[key]
        ], key
        assert [t for _, _, t in lines] == pytest.approx([t for _, _, t in want[key]], rel=1e-12)


def rejected(path: Path, *needles: str) -> str:
    """Load ``path``, expecting an InputError naming it and saying each of ``needles``."""
    with pytest.raises(InputError) as info:
        load_profile(path)
    message = str(info.value)
    assert message.startswith(f"{path}: "), message
    assert "\n" not in message
    for needle in needles:
        assert needle in message, message
    return message


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def line_stats_pickle(timings: Any, unit: Any) -> bytes:
    """A genuine LineStats pickle, made by line_profiler itself, holding whatever we like."""
    return pickle.dumps(line_profiler.LineStats(timings, unit), protocol=5)


# -- real files ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", PICKLES, ids=VERSIONS)
def test_pickles_load_to_line_profilers_own_numbers(path: Path) -> None:
    profile = load_profile(path)
    unit, timings = reference(path)
    assert profile.source_format == "lprof"
    assert profile.origin == str(path)
    assert profile.unit_s == unit
    assert_same_numbers(as_table(profile), timings)
    assert all(f.embedded_source == {} for f in profile.functions)


@pytest.mark.parametrize("path", PICKLES, ids=VERSIONS)
def test_pickles_hold_the_toy_scripts_functions(path: Path) -> None:
    profile = load_profile(path)
    names = {f.name: f for f in profile.functions}
    assert set(names) == {"load_batch", "step", "never_called", "train"}
    assert names["never_called"].lines == ()
    # The two-line statement: both physical lines are timed.
    step_lines = {line.lineno: line.hits for line in names["step"].lines}
    assert step_lines[25] > 0 and step_lines[26] > 0
    assert profile.total_s > 0


_keys = st.tuples(st.text(max_size=40), st.integers(0, 10**6), st.text(max_size=40))
_lines = st.dictionaries(
    st.integers(0, 10**6), st.tuples(st.integers(0, 2**63), st.integers(0, 2**63)), max_size=12
)


@settings(max_examples=150, deadline=None)
@given(
    timings=st.dictionaries(_keys, _lines, min_size=1, max_size=6),  # none: refused
    unit=st.sampled_from([1e-9, 1e-7, 1e-6]),
    protocol=st.integers(2, 5),
)
def test_any_genuine_line_stats_loads_to_its_numbers(
    timings: dict[tuple[str, int, str], dict[int, tuple[int, int]]], unit: float, protocol: int
) -> None:
    stats = line_profiler.LineStats(
        {
            key: [(lineno, hits, time) for lineno, (hits, time) in sorted(lines.items())]
            for key, lines in timings.items()
        },
        unit,
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "any.lprof"
        path.write_bytes(pickle.dumps(stats, protocol=protocol))
        profile = load_profile(path)
    want = {
        key: [(lineno, hits, time * unit) for lineno, hits, time in entries]
        for key, entries in stats.timings.items()
    }
    assert_same_numbers(as_table(profile), want)


def test_content_decides_not_the_extension(tmp_path: Path) -> None:
    pickle_as_txt = tmp_path / "profile.txt"
    shutil.copy(FIXTURES / "lp5.1.0.lprof", pickle_as_txt)
    table_as_lprof = tmp_path / "profile.lprof"
    shutil.copy(FIXTURES / "lp5.1.0.txt", table_as_lprof)
    assert load_profile(pickle_as_txt).source_format == "lprof"
    assert load_profile(table_as_lprof).source_format == "text"


def test_fixtures_name_only_the_admitted_classes() -> None:
    """The allow-list is what real files use (see scripts/make_lprof_fixtures.sh), and 2.x's
    name, which no 2.x build on this Python can write (test_a_2x_pickle_loads)."""
    import pickletools

    used = set()
    for path in PICKLES:
        ops = list(pickletools.genops(path.read_bytes()))
        strings = [arg for op, arg, _ in ops if op.name == "SHORT_BINUNICODE"]
        used.add((strings[0], strings[1]))
    assert used | {LP2_CLASS} == safe_pickle.LINESTATS_CLASSES


LP2_CLASS = ("_line_profiler", "LineStats")


class _Lp2LineStats:
    """line_profiler 2.1.2's LineStats (_line_profiler.pyx, a plain Python class in a
    top-level Cython module), under its own module and name: pickling it writes what 2.x's
    dump_stats wrote (pickle.dump(stats, f, pickle.HIGHEST_PROTOCOL))."""

    def __init__(self, timings: object, unit: float) -> None:
        self.timings = timings
        self.unit = unit


@pytest.mark.parametrize("protocol", [2, 4])  # 4: HIGHEST_PROTOCOL of the Pythons 2.x ran on
def test_a_2x_pickle_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, protocol: int) -> None:
    import sys
    import types

    module = types.ModuleType(LP2_CLASS[0])
    _Lp2LineStats.__module__, _Lp2LineStats.__qualname__ = LP2_CLASS
    module.LineStats = _Lp2LineStats  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, LP2_CLASS[0], module)
    stats = _Lp2LineStats({("train.py", 10, "train"): [(11, 3, 4000), (12, 1, 500)]}, 1e-6)
    data = pickle.dumps(stats, protocol=protocol)
    assert b"_line_profiler" in data and b"line_profiler._line_profiler" not in data
    profile = load_profile(write(tmp_path, "lp2.lprof", data))
    assert profile.unit_s == 1e-6
    assert_same_numbers(
        as_table(profile), {("train.py", 10, "train"): [(11, 3, 4e-3), (12, 1, 5e-4)]}
    )


# -- several ranks ------------------------------------------------------------------------


def test_load_profiles_keeps_each_rank_and_merges_them() -> None:
    rank0, rank1 = FIXTURES / "lp5.1.0.lprof", RANK1
    loaded = load_profiles([rank0, rank1])
    assert [p.origin for p in loaded.parts] == [str(rank0), str(rank1)]
    assert loaded.merged.origin == f"merged({rank0}, {rank1})"
    _, t0 = reference(rank0)
    _, t1 = reference(rank1)
    merged = as_table(loaded.merged)
    assert set(merged) == set(t0) | set(t1)
    for key, lines in merged.items():
        by_line0 = {lineno: (hits, time) for lineno, hits, time in t0.get(key, [])}
        by_line1 = {lineno: (hits, time) for lineno, hits, time in t1.get(key, [])}
        for lineno, hits, time_s in lines:
            h0, s0 = by_line0.get(lineno, (0, 0.0))
            h1, s1 = by_line1.get(lineno, (0, 0.0))
            assert hits == h0 + h1
            assert time_s == pytest.approx(s0 + s1)
    assert loaded.merged.total_s == pytest.approx(loaded.parts[0].total_s + loaded.parts[1].total_s)


def test_load_profiles_mixes_a_pickle_and_a_table() -> None:
    loaded = load_profiles([FIXTURES / "lp5.1.0.lprof", FIXTURES / "lp4.2.0.txt"])
    assert loaded.merged.source_format == "mixed"
    assert len(loaded.parts) == 2


def test_load_profiles_names_the_bad_file(tmp_path: Path) -> None:
    bad = write(tmp_path, "rank1.lprof", b"")
    with pytest.raises(InputError, match=r"rank1\.lprof: empty file"):
        load_profiles([FIXTURES / "lp5.1.0.lprof", bad])


def test_load_profiles_of_nothing_is_an_input_error() -> None:
    with pytest.raises(InputError, match="no profile files given"):
        load_profiles([])


# -- bad files ----------------------------------------------------------------------------


def test_empty_file(tmp_path: Path) -> None:
    rejected(write(tmp_path, "empty.lprof", b""), "empty file")


@pytest.mark.parametrize("cut", [1, 2, 11, 60, 200, -1])
def test_truncated_pickle(tmp_path: Path, cut: int) -> None:
    data = (FIXTURES / "lp5.1.0.lprof").read_bytes()
    rejected(write(tmp_path, "cut.lprof", data[:cut]), "truncated pickle")


def test_trailing_bytes_after_the_pickle(tmp_path: Path) -> None:
    data = (FIXTURES / "lp5.1.0.lprof").read_bytes()
    rejected(write(tmp_path, "long.lprof", data + b"junk"), "4 stray bytes")


def test_random_bytes(tmp_path: Path) -> None:
    data = bytes([0xFF, 0xFE, 0x00]) + random.Random(7).randbytes(4096)
    rejected(write(tmp_path, "noise.lprof", data), "binary data")


def test_random_bytes_that_start_like_a_pickle(tmp_path: Path) -> None:
    data = b"\x80\x05" + random.Random(8).randbytes(4096)
    rejected(write(tmp_path, "noise.lprof", data), "pickle")


def test_json(tmp_path: Path) -> None:
    path = write(tmp_path, "profile.json", b'{"timings": [], "unit": 1e-06}\n')
    rejected(path, "JSON")


def test_prose_is_not_a_table(tmp_path: Path) -> None:
    path = write(tmp_path, "notes.lprof", b"The loader was slow, see attached.\n")
    rejected(path, "not a line_profiler table")


def test_python_source_is_not_a_table() -> None:
    rejected(FIXTURES / "train_toy.py", "not a line_profiler table")


@pytest.mark.parametrize(
    ("obj", "kind"),
    [({"timings": {}, "unit": 1e-6}, "a dict"), ([1, 2, 3], "a list"), (None, "a NoneType")],
)
def test_pickle_of_something_else(tmp_path: Path, obj: object, kind: str) -> None:
    path = write(tmp_path, "other.lprof", pickle.dumps(obj, protocol=4))
    rejected(path, f"a pickle of {kind}, not line_profiler's LineStats")


class _RunsACommand:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[str]]:
        return (os.system, (f"touch {self.marker}",))


def test_pickle_that_runs_a_command_via_reduce(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    path = write(tmp_path, "evil.lprof", pickle.dumps(_RunsACommand(marker), protocol=5))
    rejected(path, "refused", "system")
    assert not marker.exists()


def test_reduce_on_the_admitted_class_is_refused(tmp_path: Path) -> None:
    data = b"\x80\x04\x8c\x1bline_profiler.line_profiler\x8c\tLineStats\x93\x8c\x02rm\x85R."
    rejected(write(tmp_path, "evil.lprof", data), "REDUCE")


def test_restricted_unpickler_refuses_imports_even_without_the_scan() -> None:
    """The second wall: find_class refuses what the scan would have caught first."""
    data = pickle.dumps(_RunsACommand(Path("/nonexistent/marker")), protocol=5)
    with pytest.raises(PickleRejected, match="refused to import"):
        safe_pickle._restricted_load(data)


def test_memo_bomb_is_nine_bytes_and_refused(tmp_path: Path) -> None:
    # LONG_BINPUT 0xFFFFFFFF: a plain unpickler grows its memo to 2**32 slots (32 GiB).
    bomb = b"\x80\x04N" + b"r" + struct.pack("<I", 0xFFFFFFFF) + b"."
    assert len(bomb) == 9
    rejected(write(tmp_path, "bomb.lprof", bomb), "refused", "memo slot 4294967295")


def test_memo_read_of_an_unwritten_slot(tmp_path: Path) -> None:
    data = b"\x80\x04N\x94j" + struct.pack("<I", 5) + b"0."
    rejected(write(tmp_path, "get.lprof", data), "memo slot 5", "never written")


def test_deeply_nested_lists(tmp_path: Path) -> None:
    data = b"\x80\x04" + b"]" * 200 + b"a" * 199 + b"."
    rejected(write(tmp_path, "deep.lprof", data), "nested more than 32 deep")


def test_deeply_nested_marks(tmp_path: Path) -> None:
    data = b"\x80\x04" + b"(" * 5000 + b"t" * 5000 + b"."
    rejected(write(tmp_path, "marks.lprof", data), "MARKs nested more than 16 deep")


def test_huge_integer(tmp_path: Path) -> None:
    data = b"\x80\x04\x8b" + struct.pack("<i", 4096) + b"\x01" * 4096 + b"."
    rejected(write(tmp_path, "long.lprof", data), "refused: integer of 32761 bits")


def test_huge_string(tmp_path: Path) -> None:
    text = b"x" * 100_000
    data = b"\x80\x04X" + struct.pack("<I", len(text)) + text + b"."
    rejected(write(tmp_path, "str.lprof", data), "string of 100000 characters")


def test_newer_pickle_protocol(tmp_path: Path) -> None:
    rejected(write(tmp_path, "p9.lprof", b"\x80\x09N."), "protocol 9")


def test_size_limit(tmp_path: Path) -> None:
    path = FIXTURES / "lp5.1.0.lprof"
    with pytest.raises(InputError, match="larger than the 100 byte limit"):
        load_profile(path, limits=PickleLimits(max_bytes=100))


@pytest.mark.parametrize(
    ("timings", "unit", "needle"),
    [
        ({("a.py", 1, "f"): [(2, -1, 10)]}, 1e-6, "out of range"),
        ({("a.py", 1, "f"): [(2, 1, float("nan"))]}, 1e-6, "time out of range"),
        ({("a.py", 1, "f"): [(2, 1, float("inf"))]}, 1e-6, "time out of range"),
        ({("a.py", 1, "f"): [(2, 1, -5)]}, 1e-6, "time out of range"),
        ({("a.py", 1, "f"): [(2, True, 5)]}, 1e-6, "numbers"),
        ({("a.py", 1, "f"): [(2, 1, "5")]}, 1e-6, "numbers"),
        ({("a.py", 1, "f"): [(2, 1)]}, 1e-6, "not (line, hits, time)"),
        ({("a.py", 1, "f"): [[2, 1, 5]]}, 1e-6, "not (line, hits, time)"),
        ({("a.py", 1, "f"): ((2, 1, 5),)}, 1e-6, "a tuple, not a list"),
        ({("a.py", "1", "f"): []}, 1e-6, "key is not"),
        ({("a.py", 1): []}, 1e-6, "key is not"),
        ({"a.py": []}, 1e-6, "key is not"),
        ([], 1e-6, "timings are a list"),
        ({}, 0.0, "unit"),
        ({}, -1e-6, "unit"),
        ({}, float("inf"), "unit"),
        ({}, "1e-6", "unit"),
        ({}, 10.0, "unit"),
    ],
)
def test_line_stats_with_bad_contents(tmp_path: Path, timings: Any, unit: Any, needle: str) -> None:
    path = write(tmp_path, "bad.lprof", line_stats_pickle(timings, unit))
    rejected(path, needle)


def test_line_stats_without_its_unit(tmp_path: Path) -> None:
    stats = line_profiler.LineStats({}, 1e-6)
    del stats.unit
    path = write(tmp_path, "nounit.lprof", pickle.dumps(stats, protocol=5))
    rejected(path, "without its timings and unit")


def test_line_stats_with_extra_attributes_loads(tmp_path: Path) -> None:
    """A future line_profiler may pickle more: what we do not read is ignored."""
    stats = line_profiler.LineStats({("a.py", 1, "f"): [(2, 3, 4000)]}, 1e-9)
    stats.note = {"host": "gpu01"}  # type: ignore[attr-defined]
    profile = load_profile(write(tmp_path, "extra.lprof", pickle.dumps(stats, protocol=5)))
    assert_same_numbers(as_table(profile), {("a.py", 1, "f"): [(2, 3, 4e-6)]})


def test_line_stats_without_functions_is_refused(tmp_path: Path) -> None:
    """kernprof -l on a script without @profile: one line naming the file, not 'no findings'."""
    path = write(tmp_path, "none.lprof", line_stats_pickle({}, 1e-9))
    rejected(path, "this profile holds no functions: was @profile applied")


def test_table_without_functions_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "none.txt", b"Wrote profile results to x.lprof\nTimer unit: 1e-06 s\n\n")
    with pytest.raises(InputError) as error:
        load_profile(path)
    assert str(error.value) == f"{path}: {NO_FUNCTIONS}"


def test_protocol_2_pickle_loads(tmp_path: Path) -> None:
    """Older Pythons wrote lower protocols (GLOBAL instead of STACK_GLOBAL)."""
    stats = line_profiler.LineStats({("a.py", 1, "f"): [(2, 3, 4000)]}, 1e-9)
    profile = load_profile(write(tmp_path, "p2.lprof", pickle.dumps(stats, protocol=2)))
    assert_same_numbers(as_table(profile), {("a.py", 1, "f"): [(2, 3, 4e-6)]})


def test_missing_file(tmp_path: Path) -> None:
    rejected(tmp_path / "nope.lprof", "no such file")


def test_directory(tmp_path: Path) -> None:
    rejected(tmp_path, "is a directory")


def test_fifo_is_not_read(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.lprof"
    os.mkfifo(fifo)
    rejected(fifo, "not a regular file")


@pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0,
    reason="root reads a chmod 000 file anyway (CAP_DAC_OVERRIDE bypasses permission bits); "
    "test_unreadable_file_simulated covers the same path",
)
def test_unreadable_file(tmp_path: Path) -> None:
    path = write(tmp_path, "secret.lprof", (FIXTURES / "lp5.1.0.lprof").read_bytes())
    path.chmod(0)
    rejected(path, "permission denied")


def test_unreadable_file_simulated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What chmod 000 does for a normal user: opening the file fails with EACCES."""
    path = write(tmp_path, "secret.lprof", (FIXTURES / "lp5.1.0.lprof").read_bytes())
    real_open = os.open

    def deny(file: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if os.fspath(file) == str(path):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(file, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", deny)
    rejected(path, "permission denied")


def test_an_unknown_line_profiler_layout_is_named_as_such(tmp_path: Path) -> None:
    """A future or odd layout of line_profiler's class: the message says what it is and what
    to do, not that the file is not line_profiler's."""
    data = pickle.dumps(line_profiler.LineStats({}, 1e-9), protocol=4).replace(
        b"line_profiler.line_profiler", b"line_profiler.line_prof_v99"
    )
    with pytest.raises(InputError) as caught:
        load_profile(write(tmp_path, "new.lprof", data))
    message = caught.value.one_line()
    assert "line_profiler.line_prof_v99.LineStats" in message
    assert "layout not known here" in message and "python -m line_profiler" in message


def test_report_on_a_profile_without_functions_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Never 'Findings: none' for a profile that holds nothing to advise on."""
    from tuneadvisor.cli import main

    path = write(tmp_path, "none.txt", b"Timer unit: 1e-06 s\n\n")
    assert main(["report", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [f"tuneadvisor: {path}: {NO_FUNCTIONS}"]
