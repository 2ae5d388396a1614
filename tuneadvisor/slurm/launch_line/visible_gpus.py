"""torchrun's process count held in a job variable counted from CUDA_VISIBLE_DEVICES:

    NGPUS=$(echo $CUDA_VISIBLE_DEVICES | tr ',' '\\n' | wc -l)
    torchrun --nproc-per-node=$NGPUS train.py

Slurm sets CUDA_VISIBLE_DEVICES to the GPUs it gives the job on the node, so the count is
the GPUs per node: an assumption (a site or the script may set the variable otherwise), and
the report says it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tuneadvisor.slurm.launch_line.model import LaunchLine

_NPROC = ("--nproc-per-node", "--nproc_per_node")
_SPAWNERS = ("torchrun", "python -m torch.distributed.run", "python -m torch.distributed.launch")
_VARIABLE = re.compile(r"""["']?\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?["']?""")


def nproc_value(launch: LaunchLine) -> str | None:
    """torchrun's --nproc-per-node as the line gives it (variables the job sets expanded)."""
    for launcher in launch.launchers:
        if launcher.name in _SPAWNERS:
            options = launcher.options
            return next((options[name] for name in _NPROC if name in options), None)
    return None


def counts_visible_gpus(value: str, lines: Sequence[str], before: int) -> bool:
    """The value reads CUDA_VISIBLE_DEVICES: itself (``$(echo $CUDA_VISIBLE_DEVICES | ...)``,
    the variable expanded), or through a variable whose last assignment before line
    ``before`` (1-based) does."""
    if "CUDA_VISIBLE_DEVICES" in value:
        return True
    match = _VARIABLE.fullmatch(value.strip())
    if match is None:
        return False
    assignment = re.compile(
        r"^\s*(?:export\s+|declare\s+(?:-\w+\s+)*)?" + re.escape(match.group(1)) + "="
    )
    last = None
    for text in lines[: max(before - 1, 0)]:
        if assignment.match(text):
            last = text
    return last is not None and "CUDA_VISIBLE_DEVICES" in last


def visible_gpu_ranks(launch: LaunchLine, lines: Sequence[str], gpus: int) -> str | None:
    """The note when torchrun's --nproc-per-node is counted from CUDA_VISIBLE_DEVICES (its
    ranks per task are then the ``gpus`` per node); None when it is not, or no GPU is asked."""
    value = nproc_value(launch)
    if value is None or gpus < 1 or not counts_visible_gpus(value, lines, launch.line):
        return None
    return (
        f"torchrun's --nproc-per-node is counted from CUDA_VISIBLE_DEVICES ({value}): "
        f"taken as the {gpus} GPUs per node the job asks for (assumed: Slurm sets "
        "CUDA_VISIBLE_DEVICES to the job's GPUs on the node, and nothing changes it)"
    )
