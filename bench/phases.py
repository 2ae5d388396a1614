"""Where `tuneadvisor report PROFILE` spends its time, phase by phase (one process, one run).

    .venv/bin/python bench/phases.py PROFILE.lprof SOURCE.py

Prints one JSON object of seconds: imports, ``load_profiles`` (reading and checking the
pickle), ``classify_source`` on the source file alone (line kinds), ``load_workspace`` in
full (which does both again, plus source lookup and per-line analysis), and
``render_text``. ``analysis_rest`` is ``load_workspace`` minus the two parts measured on
their own. Used by ``run_bench.py`` to explain a miss; it uses internal functions, so a
phase whose function moved is reported as missing instead of failing the benchmark.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit("usage: phases.py PROFILE.lprof SOURCE.py")
    profile, source = sys.argv[1], Path(sys.argv[2])
    out: dict[str, float | str] = {}

    t = time.perf_counter()
    from tuneadvisor.report.text import render_text
    from tuneadvisor.workspace import WorkspaceRequest, load_workspace

    out["imports"] = time.perf_counter() - t

    try:
        from tuneadvisor.profile.lprof import load_profiles

        t = time.perf_counter()
        load_profiles([profile])
        out["load_profiles"] = time.perf_counter() - t
    except (ImportError, TypeError) as exc:
        out["load_profiles"] = f"not measured: {exc}"
    try:
        from tuneadvisor.profile.kinds import classify_source

        text = source.read_text(encoding="utf-8")
        t = time.perf_counter()
        classify_source(text)
        out["classify_source"] = time.perf_counter() - t
    except (ImportError, TypeError) as exc:
        out["classify_source"] = f"not measured: {exc}"

    t = time.perf_counter()
    workspace = load_workspace(WorkspaceRequest(profiles=(profile,)))
    whole = time.perf_counter() - t
    out["load_workspace"] = whole
    parts = [out["load_profiles"], out["classify_source"]]
    if all(isinstance(p, float) for p in parts):
        out["analysis_rest"] = whole - sum(p for p in parts if isinstance(p, float))

    t = time.perf_counter()
    render_text(workspace)
    out["render_text"] = time.perf_counter() - t
    print(json.dumps(out))


if __name__ == "__main__":
    main()
