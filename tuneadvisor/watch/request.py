"""What a ``watch`` is asked to do: the target, the schedule, where the rounds go. The command
builds it from its arguments and checks it (tuneadvisor.commands.watch); this layer reads it
and never sees the command line."""

from __future__ import annotations

from dataclasses import dataclass

from tuneadvisor.watch.job_target import Where


@dataclass(frozen=True)
class WatchRequest:
    # The target: one of a command to start, processes, a Slurm job, or (none) the whole node.
    command: tuple[str, ...] = ()
    pids: tuple[int, ...] = ()
    job: str | None = None
    where: Where = "auto"  # with a job: here (--this-node), all its nodes (--all-nodes), auto
    # The schedule
    interval_s: float = 1.0
    window_s: float = 60.0  # evidence window of the live findings
    duration_s: float | None = None  # None: until the watched processes end
    # Where the rounds and the program's output go
    record: str | None = None
    log: str | None = None  # the started command's output (None: beside the recording)
    headless: bool = False
    stream: bool = False  # a node's sampler of a multi-node watch: rounds on stdout
    watcher: str | None = None  # NODE:PID of the watch that started this node's sampler
    gpus: str | None = None  # indices or UUIDs (None: the target's CUDA_VISIBLE_DEVICES)
    rules: tuple[str, ...] = ()  # extra rule folders

    @property
    def wants_screen(self) -> bool:
        """The live screen, unless the rounds go to stdout or the summary alone is asked."""
        return not (self.headless or self.stream)
