"""The training interpreter's lines of `doctor`: does it run, has it torch, does that torch
see CUDA, has it line_profiler (``run --profile`` starts ``PY -m kernprof``); and kernprof
on PATH for the user's own job scripts.

torch is never imported here (an import-linter contract): a small program runs in the
training interpreter, in a process of its own with a timeout, and prints one JSON line.
It starts first and is read last, so importing torch overlaps the other checks.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tuneadvisor.metrics.nvml import NvmlInventory
from tuneadvisor.numbers import is_ascii_digits
from tuneadvisor.workspace.site_checks.model import Check

# Runs in the training interpreter: stdlib only, every failure caught and said.
PROBE = r"""
import json, sys, warnings
out = {"python": sys.version.split()[0], "executable": sys.executable}
def said(exc):
    return f"{type(exc).__name__}: {exc}"
try:
    import line_profiler
    out["line_profiler"] = str(getattr(line_profiler, "__version__", "?"))
except BaseException as exc:
    out["line_profiler_error"] = said(exc)
try:
    import torch
except BaseException as exc:
    out["torch_error"] = said(exc)
    out["torch_missing"] = isinstance(exc, ModuleNotFoundError) and exc.name == "torch"
else:
    out["torch"] = str(torch.__version__)
    out["torch_cuda"] = torch.version.cuda
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out["cuda_available"] = bool(torch.cuda.is_available())
        out["cuda_warnings"] = [str(w.message).splitlines()[0] for w in caught]
        count = torch.cuda.device_count() if out["cuda_available"] else 0
        out["device_count"] = count
        out["devices"] = [torch.cuda.get_device_name(i) for i in range(count)]
    except BaseException as exc:
        out["cuda_error"] = said(exc)
print("\n" + json.dumps(out))
"""

# A cheaper question for the commands that start training (relaunch/preflight.py): is torch
# installed there at all? Found, not imported (an import takes seconds): its version from the
# package metadata. Its answer reads as the probe's does.
TORCH_PRESENT = r"""
import importlib.metadata, importlib.util, json, sys
out = {"python": sys.version.split()[0], "executable": sys.executable}
try:
    found = importlib.util.find_spec("torch") is not None
except BaseException as exc:
    found, out["torch_error"] = False, f"{type(exc).__name__}: {exc}"
if found:
    try:
        out["torch"] = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        out["torch"] = "?"
elif "torch_error" not in out:
    out["torch_missing"] = True
