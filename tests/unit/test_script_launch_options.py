"""Options on the launch line that the training script's argparse parser refuses (issue 20,
point 8): named with their close matches, held to argparse's own matching, and said by
`apply` when it edits a line that fails as it is."""

from __future__ import annotations

import argparse
import json
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tuneadvisor.cli import main
from tuneadvisor.trainscript.cli_parser import CliParser, read_parser
from tuneadvisor.trainscript.launch_options import unknown_options
from tuneadvisor.trainscript.parsed import parse_script

TRAIN = textwrap.dedent(
    """\
    import argparse
    import torch
    from torch.utils.data import DataLoader

    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--learning-rate", "--lr", type=float, default=0.01)
    args = parser.parse_args()
    loader = DataLoader(range(10), batch_size=2, num_workers=args.workers)
    for epoch in range(args.epochs):
        for batch in loader:
            pass
    """
)


def _parser(*sources: str) -> CliParser:
    return read_parser([parse_script(textwrap.dedent(s)) for s in sources])


def _job(folder: Path, line: str, cores: int = 4) -> Path:
    job = folder / "job.sh"
    job.write_text(
        f"#!/bin/bash\n#SBATCH --cpus-per-task={cores}\n#SBATCH --time=1:00:00\n{line}\n"
    )
    return job


def _report(job: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["report", "--job", str(job), "--format", "json"]) == 0
    doc: dict[str, object] = json.loads(capsys.readouterr().out)
    return doc


def _finding(doc: dict[str, object], rule: str) -> dict[str, object] | None:
    findings = doc["findings"]
    assert isinstance(findings, list)
    return next((f for f in findings if f["id"] == rule), None)


def test_an_option_the_parser_lacks_is_named_with_its_close_match() -> None:
    (unknown,) = unknown_options(["--num-workers", "--epochs"], _parser(TRAIN))
    assert unknown.word == "--num-workers"
    assert unknown.close == ("--workers",)
    assert unknown.text == "--num-workers (close: --workers)"


def test_prefixes_are_argparse_s_own() -> None:
    parser = _parser(TRAIN)
    # --ep is --epochs; --l is a prefix of --learning-rate and --lr: ambiguous, it fails too.
    assert unknown_options(["--ep", "--lr", "--learning"], parser) == ()
    (ambiguous,) = unknown_options(["--l"], parser)
    assert ambiguous.ambiguous and set(ambiguous.close) == {"--learning-rate", "--lr"}
    no_abbrev = TRAIN.replace("ArgumentParser()", "ArgumentParser(allow_abbrev=False)")
    assert [u.word for u in unknown_options(["--ep"], _parser(no_abbrev))] == ["--ep"]


@pytest.mark.parametrize(
    "change",
    [
        ("args = parser.parse_args()", "args, _ = parser.parse_known_args()"),
        ("parser = argparse.ArgumentParser()", "parser = argparse.ArgumentParser(parents=[p])"),
        (
            "args = parser.parse_args()",
            "deepspeed.add_config_arguments(parser)\nargs = parser.parse_args()",
        ),
        ("args = parser.parse_args()", "args = parser.parse_args(['--workers', '2'])"),
        ('parser.add_argument("--workers"', "parser.add_argument(*FLAGS"),
        ("args = parser.parse_args()", "print(sys.argv)\nargs = parser.parse_args()"),
        ("import argparse", "import argparse\nfrom transformers import HfArgumentParser"),
        ("import argparse", "import argparse\nimport jsonargparse"),
    ],
)
def test_a_parser_that_may_accept_more_says_nothing(change: tuple[str, str]) -> None:
    source = TRAIN.replace(*change)
    assert source != TRAIN
    parser = _parser(source)
    assert not parser.closed
    assert unknown_options(["--num-workers"], parser) == ()


def test_options_of_a_parser_built_in_a_local_module_count() -> None:
    script = "from config import get_args\nargs = get_args()\n"
    config = """
        import argparse
        def add_data(parser):
            parser.add_argument("--workers", type=int, default=4)
        def get_args():
            parser = argparse.ArgumentParser()
            add_data(parser)
            parser.add_argument("--epochs", type=int)
            return parser.parse_args()
    """
    parser = _parser(script, config)
    assert parser.closed  # add_data is the program's own: its options are read
    assert [u.word for u in unknown_options(["--workers", "--nw"], parser)] == ["--nw"]
    assert not _parser(script).closed  # without the module nothing is known


_FLAG = st.from_regex(r"--[a-c]{1,4}(-[a-c]{1,2})?", fullmatch=True)


@settings(max_examples=150, deadline=None)
@given(flags=st.lists(_FLAG, min_size=1, max_size=5, unique=True), word=_FLAG, abbrev=st.booleans())
def test_the_verdict_is_argparse_s(flags: list[str], word: str, abbrev: bool) -> None:
    """What argparse itself does with the word decides: accepted, or refused (unrecognized
    or ambiguous) exactly when tuneadvisor names it."""
    real = argparse.ArgumentParser(allow_abbrev=abbrev, add_help=False)
    for flag in flags:
        real.add_argument(flag, nargs="?")
    try:
        _, extra = real.parse_known_args([word])
        refused = bool(extra)
    except SystemExit:  # "ambiguous option"
        refused = True
    source = f"import argparse\np = argparse.ArgumentParser(allow_abbrev={abbrev})\n"
    source += "".join(f"p.add_argument({f!r})\n" for f in flags) + "p.parse_args()\n"
    named = unknown_options([word], read_parser([parse_script(source)]))
    # -h/--help are argparse's own unless add_help=False: leave those words out of the oracle.
    if not word.startswith("--h"):
        assert bool(named) == refused, (flags, word)


def test_report_names_the_option_end_to_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    job = _job(tmp_path, "python train.py --num-workers 8 --epochs 3 --lr=0.1")
    finding = _finding(_report(job, capsys), "unknown-launch-option")
    assert finding is not None and finding["severity"] == "error"
    assert finding["evidence"] == {"options": "--num-workers (close: --workers)"}
    job = _job(tmp_path, "python train.py --workers 8 --epochs 3 --lr=0.1")
    assert _finding(_report(job, capsys), "unknown-launch-option") is None


def test_apply_says_the_line_it_edits_fails_as_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    # 9 workers on 2 cores: the plan sets --workers on the line, which also has --num-workers.
    job = _job(tmp_path, "python train.py --num-workers 8 --workers 9", cores=2)
    out = tmp_path / "tuned.sh"
    code = main(["apply", "--job", str(job), "-o", str(out)])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "--workers 1" in out.read_text()
    said = printed.out + printed.err
    assert "fails as it is" in said and "--num-workers (close: --workers)" in said
