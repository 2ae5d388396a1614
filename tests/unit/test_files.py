"""The bounds every input passes before it is parsed, the checks every value passes before
it is written into a job script, and the atomic write's promises (issue 13)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tuneadvisor.advisor.toml_text import MAX_DOTTED_KEY, parse_toml, toml_shape_problem
from tuneadvisor.errors import InputError
from tuneadvisor.files import (
    open_append,
    parse_json,
    path_exists,
    read_bytes_input,
    read_text_input,
    write_atomic,
)
from tuneadvisor.slurm.safe_words import (
    MAX_COUNT,
    checked_count,
    checked_directive,
    checked_text,
    is_option_name,
    shell_word,
)
from tuneadvisor.workspace.rule_files import rule_dirs

# --------------------------------------------------------------------------- reading


def test_only_regular_files_are_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    refused: list[tuple[str | Path, str]] = [
        (tmp_path / "fifo", "not a regular file"), ("/dev/zero", "not a regular"),
        (tmp_path, "is a directory"), (tmp_path / "none", "no such file"),
    ]  # fmt: skip
    for path, said in refused:
        with pytest.raises(InputError, match=said):
            read_bytes_input(path, "input")


def test_the_size_bound_is_checked_before_the_whole_file_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"x" * 2049)
    assert read_bytes_input(big, "input", limit=2049) == b"x" * 2049
    with pytest.raises(InputError, match="larger than 2 KiB"):
        read_bytes_input(big, "input", limit=2048)


def test_a_number_of_thousands_of_digits_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "seff.txt"
    path.write_text("Job ID: 1\nCores: " + "7" * 4500 + "\n")
    with pytest.raises(InputError, match="line 2 holds a number of 1000"):
        read_text_input(path, "seff output")
    path.write_text("Cores: " + "7" * 999 + "\n")  # long, but Python reads it
    assert read_text_input(path, "seff output").startswith("Cores: 7")


def test_a_folder_we_may_not_look_into_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config"
    real_stat = Path.stat

    def denied(self: Path, **kwargs: bool) -> os.stat_result:
        if config in self.parents:
            raise PermissionError(13, "Permission denied")
        return real_stat(self, **kwargs)

    monkeypatch.setattr(Path, "stat", denied)
    assert path_exists(tmp_path / "missing", "file") is False
    with pytest.raises(InputError, match="permission denied"):
        rule_dirs(env={"XDG_CONFIG_HOME": str(config)})


def test_json_beyond_the_parser_is_one_line() -> None:
    with pytest.raises(InputError, match="nested too deeply"):
        parse_json("[" * 100_000, "f.json", "report")
    with pytest.raises(InputError, match="4300 digits"):
        parse_json("[" + "1" * 5000 + "]", "f.json", "report")
    assert parse_json("[[1]]", "f.json", "report") == [[1]]


def test_toml_shape_counts_brackets_and_dots_outside_strings_and_comments() -> None:
    assert toml_shape_problem("a = \"[[[[[[\" # [[[[[[\nb = '{{{{'\n", max_nesting=2) is None
    assert toml_shape_problem("a = [[[1]]]", max_nesting=2) == "nested more than 2 levels deep"
    dotted = ".".join(["k"] * (MAX_DOTTED_KEY + 1)) + " = 1"
    assert toml_shape_problem(dotted) is not None
    assert toml_shape_problem(".".join(["k"] * MAX_DOTTED_KEY) + " = 1.5") is None
    assert toml_shape_problem('x = """\n[[[[\n"""\nv = "1.2.3"', max_nesting=1) is None
    with pytest.raises(InputError, match="dotted key"):
        parse_toml(dotted, "site.toml", "site file")


# --------------------------------------------------------------------------- writing


def test_appending_to_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(InputError, match="FIFO"):
        open_append(tmp_path / "fifo", "recording")
    with open_append(tmp_path / "rec.jsonl", "recording") as stream:
        stream.write("x\n")
    assert (tmp_path / "rec.jsonl").read_text() == "x\n"


def test_write_atomic_follows_a_link_and_says_where_it_wrote(tmp_path: Path) -> None:
    (tmp_path / "real.sbatch").write_text("old")
    (tmp_path / "real.sbatch").chmod(0o750)
    link = tmp_path / "job.sbatch"
    link.symlink_to("real.sbatch")
    assert write_atomic(link, b"new") == tmp_path / "real.sbatch"
    assert link.is_symlink() and link.read_text() == "new"
    assert stat.S_IMODE((tmp_path / "real.sbatch").stat().st_mode) == 0o750


def test_write_atomic_refuses_to_take_a_file_from_its_owner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Someone else's file we may write to but cannot give back (not root): replacing it
    would make it ours, so it is left alone."""
    target = tmp_path / "job.sbatch"
    target.write_text("theirs")
    real_stat = Path.stat

    def owned_by_another(self: Path, **kwargs: bool) -> os.stat_result:
        result = real_stat(self, **kwargs)
        if self == target:
            fields = list(result)
            fields[stat.ST_UID] = os.geteuid() + 1
            return os.stat_result(fields)
        return result

    def no_chown(path: str, uid: int, gid: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(Path, "stat", owned_by_another)
    monkeypatch.setattr(os, "chown", no_chown)
    with pytest.raises(InputError, match="cannot keep the file's owner"):
        write_atomic(target, b"ours")
    assert target.read_text() == "theirs"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.sbatch"]


def test_a_failed_write_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "job.sbatch"
    target.write_bytes(b"original")
    real_write = os.write

    def half_then_full(fd: int, data: bytes | memoryview) -> int:
        if len(data) > 4:
            return real_write(fd, bytes(data[:4]))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(InputError, match="No space left on device"):
        write_atomic(target, b"a longer new text")
    assert target.read_bytes() == b"original"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.sbatch"]


# --------------------------------------------------------------------------- values


@pytest.mark.parametrize(
    "value",
    [True, "8 ", "-1", "1e3", float("nan"), float("inf"), "9" * 13, MAX_COUNT + 1, [], "$(id)"],
)
def test_a_count_is_a_bounded_whole_number(value: object) -> None:
    with pytest.raises(InputError):
        checked_count(value if value != "8 " else "8x", "workers", "r.json")


def test_counts_that_are_fine() -> None:
    assert [checked_count(v, "n") for v in (0, 8, 8.0, " 12 ", MAX_COUNT)] == [
        0, 8, 8, 12, MAX_COUNT,
    ]  # fmt: skip


def test_text_with_a_control_character_is_refused() -> None:
    for bad in ("1:00\ntouch x", "a\rb", "a\x00", "x" * 5000, 5):
        with pytest.raises(InputError):
            checked_text(bad, "value")
    assert shell_word("$(id) `x`; y", "v") == "'$(id) `x`; y'"


def test_directive_values_are_what_sbatch_accepts() -> None:
    assert checked_directive("time", "1-00:00:00") == "1-00:00:00"
    assert checked_directive("mem", "8G") == "8G"
    for name, bad in (("time", "1:00;id"), ("mem", "$(id)"), ("time", "10\necho")):
        with pytest.raises(InputError, match=f"--{name}"):
            checked_directive(name, bad, "r.json")


def test_option_names() -> None:
    assert is_option_name("--num-workers") and is_option_name("-j")
    for bad in ("--a\nb", "--a;b", "num_workers", "--", "-- x", "--$(id)"):
        assert not is_option_name(bad)
