"""The README's first hour runs as written (issue 24, points 2-4): every command in its
"First hour" section parses with tuneadvisor's own argument parser (no --help: the command
line itself), every file it names is in the checkout, the training extra and the data come
before the commands that need them, and the two commands `.ci/run` relies on are unchanged.
tests/integration/test_first_hour_readme.py runs the cheap ones for real."""

from __future__ import annotations

import fnmatch
import itertools
import re
import shlex
import textwrap
from pathlib import Path

import pytest

from tuneadvisor.cli import build_parser

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
FENCE = re.compile(r"^([ \t]*)```[^\n]*\n(.*?)^[ \t]*```", re.MULTILINE | re.DOTALL)
# what a command writes, not what it reads: need not exist beforehand
OUTPUT_OPTIONS = {"-o", "--output", "--plot", "--record", "--log", ">"}
CHECKOUT_DIRS = ("examples/", "training/", "scripts/")


def section(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def command_lines(text: str) -> list[str]:
    """Each line of the fenced code blocks of ``text``, as a shell would read it."""
    lines: list[str] = []
    for match in FENCE.finditer(text):
        block = textwrap.dedent(match.group(2))
        lines.extend(line.strip() for line in block.splitlines() if line.strip())
    return lines


def first_hour() -> list[str]:
    return command_lines(section("First hour"))


def tuneadvisor_argv(line: str) -> list[str] | None:
    """``tuneadvisor ...``'s arguments, without a shell redirect; None for other lines."""
    words = shlex.split(line)
    if not words or words[0] != "tuneadvisor":
        return None
    return words[1 : words.index(">")] if ">" in words else words[1:]


def named_files(words: list[str]) -> list[str]:
    """The checkout's files a command reads (not globs, not what it writes)."""
    found = []
    for before, word in zip(["", *words], words, strict=False):
        if before in OUTPUT_OPTIONS or any(c in word for c in "*?["):
            continue
        if word.startswith(CHECKOUT_DIRS):
            found.append(word)
    return found


def test_the_first_hour_has_the_steps_the_issue_asks_for() -> None:
    commands = [tuneadvisor_argv(line) for line in first_hour()]
    verbs = [argv[0] for argv in commands if argv]
    for verb in ("report", "apply", "open", "watch", "run", "compare", "tune"):
        assert verb in verbs, verb
    assert "source .venv/bin/activate" in first_hour()


@pytest.mark.parametrize("line", [line for line in first_hour() if tuneadvisor_argv(line)])
def test_each_tuneadvisor_command_parses_and_its_files_exist(line: str) -> None:
    argv = tuneadvisor_argv(line)
    assert argv is not None
    build_parser(argv[0]).parse_args(argv)  # SystemExit (status 2) when it does not parse
    for name in named_files(argv):
        assert (REPO / name).is_file(), f"{line}: {name} is not in the checkout"


def test_the_other_commands_name_files_of_the_checkout() -> None:
    others = [shlex.split(line) for line in first_hour() if not tuneadvisor_argv(line)]
    assert others
    for words in others:
        for name in named_files(words):
            assert (REPO / name).is_file(), f"{' '.join(words)}: {name} is not in the checkout"


def test_the_watched_training_command_takes_those_options() -> None:
    """`watch -- python training/X.py OPTIONS`: the script (or its kit) defines each option."""
    (line,) = [line for line in first_hour() if " -- python training/" in line]
    argv = shlex.split(line)
    script = REPO / argv[argv.index("--") + 2]
    defined = script.read_text() + (REPO / "training" / "trainkit.py").read_text()
    for word in argv[argv.index("--") + 3 :]:
        if word.startswith("--"):
            assert f'"{word}"' in defined, f"{script.name} defines no {word}"


def test_the_training_extra_and_the_data_come_before_what_needs_them() -> None:
    lines = first_hour()

    def first(pred: str) -> int:
        return next(i for i, line in enumerate(lines) if re.search(pred, line))

    needs_torch = min(
        first(r"^tuneadvisor run "), first(r"^tuneadvisor tune "), first(r" -- python training/")
    )
    assert first(r"^bash scripts/setup\.sh$") < needs_torch
    assert first(r"scripts/make_mnist_data\.py") < needs_torch
    text = section("First hour")
    assert "pip install -e '.[train]'" in text and "--synthetic" in text


def test_the_two_commands_are_the_ones_ci_runs() -> None:
    assert command_lines(section("The two commands")) == ["bash scripts/demo", "bash scripts/test"]
    assert (REPO / ".ci" / "run").read_text().splitlines()[-1] == "exec bash scripts/test"


def test_the_readme_says_where_the_command_lives() -> None:
    text = README.read_text(encoding="utf-8")
    assert "`.venv/bin`" in text and "source .venv/bin/activate" in text


def _written(lines: list[str]) -> list[str]:
    """What the first hour's commands write in the checkout: each output option's value,
    `apply`'s JOB.tuned.sbatch beside its job, the data folder and the runs folder."""
    out = ["runs/"]
    for line in lines:
        words = shlex.split(line)
        out += [word for before, word in itertools.pairwise(words) if before in OUTPUT_OPTIONS]
        if words[:2] == ["tuneadvisor", "apply"] and "-o" not in words:
            job = words[words.index("--job") + 1]
            out.append(job.removesuffix(".sbatch") + ".tuned.sbatch")
        if "scripts/make_mnist_data.py" in words:
            out.append(words[words.index("scripts/make_mnist_data.py") + 1] + "/")
    return out


def _ignored(path: str, patterns: list[str]) -> bool:
    """Whether one of .gitignore's ``patterns`` (anchored ones, with * and folders) holds
    ``path``, a path from the checkout's root (a folder ends in /)."""
    for pattern in patterns:
        anchored = pattern.startswith("/")
        pattern = pattern.lstrip("/")
        if pattern.endswith("/"):
            if path.startswith(pattern):
                return True
        elif fnmatch.fnmatchcase(path, pattern) or (
            not anchored and fnmatch.fnmatchcase(path.rsplit("/", 1)[-1], pattern)
        ):
            return True
    return False


def test_git_ignores_what_the_first_hour_writes() -> None:
    """Issue 33, point 5: following the first hour leaves nothing git would take for a change
    (the tests do not read these either: they copy the examples or run elsewhere)."""
    written = _written(first_hour())
    assert {"report.json", "compare.png", "mnist.tuned.sbatch"} <= set(written), written
    assert "examples/mnist/mnist.tuned.sbatch" in written
    lines = (REPO / ".gitignore").read_text(encoding="utf-8").splitlines()
    patterns = [line for line in lines if line.strip() and not line.startswith("#")]
    for path in written:
        assert _ignored(path, patterns), f".gitignore does not name {path}"
