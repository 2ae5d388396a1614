"""What a launch line holds: the training script, its arguments and its launchers."""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LaunchLine", "Launcher", "option_values"]

_NUMBER = re.compile(r"-[0-9.]")


@dataclass(frozen=True)
class Launcher:
    """A program that starts the training script (``srun``, ``torchrun``, ``kernprof``...)."""

    name: str  # "srun", "torchrun", "python -m torch.distributed.run", "accelerate launch"
    words: tuple[str, ...]  # its options as written (unquoted, variables kept)

    @property
    def options(self) -> dict[str, str]:
        return option_values(self.words)


@dataclass(frozen=True)
class LaunchLine:
    line: int  # first physical line of the command
    end_line: int  # last physical line (after ``\\`` continuations)
    text: str  # the logical line, continuations joined
    env: Mapping[str, str]  # VAR=value before the command (and after ``env``)
    exported: Mapping[str, str]  # ``export VAR=value`` earlier in the script
    launchers: tuple[Launcher, ...]  # outermost first
    python: str | None  # the interpreter as written, when there is one
    script: str | None  # the training script as written; None for ``python -m module``
    module: str | None  # ``python -m package.train``
    args: tuple[str, ...]  # the training script's arguments
    script_path: Path | None  # the script on disk, when it exists
    shell_string: bool = False  # inside ``bash -c '...'``: words after the line reach bash
    # The job's own script the line runs (``srun ./launch.sh ...``), read for the training
    # command: the launch is that script's, the line the job's. None when there is none.
    via: Path | None = None
    # Words added at the line's end reach the training script (``"$@"`` passes them on).
    forwards_words: bool = True

    @property
    def options(self) -> dict[str, str]:
        """The training script's options: ``{"--num-workers": "${SLURM_CPUS_PER_TASK}"}``."""
        return option_values(self.args)

    def launcher(self, name: str) -> Launcher | None:
        return next((launcher for launcher in self.launchers if launcher.name == name), None)

    @property
    def chain(self) -> str:
        """How the job reaches the training code: ``srun -> torchrun -> train_ddp.py``."""
        target = self.script if self.script is not None else f"-m {self.module}"
        names: list[str] = []  # a launcher repeated in a row once, with its count
        for name, run in itertools.groupby(launcher.name for launcher in self.launchers):
            times = len(list(run))
            names.append(name if times == 1 else f"{name} (x{times})")
        return " -> ".join([*names, target])


def option_values(words: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``--key=value``, ``--key value`` and ``-k value`` -> {key: value}; "" for flags."""
    values: dict[str, str] = {}
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if not is_option(word):
            continue
        if word.startswith("--") and "=" in word:
            key, _, value = word.partition("=")
            values[key] = value
        elif index < len(words) and not is_option(words[index]):
            values[word] = words[index]
            index += 1
        else:
            values[word] = ""
    return values


def is_option(word: str) -> bool:
    return word.startswith("-") and word not in ("-", "--") and not _NUMBER.match(word)
