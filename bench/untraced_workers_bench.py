"""DataLoader workers forked inside a line-profiled function, with and without line_profiler's
tracer (issue 31 §5): the bundled scripts' trainkit turns it off in forked children
(``untrace_forked_child``); before, each worker ran every line of its input pipeline through
it. The pipeline is the bundled MNIST script's at ``--input-cost medium`` (a 384 px JPEG
decode, an affine warp, an elastic warp, to tensor) on 28x28 images, one forked worker, a loop
that does nothing; the worker's CPU seconds an epoch (the kernel's account of the joined
child: the tracer's cost, not the shared machine's load).

Three ways, each in a fresh interpreter, ``--repeats`` epochs each, the three taken in turn
``--rounds`` times (the median of all a way's epochs kept: one interpreter's CPU seconds
vary by 10-15 % on a shared machine): plain (no profiler), profiled with trainkit's hook
withheld (the workers traced, as before), and profiled with it. Recorded, never asserted;
replaces only its own section of bench/RESULTS.md.

    .venv/bin/python bench/untraced_workers_bench.py [--batches 10] [--repeats 4] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: bench/ is on the path, the root is not
    sys.path.insert(0, str(ROOT))

from bench.results_index import refresh, with_section  # noqa: E402

RESULTS = ROOT / "bench" / "RESULTS.md"
BEGIN = "<!-- untraced-workers:begin -->"
END = "<!-- untraced-workers:end -->"
WAYS = (("plain", "no profiler"), ("traced", "profiled, workers traced (before)"),
        ("untraced", "profiled, workers untraced (trainkit's hook)"))  # fmt: skip

EPOCHS = """
import json, os, resource, sys
way, batches, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sys.path.insert(0, sys.argv[4])
import torch
from PIL import Image
from torchvision import transforms
register = os.register_at_fork
if way == "traced":
    os.register_at_fork = lambda **hooks: None  # trainkit's hook withheld, no other
import trainkit
os.register_at_fork = register

torch.set_num_threads(1)
pipeline = transforms.Compose([
    trainkit.DecodeLike(384),
    transforms.RandomAffine(degrees=10, translate=(0.1, 0.1), scale=(0.9, 1.1), shear=8),
    transforms.ElasticTransform(alpha=34.0, sigma=4.0),
    transforms.ToTensor(),
])

class Images(torch.utils.data.Dataset):
    def __len__(self):
        return 32 * batches
    def __getitem__(self, i):
        return pipeline(Image.new("L", (28, 28), i % 256))

def children_cpu_s():
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime

def epoch():
    # the worker's CPU seconds for one epoch (it ends and is joined with its iterator):
    # what the tracer costs, whatever else the shared machine runs
    before = children_cpu_s()
    batches_of = iter(torch.utils.data.DataLoader(
        Images(), batch_size=32, num_workers=1, multiprocessing_context="fork"))
    for _ in batches_of:
        pass
    batches_of._shutdown_workers()
    return children_cpu_s() - before

run = epoch
if way != "plain":
    from line_profiler import LineProfiler
    run = LineProfiler()(epoch)
print(json.dumps([run() for _ in range(repeats)]))
"""


def epochs(way: str, batches: int, repeats: int) -> list[float]:
    done = subprocess.run(
        [sys.executable, "-c", EPOCHS, way, str(batches), str(repeats), str(ROOT / "training")],
        capture_output=True, text=True, check=True, cwd=ROOT,
    )  # fmt: skip
    times: list[float] = json.loads(done.stdout.splitlines()[-1])
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    load0 = os.getloadavg()[0]
    seen: dict[str, list[float]] = {way: [] for way, _ in WAYS}
    for _ in range(args.rounds):
        for way, _ in WAYS:
            seen[way] += epochs(way, args.batches, args.repeats)
    medians = {way: statistics.median(times) for way, times in seen.items()}
    load1 = os.getloadavg()[0]
    plain = medians["plain"]
    rows = [
        f"| {what} | {medians[way]:.2f} | {100 * (medians[way] / plain - 1):+.0f} % |"
        for way, what in WAYS
    ]
    section = "\n".join([
        BEGIN,
        "## DataLoader workers under line_profiler's tracer (issue 31 §5)",
        "",
        f"Recorded {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `.venv/bin/python "
        f"bench/untraced_workers_bench.py --batches {args.batches} --repeats {args.repeats} "
        f"--rounds {args.rounds}`. "
        f"Load average {load0:.2f} at the start, {load1:.2f} at the end, on {os.cpu_count()} "
        "CPUs shared with other work.",
        "",
        f"One forked worker, {args.batches} batches of 32 28x28 images through the bundled "
        "MNIST pipeline at `--input-cost medium`, a loop that does nothing; the worker's CPU "
        f"seconds, the median of {args.rounds * args.repeats} epochs a way ({args.rounds} "
        f"fresh interpreters of {args.repeats} epochs, the ways in turn).",
        "The bundled MNIST loop ran 15 % and 28 % slower profiled than plain at medium and "
        "high input cost (the whole loop, the figure the step-time model assumes); this times "
        "the worker alone.",
        "",
        "| way | worker CPU an epoch, s | against plain |",
        "|---|---|---|",
        *rows,
        END,
    ])  # fmt: skip
    text = args.out.read_text(encoding="utf-8") if args.out.exists() else "# Benchmarks\n"
    args.out.write_text(refresh(with_section(text, section, BEGIN, END)), encoding="utf-8")
    print(section)


if __name__ == "__main__":
    main()
