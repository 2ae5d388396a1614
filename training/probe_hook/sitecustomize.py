"""The probe around a training script of your own, without editing it.

Put this folder first on ``PYTHONPATH`` and name the file to write::

    PYTHONPATH=training/probe_hook:$PYTHONPATH TUNEADVISOR_PROBE_OUT=probe.json \\
        python train.py --your --options
    tuneadvisor report --probe probe.json --job job.sbatch

Python imports ``sitecustomize`` at start-up. When ``torch.utils.data.dataloader`` is
imported, ``DataLoader.__iter__`` is wrapped: each batch's wait in ``next()`` and the time
until the next ``next()`` (the step) are timed, the first batches of each pass (workers
starting) left out. At exit, the loader with the most batches timed is written as a probe file
(``kind: tuneadvisor-probe``, ``"source": "probe_hook"``): the loop's step and stall share
measured, the ceiling estimated as the loop's time outside the loader, and no pipeline sweep
(that needs the bundled scripts' ``--probe``). Only the main process of rank 0 writes.

Nothing here may break the program it watches: every part is guarded, and without
``TUNEADVISOR_PROBE_OUT`` nothing is patched. An existing ``sitecustomize`` further down the
path is still run.

For a trial of ``tuneadvisor tune --job`` three more variables (checked; a bad value is
ignored with a line on stderr): ``TUNEADVISOR_NUM_WORKERS`` replaces the ``num_workers`` every
``DataLoader`` is built with (at ``DataLoader.__init__``: the script is not edited),
``TUNEADVISOR_STEPS`` ends the program cleanly (``SystemExit(0)``, the probe written at exit)
once that many batches were timed, and ``TUNEADVISOR_CORES`` keeps the process (and what it
starts) on that many of the cores it may use, as a site binding tasks to their cores would.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import time
from types import ModuleType
from typing import Any

_OUT = os.environ.get("TUNEADVISOR_PROBE_OUT")
_TARGET = "torch.utils.data.dataloader"
_SKIP = 3  # batches of each pass left out: workers starting, the first prefetch
_WINDOWS = 3
_timed: dict[int, dict[str, Any]] = {}  # id(loader) -> its batch size, workers and samples
_pid = os.getpid()


def _whole_env(name: str, least: int) -> int | None:
    """A whole number from the environment (ASCII digits, at least ``least``), else None."""
    text = os.environ.get(name)
    if text is None:
        return None
    if text.isascii() and text.isdigit() and len(text) <= 6 and int(text) >= least:
        return int(text)
    print(
        f"tuneadvisor probe: {name}={text!r} ignored (a whole number >= {least})", file=sys.stderr
    )
    return None


_WORKERS = _whole_env("TUNEADVISOR_NUM_WORKERS", 0)
_STEPS = _whole_env("TUNEADVISOR_STEPS", _WINDOWS)
_CORES = _whole_env("TUNEADVISOR_CORES", 1)


class _Timed:
    """The loader's own iterator, each ``next()`` timed; everything else passed through."""

    def __init__(self, inner: Any, record: dict[str, Any]) -> None:
        self._inner, self._record = inner, record
        self._seen, self._last_end = 0, None

    def __iter__(self) -> _Timed:
        return self

    def __len__(self) -> int:
        return len(self._inner)

    def __getattr__(self, name: str) -> Any:
        if name in ("_inner", "_record"):  # not set yet (a copy being made): no recursion
            raise AttributeError(name)
        return getattr(self._inner, name)

    def __next__(self) -> Any:
        start = time.perf_counter()
        batch = next(self._inner)  # StopIteration passes through
        end = time.perf_counter()
        self._seen += 1
        if self._seen > _SKIP and self._last_end is not None:
            self._record["samples"].append((end - start, start - self._last_end))
            if _STEPS is not None and len(self._record["samples"]) >= _STEPS:
                raise SystemExit(0)  # the trial's steps are measured: atexit writes the probe
        self._last_end = end
        return batch


