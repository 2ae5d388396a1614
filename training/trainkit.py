"""What every bundled training script shares: the knobs the advisor turns, progress lines,
the costly input pipeline, and the distributed set-up for srun, torchrun or one process.

The scripts import this module from their own folder (``python training/X.py``, ``kernprof -l
training/X.py`` and ``torchrun training/X.py`` all put that folder first on ``sys.path``), so
copy it along with a script.

Knobs (same flags in every script): ``--num-workers`` (default: ``$SLURM_CPUS_PER_TASK``),
``--pin-memory``, ``--persistent-workers``, ``--prefetch-factor``, ``--batch-size``, ``--amp``,
``--max-steps``, ``--data-dir`` and ``--input-cost`` (per-sample decode plus augmentation, so that
a run can be input-bound on CPUs too).

Test mode: ``--device-time-ms MS`` replaces each step's device work (forward, backward,
optimizer) by a sleep of MS milliseconds (``MS/sample``: per sample of the batch), which uses
no CPU, so that the input pipeline and the advice can be tested and benchmarked on a CPU-only
machine as if a GPU of that speed did the work. The ``start`` event says
``"test_mode": "device-time-stand-in"`` and the script prints a line saying so. It trains
nothing (the loss reported is 0) and is never a substitute for the GPU acceptance run.

Trace: ``--torch-profile DIR`` captures a few training steps with torch.profiler (wait 1, warmup
1, active 3: the schedule ``TRACE_SCHEDULE``) and writes one gzipped Chrome trace per rank,
``DIR/rank{R}.{time_ns}.pt.trace.json.gz`` (``tensorboard_trace_handler``); ``Progress.step``
steps the profiler, ``Progress.close`` ends it (a run shorter than the schedule keeps what
it recorded). ``tuneadvisor run --profile torch`` passes the run's folder.

Line profiles: under ``kernprof -l`` a DataLoader worker forked inside the profiled function
inherits line_profiler's tracer (``sys.gettrace()`` in the child is its manager) and runs each
of its lines through it: 15 % and 28 % slower on the bundled MNIST loop at medium and high
input cost, and its lines are in no profile (a worker never writes one). Importing this
module registers ``os.register_at_fork(after_in_child=...)``, which turns line_profiler's
tracer off in every forked child (``untrace_forked_child``; another tool's tracer is left
alone), and the ``start`` event of a profiled run says ``"profile_workers_traced": false``.

Progress: one JSON object per line on stdout after ``TUNEADVISOR `` (rank 0 only in DDP):
``start`` (settings), ``step`` (``steps``: the optimizer steps since the event before,
``step_time_s`` and ``samples_per_s`` over those steps, ``loss``), ``epoch``
(``test_loss``, ``accuracy``, ``samples_per_s``), ``end``; DDP scripts add ``world_size`` and
count samples over all ranks.
"""

from __future__ import annotations

import argparse
import builtins
import io
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from PIL import Image

PROGRESS_PREFIX = "TUNEADVISOR "

# --input-cost levels: the side, in pixels, of the "full-size photo" each sample is decoded
# from (0: none), and whether the sample is augmented.
INPUT_COSTS: dict[str, tuple[int, bool]] = {
    "none": (0, False),  # the tutorial's ToTensor + Normalize: nearly free
    "low": (0, True),  # plus the usual augmentation: still cheap
    "medium": (384, True),  # plus a 384 px JPEG decode (and a warp on MNIST): a few ms/sample
    "high": (768, True),  # a 768 px photo: ~8 ms/sample, one worker cannot feed a GPU
}


TEST_MODE = "device-time-stand-in"  # the name of --device-time-ms in every record


@dataclass(frozen=True)
class DeviceTime:
    """--device-time-ms: a fixed wait per step, or per sample (``0.5/sample``)."""

    ms: float
    per_sample: bool = False

    def seconds(self, samples: int) -> float:
        return self.ms * (samples if self.per_sample else 1) / 1000.0

    def __str__(self) -> str:
        return f"{self.ms:g}/sample" if self.per_sample else f"{self.ms:g}"


