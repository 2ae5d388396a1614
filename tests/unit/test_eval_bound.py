"""A short run's test pass is bounded (issue 33): the first hour's `watch -- python
training/mnist_single.py --max-steps 60` evaluated all 10,000 test images, longer than its
training. With --max-steps and no --max-eval-batches, the bundled scripts test on a quarter
of the images they train; --max-eval-batches still says how many, and a run without
--max-steps tests on the whole test set."""

from __future__ import annotations

import argparse

import pytest

from tests.unit.test_progress_events_tile import _trainkit


def _parsed(*argv: str) -> argparse.Namespace:
    trainkit = _trainkit()
    parser = argparse.ArgumentParser()
    trainkit.add_knobs(parser, batch_size=64, batch_help="batch", data_help="data")
    parser.add_argument("--test-batch-size", type=int, default=1000)
    args = parser.parse_args(argv)
    trainkit.check_knobs(parser, args)
    return args


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ((), None),  # a whole epoch: the whole test set
        (("--max-steps", "60"), 1),  # 3,840 images trained: 960 tested, one batch of 1,000
        (("--max-steps", "1000"), 16),  # 64,000 trained: 16,000 (the loader ends at 10,000)
        (("--max-steps", "60", "--test-batch-size", "100"), 10),
        (("--max-steps", "60", "--max-eval-batches", "7"), 7),  # as asked
        (("--max-eval-batches", "3"), 3),
    ],
)
def test_the_test_pass_follows_the_steps_trained(argv: tuple[str, ...], expected: int) -> None:
    assert _parsed(*argv).max_eval_batches == expected


def test_the_first_hours_watch_command_tests_far_fewer_images_than_the_whole_set() -> None:
    args = _parsed("--max-steps", "60")
    tested = args.max_eval_batches * args.test_batch_size
    trained = args.max_steps * args.batch_size
    assert tested <= trained / 3 and tested < 10_000 / 5
