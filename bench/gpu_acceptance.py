"""The GPU acceptance run (issue 16): what only a real NVIDIA GPU can show, in one command.

    python bench/gpu_acceptance.py [--out DIR] [--record] [--steps N] [--python PY]

On a machine with an NVIDIA GPU and PyTorch with CUDA it checks, and with ``--record``
writes into its own section of bench/RESULTS.md (between the gpu-acceptance markers), with
the GPU's name:

1. ``tuneadvisor doctor --format json`` on that machine;
2. NVML as the sampler reads it (``metrics/nvml.py``) against ``nvidia-smi --query-gpu`` at
   the same moment, while a load process holds memory and keeps the GPU busy: utilisation,
   memory used, power; and the load's own pid and memory in NVML's process list against
   ``nvidia-smi --query-compute-apps``;
3. the sampler's cost per round with the NVML calls (``NvmlSampler.sample`` alone, and a
   whole watch round of the load's process tree);
4. ``tuneadvisor run mnist_single`` on CUDA with the costly input pipeline (``--input-cost
   medium``), one core and one worker, profiled and watched; its report (profile, recording
   and the bundled job script); then ``run --from`` that report (the advised workers and
   cores): ``dataloader-bound`` (profile) and ``dataloader-bound-live`` (recording) expected
   on the first and not on the second, GPU utilisation from both recordings, the throughput
   gain, and the training process's GPU memory attributed to its pid;
5. ``tuneadvisor run cifar100_wrn --amp`` on CUDA for a few steps.

Without a GPU it runs what it can (doctor, the CPU side of the sampler, the two mnist runs on
the CPU with fewer steps), says what it skipped, and exits 0: a failed check is a result to
record, not a crash. Everything it ran is in DIR (default: a temporary folder): the runs,
the reports, ``acceptance.json`` and ``acceptance.md``.

The GPU machine needs PyTorch with CUDA, nvidia-ml-py and psutil (a CUDA image usually has
them) and this project's other dependencies: where that machine cannot reach a package
index, bring them as wheels (``pip download --only-binary=:all: --no-deps textual
line_profiler simpleeval plotext platformdirs mdit-py-plugins``), install them with ``pip
install --no-index --target DIR`` and put DIR and this checkout on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tuneadvisor.metrics.host import HostSampler  # noqa: E402
from tuneadvisor.metrics.nvml import NvmlSampler  # noqa: E402
from tuneadvisor.metrics.recording import parse_recording  # noqa: E402
from tuneadvisor.watch.session import Sampler  # noqa: E402

RESULTS = ROOT / "bench" / "RESULTS.md"
START, END = "<!-- gpu-acceptance:start -->", "<!-- gpu-acceptance:end -->"
MIB = 1024 * 1024

# A GPU load: holds about HOLD_MIB on the first visible GPU and multiplies matrices until
# stdin closes; prints "ready PID" once the memory is held and the work has started.
LOAD_PY = """
import sys, threading, torch
hold = torch.empty(int(sys.argv[1]) * 1024 * 1024, dtype=torch.uint8, device="cuda")
a = torch.randn(4096, 4096, device="cuda")
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
a @ a; torch.cuda.synchronize()
print("ready", flush=True)
while not stop.is_set():
    for _ in range(20):
        b = a @ a
    torch.cuda.synchronize()
"""
HOLD_MIB = 3000


@dataclass
class Check:
    """One part of the run: what it found, and whether that is what a GPU should show."""

    name: str
    status: str = "passed"  # passed, failed, skipped
    detail: list[str] = field(default_factory=list)
    numbers: dict[str, Any] = field(default_factory=dict)

    def expect(self, ok: bool, what: str) -> None:
        self.detail.append(("ok: " if ok else "NOT: ") + what)
        if not ok:
            self.status = "failed"


def _run(cmd: list[str], timeout: float, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False, **kw)


def _tool(python: str, *args: str, timeout: float = 600, cwd: Path | None = None) -> Any:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
        ),
    }
    return _run([python, "-m", "tuneadvisor", *args], timeout, env=env, cwd=cwd)


def _smi(*query: str) -> list[list[str]]:
    done = _run(["nvidia-smi", *query, "--format=csv,noheader,nounits"], 30)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip() or done.stdout.strip())
    return [[c.strip() for c in line.split(",")] for line in done.stdout.splitlines() if line]


def _agree(ours: float | None, theirs: float | None, within: float, share: float) -> bool:
    """Both read, and no further apart than ``within`` or ``share`` of nvidia-smi's value."""
    if ours is None or theirs is None:
        return False
    return abs(ours - theirs) <= max(within, share * theirs)


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None  # "[N/A]", "[Not Supported]"