def parse_device_time(value: str) -> DeviceTime:
    text, per_sample = value.strip(), False
    if text.endswith("/sample"):
        text, per_sample = text[: -len("/sample")], True
    try:
        ms = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected milliseconds (50) or milliseconds per sample (0.5/sample), got {value!r}"
        ) from None
    if not 0 <= ms <= 600_000:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"must be 0..600000 ms, got {value!r}")
    return DeviceTime(ms, per_sample)


def stand_in_step(stand_in: DeviceTime, samples: int) -> torch.Tensor:
    """The test mode's step: a sleep for the device's work, which uses no CPU (the batch still
    came through the real input pipeline and onto the device). The loss is 0: nothing trains."""
    time.sleep(stand_in.seconds(samples))
    return torch.zeros(())


def announce_test_mode(args: argparse.Namespace) -> None:
    """The script's own log line: a run in the test mode says so where a person reads it."""
    if getattr(args, "device_time_ms", None) is not None:
        print(
            f"TEST MODE {TEST_MODE}: each step's device work is a {args.device_time_ms} ms "
            "sleep; this run trains nothing and is no GPU acceptance run",
            file=sys.stderr,
            flush=True,
        )


def emit(event: str, **fields: Any) -> None:
    """One progress record on stdout, flushed so a watcher sees it at once."""
    print(PROGRESS_PREFIX + json.dumps({"event": event, **fields}), flush=True)


# torch.profiler's schedule for --torch-profile: skip the first step (workers starting), one
# warm-up step, then three recorded steps; once only, so the trace stays a few MB.
TRACE_SCHEDULE: dict[str, int] = {"wait": 1, "warmup": 1, "active": 3, "repeat": 1}


