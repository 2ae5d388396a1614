"""Generators of issue 34's hostile inputs for the end-to-end harness (bench/fuzz_e2e.py):
job logs, DCGM readings, predictions a run recorded, and job scripts whose launch sits inside
if/case/loops. Each target's seeds are drawn from its generator (``seeds``); the harness
mutates them further as it does the fixtures.

Each generator makes the shapes the campaign found costly or crashing, at sizes past the
readers' bounds: logs past the 2.5 MiB read of a log (slurm/joblog/scan.py) made of keyword
lines and of ``torch_`` runs (the backtracking shm cause), DCGM files of thousands of GPUs,
400-digit timestamps, Unicode-digit indices and values no device reports, predictions of
1e308 s and setting names holding terminal escapes, job scripts with ``mapfile`` repeated on
one line.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable

from fuzz_e2e import E2eTarget, _reports, run_record

ESCAPES = ("\x1b]52;c;cHduZWQ=\x07", "\x1b[2J", "\x1b]0;pwned\x07", "\x9b2J", "\r", "\n")
DIGITS = ("²", "٣" * 5000, "9" * 400, "０", "1e999", "-50", "1e20", "nan")


# ------------------------------------------------------------------------------ job logs


def job_log(rng: random.Random) -> bytes:
    shape = rng.randrange(6)
    size = rng.choice((200_000, 3_000_000))
    if shape == 0:  # keyword lines, each different: no line is looked at once only
        body = b"".join(b"Killed %d\n" % i for i in range(size // 10))
    elif shape == 1:  # the shm cause's backtracking shape: torch_ runs, no "No space left"
        body = (b"torch_" * 680 + b"\n") * (size // 4081)
    elif shape == 2:  # one line of millions of bytes, the cause after it
        body = b"x" * size + b"\nCUDA out of memory. Tried to allocate 2.00 GiB\n"
    elif shape == 3:  # progress-bar carriage returns and escapes
        body = (b"\r 50%|####  | " + rng.choice(ESCAPES).encode() + b" Bus error") * (size // 40)
    elif shape == 4:  # huge and Unicode numbers inside causes
        number = rng.choice(DIGITS).encode()
        body = (
            b"[Rank " + number + b"] Watchdog caught collective operation timeout: "
            b"WorkNCCL(SeqNum=" + number + b", OpType=ALLREDUCE, Timeout(ms)=" + number + b")\n"
        ) * 50
    else:  # causes at the head, in the middle and at the tail
        filler = b"epoch 1 loss 0.5\n" * (size // 17)
        body = (
            b"ModuleNotFoundError: No module named 'apex'\n" + filler
            + b"No space left on device: /dev/shm/torch_1\n" + filler
            + b"slurmstepd: error: *** JOB 5 CANCELLED AT 2026 DUE TO TIME LIMIT ***\n"
        )  # fmt: skip
    return body


# ---------------------------------------------------------------------------------- DCGM


def dcgm_dmon(rng: random.Random) -> bytes:
    gpus = rng.choice((8, 100, 3000))
    rounds = rng.choice((1, 5, 50))
    hostile = rng.random() < 0.3  # else numbers out of range only: the file is read
    value = lambda: rng.choice(("50", "0.5", "N/A", "-50", "1e20", *(DIGITS if hostile else ())))  # noqa: E731
    index = lambda i: rng.choice((str(i),) * 20 + (("²", "٣" * 5000, "9" * 12) if hostile else ()))  # noqa: E731
    rows = [
        f"GPU {index(i)}  {value()}  {value()}  {value()}  {value()}"
        for _ in range(rounds)
        for i in range(gpus)
    ]
    head = "#Entity   GPUTL  FBUSD  FBTTL  SMACT\nID        %      MiB    MiB\n"
    return (head + "\n".join(rows) + "\n").encode()


def dcgm_exporter(rng: random.Random) -> bytes:
    gpus = rng.choice((8, 100, 5000))
    hostile = rng.random() < 0.3  # else numbers out of range only: the file is read
    stamps = ("", "1700000000000", *(("9" * 400, "-5", "٣") if hostile else ()))
    stamp = lambda: rng.choice(stamps)  # noqa: E731
    value = lambda: rng.choice(("50", "1e308", "-50", "1e20", "nan", "9" * 400))  # noqa: E731
    lines = ["# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization.", "# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
    for i in range(gpus):
        gpu = rng.choice((str(i),) * 20 + (("²", "٣" * 50) if hostile else ()))
        for name in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"):
            label = f'gpu="{gpu}",UUID="GPU-{i}",modelName="{rng.choice(ESCAPES)!r}"'
            lines.append(f"{name}{{{label}}} {value()} {stamp()}".rstrip())
    return ("\n".join(lines) + "\n").encode()


# --------------------------------------------------------------------------- predictions


# The share of prediction records drawn hostile past what a reader takes (refused: exit 2);
# the rest hold values a run may record, at their edges (escapes in names, tiny and huge but
# bounded numbers), so that they are read and go through every face of `compare`.
REFUSED_SHARE = 0.3


def prediction_record(rng: random.Random) -> bytes:
    """A run record as `run --from REPORT` writes it, its prediction hostile."""
    if rng.random() < REFUSED_SHARE:
        return _refused_prediction(rng)
    return _odd_prediction(rng)


def _refused_prediction(rng: random.Random) -> bytes:
    """Numbers no run records (1e308 s, -1, denormals), names of 5,000 characters."""
    big = lambda: rng.choice((1e308, -1.0, 0.0, 1e-320, 5.0, 1e30, 2.0))  # noqa: E731

    def span() -> dict[str, float]:
        low, expected, high = sorted((big(), big(), big()))
        return {"low": low, "expected": expected, "high": high}

    name = rng.choice(("num_workers", *ESCAPES, "n" * 5000, "cpus_per_task" + ESCAPES[0]))
    record = run_record(rate=rng.choice((100.0, 1e-200, 1e30)))
    record["prediction"] = {
        "setting": {name: rng.choice((4, 0, -1, 10**30))},
        "step_s": span(),
        "speedup": span(),
        "samples_per_s": rng.choice((None, span())),
        "basis": [rng.choice(ESCAPES)],
        "ceiling": rng.choice((None, "cpu" + ESCAPES[0])),
        "notes": [rng.choice(ESCAPES) * 3],
    }
    record["label"] = rng.choice(("run", *ESCAPES))
    return json.dumps(record).encode()


def _odd_prediction(rng: random.Random) -> bytes:
    """Within what a run record may hold, at its edges: escapes and line breaks in every
    name and note, spans from 0 to 10^11, a rate of 10^-6, settings of 0 or 10^6."""
    edge = lambda: rng.choice((0.0, 1e-9, 0.001, 0.3, 5.0, 3600.0, 1e6, 1e11))  # noqa: E731

    def span() -> dict[str, float]:
        low, expected, high = sorted((edge(), edge(), edge()))
        return {"low": low, "expected": expected, "high": high}

    settings = ("num_workers", "cpus_per_task", "batch_size", "ntasks")
    name = rng.choice((*settings, *settings[:2], *(s + e for s in settings[:1] for e in ESCAPES)))
    record = run_record(rate=rng.choice((100.0, 1e-6, 5e5)), ranks=rng.choice((1, 2, 8)))
    record["prediction"] = {
        "setting": {name: rng.choice((4, 0, 1, 10**6))},
        "step_s": span(),
        "speedup": span(),
        "samples_per_s": rng.choice((None, span())),
        "basis": [rng.choice(("measured", *ESCAPES))],
        "ceiling": rng.choice((None, "cpu", "cpu" + ESCAPES[0])),
        "notes": [rng.choice(("", *ESCAPES)) * rng.choice((1, 3))],
    }
    record["label"] = rng.choice(("run", "r" * 300, *ESCAPES))
    return json.dumps(record).encode()


# ---------------------------------------------------------------------------- job scripts

_LAUNCHES = (
    "srun python train.py --epochs 2",
    "torchrun --nproc_per_node=${NGPU:-2} train.py",
    "srun --ntasks=" + "9" * 400 + " python train.py",
    "srun -n٣ python train.py ${A[$SLURM_ARRAY_TASK_ID]}",
    "python -m torch.distributed.run --nnodes=$SLURM_NNODES train.py",
)


def job_script(rng: random.Random) -> bytes:
    """A launch inside if/case/loops, nested, with arrays and mapfile lines."""
    launch = rng.choice(_LAUNCHES)
    for _ in range(rng.randint(1, 6)):
        shape = rng.randrange(5)
        if shape == 0:
            launch = f'if [ -n "$SLURM_JOB_ID" ]; then\n  {launch}\nelse\n  echo no\nfi'
        elif shape == 1:
            launch = f'case "$MODE" in\n  train) {launch} ;;\n  *) exit 1 ;;\nesac'
        elif shape == 2:
            launch = f"for i in $(seq 1 3); do\n  {launch}\ndone"
        elif shape == 3:
            launch = f"while read -r line; do\n  {launch}\ndone < list.txt"
        else:
            launch = f"run() {{\n  {launch}\n}}\nrun"
    extra = rng.choice(
        ("", "mapfile " * 20_000 + "\n", "A=(a b c)\n", "readarray -t A < f\n" * 2000)
    )
    array = rng.choice(("0-3", "٣-5", "0-" + "9" * 400, "1-2:0", "²"))
    return (
        "#!/bin/bash\n#SBATCH --job-name=train\n#SBATCH --nodes=1\n#SBATCH --ntasks=1\n"
        f"#SBATCH --cpus-per-task=2\n#SBATCH --gres=gpu:1\n#SBATCH --array={array}\n"
        f"{extra}{launch}\n"
    ).encode()


# ------------------------------------------------------------------------------- targets

_LOG_REPORTS = _reports("--job", "{D}/job.sbatch", "--log", "{F}")
_METRICS_REPORTS = _reports("--job", "{D}/job.sbatch", "--metrics", "{F}")
_COMPARE = (
    ("compare", "{D}/run", "{D}/base", "--format", "text"),
    ("compare", "{D}/run", "{D}/base", "--format", "json"),
)

# (target, its generator)
GENERATED: tuple[tuple[E2eTarget, Callable[[random.Random], bytes]], ...] = (
    (E2eTarget("e2e job log (gen)", (), "slurm-5.out", _LOG_REPORTS), job_log),
    (E2eTarget("e2e dcgmi dmon (gen)", (), "dmon.txt", _METRICS_REPORTS), dcgm_dmon),
    (E2eTarget("e2e dcgm-exporter (gen)", (), "dcgm.prom", _METRICS_REPORTS), dcgm_exporter),
    (E2eTarget("e2e prediction (gen)", (), "run/run.json", _COMPARE), prediction_record),
    (
        E2eTarget(
            "e2e job script launch (gen)", (), "job.sbatch",
            (*_reports("--job", "{F}"), ("apply", "--job", "{F}", "-o", "{D}/out.sbatch")),
        ),
        job_script,
    ),
)  # fmt: skip
TARGETS = tuple(target for target, _ in GENERATED)
_BY_NAME = {target.name: make for target, make in GENERATED}
SEEDS_PER_TARGET = 12


def seeds(target: E2eTarget) -> list[bytes] | None:
    """The generated seeds of one of these targets (None: not one of them)."""
    make = _BY_NAME.get(target.name)
    if make is None:
        return None
    return [make(random.Random(f"{target.name}:{i}")) for i in range(SEEDS_PER_TARGET)]


def maker(target: E2eTarget) -> Callable[[random.Random], bytes] | None:
    """The generator of one of these targets (None: not one of them)."""
    return _BY_NAME.get(target.name)


def generated(target: E2eTarget, rng: random.Random) -> bytes:
    """One fresh input of one of these targets."""
    return _BY_NAME[target.name](rng)
