"""Properties of the job-script model: lossless round trip and local, faithful edits."""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.options import find_option

# Characters that matter to sbatch's reading, mixed into arbitrary text.
SHELLISH = st.sampled_from(
    [
        *("#SBATCH", "#SLURM", " ", "\t", "\n", "\r\n", "\r", "-", "--", "=", '"', "'", "\\"),
        *("#", "c", "4", "-c", "--mem=", "8G", "-J", "hetjob", ":", "#!/bin/bash\n", "echo"),
    ]
)
ARBITRARY_TEXT = st.lists(st.one_of(SHELLISH, st.text(max_size=5)), max_size=40).map("".join)


@given(ARBITRARY_TEXT)
def test_render_is_the_input_for_any_text(text: str) -> None:
    assert JobScript.parse(text).render_text() == text


@given(st.binary(max_size=200))
def test_render_is_the_input_for_any_bytes(data: bytes) -> None:
    assert JobScript.parse(data).render() == data


# ----------------------------------------------------------------------------- scripts

# Options with values the generated scripts use, and values to set them to.
VALUES = {
    "cpus-per-task": ["1", "4", "16", "72"],
    "mem": ["8G", "4096", "1536M", "0"],
    "time": ["10", "1-12", "01:30:00", "UNLIMITED"],
    "job-name": ["train", "my job", "a#b", "it's", 'say "hi"', "back\\slash", "hetjob", ":x"],
    "partition": ["gpu", "debug"],
    "nodes": ["1", "2-4"],
    "ntasks": ["1", "8"],
    "gres": ["gpu:1", "gpu:a100:2"],
    "output": ["logs/%x-%j.out", "out file.txt"],
    "account": ["proj"],
    "comment": ["-c 9", "a  b"],
}
FLAGS = ["hold", "contiguous", "overcommit"]


def quoted(value: str, style: str) -> str:
    """A value written bare (when sbatch reads it back unchanged) or in quotes."""
    special = any(c in value for c in " \t#'\"\\") or value.startswith(":")
    if style == "bare" and value and not special and value.lower() != "hetjob":
        return value
    quote = "'" if style == "single" else '"'
    return quote + value.replace("\\", "\\\\").replace(quote, "\\" + quote) + quote


@st.composite
def directive_words(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 9)) == 0:
        name = draw(st.sampled_from(FLAGS))
        option = find_option(name)
        assert option is not None
        return draw(st.sampled_from([f"--{name}"] + ([f"-{option.short}"] if option.short else [])))
    name = draw(st.sampled_from(sorted(VALUES)))
    value = quoted(
        draw(st.sampled_from(VALUES[name])), draw(st.sampled_from(["bare", "single", "double"]))
    )
    option = find_option(name)
    assert option is not None
    forms = [f"--{name}={value}", f"--{name} {value}"]
    if option.short:
        forms += [f"-{option.short}{value}", f"-{option.short} {value}"]
    return draw(st.sampled_from(forms))


@st.composite
def header_lines(draw: st.DrawFn) -> str:
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(
            st.sampled_from(["", "# a comment", "##SBATCH -c 9", "# SBATCH --mem=1T", "\t"])
        )
    words = draw(st.lists(directive_words(), min_size=1, max_size=3))
    gap = draw(st.sampled_from([" ", "  ", "\t"]))
    line = "#SBATCH" + draw(st.sampled_from([" ", "\t", "   "])) + gap.join(words)
    line += draw(st.sampled_from(["", "", "  # why", "\t# tab comment", " ", "\t"]))
    return line


@st.composite
def scripts(draw: st.DrawFn) -> str:
    lines = [draw(st.sampled_from(["#!/bin/bash", "#!/usr/bin/env bash", "#!/bin/sh -l"]))]
    lines += draw(st.lists(header_lines(), max_size=8))
    lines += draw(
        st.sampled_from(
            [[], ["python train.py"], ["module load cuda", "srun python x.py", "#SBATCH -c 64"]]
        )
    )
    ending = draw(st.sampled_from(["\n", "\r\n"]))
    final = draw(st.sampled_from([ending, ""]))
    return ending.join(lines) + final


def line_texts(job: JobScript) -> list[str]:
    return [line.text for line in job.lines]


@st.composite
def edits(draw: st.DrawFn) -> tuple[str, str | None]:
    if draw(st.integers(0, 5)) == 0:
        return draw(st.sampled_from(FLAGS)), None
    name = draw(st.sampled_from(sorted(VALUES)))
    return name, draw(st.sampled_from(VALUES[name]))


@given(scripts(), edits())
@settings(max_examples=300)
def test_editing_one_directive(text: str, change: tuple[str, str | None]) -> None:
    name, value = change
    job = JobScript.parse(text)
    assume(not job.refused or job.problems[0].id == "dos-line-breaks")
    new = job.with_directive(name, value)

    # Parsing the result gives the new value as the effective one; the rest is unchanged.
    expected = {**job.directives(), name: value or ""}
    assert new.directives() == expected
    before, after = line_texts(job), line_texts(new)
    current = job.directive(name)
    if current is not None:
        changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
        assert len(changed) <= 1
        if changed:
            token = current.value_token if current.value_token is not None else current.token
            assert changed[0] + 1 == job.tokens[token].line
        assert [line.ending for line in new.lines] == [line.ending for line in job.lines]
    else:
        # One line added, among the directives sbatch reads (before the first command).
        assert len(after) == len(before) + 1
        added = next(i for i, line in enumerate(after) if i >= len(before) or line != before[i])
        assert after[:added] + after[added + 1 :] == before
        assert after[added].startswith(f"#SBATCH --{name}")
        effective = new.directive(name)
        assert effective is not None and effective.line == added + 1
        assert new.first_command_line is None or added + 1 < new.first_command_line
        assert new.line_ending == job.line_ending or len(job.lines) < 2
    assert [p.id for p in new.problems] == [p.id for p in job.problems]


@given(scripts(), st.sampled_from(sorted(VALUES) + FLAGS))
def test_removing_a_directive(text: str, name: str) -> None:
    job = JobScript.parse(text)
    new = job.without_directive(name)
    expected = {k: v for k, v in job.directives().items() if k != name}
    assert new.directives() == expected
    # Only directive lines change; commands and comments stay.
    kept = [t for t in line_texts(job) if not t.startswith("#SBATCH")]
    assert [t for t in line_texts(new) if not t.startswith("#SBATCH")] == kept


@given(ARBITRARY_TEXT, edits())
@settings(max_examples=300)
def test_editing_any_text_sets_the_value(text: str, change: tuple[str, str | None]) -> None:
    name, value = change
    job = JobScript.parse(text)
    new = job.with_directive(name, value)
    assert new.directives()[name] == (value or "")
    removed = new.without_directive(name)
    assert name not in removed.directives()
