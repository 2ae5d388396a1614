"""The fixed-scale charts of the watch screen and the word diff of the job-script tab (plain
functions; no app)."""

from __future__ import annotations

from tuneadvisor.tui.level_chart import chart_text, columns
from tuneadvisor.tui.word_diff import changed_words, paired_lines


def test_a_steady_100_percent_core_is_drawn_full_and_an_idle_one_low() -> None:
    assert chart_text([100.0] * 8, 8, 100.0) == "█" * 8
    assert chart_text([0.0] * 8, 8, 100.0) == "▁" * 8
    assert chart_text([50.0, 100.0], 4, 100.0) == "  ▅█"  # newest at the right
    assert chart_text([17935.0], 1, 40960.0) == "▄"  # memory against the total


def test_more_rounds_than_columns_are_averaged() -> None:
    assert columns([0, 100, 100, 100], 2) == [50.0, 100.0]
    assert columns([1, 2, 3], 5) == [1, 2, 3]


def test_the_changed_word_of_a_launch_line() -> None:
    old = "srun python train.py --num-workers 1 --epochs 3"
    new = "srun python train.py --num-workers 4 --epochs 3 --pin-memory"
    changed = changed_words(old, new)
    assert changed is not None
    went, came = changed
    assert [old[a:b] for a, b in went] == ["1"]
    assert [new[a:b] for a, b in came] == ["4", " --pin-memory"]
    assert changed_words("module purge", "export OMP_NUM_THREADS=4") is None  # unrelated


def test_removed_lines_pair_with_the_added_lines_after_them() -> None:
    diff = ["--- a/x", "+++ b/x", "@@ -1 +1 @@", "-a 1", "-b 1", "+a 2", " c", "-d", "+++e"]
    assert paired_lines(diff) == {3: 5, 7: 8}