print("\n" + json.dumps(out))
"""

SET_PYTHON = "--python PY or export TUNEADVISOR_TORCH_PYTHON=PY"


@dataclass(frozen=True)
class ProbeResult:
    python: str  # the interpreter asked
    answer: dict[str, Any] | None  # what it printed; None when it did not run or answer
    problem: str | None = None  # why not


class InterpreterProbe:
    """The probe started in the training interpreter; ``result`` waits at most until
    ``timeout_s`` after the start."""

    def __init__(
        self,
        python: str,
        timeout_s: float,
        env: Mapping[str, str] | None = None,
        program: str = PROBE,
    ):
        self.python = python
        self._deadline = time.monotonic() + timeout_s
        self._timeout_s = timeout_s
        self._proc: subprocess.Popen[str] | None = None
        self._problem: str | None = None
        try:
            self._proc = subprocess.Popen(
                [python, "-c", program],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                errors="replace",
                env=None if env is None else dict(env),
                # Its own process group: what it starts (a module or conda wrapper's child
                # that keeps our pipes open) is killed with it.
                start_new_session=True,
            )
        except OSError as exc:
            self._problem = f"cannot run it: {exc.strerror or exc}"

    def result(self) -> ProbeResult:
        if self._proc is None:
            return ProbeResult(self.python, None, self._problem)
        out, err, answered = _read_bounded(self._proc, self._deadline)
        if not answered:
            return ProbeResult(
                self.python, None, f"did not answer within {self._timeout_s:g} s (killed)"
            )
        proc = self._proc
        lines = out.strip().splitlines()
        try:
            answer = json.loads(lines[-1]) if lines else None
        except json.JSONDecodeError:
            answer = None
        if not isinstance(answer, dict):
            last = err.strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
            return ProbeResult(self.python, None, f"printed no answer: {last[0]}")
        return ProbeResult(self.python, answer)


_SLICE_S = 0.2  # how often the reader looks whether the interpreter has exited
_GRACE_S = 2.0  # how long its output may stay open after it exited (or after a kill)


def _read_bounded(proc: subprocess.Popen[str], deadline: float) -> tuple[str, str, bool]:
    """What the interpreter printed, read until the deadline and no later: whether it
    exited (the third value) and what it wrote. An interpreter that exited while something
    it started keeps the pipes open (module and conda wrappers do) is read for ``_GRACE_S``
    more; then, or at the deadline, its process group is killed and the pipes given up."""
    exited_at: float | None = None
    while True:
        limit = deadline if exited_at is None else min(deadline, exited_at + _GRACE_S)
        wait = min(_SLICE_S, limit - time.monotonic())
        try:
            out, err = proc.communicate(timeout=max(0.0, wait))
            return out, err, True
        except subprocess.TimeoutExpired:  # retrying communicate loses no output
            if exited_at is None and proc.poll() is not None:
                exited_at = time.monotonic()
            if time.monotonic() >= limit:
                break
    exited = proc.poll() is not None
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone
        os.killpg(proc.pid, signal.SIGKILL)
    try:
        out, err = proc.communicate(timeout=_GRACE_S)
    except subprocess.TimeoutExpired:  # a process outside the group holds the pipes
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        proc.wait()  # the leader was killed with its group: no wait
        out, err = "", ""
    return out, err, exited


def python_checks(
    probe: ProbeResult, source: str, inv: NvmlInventory, cuda_visible_ok: bool
) -> list[Check]:
    """``source`` says where the interpreter came from ("--python", ...)."""
    where = f"{probe.python} ({source})"
    answer = probe.answer
    if answer is None:
        failed = Check(
            "python.interpreter",
            "failed",
            f"{where}: {probe.problem}",
            "a first import of torch from a network file system can be slow: rerun with "
            "--timeout 300"
            if probe.problem and "did not answer" in probe.problem
            else f"name an interpreter that runs: {SET_PYTHON}",
        )
        why = "not checked: the interpreter did not answer"
        return [failed] + [
            Check(name, "not-applicable", why)
            for name in ("python.torch", "python.cuda", "python.line_profiler")
        ]
    checks = [Check("python.interpreter", "ok", f"{where}: Python {answer.get('python', '?')}")]
    checks.append(torch_check(answer))
    checks.append(_cuda(answer, inv, cuda_visible_ok))
    checks.append(_line_profiler(answer, probe.python))
    return checks


def torch_check(answer: Mapping[str, Any]) -> Check:
    if "torch" in answer:
        return Check("python.torch", "ok", f"torch {answer['torch']}")
    if answer.get("torch_missing"):
        return Check(
            "python.torch",
            "missing",
            "torch is not installed in the training interpreter",
            f"install torch there, or name an interpreter that has it: {SET_PYTHON}",
        )
    return Check(
        "python.torch",
        "failed",
        f"import torch failed: {answer.get('torch_error')}",
        "the installed torch is broken or mismatched: reinstall it (a module load may be missing)",
    )


def _major(version: str | None) -> int | None:
    head = (version or "").split(".")[0]
    return int(head) if is_ascii_digits(head) else None


def _cuda(answer: Mapping[str, Any], inv: NvmlInventory, cuda_visible_ok: bool) -> Check:
    if "torch" not in answer:
        return Check("python.cuda", "not-applicable", "not checked: no torch")
    torch = f"torch {answer['torch']}"
    built = answer.get("torch_cuda")
    if "cuda_error" in answer:
        return Check(
            "python.cuda",
            "failed",
            f"{torch}: asking CUDA failed: {answer['cuda_error']}",
            "python -c 'import torch; torch.zeros(1, device=\"cuda\")' shows the whole error",
        )
    if answer.get("cuda_available"):
        names = ", ".join(answer.get("devices") or ())
        count = answer.get("device_count", 0)
        return Check("python.cuda", "ok", f"{torch} (CUDA {built}) sees {count} GPU(s): {names}")
    if built is None:
        return Check(
            "python.cuda",
            "failed",
            f"{torch} is a build without CUDA",
            "install a CUDA build of torch (pytorch.org's install selector gives the command)",
        )
    sees_none = f"{torch} (CUDA {built}) sees no GPU"
    if not inv.started or not inv.devices:
        why = inv.reason or "NVML sees no GPU"
        return Check("python.cuda", "not-applicable", f"{sees_none}: {why}")
    if not cuda_visible_ok:
        return Check(
            "python.cuda",
            "failed",
            f"{sees_none}: CUDA_VISIBLE_DEVICES hides them",
            "see the gpu.visible line",
        )
    driver_major, built_major = _major(inv.cuda_driver), _major(built)
    if driver_major is not None and built_major is not None and driver_major < built_major:
        return Check(
            "python.cuda",
            "failed",
            f"{sees_none}: the driver supports CUDA {inv.cuda_driver}, torch was built for {built}",
            f"install a torch built for CUDA {driver_major}.x, or ask for a newer driver",
        )
    warned = "; ".join(answer.get("cuda_warnings") or ())
    return Check(
        "python.cuda",
        "failed",
        f"{sees_none} although NVML does" + (f": {warned}" if warned else ""),
        "python -c 'import torch; torch.zeros(1, device=\"cuda\")' shows the whole error",
    )


def _line_profiler(answer: Mapping[str, Any], python: str) -> Check:
    if "line_profiler" in answer:
        return Check("python.line_profiler", "ok", f"line_profiler {answer['line_profiler']}")
    return Check(
        "python.line_profiler",
        "missing",
        f"not importable in the training interpreter: {answer.get('line_profiler_error')}",
        f"`run --profile` starts {python} -m kernprof: pip install line_profiler there",
    )


def kernprof_check(path_env: str | None) -> Check:
    path = shutil.which("kernprof", path=path_env)
    if path is None:
        return Check(
            "tools.kernprof",
            "missing",
            "kernprof is not on PATH",
            "for your own job scripts (srun kernprof -l train.py): pip install line_profiler, "
            "or activate the environment that has it",
        )
    return Check("tools.kernprof", "ok", path)