def environment(python: str) -> Check:
    check = Check("environment")
    probe = _run(
        [
            python,
            "-c",
            "import json, torch; print(json.dumps({'torch': torch.__version__,"
            " 'cuda': torch.version.cuda, 'available': torch.cuda.is_available(),"
            " 'gpu': torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}))",
        ],
        120,
    )
    torch_info = (
        json.loads(probe.stdout) if probe.returncode == 0 else {"error": probe.stderr[-300:]}
    )
    gpus: list[list[str]] = []
    if shutil.which("nvidia-smi"):
        try:
            gpus = _smi("--query-gpu=index,name,memory.total,driver_version,power.limit")
        except RuntimeError as exc:
            check.detail.append(f"nvidia-smi: {exc}")
    check.numbers = {
        "host": platform.node(),
        "kernel": platform.release(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "training_python": python,
        "torch": torch_info,
        "gpus": [
            dict(
                zip(
                    ("index", "name", "memory_total_mib", "driver", "power_limit_w"),
                    g,
                    strict=False,
                )
            )
            for g in gpus
        ],
    }
    if not gpus:
        check.status = "skipped"
        check.detail.append("no NVIDIA GPU here (nvidia-smi absent or found none)")
    return check


def doctor(python: str) -> Check:
    check = Check("doctor")
    done = _tool(python, "doctor", "--format", "json", timeout=120)
    if done.returncode == 2 and "invalid choice" in done.stderr:
        check.status = "skipped"
        check.detail.append("this checkout has no `doctor` command")
        return check
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        check.expect(
            False, f"doctor printed no JSON (exit {done.returncode}): {done.stderr[-300:]}"
        )
        return check
    check.numbers = report
    check.expect(done.returncode == 0, f"doctor exit status {done.returncode}")
    return check


def _start_load() -> subprocess.Popen[str]:
    load = subprocess.Popen(
        [sys.executable, "-c", LOAD_PY, str(HOLD_MIB)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert load.stdout is not None
    line = load.stdout.readline()
    if not line.startswith("ready"):
        load.kill()
        raise RuntimeError(f"the GPU load did not start: {line!r}")
    return load


def _stop(load: subprocess.Popen[str]) -> None:
    if load.stdin is not None:
        load.stdin.close()
    try:
        load.wait(30)
    except subprocess.TimeoutExpired:
        load.kill()


def nvml_against_nvidia_smi(gpu: bool, work: Path) -> list[Check]:
    values, cost = Check("NVML values against nvidia-smi"), Check("sampler cost per round")
    if not gpu:
        values.status = "skipped"
        values.detail.append("no GPU: NVML has nothing to compare")
        cost.numbers = _round_cost(os.getpid(), None)
        cost.detail.append("host sampler only (no NVML here)")
        return [values, cost]
    load = _start_load()
    try:
        time.sleep(2.0)  # utilisation is an average over NVML's last sample period
        sampler = NvmlSampler()
        values.expect(sampler.open() is None, f"NVML opened ({sampler.reason or 'no problem'})")
        rows = []
        for _ in range(5):
            reading = sampler.sample(time.monotonic())
            smi = _smi("--query-gpu=index,utilization.gpu,memory.used,power.draw")[0]
            apps = _smi("--query-compute-apps=pid,used_memory")
            rows.append((reading, smi, apps))
            time.sleep(0.5)
        reading, smi, apps = rows[-1]
        first = reading.gpus[0]
        values.numbers["driver"] = sampler.driver
        values.numbers["rounds"] = [
            {
                "nvml": {
                    "util_pct": r.gpus[0].util_pct,
                    "mem_used_mib": r.gpus[0].mem_used_mib,
                    "power_w": r.gpus[0].power_w,
                },
                "nvidia_smi": {
                    "util_pct": _number(s[1]),
                    "mem_used_mib": _number(s[2]),
                    "power_w": _number(s[3]),
                },
            }
            for r, s, _ in rows
        ]
        values.numbers["problems"] = list(reading.problems)
        mem_smi = _number(smi[2])
        values.expect(
            _agree(first.mem_used_mib, mem_smi, 64.0, 0.02),
            f"memory used: NVML {first.mem_used_mib} MiB, nvidia-smi {mem_smi} MiB",
        )
        utils = [(r.gpus[0].util_pct, _number(s[1])) for r, s, _ in rows]
        values.expect(
            all(a is not None and b is not None and abs(a - b) <= 15 for a, b in utils),
            f"utilisation (NVML, nvidia-smi) per round: {utils}",
        )
        values.expect(
            min(a or 0 for a, _ in utils) >= 50, "the matrix load shows as a busy GPU (>= 50 %)"
        )
        power_smi = _number(smi[3])
        values.expect(
            _agree(first.power_w, power_smi, 15.0, 0.15),
            f"power: NVML {first.power_w} W, nvidia-smi {power_smi} W",
        )
        ours = [p for p in reading.procs if p.pid == load.pid]
        smi_ours = [a for a in apps if a and a[0] == str(load.pid)]
        values.numbers["load_pid"] = load.pid
        values.numbers["nvml_procs"] = [asdict(p) for p in reading.procs]
        values.numbers["nvidia_smi_apps"] = apps
        values.expect(
            bool(ours) and (ours[0].used_mib or 0) >= HOLD_MIB,
            f"the load's pid {load.pid} in NVML's process list with >= {HOLD_MIB} MiB: "
            f"{[(p.pid, p.used_mib) for p in reading.procs]}",
        )
        values.expect(
            bool(ours)
            and bool(smi_ours)
            and _number(smi_ours[0][1]) is not None
            and abs((ours[0].used_mib or 0) - (_number(smi_ours[0][1]) or 0)) <= 2,
            f"its memory as nvidia-smi --query-compute-apps says: {smi_ours}",
        )
        cost.numbers = _round_cost(load.pid, sampler)
        sampler.close()
        raw_nvml(work / "nvml-raw.json")
    finally:
        _stop(load)
    return [values, cost]


def raw_nvml(path: Path) -> None:
    """pynvml's own answers, as they came (the values the NVML stand-in in the tests is
    written from): every call the sampler and doctor make, on every device."""
    import pynvml  # the bench may: only the package keeps pynvml in metrics/nvml.py

    def call(fn: str, *args: Any) -> Any:
        try:
            value = getattr(pynvml, fn)(*args)
        except Exception as exc:
            return {"error": type(exc).__name__, "text": str(exc)}
        if isinstance(value, list):
            return [call_struct(v) for v in value]
        return call_struct(value)

    def call_struct(value: Any) -> Any:
        if hasattr(value, "_fields_"):
            return {name: call_struct(getattr(value, name)) for name, *_ in value._fields_}
        return value.decode() if isinstance(value, bytes) else value

    pynvml.nvmlInit()
    out: dict[str, Any] = {
        "nvml_version": call("nvmlSystemGetNVMLVersion"),
        "driver": call("nvmlSystemGetDriverVersion"),
        "cuda_driver": call("nvmlSystemGetCudaDriverVersion"),
        "count": call("nvmlDeviceGetCount"),
        "devices": [],
    }
    for index in range(pynvml.nvmlDeviceGetCount()):
        h = pynvml.nvmlDeviceGetHandleByIndex(index)
        out["devices"].append(
            {
                "index": index,
                "name": call("nvmlDeviceGetName", h),
                "uuid": call("nvmlDeviceGetUUID", h),
                "pci": call("nvmlDeviceGetPciInfo", h),
                "memory": call("nvmlDeviceGetMemoryInfo", h),
                "memory_v2": call("nvmlDeviceGetMemoryInfo", h, pynvml.nvmlMemory_v2),
                "utilization": call("nvmlDeviceGetUtilizationRates", h),
                "power_mw": call("nvmlDeviceGetPowerUsage", h),
                "power_limit_mw": call("nvmlDeviceGetEnforcedPowerLimit", h),
                "temperature": call("nvmlDeviceGetTemperature", h, pynvml.NVML_TEMPERATURE_GPU),
                "sm_clock": call("nvmlDeviceGetClockInfo", h, pynvml.NVML_CLOCK_SM),
                "mem_clock": call("nvmlDeviceGetClockInfo", h, pynvml.NVML_CLOCK_MEM),
                "pstate": call("nvmlDeviceGetPerformanceState", h),
                "pcie_rx": call("nvmlDeviceGetPcieThroughput", h, pynvml.NVML_PCIE_UTIL_RX_BYTES),
                "pcie_tx": call("nvmlDeviceGetPcieThroughput", h, pynvml.NVML_PCIE_UTIL_TX_BYTES),
                "mig_mode": call("nvmlDeviceGetMigMode", h),
                "compute_procs": call("nvmlDeviceGetComputeRunningProcesses", h),
                "process_utilization": call("nvmlDeviceGetProcessUtilization", h, 0),
                "compute_mode": call("nvmlDeviceGetComputeMode", h),
            }
        )
    pynvml.nvmlShutdown()
    path.write_text(json.dumps(out, indent=1, default=str))


def _round_cost(pid: int, nvml: NvmlSampler | None, rounds: int = 100) -> dict[str, Any]:
    """CPU (thread time) and wall time per round: NVML alone, and a whole watch round."""

    def timed(fn: Callable[[], object]) -> dict[str, float]:
        fn()  # the first round reads more (process roles, environments)
        cpu, wall = [], []
        for _ in range(rounds):
            c0, w0 = time.thread_time(), time.perf_counter()
            fn()
            cpu.append(time.thread_time() - c0)
            wall.append(time.perf_counter() - w0)
            time.sleep(0.01)
        return {
            "cpu_ms_median": 1000 * statistics.median(cpu),
            "wall_ms_median": 1000 * statistics.median(wall),
            "wall_ms_p95": 1000 * sorted(wall)[int(0.95 * len(wall)) - 1],
        }

    out: dict[str, Any] = {"rounds": rounds}
    if nvml is not None:
        out["nvml_sample"] = timed(lambda: nvml.sample(time.monotonic()))
        out["gpus"] = len(nvml.devices)
        quick = NvmlSampler(pcie=False)  # what watch uses under 1 s intervals
        quick.open()
        out["nvml_sample_without_pcie"] = timed(lambda: quick.sample(time.monotonic()))
        quick.close()
    sampler = Sampler(HostSampler([pid]), nvml)
    out["watch_round"] = timed(sampler.sample)
    return out


def _report(python: str, run_dir: Path, job: Path, out: Path) -> dict[str, Any]:
    args = [
        "report",
        str(run_dir / "profile.lprof"),
        "--metrics",
        str(run_dir / "metrics.jsonl"),
        "--job",
        str(job),
        "--format",
        "json",
    ]
    done = _tool(python, *args, timeout=300)
    out.write_text(done.stdout)
    if done.returncode != 0:
        raise RuntimeError(f"report exit {done.returncode}: {done.stderr[-400:]}")
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def _latest_run(runs: Path, label: str) -> Path:
    for record in sorted(runs.glob("*/run.json"), reverse=True):
        if json.loads(record.read_text()).get("label") == label:
            return record.parent
    raise RuntimeError(f"no run labelled {label} in {runs}")


def _recorded(run_dir: Path, task_pids: list[int]) -> dict[str, Any]:
    rec = parse_recording((run_dir / "metrics.jsonl").read_text())
    utils = [g.util_pct for s in rec.snapshots for g in s.gpus if g.util_pct is not None]
    held = {p.pid: p.used_mib for s in rec.snapshots for p in s.gpu_procs}
    return {
        "rounds": len(rec.snapshots),
        "gpu_util_mean": round(statistics.fmean(utils), 1) if utils else None,
        "gpu_pids": sorted(held),
        "training_pid_gpu_mib": max((held.get(pid) or 0 for pid in task_pids), default=None),
        "no_data": rec.header.gpu_no_data if rec.header else None,
    }


def mnist(python: str, work: Path, gpu: bool, steps: int) -> Check:
    """The user's loop: run, report, apply the advice to the job script, run with it."""
    check = Check("mnist_single: one worker, then the advised workers")
    runs, job = work / "runs", ROOT / "slurm" / "mnist_single.sbatch"
    tuned = work / "mnist_single-advised.sbatch"
    common = [
        "--runs",
        str(runs),
        "--python",
        python,
        "--max-steps",
        str(steps),
        "--synthetic",
        str(max(steps * 64, 2048)),
        "--input-cost",
        "medium",
        "--no-progress",
        "--profile",
        *(["--gpus", "1"] if gpu else []),
    ]
    first = _tool(
        python,
        "run",
        "mnist_single",
        "--cpus-per-task",
        "1",
        "--num-workers",
        "1",
        "--label",
        "one-worker",
        *common,
        timeout=900,
        cwd=work,
    )
    check.expect(first.returncode == 0, f"first run exit {first.returncode} {first.stderr[-300:]}")
    if first.returncode != 0:
        return check
    one = _latest_run(runs, "one-worker")
    report_one = _report(python, one, job, work / "report-one-worker.json")
    applied = _tool(
        python,
        "apply",
        str(one / "profile.lprof"),
        "--metrics",
        str(one / "metrics.jsonl"),
        "--job",
        str(job),
        "-o",
        str(tuned),
        timeout=120,
    )
    check.expect(applied.returncode == 0, f"apply wrote {tuned.name}: {applied.stderr[-300:]}")
    second = _tool(
        python,
        "run",
        "mnist_single",
        "--from",
        str(work / "report-one-worker.json"),
        "--label",
        "advised",
        *common,
        timeout=900,
        cwd=work,
    )
    check.expect(
        second.returncode == 0, f"advised run exit {second.returncode} {second.stderr[-300:]}"
    )
    if second.returncode != 0:
        return check
    advised = _latest_run(runs, "advised")
    report_adv = _report(
        python, advised, tuned if tuned.exists() else job, work / "report-advised.json"
    )
    for name, run_dir, report in (
        ("one_worker", one, report_one),
        ("advised", advised, report_adv),
    ):
        record = json.loads((run_dir / "run.json").read_text())
        check.numbers[name] = {
            "run": run_dir.name,
            "device": record.get("start", {}).get("device"),
            "settings": record["settings"],
            "samples_per_s_median": record["summary"].get("samples_per_s_median"),
            "findings": [f["id"] for f in report["findings"]],
            "recording": _recorded(run_dir, record.get("task_pids", [])),
            "plan": report["advice"]["plan"],
        }
    a, b = check.numbers["one_worker"], check.numbers["advised"]
    check.expect(
        "dataloader-bound" in a["findings"], f"one worker: dataloader-bound ({a['findings']})"
    )
    check.expect(
        "dataloader-bound" not in b["findings"],
        f"advised: not dataloader-bound ({b['findings']}; next plan {b['plan']['sbatch']})",
    )
    if gpu:
        check.expect(
            str(a["device"]).startswith("cuda") and str(b["device"]).startswith("cuda"),
            f"both runs trained on CUDA ({a['device']}, {b['device']})",
        )
        live = {"dataloader-bound-live", "dataloader-cores-saturated-live"}
        check.expect(
            bool(live & set(a["findings"])),
            f"one worker: input-bound from the recording alone ({a['findings']})",
        )
        check.expect(
            not live & set(b["findings"]),
            f"advised: not input-bound from the recording ({b['findings']})",
        )
        for run in (a, b):
            rec = run["recording"]
            check.expect(
                (rec["training_pid_gpu_mib"] or 0) > 0,
                f"{run['run']}: the training pid holds GPU memory in the recording "
                f"({rec['training_pid_gpu_mib']} MiB; GPU pids {rec['gpu_pids']})",
            )
    gain = (b["samples_per_s_median"] or 0) / (a["samples_per_s_median"] or float("inf"))
    check.numbers["throughput_gain"] = round(gain, 2)
    check.expect(gain > 1.2, f"advised/one-worker throughput {gain:.2f}x")
    return check


def cifar_amp(python: str, work: Path, gpu: bool) -> Check:
    check = Check("cifar100_wrn with AMP")
    if not gpu:
        check.status = "skipped"
        check.detail.append("no GPU: AMP on CUDA cannot run here")
        return check
    runs = work / "runs"
    done = _tool(
        python,
        "run",
        "cifar100_wrn",
        "--amp",
        "--gpus",
        "1",
        "--cpus-per-task",
        "8",
        "--num-workers",
        "8",
        "--max-steps",
        "60",
        "--synthetic",
        "5000",
        "--max-eval-batches",
        "2",
        "--label",
        "cifar-amp",
        "--runs",
        str(runs),
        "--python",
        python,
        "--no-progress",
        timeout=900,
        cwd=work,
    )
    check.expect(done.returncode == 0, f"exit {done.returncode} {done.stderr[-300:]}")
    if done.returncode == 0:
        record = json.loads((_latest_run(runs, "cifar-amp") / "run.json").read_text())
        check.numbers = {
            "start": record.get("start"),
            "summary": record.get("summary"),
            "resources": record.get("resources"),
        }
        check.expect(
            record["start"].get("amp") is True
            and str(record["start"].get("device")).startswith("cuda"),
            "trained with AMP on CUDA",
        )
    return check


def _markdown(checks: list[Check], env: dict[str, Any], seconds: float) -> str:
    gpus = (
        ", ".join(
            f"{g['name']} ({g['memory_total_mib']} MiB, driver {g['driver']})"
            for g in env.get("gpus", [])
        )
        or "none"
    )
    lines = [
        "## GPU acceptance run (issue 16)",
        "",
        f"`python bench/gpu_acceptance.py` on {env.get('date') or time.strftime('%Y-%m-%d')}, "
        f"{seconds:.0f} s. GPU: {gpus}. Host: {env.get('cpus')} CPUs, kernel {env.get('kernel')}, "
        f"torch {env.get('torch', {}).get('torch')} (CUDA {env.get('torch', {}).get('cuda')}).",
        "",
    ]
    for check in checks:
        lines.append(f"### {check.name}: {check.status}")
        lines += [f"- {d}".replace("\n", " ").rstrip() for d in check.detail]
        if check.name == "doctor" and check.numbers.get("checks"):
            lines += ["", "| check | status | value |", "|---|---|---|"]
            lines += [
                f"| {c['id']} | {c['status']} | {c['value']} |" for c in check.numbers["checks"]
            ]
        elif check.numbers and check.name != "environment":
            lines += ["", "```json", json.dumps(check.numbers, indent=1, default=str)[:3000], "```"]
        lines.append("")
    return "\n".join(lines)


def record(section: str) -> None:
    text = RESULTS.read_text() if RESULTS.exists() else ""
    block = f"{START}\n{section}\n{END}"
    if START in text and END in text:
        head, _, rest = text.partition(START)
        _, _, tail = rest.partition(END)
        text = head + block + tail
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    RESULTS.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="keep everything here (default: a temp folder)")
    parser.add_argument("--record", action="store_true", help="write the section of RESULTS.md")
    parser.add_argument("--steps", type=int, default=None, help="mnist steps per run")
    parser.add_argument("--python", default=sys.executable, help="the training interpreter")
    parser.add_argument(
        "--from-json",
        type=Path,
        metavar="FILE",
        help="record an acceptance.json brought back from a GPU machine",
    )
    args = parser.parse_args(argv)
    if args.from_json is not None:  # the results of a run elsewhere, recorded here
        saved = [Check(**c) for c in json.loads(args.from_json.read_text())]
        env_saved = saved[0].numbers
        section = _markdown(saved, env_saved, float(env_saved.get("seconds", 0)))
        record(section)
        print(section)
        return 0
    work = args.out or Path(tempfile.mkdtemp(prefix="gpu-acceptance-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    env = environment(args.python)
    gpu = env.status != "skipped" and bool(env.numbers["torch"].get("available"))
    steps = args.steps or (200 if gpu else 12)
    checks = [env]
    parts: list[tuple[str, Callable[[], list[Check]]]] = [
        ("doctor", lambda: [doctor(args.python)]),
        ("NVML", lambda: nvml_against_nvidia_smi(gpu, work)),
        ("mnist_single", lambda: [mnist(args.python, work, gpu, steps)]),
        ("cifar100_wrn", lambda: [cifar_amp(args.python, work, gpu)]),
    ]
    for name, part in parts:
        try:
            checks += part()
        except Exception as exc:  # a broken part is a failed check, the others still run
            checks.append(Check(name, "failed", [f"{type(exc).__name__}: {exc}"]))
        print(f"{checks[-1].name}: {checks[-1].status}", flush=True)
    seconds = time.monotonic() - started
    env.numbers["seconds"] = round(seconds)
    env.numbers["date"] = time.strftime("%Y-%m-%d")
    (work / "acceptance.json").write_text(
        json.dumps([asdict(c) for c in checks], indent=1, default=str)
    )
    section = _markdown(checks, env.numbers, seconds)
    (work / "acceptance.md").write_text(section)
    if args.record:
        record(section)
    for check in checks:
        print(f"{check.status:8} {check.name}")
        for line in check.detail:
            print(f"         {line}")
    print(f"everything in {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
