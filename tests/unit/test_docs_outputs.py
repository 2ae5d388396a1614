"""What the README and docs/ quote of a command's output is what the command prints (issue 33,
point 3: the quoted prediction had gone stale). A quoted block is a fenced block right after
a marker line:

    <!-- output of: tuneadvisor report ... -->        its lines, in order, among stdout's lines
    <!-- file PATH after: tuneadvisor apply ... -->   its lines, in order, among PATH's lines

The command runs in-process on a copy of the checkout's examples, so a block's lines must be
deterministic (the bundled example's report, a tuned script's stamp)."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

from tests.unit.test_readme_first_hour import README, REPO
from tuneadvisor.cli import main

PAGES = [README, *sorted((REPO / "docs").glob("*.md"))]
MARKED = re.compile(
    r"^<!-- (?:output of|file (?P<file>\S+) after): (?P<command>.+?) -->\n"
    r"```[^\n]*\n(?P<block>.*?)^```",
    re.MULTILINE | re.DOTALL,
)


def _quotes() -> list[tuple[str, str, str | None, list[str]]]:
    """(page, command, file or None, quoted lines) of each marked block of every page."""
    found = []
    for page in PAGES:
        for match in MARKED.finditer(page.read_text(encoding="utf-8")):
            lines = [line.rstrip() for line in match["block"].splitlines() if line.strip()]
            found.append((page.name, match["command"], match["file"], lines))
    return found


QUOTES = _quotes()


def _in_order(quoted: list[str], printed: list[str]) -> str | None:
    """The first quoted line not found among ``printed`` after the one before it, or None."""
    rest = iter(printed)
    for line in quoted:
        if not any(line == seen for seen in rest):
            return line
    return None


def test_the_pages_quote_the_prediction_and_the_stamp() -> None:
    pages = {page for page, *_ in QUOTES}
    assert {"predictions.md", "commands.md"} <= pages
    assert any(line.startswith("Prediction: ") for *_, lines in QUOTES for line in lines)


@pytest.mark.parametrize(("page", "command", "file", "quoted"), QUOTES)
def test_a_quoted_output_is_what_the_command_prints(
    page: str,
    command: str,
    file: str | None,
    quoted: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")
    argv = shlex.split(command)
    assert argv[0] == "tuneadvisor"
    status = main(argv[1:])
    out = capsys.readouterr().out
    assert status == 0, out
    printed = (tmp_path / file).read_text() if file else out
    missing = _in_order(quoted, [line.rstrip() for line in printed.splitlines()])
    assert missing is None, f"{page} quotes a line `{command}` does not print:\n{missing}"