def start_trace(trace_dir: str | None, rank: int) -> Any:
    """A started torch.profiler writing ``rank{rank}.*.pt.trace.json.gz`` into ``trace_dir``
    (CPU, and CUDA where there is one), or None without a folder."""
    if not trace_dir:
        return None
    from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

    os.makedirs(trace_dir, exist_ok=True)
    activities = [ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(ProfilerActivity.CUDA)
    prof = profile(
        activities=activities,
        schedule=schedule(**TRACE_SCHEDULE),
        on_trace_ready=tensorboard_trace_handler(
            trace_dir, worker_name=f"rank{rank}", use_gzip=True
        ),
    )
    prof.start()
    return prof


class Progress:
    """Counts optimizer steps across epochs and reports throughput since the last report.

    ``scale`` multiplies this process's samples: the world size in DDP, where every rank
    trains on its own share and rank 0 reports for all of them. ``trace``: a started
    torch.profiler (``start_trace``), stepped with each optimizer step.
    """

    def __init__(
        self, max_steps: int | None, scale: int = 1, enabled: bool = True, trace: Any = None
    ) -> None:
        self.max_steps = max_steps
        self.scale = scale
        self.enabled = enabled
        self.trace = trace
        self.steps = 0
        self.samples = 0
        self._last_steps = 0
        self._last_samples = 0
        self._last_time = time.perf_counter()
        self._last_step_at: float | None = None  # when the newest step ended
        # Training seconds of the steps not yet reported, from before a pause (the test after
        # an epoch): those steps are reported with the next event, over their own time only.
        self._banked = 0.0

    @property
    def done(self) -> bool:
        return self.max_steps is not None and self.steps >= self.max_steps

    def step(self, samples: int) -> None:
        self.steps += 1
        self.samples += samples * self.scale
        self._last_step_at = time.perf_counter()
        if self.trace is not None:
            self.trace.step()

    def close(self) -> None:
        """End the trace (written now if its active steps had begun)."""
        if self.trace is not None:
            trace, self.trace = self.trace, None
            trace.stop()

    def restart_clock(self) -> None:
        """Measure from now: time spent testing is not a training step. The steps trained
        since the last report are kept, with their time up to the end of the newest one, for
        the next report: the events cover every step once (each says how many), so their
        times add up to the training time (dropped, the steps at an epoch's end went missing
        and the next epoch's first event, one step long, was weighed as a whole interval)."""
        if self.steps > self._last_steps and self._last_step_at is not None:
            self._banked += max(0.0, self._last_step_at - self._last_time)
        self._last_time = time.perf_counter()

    def report(self, epoch: int, loss: float) -> None:
        now = time.perf_counter()
        steps = max(1, self.steps - self._last_steps)
        elapsed = self._banked + now - self._last_time
        if self.enabled:
            emit(
                "step",
                epoch=epoch,
                step=self.steps,
                steps=steps,  # the optimizer steps this event's figures are over
                step_time_s=round(elapsed / steps, 6),
                samples_per_s=round((self.samples - self._last_samples) / elapsed, 2)
                if elapsed > 0
                else None,
                loss=round(loss, 6),
            )
        self._last_steps, self._last_samples, self._last_time = self.steps, self.samples, now
        self._banked = 0.0


class DecodeLike:
    """Per-sample work of reading a real photo: JPEG-decode at ``size`` px, resize back.

    Small data sets are stored decoded, so their loader costs nothing; real data sets are
    compressed photos decoded and resized per sample. To get that cost honestly (it scales with
    the CPU, not a sleep), the image is upsampled to ``size`` px, JPEG-encoded, decoded and
    resized back to its own size and mode. The picture survives; the CPU time is spent.
    """

    def __init__(self, size: int, quality: int = 90) -> None:
        self.size = size
        self.quality = quality

    def __call__(self, img: Image.Image) -> Image.Image:
        mode, dims = img.mode, img.size
        photo = img.convert("RGB").resize((self.size, self.size), Image.Resampling.BICUBIC)
        buf = io.BytesIO()
        photo.save(buf, format="JPEG", quality=self.quality)
        buf.seek(0)
        decoded = Image.open(buf).convert(mode)  # Image.open is lazy: convert() decodes
        return decoded.resize(dims, Image.Resampling.BILINEAR)


def parse_input_cost(value: str) -> tuple[str, int, bool]:
    """``none|low|medium|high``, or a decode size in pixels (augmented, like medium/high)."""
    if value in INPUT_COSTS:
        size, augment = INPUT_COSTS[value]
        return value, size, augment
    try:
        size = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected one of {', '.join(INPUT_COSTS)} or a decode size in pixels, got {value!r}"
        ) from None
    if size < 0 or size > 4096:
        raise argparse.ArgumentTypeError(f"decode size must be 0..4096 pixels, got {size}")
    return value, size, True


def default_num_workers() -> int:
    """Follow the job's cores (SLURM_CPUS_PER_TASK), else 1 as pytorch/examples does on CUDA."""
    try:
        return max(0, int(os.environ.get("SLURM_CPUS_PER_TASK", "1")))
    except ValueError:
        return 1


