"""Cut a large public torch.profiler trace down to its first steps, for a test fixture
(tests/fixtures/realworld/traces, each cut said in its MANIFEST row).

    .venv/bin/python bench/trim_trace.py IN.json.gz OUT.json.gz --steps 3 [--optimizer]

Kept: the header keys as written; every event before the start of step ``--steps + 1``
(``ProfilerStep#N``, or with ``--optimizer`` the end of that many ``Optimizer.step#``); and
the device events (kernels, copies, sets) launched by a runtime call kept, wherever they ran.
Nothing is edited: events are kept or dropped whole; the JSON is written compact, gzipped.
"""

from __future__ import annotations

import argparse
import gzip
import json
from typing import Any

DEVICE = {"kernel", "memcpy", "memset", "gpu_memcpy", "gpu_memset"}


def _cut(events: list[dict[str, Any]], steps: int, optimizer: bool) -> float:
    if optimizer:
        ends = sorted(e["ts"] + e.get("dur", 0) for e in events
                      if str(e.get("name", "")).startswith("Optimizer.step#"))  # fmt: skip
        return ends[steps] if len(ends) > steps else float("inf")
    host = ("operator", "cpu_op", "user_annotation")
    starts = sorted(e["ts"] for e in events if str(e.get("name", "")).startswith("ProfilerStep#")
                    and str(e.get("cat", "")).lower() in host)  # fmt: skip
    return starts[steps] if len(starts) > steps else float("inf")


def trim(doc: dict[str, Any], steps: int, optimizer: bool) -> dict[str, Any]:
    events = doc["traceEvents"]
    cut = _cut(events, steps, optimizer)
    kept = [e for e in events if "ts" not in e or e["ts"] < cut]
    launched = {e.get("args", {}).get("correlation") for e in kept
                if str(e.get("cat", "")).lower() in ("runtime", "cuda_runtime")}  # fmt: skip
    late = [e for e in events if "ts" in e and e["ts"] >= cut
            and str(e.get("cat", "")).lower() in DEVICE
            and e.get("args", {}).get("correlation") in launched]  # fmt: skip
    return {**doc, "traceEvents": kept + late}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source")
    parser.add_argument("target")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--optimizer", action="store_true")
    args = parser.parse_args()
    with gzip.open(args.source, "rt") as f:
        doc = json.load(f)
    out = trim(doc, args.steps, args.optimizer)
    with gzip.open(args.target, "wt", compresslevel=9) as f:
        json.dump(out, f, separators=(",", ":"))
    print(f"{len(doc['traceEvents'])} -> {len(out['traceEvents'])} events")


if __name__ == "__main__":
    main()
