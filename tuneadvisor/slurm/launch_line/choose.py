"""Which of a job's Python launches is the training, as a reader picks it.

A job often runs more than one Python program: it stages or prepares data first
(``srun python prepare_data.py``), trains, then perhaps evaluates. The order alone does not
say which one trains (the first is often the staging step, the last often the evaluation),
so each launch is judged by what it runs:

1. a script whose name reads as a side step (prepare, download, preprocess, eval, test,
   plot...) and not also as training (``train_and_eval.py`` trains) comes last;
2. a script whose name reads as training (train, finetune, main, run...) or one started by
   a launcher that spawns ranks (torchrun, accelerate, deepspeed...) comes first;
3. between equals, the first in the script.

The name is read in words (``prepare_data`` is "prepare" and "data", ``evalModel`` is "eval"
and "model"), so ``retrieval.py`` is no evaluation.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import PurePosixPath

from tuneadvisor.slurm.launch_line.model import LaunchLine

__all__ = ["choose_launch", "looks_like_a_side_step"]

_SIDE_STEPS = (
    *("prepare", "prep", "preprocess", "preprocessing", "download", "stage", "staging"),
    *("setup", "install", "convert", "export", "extract", "tokenize", "tokenise"),
    *("eval", "evaluate", "evaluation", "test", "inference", "infer", "predict"),
    *("plot", "analyze", "analyse", "analysis", "summarize", "check", "merge", "clean"),
    *("fetch", "cache", "unpack", "untar", "unzip", "copy", "sync", "warmup", "benchmark"),
)
_TRAINING = (
    *("train", "training", "trainer", "fit", "finetune", "pretrain", "pretraining", "learn"),
)
# Names a training script often has, though they say less: `run_eval.py` evaluates.
_ENTRY = ("main", "run", "ddp", "fsdp", "distributed", "launch")
# Launchers that start one process per GPU: what they start is the training.
_SPAWNERS = frozenset(
    {
        *("torchrun", "python -m torch.distributed.run", "python -m torch.distributed.launch"),
        *("accelerate launch", "deepspeed", "lightning run model", "fabric run"),
    }
)
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")  # snake_case, kebab-case, CamelCase


def _words(launch: LaunchLine) -> list[str]:
    target = launch.script or launch.module or ""
    name = PurePosixPath(target).stem if launch.script else target.rpartition(".")[2]
    return [word.lower() for word in _WORD.findall(name)]


def _reads_as(words: list[str], names: tuple[str, ...]) -> bool:
    return any(word in names for word in words)


def looks_like_a_side_step(launch: LaunchLine) -> bool:
    """The launch's script reads as data staging, evaluation... and not as training."""
    words = _words(launch)
    return _reads_as(words, _SIDE_STEPS) and not _reads_as(words, _TRAINING)


def _rank(launch: LaunchLine) -> tuple[bool, bool]:
    trains = _reads_as(_words(launch), _TRAINING + _ENTRY) or any(
        launcher.name in _SPAWNERS for launcher in launch.launchers
    )
    return (not looks_like_a_side_step(launch), trains)


def choose_launch(launches: Sequence[LaunchLine]) -> LaunchLine | None:
    """The training launch among a job's launches (in script order); None when none."""
    if not launches:
        return None
    best = max(_rank(launch) for launch in launches)
    return next(launch for launch in launches if _rank(launch) == best)