def positive_int(value: str) -> int:
    n = int(value)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def add_knobs(
    parser: argparse.ArgumentParser,
    *,
    batch_size: int,
    batch_help: str,
    data_help: str,
    probe: bool = False,
) -> None:
    """The flags every bundled script takes, with the same names and defaults (``--probe``
    only where the script has the probe mode)."""
    parser.add_argument(
        "--batch-size",
        type=positive_int,
        default=batch_size,
        metavar="N",
        help=f"{batch_help} (default: {batch_size})",
    )
    parser.add_argument(
        "--max-steps",
        type=positive_int,
        default=None,
        metavar="N",
        help="stop after N optimizer steps in all (default: run every epoch)",
    )
    parser.add_argument(
        "--max-eval-batches",
        type=positive_int,
        default=None,
        metavar="N",
        help="evaluate on at most N test batches (default: the whole test set; with "
        "--max-steps, a test set a quarter the size of the images trained)",
    )
    parser.add_argument(
        "--device",
        choices=("auto", "cuda", "cpu"),
        default="auto",
        help="auto: cuda if available, else cpu",
    )
    parser.add_argument(
        "--amp",
        action="store_true",
        help="mixed precision: float16 with loss scaling on CUDA, bfloat16 on CPU",
    )
    parser.add_argument(
        "--num-workers",
        type=int,
        default=default_num_workers(),
        metavar="N",
        help="DataLoader worker processes (default: $SLURM_CPUS_PER_TASK, else 1)",
    )
    parser.add_argument(
        "--pin-memory",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="page-locked host batches for faster copies (default: on with CUDA)",
    )
    parser.add_argument(
        "--persistent-workers",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="keep workers alive between epochs (default: off)",
    )
    parser.add_argument(
        "--prefetch-factor",
        type=positive_int,
        default=None,
        metavar="N",
        help="batches each worker loads ahead (default: PyTorch's, 2)",
    )
    parser.add_argument(
        "--input-cost",
        type=parse_input_cost,
        default=parse_input_cost("none"),
        metavar="LEVEL",
        help="per-sample input work: none (the tutorial), low (augmentation), "
        "medium or high (JPEG decode of a 384/768 px photo, augmentation), "
        "or a decode size in pixels (default: none)",
    )
    parser.add_argument(
        "--device-time-ms",
        type=parse_device_time,
        default=None,
        metavar="MS",
        help="TEST MODE: replace each step's device work by a sleep of MS milliseconds "
        "(MS/sample: per sample), using no CPU, to test the input pipeline and the advice on "
        "a CPU-only machine; trains nothing, and is never a substitute for the GPU "
        "acceptance run",
    )
    if probe:
        parser.add_argument(
            "--probe",
            default=None,
            metavar="OUT.json",
            help="probe mode: time the step with one batch already on the device, the input "
            "pipeline alone at 0, 1, 2, 4 ... workers, and the real loop, then write OUT.json "
            "(for `tuneadvisor report --probe OUT.json`) and exit",
        )
        parser.add_argument(
            "--probe-steps",
            type=positive_int,
            default=20,
            metavar="N",
            help="probe mode: steps (or batches) in each of its timed windows (default: 20)",
        )
    parser.add_argument(
        "--torch-profile",
        default=None,
        metavar="DIR",
        help="trace a few steps with torch.profiler (wait 1, warmup 1, active 3) into "
        "DIR/rank{R}.*.pt.trace.json.gz, one file per rank",
    )
    parser.add_argument("--data-dir", default="data", metavar="DIR", help=data_help)
    parser.add_argument("--seed", type=int, default=1, metavar="S", help="random seed (default: 1)")
    parser.add_argument(
        "--log-interval",
        type=positive_int,
        default=10,
        metavar="N",
        help="how many batches to wait before logging training status",
    )


