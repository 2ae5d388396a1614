"""Finding a profile's source files on a machine where the recorded paths do not exist."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tuneadvisor.profile import source
from tuneadvisor.profile.source import SourceFinder
from tuneadvisor.trainscript.kinds import LineKind, classify_source

# Where the cluster had it; never exists here.
RECORDED = "/no-such-cluster/home/alice/proj/src/train.py"


def put(path: Path, text: str = "print('hi')\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def _recorded_path_is_not_here() -> None:
    assert not Path(RECORDED).exists()


# --- each rule ----------------------------------------------------------------------------


def test_the_recorded_path_when_it_exists(tmp_path: Path) -> None:
    script = put(tmp_path / "run" / "train.py")
    other = put(tmp_path / "profiles" / "train.py")
    finder = SourceFinder(profile_dirs=[other.parent], source_roots=[other.parent])
    assert finder.find(str(script)) == script


def test_relative_path_under_the_given_cwd(tmp_path: Path) -> None:
    script = put(tmp_path / "mnist" / "train.py")
    assert SourceFinder(cwd=tmp_path).find("mnist/train.py") == script
    assert SourceFinder(cwd=tmp_path / "mnist").find("train.py") == script
    (tmp_path / "mnist" / "sub").mkdir()
    assert SourceFinder(cwd=tmp_path / "mnist" / "sub").find("../train.py") is not None


def test_relative_path_under_the_process_cwd_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    put(tmp_path / "train.py")
    monkeypatch.chdir(tmp_path)
    found = SourceFinder().find("train.py")
    assert found is not None and found.resolve() == (tmp_path / "train.py").resolve()


def test_an_absolute_path_is_not_looked_up_in_cwd_by_name(tmp_path: Path) -> None:
    put(tmp_path / "train.py")
    assert SourceFinder(cwd=tmp_path).find(RECORDED) is None


def test_next_to_the_profile_by_basename(tmp_path: Path) -> None:
    script = put(tmp_path / "profiles" / "train.py")
    assert SourceFinder(profile_dirs=[tmp_path / "profiles"]).find(RECORDED) == script


def test_next_to_the_profile_by_trailing_components_first(tmp_path: Path) -> None:
    folder = tmp_path / "profiles"
    put(folder / "train.py", "# some other train.py\n")
    script = put(folder / "src" / "train.py")
    assert SourceFinder(profile_dirs=[folder]).find(RECORDED) == script


def test_under_a_source_root_the_longest_suffix_wins(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    put(root / "train.py", "# a decoy at the top\n")
    put(root / "other" / "train.py", "# a decoy elsewhere\n")
    script = put(root / "src" / "train.py")
    assert SourceFinder(source_roots=[root]).find(RECORDED) == script


def test_under_a_source_root_the_project_folder_may_be_part_of_the_path(tmp_path: Path) -> None:
    script = put(tmp_path / "copy" / "proj" / "src" / "train.py")
    assert SourceFinder(source_roots=[tmp_path / "copy"]).find(RECORDED) == script


def test_the_longest_suffix_wins_across_roots(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    put(first / "train.py", "# basename only\n")
    script = put(second / "src" / "train.py")
    assert SourceFinder(source_roots=[first, second]).find(RECORDED) == script


def test_equal_suffixes_go_to_the_root_given_first(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    a = put(first / "src" / "train.py")
    b = put(second / "src" / "train.py")
    assert SourceFinder(source_roots=[first, second]).find(RECORDED) == a
    assert SourceFinder(source_roots=[second, first]).find(RECORDED) == b


def test_the_longest_suffix_wins_across_profile_dirs(tmp_path: Path) -> None:
    rank0, rank1 = tmp_path / "rank0", tmp_path / "rank1"
    put(rank0 / "train.py", "# basename only\n")
    script = put(rank1 / "src" / "train.py")
    assert SourceFinder(profile_dirs=[rank0, rank1]).find(RECORDED) == script


# --- precedence between rules ---------------------------------------------------------------


def test_cwd_comes_before_the_profile_dir(tmp_path: Path) -> None:
    in_cwd = put(tmp_path / "cwd" / "train.py")
    put(tmp_path / "profiles" / "train.py")
    finder = SourceFinder(profile_dirs=[tmp_path / "profiles"], cwd=tmp_path / "cwd")
    assert finder.find("train.py") == in_cwd


def test_the_profile_dir_comes_before_the_source_roots(tmp_path: Path) -> None:
    near = put(tmp_path / "profiles" / "train.py")
    put(tmp_path / "root" / "src" / "train.py")  # a longer match, but a later rule
    finder = SourceFinder(profile_dirs=[tmp_path / "profiles"], source_roots=[tmp_path / "root"])
    assert finder.find(RECORDED) == near


def test_candidates_are_listed_in_lookup_order(tmp_path: Path) -> None:
    finder = SourceFinder(
        profile_dirs=[tmp_path / "p1", tmp_path / "p2"],
        source_roots=[tmp_path / "r"],
        cwd=tmp_path / "cwd",
    )
    assert list(finder.candidates("mnist/train.py")) == [
        tmp_path / "cwd" / "mnist" / "train.py",
        tmp_path / "p1" / "mnist" / "train.py",
        tmp_path / "p2" / "mnist" / "train.py",
        tmp_path / "p1" / "train.py",
        tmp_path / "p2" / "train.py",
        tmp_path / "r" / "mnist" / "train.py",
        tmp_path / "r" / "train.py",
    ]
    assert next(finder.candidates("/abs/train.py")) == Path("/abs/train.py")


def test_nothing_found_is_none(tmp_path: Path) -> None:
    finder = SourceFinder(profile_dirs=[tmp_path], source_roots=[tmp_path], cwd=tmp_path)
    assert finder.find(RECORDED) is None
    assert finder.read_lines(RECORDED) is None


# --- what is not a source file --------------------------------------------------------------


def test_a_directory_is_skipped_for_the_next_candidate(tmp_path: Path) -> None:
    (tmp_path / "root" / "src" / "train.py").mkdir(parents=True)
    script = put(tmp_path / "root" / "train.py")
    assert SourceFinder(source_roots=[tmp_path / "root"]).find(RECORDED) == script


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_skipped_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "train.py")
    finder = SourceFinder(profile_dirs=[tmp_path])
    assert finder.find(RECORDED) is None
    assert finder.read_lines(RECORDED) is None


def test_symbolic_links_count_as_what_they_point_to(tmp_path: Path) -> None:
    real = put(tmp_path / "real" / "train.py")
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / "train.py").symlink_to(real)
    assert SourceFinder(profile_dirs=[tmp_path / "linked"]).find(RECORDED) is not None
    (tmp_path / "dangling").mkdir()
    (tmp_path / "dangling" / "train.py").symlink_to(tmp_path / "gone.py")
    assert SourceFinder(profile_dirs=[tmp_path / "dangling"]).find(RECORDED) is None
    (tmp_path / "to_dir").mkdir()
    (tmp_path / "to_dir" / "train.py").symlink_to(tmp_path / "real")
    assert SourceFinder(profile_dirs=[tmp_path / "to_dir"]).find(RECORDED) is None


def test_a_file_too_big_to_be_a_script_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    put(tmp_path / "train.py", "x = 1\n" * 100)
    monkeypatch.setattr(source, "MAX_SOURCE_BYTES", 100)
    assert SourceFinder(profile_dirs=[tmp_path]).find(RECORDED) is None


def test_suffixes_never_climb_out_of_a_folder(tmp_path: Path) -> None:
    put(tmp_path / "secret.py")
    root = tmp_path / "root"
    root.mkdir()
    finder = SourceFinder(source_roots=[root], profile_dirs=[root], cwd=root / "a" / "b")
    assert finder.find("../secret.py") is None
    assert finder.find("/x/y/../../secret.py") is None
    as_recorded, *suffixes = finder.candidates("/x/../../secret.py")
    assert as_recorded == Path("/x/../../secret.py")
    assert suffixes and all(root in p.parents for p in suffixes)


@pytest.mark.parametrize(
    "name", ["", "<string>", "<ipython-input-3-abc>", "<frozen runpy>", "bad\0name.py"]
)
def test_names_without_a_file(tmp_path: Path, name: str) -> None:
    put(tmp_path / "string")  # even if something by a similar name exists
    finder = SourceFinder(profile_dirs=[tmp_path], source_roots=[tmp_path], cwd=tmp_path)
    assert finder.find(name) is None
    assert finder.read_lines(name) is None


def test_a_windows_path_is_split_on_backslashes(tmp_path: Path) -> None:
    script = put(tmp_path / "proj" / "src" / "train.py")
    finder = SourceFinder(source_roots=[tmp_path])
    assert finder.find(r"C:\Users\alice\proj\src\train.py") == script


# --- caching ------------------------------------------------------------------------------


def test_answers_are_cached_found_or_not(tmp_path: Path) -> None:
    finder = SourceFinder(profile_dirs=[tmp_path])
    assert finder.find(RECORDED) is None
    script = put(tmp_path / "train.py")
    assert finder.find(RECORDED) is None  # asked before: still the old answer
    assert SourceFinder(profile_dirs=[tmp_path]).find(RECORDED) == script


def test_a_found_path_is_looked_up_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    put(tmp_path / "train.py")
    finder = SourceFinder(profile_dirs=[tmp_path])
    calls: list[str] = []
    original = finder.candidates

    def counting(filename: str) -> Iterator[Path]:
        calls.append(filename)
        return original(filename)

    monkeypatch.setattr(finder, "candidates", counting)
    for _ in range(3):
        assert finder.find(RECORDED) == tmp_path / "train.py"
    assert calls == [RECORDED]


# --- reading ------------------------------------------------------------------------------


def test_read_lines_gives_the_path_and_its_lines(tmp_path: Path) -> None:
    script = put(tmp_path / "train.py", "import torch\n\nfor x in loader:\n    pass\n")
    found = SourceFinder(profile_dirs=[tmp_path]).read_lines(RECORDED)
    assert found == (script, ["import torch", "", "for x in loader:", "    pass"])


def test_read_lines_without_a_final_newline(tmp_path: Path) -> None:
    put(tmp_path / "train.py", "a = 1\nb = 2")
    found = SourceFinder(profile_dirs=[tmp_path]).read_lines(RECORDED)
    assert found is not None and found[1] == ["a = 1", "b = 2"]


def test_an_empty_file_has_no_lines(tmp_path: Path) -> None:
    put(tmp_path / "train.py", "")
    found = SourceFinder(profile_dirs=[tmp_path]).read_lines(RECORDED)
    assert found is not None and found[1] == []


def test_lines_are_split_where_python_counts_lines(tmp_path: Path) -> None:
    # \r\n and \r end lines; a form feed, \v, \x1c and \u2028 do not (splitlines would)
    data = "a = 1\r\nb = 2\rc = 3  # \x0c \x0b \x1c \u2028 .\n\x0cfor x in loader:\n    pass\n"
    (tmp_path / "train.py").write_bytes(data.encode("utf-8"))
    found = SourceFinder(profile_dirs=[tmp_path]).read_lines(RECORDED)
    assert found is not None
    lines = found[1]
    assert len(lines) == 5
    assert lines[3] == "\x0cfor x in loader:"
    # the numbers agree with the line kinds, as the analysis joins the lines back
    assert classify_source("\n".join(lines)) == {4: LineKind.DATALOADER}


def test_undecodable_bytes_are_replaced_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_bytes(b"x = '\xff\xfe'\nfor b in loader:\n    pass\n")
    found = SourceFinder(profile_dirs=[tmp_path]).read_lines(RECORDED)
    assert found is not None
    assert found[1][0] == "x = '\ufffd\ufffd'"
    assert classify_source("\n".join(found[1])) == {2: LineKind.DATALOADER}


def test_a_coding_cookie_is_honoured(tmp_path: Path) -> None:
    text = "# -*- coding: latin-1 -*-\nname = 'café'\n"
    (tmp_path / "train.py").write_bytes(text.encode("latin-1"))
    found = SourceFinder(profile_dirs=[tmp_path]).read_lines(RECORDED)
    assert found is not None and found[1][1] == "name = 'café'"


def test_a_bad_coding_cookie_falls_back_to_utf8(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_bytes("# coding: no-such-codec\nname = 'é'\n".encode())
    found = SourceFinder(profile_dirs=[tmp_path]).read_lines(RECORDED)
    assert found is not None and found[1][1] == "name = 'é'"


def test_a_byte_order_mark_is_dropped(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_bytes(b"\xef\xbb\xbfimport torch\n")
    found = SourceFinder(profile_dirs=[tmp_path]).read_lines(RECORDED)
    assert found is not None and found[1] == ["import torch"]


def test_a_read_error_is_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    put(tmp_path / "train.py")

    def refuse(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", refuse)
    assert SourceFinder(profile_dirs=[tmp_path]).read_lines(RECORDED) is None


def test_a_file_removed_after_it_was_found_is_none(tmp_path: Path) -> None:
    script = put(tmp_path / "train.py")
    finder = SourceFinder(profile_dirs=[tmp_path])
    assert finder.find(RECORDED) == script
    script.unlink()
    assert finder.read_lines(RECORDED) is None


def test_a_crafted_deep_path_is_looked_up_by_its_last_parts_only(tmp_path: Path) -> None:
    """A recorded path 10,000 parts deep (a crafted profile): every suffix of every length
    would be quadratic; only the last MAX_SUFFIX_PARTS are tried, and a file there is found."""
    root = tmp_path / "root"
    put(root / "pkg" / "train.py")
    finder = SourceFinder(source_roots=[root], profile_dirs=[root], cwd=root)
    deep = "/" + "/".join(["d"] * 10_000) + "/pkg/train.py"
    suffixes = list(finder.candidates(deep))[1:]
    assert 0 < len(suffixes) <= source.MAX_SUFFIX_PARTS * 3  # a few roots, never 10,000
    assert max(len(p.relative_to(p.anchor).parts) for p in suffixes) < 100
    assert finder.find(deep) == root / "pkg" / "train.py"
