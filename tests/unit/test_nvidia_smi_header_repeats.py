"""An nvidia-smi log appended by one call per sample (``nvidia-smi --query-gpu ... --format=csv
>> log`` in a loop) has its header before every round: one note says so, not one per round,
and the rows read as they would under one header (issue 20, point 14)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tuneadvisor.metrics.nvidia_smi_csv import NvidiaSmiCsvError, parse_nvidia_smi_csv

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "realworld" / "nvidia-smi"
HEADER = "timestamp, index, utilization.gpu [%], memory.used [MiB]"


def _row(second: int, util: int) -> str:
    return f"2024/01/31 12:{second // 60:02d}:{second % 60:02d}.000, 0, {util} %, {100 + util} MiB"


def _header_notes(notes: tuple[str, ...]) -> list[str]:
    return [note for note in notes if "header" in note]


def test_real_log_with_a_header_every_second_gets_one_note() -> None:
    text = (REAL / "gpu-usage-header-every-second.csv").read_text()
    headers = sum(line.startswith("timestamp, ") for line in text.splitlines())
    series = parse_nvidia_smi_csv(text)
    (gpu,) = series.gpus
    assert len(gpu.samples) == headers == 224  # one round per call of nvidia-smi
    (note,) = _header_notes(series.notes)
    assert note.startswith("header repeated 223 times (lines 3 to 447)")
    assert "columns change" not in note


@given(utils=st.lists(st.integers(0, 100), min_size=2, max_size=40))
def test_a_header_per_round_reads_as_one_header(utils: list[int]) -> None:
    rows = [_row(second, util) for second, util in enumerate(utils)]
    once = parse_nvidia_smi_csv("\n".join([HEADER, *rows]) + "\n")
    each = parse_nvidia_smi_csv("".join(f"{HEADER}\n{row}\n" for row in rows))
    assert each.gpus == once.gpus
    assert each.facts() == once.facts()
    (note,) = _header_notes(each.notes)
    repeats = len(utils) - 1
    expected = f"header repeated {repeats} times" if repeats > 1 else "line 3: header repeated"
    assert note.startswith(expected)
    assert _header_notes(once.notes) == []


def test_one_repeat_names_its_line() -> None:
    text = f"{HEADER}\n{_row(0, 10)}\n{HEADER}\n{_row(1, 20)}\n"
    notes = parse_nvidia_smi_csv(text).notes
    assert notes == ("line 3: header repeated (several runs in one log)",)


def test_a_header_that_changes_the_columns_is_named() -> None:
    other = "timestamp, index, utilization.gpu [%]"
    rounds = [f"{HEADER}\n{_row(0, 10)}", f"{HEADER}\n{_row(1, 20)}", f"{other}\n"]
    text = "\n".join(rounds) + "2024/01/31 12:00:02.000, 0, 30 %\n"
    (note,) = _header_notes(parse_nvidia_smi_csv(text).notes)
    assert note.startswith("header repeated 2 times (lines 3 to 5)")
    assert note.endswith("the columns change at line 5")


def test_the_plain_table_over_and_over_is_refused_as_such() -> None:
    """`nvidia-smi -l 1 >> log` without --query-gpu: box tables, one per second, no rows."""
    table = (REAL / "triton-cc-plain-table.txt").read_text()
    with pytest.raises(NvidiaSmiCsvError, match=r"plain nvidia-smi table \(3 snapshots, nvidia"):
        parse_nvidia_smi_csv(table * 3)
    with pytest.raises(NvidiaSmiCsvError, match=r"plain nvidia-smi table \(one snapshot\)"):
        parse_nvidia_smi_csv(table)