def check_knobs(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.num_workers < 0:
        parser.error("--num-workers must be 0 or more")
    args.max_eval_batches = eval_batches(
        args.max_eval_batches, args.max_steps, args.batch_size, args.test_batch_size
    )


def eval_batches(
    asked: int | None, max_steps: int | None, batch_size: int, test_batch_size: int
) -> int | None:
    """Test batches in each test pass: as asked; else, for a run cut short by --max-steps,
    as many as a quarter of the images it trains (at least one batch): a short run's test
    pass over the whole test set was a third of its time (10,000 images after 60 steps of
    64); None: the whole test set."""
    if asked is not None or max_steps is None:
        return asked
    return max(1, math.ceil(max_steps * batch_size / 4 / test_batch_size))


def loader_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """DataLoader settings shared by the train and test loaders."""
    kwargs: dict[str, Any] = {
        "num_workers": args.num_workers,
        "pin_memory": args.pin_memory,
    }
    if args.num_workers > 0:
        kwargs["persistent_workers"] = args.persistent_workers
        if args.prefetch_factor is not None:
            kwargs["prefetch_factor"] = args.prefetch_factor
    elif args.persistent_workers or args.prefetch_factor is not None:
        # DataLoader raises on these without workers; a tuning sweep should not die on it.
        print(
            "note: --persistent-workers/--prefetch-factor need --num-workers > 0; ignored",
            file=sys.stderr,
        )
    return kwargs


def pick_device(args: argparse.Namespace, local_rank: int = 0) -> torch.device | None:
    """The device to train on (``cuda:LOCAL_RANK`` on GPUs); None when CUDA was asked for
    and there is none. Also settles ``--pin-memory``'s default."""
    if args.device == "cuda" and not torch.cuda.is_available():
        print("error: --device cuda but no CUDA device is available", file=sys.stderr)
        return None
    use_cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    if args.pin_memory is None:
        args.pin_memory = use_cuda  # pinning only helps host-to-GPU copies
    if use_cuda:
        torch.cuda.set_device(local_rank % torch.cuda.device_count())
        return torch.device("cuda", local_rank % torch.cuda.device_count())
    return torch.device("cpu")


def _torchvision_version() -> str | None:
    try:
        import torchvision

        return str(torchvision.__version__)
    except ImportError:
        return None


# --------------------------------------------------------------------------- kernprof -l

# sys.monitoring's tool ids (Python 3.12+: line_profiler 5 registers there, not as a tracer)
_MONITORING_TOOLS = range(6)


def _is_line_profiler(value: object) -> bool:
    """A line_profiler object: its tracer's manager (``sys.gettrace()`` while it traces),
    the profiler itself (its tracer before 4.x; ``kernprof -l``'s ``profile`` builtin)."""
    return value is not None and type(value).__module__.partition(".")[0] == "line_profiler"


def untrace_forked_child() -> None:
    """In a child forked inside a profiled function (a DataLoader worker): line_profiler's
    tracer off for good, so the worker runs its lines at full speed. Python 3.11 and older:
    its C-level trace function (``PyEval_SetTrace``), which ``sys.settrace(None)`` clears for
    this thread, the only one a forked child has; 3.12+: its ``sys.monitoring`` events."""
    if _is_line_profiler(sys.gettrace()):
        sys.settrace(None)
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None:
        for tool in _MONITORING_TOOLS:
            if monitoring.get_tool(tool) == "line_profiler":
                monitoring.set_events(tool, 0)


os.register_at_fork(after_in_child=untrace_forked_child)


def profile_record() -> dict[str, Any]:
    """For the ``start`` event: under ``kernprof -l``, that the workers it forks run without
    line_profiler's tracer (``untrace_forked_child``); nothing when not line-profiled."""
    if not _is_line_profiler(getattr(builtins, "profile", None)):
        return {}
    return {"profile_workers_traced": False}


def settings_record(args: argparse.Namespace, common: dict[str, Any]) -> dict[str, Any]:
    """The knobs as the run really used them, for the ``start`` event."""
    cost_name, decode_px, augment = args.input_cost
    return {
        "batch_size": args.batch_size,
        "max_steps": args.max_steps,
        "num_workers": args.num_workers,
        "pin_memory": args.pin_memory,
        "persistent_workers": common.get("persistent_workers", False),
        "prefetch_factor": common.get("prefetch_factor"),
        "amp": args.amp,
        "input_cost": cost_name,
        "decode_px": decode_px,
        "augment": augment,
        "torch": torch.__version__,
        "torchvision": _torchvision_version(),
        "python": platform.python_version(),
        "cuda": torch.version.cuda if torch.cuda.is_available() else None,
        "threads": torch.get_num_threads(),
        "slurm_job_id": os.environ.get("SLURM_JOB_ID") or os.environ.get("SLURM_JOBID"),
        "pid": os.getpid(),
        "cores": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        **stand_in_record(args),
        **profile_record(),
    }


def stand_in_record(args: argparse.Namespace) -> dict[str, Any]:
    """``test_mode`` and the stand-in's wait, in every record of a run in the test mode."""
    stand_in = getattr(args, "device_time_ms", None)
    if stand_in is None:
        return {}
    return {"test_mode": TEST_MODE, "device_time_ms": str(stand_in)}


# --------------------------------------------------------------------------- distributed


@dataclass(frozen=True)
class World:
    """Who this process is: ``launcher`` is ``single``, ``srun`` or ``torchrun``."""

    launcher: str
    rank: int = 0
    local_rank: int = 0
    world_size: int = 1

    @property
    def distributed(self) -> bool:
        return self.world_size > 1 or self.launcher != "single"

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def _int_env(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


def world_from_env() -> World:
    """torchrun's variables (RANK, LOCAL_RANK, WORLD_SIZE) win; else srun's (SLURM_PROCID,
    SLURM_LOCALID, SLURM_NTASKS) when the job has more than one task; else one process."""
    env = os.environ
    if "RANK" in env and "WORLD_SIZE" in env:
        return World(
            "torchrun", _int_env("RANK", 0), _int_env("LOCAL_RANK", 0), _int_env("WORLD_SIZE", 1)
        )
    tasks = _int_env("SLURM_NTASKS", _int_env("SLURM_NPROCS", 1))
    if "SLURM_PROCID" in env and tasks > 1:
        return World("srun", _int_env("SLURM_PROCID", 0), _int_env("SLURM_LOCALID", 0), tasks)
    return World("single")


def first_host(nodelist: str) -> str | None:
    """The first host of a Slurm node list (``scontrol show hostnames`` when it is there)."""
    if not nodelist:
        return None
    if shutil.which("scontrol"):
        try:
            out = subprocess.run(
                ["scontrol", "show", "hostnames", nodelist],
                capture_output=True,
                text=True,
                timeout=30,
                check=True,
            ).stdout.split()
            if out:
                return out[0]
        except (OSError, subprocess.SubprocessError):
            pass
    if "[" not in nodelist:
        return nodelist.split(",")[0]
    return None


def init_distributed(world: World, device: torch.device) -> None:
    """Join the process group: NCCL on GPUs, gloo on CPUs. Under srun the rendezvous address
    is the job's first node and the port follows the job id unless MASTER_ADDR/PORT are set."""
    if not world.distributed:
        return
    if world.launcher == "srun":
        os.environ.setdefault(
            "MASTER_ADDR", first_host(os.environ.get("SLURM_JOB_NODELIST", "")) or "127.0.0.1"
        )
        os.environ.setdefault("MASTER_PORT", str(10000 + _int_env("SLURM_JOB_ID", 0) % 20000))
    backend = "nccl" if device.type == "cuda" else "gloo"
    restart = os.environ.get("TORCHELASTIC_RESTART_COUNT")
    if world.launcher == "torchrun" and restart is not None:
        # After an elastic restart the agent's store still holds the dead attempt's
        # addresses; without a prefix per attempt gloo connects to ports nobody listens on.
        agent = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
        store = dist.TCPStore(
            os.environ["MASTER_ADDR"],
            int(os.environ["MASTER_PORT"]),
            world.world_size,
            is_master=not agent and world.rank == 0,
            multi_tenant=True,
        )
        dist.init_process_group(
            backend,
            store=dist.PrefixStore(f"tuneadvisor/attempt_{restart}", store),
            rank=world.rank,
            world_size=world.world_size,
        )
        return
    dist.init_process_group(backend, rank=world.rank, world_size=world.world_size)


def finish_distributed(world: World) -> None:
    if world.distributed and dist.is_initialized():
        dist.destroy_process_group()


def all_mean(value: float, world: World, device: torch.device) -> float:
    """The mean of a number over all ranks (the number itself without DDP)."""
    if not world.distributed:
        return value
    t = torch.tensor([value], dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return float(t.item()) / world.world_size