def _patch(module: ModuleType) -> None:
    loader_class = module.DataLoader
    original = loader_class.__iter__

    def __iter__(self: Any) -> Any:
        inner = original(self)
        try:
            record = _timed.setdefault(
                id(self),
                {"batch_size": self.batch_size, "workers": self.num_workers, "samples": []},
            )
            return _Timed(inner, record)
        except Exception:  # never in the program's way
            return inner

    loader_class.__iter__ = __iter__
    if _WORKERS is not None:
        _patch_init(loader_class, _WORKERS)


def _patch_init(loader_class: Any, workers: int) -> None:
    """Every DataLoader built with ``workers`` workers, whatever the script wrote."""
    original = loader_class.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            if len(args) > 5:  # dataset, batch_size, shuffle, sampler, batch_sampler, num_workers
                args = (*args[:5], workers, *args[6:])
            else:
                kwargs["num_workers"] = workers
            if workers == 0:  # what DataLoader refuses without workers
                kwargs.pop("prefetch_factor", None)
                kwargs["persistent_workers"] = False
        except Exception:
            pass
        original(self, *args, **kwargs)

    loader_class.__init__ = __init__


class _Finder(importlib.abc.MetaPathFinder):
    """Patches the DataLoader when its module loads, so that torch is not imported early."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != _TARGET:
            return None
        sys.meta_path.remove(self)  # once: find the real module with the other finders
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_patch(module: ModuleType) -> None:
            exec_module(module)
            with contextlib.suppress(Exception):
                _patch(module)

        spec.loader.exec_module = exec_and_patch  # type: ignore[method-assign]
        return spec


def _rank0() -> bool:
    return all(os.environ.get(name, "0") == "0" for name in ("RANK", "SLURM_PROCID"))


def _windows(values: list[float]) -> list[float]:
    size = len(values) // _WINDOWS
    return [sum(values[i * size : (i + 1) * size]) / size for i in range(_WINDOWS)]


def _write_guarded() -> None:
    try:
        _write()
    except Exception as exc:  # the program's exit is not ours to spoil
        print(f"tuneadvisor probe: {_OUT} not written ({exc})", file=sys.stderr)


def _write() -> None:
    if os.getpid() != _pid or not _rank0() or not _timed or _OUT is None:
        return
    record = max(_timed.values(), key=lambda r: len(r["samples"]))
    samples = record["samples"]
    if len(samples) < _WINDOWS:
        print(f"tuneadvisor probe: too few batches timed to write {_OUT}", file=sys.stderr)
        return
    waits, steps = [w for w, _ in samples], [s for _, s in samples]
    size = len(samples) // _WINDOWS
    stall = [
        sum(waits[i * size : (i + 1) * size])
        / max(1e-12, sum(waits[i * size : (i + 1) * size]) + sum(steps[i * size : (i + 1) * size]))
        for i in range(_WINDOWS)
    ]
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    probe = {
        "kind": "tuneadvisor-probe",
        "schema": 1,
        "source": "probe_hook",
        "host": os.uname().nodename if hasattr(os, "uname") else "",
        "script": sys.argv[0] if sys.argv else "",
        "batch_size": record["batch_size"] or 1,
        "num_workers": record["workers"],
        "cores": cores or 1,
        "steps_per_window": size,
        "test_mode": False,
        "ceiling_step_s": [round(max(v, 1e-9), 6) for v in _windows(steps)],
        "pipeline": [],
        "loop_step_s": [
            round(w + s, 6) for w, s in zip(_windows(waits), _windows(steps), strict=False)
        ],
        "loop_stall_share": [round(min(1.0, v), 4) for v in stall],
    }
    tmp = f"{_OUT}.{os.getpid()}.tmp"
    with open(tmp, "w") as file:
        json.dump(probe, file, indent=2)
    os.replace(tmp, _OUT)


def _chain() -> None:
    """Run the sitecustomize this one hides, if the path has another."""
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


if _OUT and _CORES is not None and hasattr(os, "sched_setaffinity"):
    with contextlib.suppress(Exception):  # before torch starts its threads
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:_CORES])
if _OUT:
    try:
        sys.meta_path.insert(0, _Finder())
        atexit.register(_write_guarded)
    except Exception:
        pass
with contextlib.suppress(Exception):
    _chain()
