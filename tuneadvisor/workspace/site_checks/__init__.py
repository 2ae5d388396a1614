"""What tuneadvisor can and cannot see on this node (`tuneadvisor doctor`): NVML and the
GPUs, Slurm and the job this shell is in, kernprof, and the training interpreter's torch.

Every check is a line with a status and, where it did not come out ok, what to do. Nothing
here raises for a missing or broken piece: finding those is the point. Every command runs
with a timeout, so a Slurm that hangs is a failed line, never a hung doctor."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType

from tuneadvisor.metrics.nvml import inventory
from tuneadvisor.slurm.client import SlurmClient
from tuneadvisor.workspace.site_checks.cluster import slurm_checks
from tuneadvisor.workspace.site_checks.gpu import gpu_checks
from tuneadvisor.workspace.site_checks.model import Check
from tuneadvisor.workspace.site_checks.training_python import (
    InterpreterProbe,
    kernprof_check,
    python_checks,
)

CGROUP = Path("/proc/self/cgroup")


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def run_checks(
    python: str,
    python_source: str,
    *,
    timeout_s: float,
    env: Mapping[str, str] | None = None,
    nvml_import: Callable[[str], ModuleType] | None = None,
    cgroup: Path = CGROUP,
) -> list[Check]:
    """Every check, in the order `doctor` prints them. ``python`` is the training
    interpreter and ``python_source`` where it came from ("--python", ...)."""
    environ = os.environ if env is None else env
    probe = InterpreterProbe(python, timeout_s, env)  # runs while the rest are checked
    inv = inventory(nvml_import)
    checks = gpu_checks(inv, environ.get("CUDA_VISIBLE_DEVICES"), root=os.geteuid() == 0)
    client = SlurmClient(env=env, timeout_s=timeout_s)
    checks += slurm_checks(client, environ, _read(cgroup))
    checks.append(kernprof_check(environ.get("PATH")))
    visible_ok = next(c for c in checks if c.id == "gpu.visible").status != "failed"
    checks += python_checks(probe.result(), python_source, inv, visible_ok)
    return checks
