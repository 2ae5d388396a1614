"""`run --profile`'s DataLoader workers run without line_profiler's tracer (issue 31 §5): a
worker forked inside the profiled function inherited it (``sys.gettrace()`` in the child was
line_profiler's) and ran 15-28 % slower. The bundled scripts' trainkit turns it off in every
forked child, and a profiled run's start event says so. A real DataLoader with one forked
worker under a real LineProfiler, on the CPU."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.conftest import REPO

pytestmark = [pytest.mark.torch]

# One process: the same profiled function forks a DataLoader worker before trainkit is
# imported (the tracer inherited: the test can fail) and after (the tracer gone). The
# worker's dataset reports what sys.gettrace() is in the worker, and what the profiler
# counted there is compared with the main process's own line hits.
SCRIPT = """
import json, sys
import torch
from line_profiler import LineProfiler

class Probe(torch.utils.data.Dataset):
    def __len__(self):
        return 2
    def __getitem__(self, i):
        trace = sys.gettrace()
        return type(trace).__module__ + "." + type(trace).__name__ if trace else "none"

def train():
    loader = torch.utils.data.DataLoader(
        Probe(), batch_size=2, num_workers=1, multiprocessing_context="fork",
        collate_fn=lambda batch: batch)
    return [seen for batch in loader for seen in batch]

profiler = LineProfiler()
profiled = profiler(train)
before = profiled()
sys.path.insert(0, sys.argv[1])
import trainkit
after = profiled()
main_traced = profiler.get_stats().timings != {}
import builtins
builtins.profile = profiler  # as kernprof -l sets it
print(json.dumps({"before": before, "after": after, "main_traced": main_traced,
                  "record": trainkit.profile_record()}))
"""


def test_a_forked_dataloader_worker_runs_without_line_profilers_tracer(
    torch_python: str,
) -> None:
    done = subprocess.run(
        [torch_python, "-c", SCRIPT, str(REPO / "training")],
        capture_output=True, text=True, timeout=120, cwd=REPO, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.splitlines()[-1])
    # before: the worker ran every line through line_profiler's tracer
    assert len(said["before"]) == 2
    assert all(seen.startswith("line_profiler.") for seen in said["before"])
    assert said["after"] == ["none", "none"]  # trainkit's at-fork hook turned it off
    assert said["main_traced"]  # the profiled process itself still traced, and counted
    assert said["record"] == {"profile_workers_traced": False}


def test_an_unprofiled_run_says_nothing_of_profile_workers() -> None:
    from tests.unit.test_progress_events_tile import _trainkit

    trainkit = _trainkit()
    assert trainkit.profile_record() == {}
    # another tool's tracer (a debugger's, coverage's) is left to it in a forked child
    assert not trainkit._is_line_profiler(lambda *a: None)
    assert not trainkit._is_line_profiler(None)
