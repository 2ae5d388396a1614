"""Where `tuneadvisor report PROFILE` spends its time, phase by phase (one process, one run).

    .venv/bin/python bench/phases.py PROFILE.lprof SOURCE.py

Prints one JSON object of seconds: imports, ``load_profiles`` (reading and checking the
pickle), ``classify_source`` on the source file alone (line kinds), ``load_workspace`` in
full (which does both again, plus source lookup and per-line analysis), and
``render_text``. ``analysis_rest`` is ``load_workspace`` minus the two parts measured on
their own. Imports are timed cold (once); then one untimed ``load_workspace`` warms every
lazy import and cache, and each other phase is the fastest of ``REPEATS`` runs, so the
parts and the whole are measured in the same warm state (timed once and cold, the parts
could add up to more than the whole). Used by ``run_bench.py`` to explain a miss; it uses
internal functions, so a phase whose function moved is reported as missing instead of
failing the benchmark.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPEATS = 2


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit("usage: phases.py PROFILE.lprof SOURCE.py")
    profile, source = sys.argv[1], Path(sys.argv[2])
    out: dict[str, float | str] = {}

    t = time.perf_counter()
    from tuneadvisor.report.text import render_text
    from tuneadvisor.workspace.inputs import Inputs
    from tuneadvisor.workspace.load import Workspace, load_workspace

    out["imports"] = time.perf_counter() - t

    request = Inputs(profiles=(profile,))
    load_workspace(request)  # warm-up, untimed

    def best(work: Callable[[], object]) -> float:
        times = []
        for _ in range(REPEATS):
            t = time.perf_counter()
            work()
            times.append(time.perf_counter() - t)
        return min(times)

    try:
        from tuneadvisor.profile.lprof import load_profiles

        out["load_profiles"] = best(lambda: load_profiles([profile]))
    except (ImportError, TypeError) as exc:
        out["load_profiles"] = f"not measured: {exc}"
    try:
        from tuneadvisor.trainscript.kinds import classify_source

        text = source.read_text(encoding="utf-8")
        out["classify_source"] = best(lambda: classify_source(text))
    except (ImportError, TypeError) as exc:
        out["classify_source"] = f"not measured: {exc}"

    workspaces: list[Workspace] = []
    out["load_workspace"] = whole = best(lambda: workspaces.append(load_workspace(request)))
    parts = [out["load_profiles"], out["classify_source"]]
    if all(isinstance(p, float) for p in parts):
        out["analysis_rest"] = whole - sum(p for p in parts if isinstance(p, float))
    last = workspaces[-1]
    out["render_text"] = best(lambda: render_text(last))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
