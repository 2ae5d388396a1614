"""The step-time model (issue 21): one training step's time budget from whatever evidence
was given, and the rate the input pipeline produces batches at.

Everything is in units of the measured step (1.0 = one step of the run that was measured),
with the step's length in seconds beside it where the evidence gives one: the shares are what
a profile or a recording measures; the per-worker time per batch is derived from them:

- with W >= 1 workers and the loop waiting, the pipeline makes about one batch per step, so
  one worker takes about W step times per batch;
- with W = 0 the loop loads each batch itself: that time is the DataLoader line's (the wait).

Sources, most direct first: a probe's result (it measured the ceiling and the loop), a
line_profiler profile (line kinds' shares, steps from the hits), a torch.profiler trace (the
plugin's exclusive breakdown of the steps), a watch recording (GPU busy
share, the main process's and the workers' CPU). Each figure says where it came from and
whether it is measured or estimated (``basis``). Pure: facts in, a budget out.

Besides the workers, the main process's costs are counted (issue 31 §3): receiving each batch
from a worker (assumed, a floor of the step), the pin-memory thread (assumed), and where the
compute runs on the CPU with OMP_NUM_THREADS following the task's cores, its intra-op threads
holding every core while it runs; where two or more of those threads share their cores with
workers, the range's slow side takes the compute as long as the most measured
(OVERSUBSCRIBED_MOST). The measured workers' time per batch is read back with the same
counts, so the measured setting predicts the measured step.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from tuneadvisor.advisor.fact_view import FactView, as_view
from tuneadvisor.records import record

# How far a figure is trusted when the evidence gives no spread of its own: a profile's
# shares come from one run (its noise unmeasured); a recording's GPU busy share is a coarser
# stand-in for the compute time.
PROFILE_SPREAD = 0.15
RECORDING_SPREAD = 0.25
# line_profiler's own cost is in every profiled step: the run without it (the relaunch, the
# tuned job) may be this much faster. bench/prediction_bench.py measured 8-14 % on the bundled
# MNIST loop; the range's fast side is widened by it, the expected value is left as measured.
PROFILER_OVERHEAD = 0.15
# line_profiler's tracer is inherited by every process forked while it is on: DataLoader
# workers started inside the profiled function (``for batch in loader`` in it) run every
# Python line of their pipeline traced (a forked child's sys.gettrace() is line_profiler's;
# a pure-Python loop ran 5x slower in it), and their time is not in the profile. Up to this
# share of a batch's time in the pipeline may be the profiler's: the profiled runs of the
# bundled MNIST loop ran 15 % (medium input cost) and 28 % (high) below the same run without
# it (bench/RESULTS.md, the prediction bench's baselines against the run records beside the
# profiles, on a quiet machine); a pipeline with more Python per sample loses more.
PROFILED_WORKERS_OVERHEAD = 0.30
# torch.profiler's own cost (record_shapes, the CPU and CUDA activity buffers) is in every
# traced step too; assumed the same order as line_profiler's, fast side only.
TRACE_OVERHEAD = 0.10
# A measured spread is taken at least this wide: a few blocks of one run understate the
# run-to-run variation of a shared machine.
MIN_SPREAD = 0.05
# The slow side's main-process share is settled against the step it makes by bisection:
# this many halvings (2^-20 of the interval: far below any figure printed).
_SETTLE_ROUNDS = 20
# The pin-memory thread of the main process (pin_memory=True with workers) copies every batch
# into page-locked memory: a share of a core taken from the workers (assumed, not measured).
PIN_THREAD = 0.1
# A worker using less than this share of a core while the loop waits is waiting itself: on
# storage, not on CPU.
WORKER_BUSY_MIN = 0.5
# The main process's cost of receiving one batch from a worker (the queue, unpickling, mapping
# the tensors' shared memory), seconds: a floor under the step that more workers cannot
# remove, and CPU of the main process. Assumed: 0.8-1.2 ms of the main thread's CPU (1.2-3 ms
# of wall time) measured for a 32-image MNIST batch with two workers ahead of the loop on the
# 2-CPU test machine under load, 1.7-3.1 ms of CPU for 32 images of 3x224x224
# (bench/receive_cost.py, bench/RESULTS.md); inside the measured wait, so never more than it.
RECEIVE_S = 0.001
# Other processes' load on the measured run's CPUs (its run record) under this many cores'
# worth is the counters' noise (the kernel counts in 10 ms ticks): not counted.
OTHERS_MIN = 0.1
# Intra-op threads that follow the task's cores (two or more) sharing those cores with
# DataLoader workers: a parallel region waits for its slowest thread, and a thread whose core
# another process holds waits for the scheduler. Measured (bench/omp_oversubscription.py,
# bench/RESULTS.md) on the 2-CPU test machine under other work's load (load average 2-5), the
# bundled MNIST loop with its compute on the CPU: 2 cores and 1-3 workers with
# OMP_NUM_THREADS=2 ran at OVERSUBSCRIBED_SEEN the rate of OMP_NUM_THREADS=1 in the same
# round (the slowest 9.3x slower, its compute 91 % of the step: ~10x as long), as fast or
# faster in others: not a cost every run pays, so the range's slow side only; a profile of a
# run with one thread cannot measure it. Assumed: the compute up to this many times as long.
OVERSUBSCRIBED_MOST = 10.0
OVERSUBSCRIBED_SEEN = "0.11-1.5x"
# Cores busy together each run slower than one busy alone: all-core turbo is below
# single-core turbo on bare metal, and a VM's vCPUs share their host's cores. A one-core run
# cannot measure it. Measured on the 2-CPU test VM (bench/prediction_bench.py, bench/RESULTS.md):
# 2 busy cores delivered 1.30-2.08x one in rounds minutes apart, with no other load on them
# (0.7x the model's expected 1.87x at the worst). Assumed: where a setting keeps more cores
# busy than the measured run, its workers may each make a batch this much slower: the range's
# slow side only.
CORES_TOGETHER = 0.30


@record
class StepBudget:
    """One step of the measured run. Shares are of the step (they sum to 1)."""

    source: str  # "profile", "probe", "trace", "recording"
    wait: float  # waiting for the next batch (the DataLoader line)
    transfer: float  # host-to-device copies
    compute: float  # forward, loss, backward, optimizer: what the host waits on the device for
    sync: float  # host syncs (.item(), .cpu())
    other: float  # the rest of the loop (logging, communication when not timed apart)
    workers: int  # DataLoader workers of the measured run
    worker_steps: float  # one worker's time per batch, in measured step times
    spread: float  # relative spread of the step time (measured or assumed)
    step_s: float | None = None  # seconds per measured step; None when not known
    batch_size: int | None = None
    storage_bound: bool = False  # the loop waits while the workers are not busy
    workers_measured: int | None = None  # the probe's count reaching 95 % of the ceiling
    basis: tuple[str, ...] = ()
    # the measured steps carry an instrument's cost (a profiler): the run without it may be
    # up to this much faster (relative)
    overhead: float = 0.0
    # the main process's pin-memory thread, in cores, while workers feed it
    pin_thread: float = 0.0
    # the device's time a step, in measured steps, where a trace or GPM measured it: the loop
    # cannot run faster than the device (0.0: not measured)
    device_floor: float = 0.0
    # the pipeline's time per batch carries the instrument's cost too (workers forked under
    # line_profiler): the run without it may take up to this share less a batch (relative)
    pipeline_overhead: float = 0.0
    # the main process's cost of receiving one batch from a worker, in measured steps: the
    # expected value's (at most half the measured wait) and the range's slow side's (all of
    # the assumed figure, up to the whole wait)
    receive: float = 0.0
    receive_max: float = 0.0
    # intra-op threads hold every core of the task during the compute (CPU compute with
    # OMP_NUM_THREADS following the cores): the workers run only in the rest of the step
    threads_hold_compute: bool = False
    # workers' worth of CPU the measured run's workers had (its setting, as the model counts
    # it); None where its cores are not known (then its workers are taken as one core each)
    measured_usable: float | None = None
    # other processes held this many cores' worth of the ``pool`` CPUs the measured run could
    # use (its run record): the setting shares the pool with them (0.0: none measured)
    others: float = 0.0
    pool: int = 0
    # where those threads (two or more) share their cores with workers, the compute may take
    # up to this many times as long: the range's slow side (1.0: not counted, as where the
    # measured run's threads shared their cores already)
    oversubscribed: float = 1.0

    @property
    def busy(self) -> float:
        """What the loop does besides waiting, in step times: the floor of the step that
        more workers cannot lower; never under the device's measured time a step (a
        host-side wait of an asynchronous CUDA loop holds kernels queued before it)."""
        return max(1.0 - self.wait, self.device_floor, 1e-6)

    @property
    def held(self) -> float:
        """The share of the step the intra-op threads hold every core (0: not counted)."""
        return self.compute if self.threads_hold_compute else 0.0

    def step_with(
        self, workers: float, main: float = 1.0, pipeline: float = 1.0, compute: float = 1.0
    ) -> float:
        """Predicted step time (measured steps) with ``workers`` workers' worth of CPU; with
        workers the loop is no faster than its own time plus receiving a batch, and the
        workers work only outside the time the intra-op threads hold the cores. ``main`` and
        ``pipeline`` scale the loop's and the pipeline's times (the run without a profiler:
        the fast side); ``compute`` the compute's (threads sharing their cores with
        workers: the slow side)."""
        if workers <= 0:
            if self.workers == 0:
                return (1.0 - self.wait) * main + self.wait * pipeline
            return self.busy * main + self.worker_steps * pipeline
        longer = self.compute * (compute - 1.0)  # the compute's time past the measured
        floor = (self.busy + longer + self.receive) * main
        return max(floor, self.held * compute * main + self.worker_steps * pipeline / workers)

    def shares_cores(self, workers: int, cores: int, ranks: int = 1) -> bool:
        """At this setting the intra-op threads (one a core of the rank's, two or more)
        share their cores with workers, where that is counted."""
        return self.oversubscribed > 1.0 and workers >= 1 and cores / max(ranks, 1) >= 2

    def slower_at(self, workers: int, cores: int, ranks: int = 1) -> float:
        """How much slower the step with ``workers`` per rank on ``cores`` per task may be
        than expected: the range's slow side. Receiving a batch costs all of the assumed
        figure (up to the whole measured wait), and the main process's own time (its loop,
        receiving) is CPU all through, so at a faster step it takes a larger share of a core
        from the workers (up to a whole one): the expected value keeps the share measured."""
        slow = replace(self, receive=self.receive_max)
        expected = max(self.step_at(workers, cores, ranks), 1e-9)
        if workers <= 0:
            return max(1.0, slow.step_at(workers, cores, ranks) / expected)

        def settled(step: float) -> float:  # the step the workers make beside the main
            return slow.step_with(slow._usable_beside(workers, cores, ranks, step))

        # the step is where settled(step) == step: settled falls as the step grows (a
        # slower step leaves the main less busy); bisect between the measured share's step
        # and the step with the main on a whole core
        low, high = slow.step_at(workers, cores, ranks), settled(1e-9)
        for _ in range(_SETTLE_ROUNDS):
            middle = (low + high) / 2
            low, high = (middle, high) if settled(middle) > middle else (low, middle)
        return max(1.0, high / expected)

    def _usable_beside(self, workers: int, cores: int, ranks: int, step: float) -> float:
        """Workers' worth of CPU beside a main process whose own time is CPU all through, at
        a step of ``step`` measured steps."""
        main = min(1.0, (self.busy - self.held + self.receive) / max(step - self.held, 1e-9))
        left = self.cores_left(cores)
        return min(float(workers), max(1.0, left / max(ranks, 1) - main - self.pin_thread))

    def main_share_at(self, workers: int, cores: int, ranks: int = 1) -> float:
        """The share of a core the main process's own time takes at the range's slow side
        (all of it CPU, receiving at the assumed figure), the pin-memory thread besides."""
        step = self.step_at(workers, cores, ranks) * self.slower_at(workers, cores, ranks)
        slow = replace(self, receive=self.receive_max)
        share = slow.busy - slow.held + slow.receive
        return min(1.0, share / max(step - slow.held, 1e-9)) + slow.pin_thread

    def slower_together(self, workers: int, cores: int, ranks: int = 1) -> float:
        """How much slower the step may be where the setting keeps more cores busy with
        workers than the measured run did: each may run up to CORES_TOGETHER slower than one
        alone (the range's slow side; 1.0 where no more are busy)."""
        usable = self.usable(workers, cores, ranks)
        measured = self.measured_usable if self.measured_usable is not None else self.workers
        if usable <= measured + 1e-9 or workers <= 0:
            return 1.0
        slow = self.step_with(usable, 1.0, 1.0 / (1.0 - CORES_TOGETHER))
        return max(1.0, slow / max(self.step_with(usable), 1e-9))

    def faster_measured(self) -> float:
        """How much faster the measured run itself may have been without its instrument:
        its own setting, without the profiler's cost in its loop and its workers."""
        usable = self.measured_usable if self.measured_usable is not None else self.workers
        return self.faster_unprofiled(float(usable))

    def faster_unprofiled(self, workers: float) -> float:
        """How much faster the step with ``workers`` workers' worth may be without the
        measuring instrument (the loop's cost and its workers'): the range's fast side."""
        without = self.step_with(workers, 1.0 - self.overhead, 1.0 - self.pipeline_overhead)
        return self.step_with(workers) / max(without, 1e-9)

    def main_cores(self) -> float:
        """The cores the main process keeps busy beside the workers' (outside the time the
        intra-op threads hold them all): the loop, receiving batches, the pin-memory thread."""
        return self.busy - self.held + self.receive + self.pin_thread

    def cores_left(self, cores: int, alone: bool = False) -> float:
        """The cores a task of ``cores`` gets beside the other processes that held
        ``others`` cores' worth of the measured run's ``pool`` CPUs (``alone``: they left):
        all of them where both fit in the pool, else the kernel's fair share of it, each
        runnable thread alike (``cores`` of the task's against ``others`` of theirs; a task
        larger than the measured pool shares its own cores). The fair share, not "the pool
        less the others": busy processes beside more workers lose part of what they held
        (measured here: 2 cores beside ~1 core of other load ran 1.1-2.7x the 1-core run)."""
        if alone or self.others <= 0.0:
            return float(cores)
        pool = max(float(cores), float(self.pool))
        if cores + self.others <= pool:
            return float(cores)
        return min(float(cores), pool * cores / (cores + self.others))

    def usable(self, workers: int, cores: int, ranks: int = 1, alone: bool = False) -> float:
        """Workers' worth of CPU: no more than the rank's share of the cores other processes
        left (``alone``: all of them) less what the main process keeps busy (a worker on a
        shared core still gets about one: the measured run's one-core figures count it so)."""
        if workers <= 0:
            return 0.0
        left = self.cores_left(cores, alone)
        return min(float(workers), max(1.0, left / max(ranks, 1) - self.main_cores()))

    def faster_alone(self, workers: int, cores: int, ranks: int = 1) -> float:
        """How much faster the step may be where the other processes the measured run shared
        its CPUs with have left: the range's fast side (1.0 where none were measured)."""
        crowded = self.step_with(self.usable(workers, cores, ranks))
        alone = self.step_with(self.usable(workers, cores, ranks, alone=True))
        return max(1.0, crowded / max(alone, 1e-9))

    def step_at(self, workers: int, cores: int, ranks: int = 1) -> float:
        """Predicted step time (measured steps) with ``workers`` per rank on ``cores`` per
        task: more than 1.0 is a slowdown, and is said as one."""
        return self.step_with(self.usable(workers, cores, ranks))

    def slower_sharing(self, workers: int, cores: int, ranks: int = 1) -> float:
        """How much slower than expected the step with ``workers`` per rank on ``cores`` per
        task may be where intra-op threads share their cores with the workers: receiving a
        batch costs all of the assumed figure and the compute takes as long as the most
        measured (the range's slow side; 1.0 where the threads do not share cores)."""
        if not self.shares_cores(workers, cores, ranks):
            return 1.0
        worst = replace(self, receive=self.receive_max)
        most = worst.step_with(self.usable(workers, cores, ranks), compute=self.oversubscribed)
        return max(1.0, most / max(self.step_at(workers, cores, ranks), 1e-9))

    def oversubscription_note(self, workers: int, cores: int, ranks: int = 1) -> str | None:
        """The prediction's basis line where threads sharing cores with workers decide it."""
        if not self.shares_cores(workers, cores, ranks):
            return None
        threads = cores // max(ranks, 1)
        return (
            f"{threads} intra-op threads (OMP_NUM_THREADS follows the cores) share their cores "
            f"with {workers} worker(s): the compute up to {self.oversubscribed:g}x as long, the "
            "range's slow side only: assumed (the bundled MNIST loop on 2 shared CPUs ran at "
            f"{OVERSUBSCRIBED_SEEN} the rate of the same setting with OMP_NUM_THREADS=1 in "
            "the same round, bench/omp_oversubscription.py)"
        )


def measured_spread(value: float) -> float:
    """A spread some evidence measured, taken at least MIN_SPREAD wide (whichever source:
    a probe's windows, a trace's steps, a run record's blocks)."""
    return max(value, MIN_SPREAD)


def _s(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _worker_steps(workers: int, wait: float, v: FactView) -> float:
    """One worker's time per batch on a core of its own, in measured steps: W workers that
    kept the loop waiting made a batch a step between them, on the cores they had (4
    workers sharing 2 cores with the main process are 1.5 cores' worth, not 4)."""
    if workers < 1:
        return wait
    cores = v.alloc.cpus_per_task
    ranks = v.job.ranks_per_task or 1.0
    if cores is None:
        return float(workers)
    return min(float(workers), max(1.0, cores / ranks - (1.0 - wait)))


def _worker_note(workers: int, worker_steps: float, how: str) -> str:
    if workers >= 1:
        return (
            f"one worker's time per batch ~{worker_steps:.2f} step times: estimated, "
            f"{workers} worker(s) kept the loop waiting ({how})"
        )
    return (
        f"one batch's loading ~{worker_steps:.2f} step times: measured, done in the loop "
        f"with no workers ({how})"
    )


def storage_bound(facts: Mapping[str, object] | FactView) -> bool:
    """A recording where the workers were there but mostly idle while the loop waited: the
    pipeline waits on storage; more workers will not help."""
    v = as_view(facts)
    workers = v.host.proc__workers__max
    cores = v.host.proc__cpu_cores__mean
    main = v.host.proc__main_cpu_pct__mean
    util = v.gpu.util__mean
    if not workers or cores is None or main is None or util is None:
        return False
    waiting = util < 50.0 and main < 85.0  # neither the GPU nor the main process is busy
    per_worker = max(0.0, cores - main / 100.0) / workers
    return waiting and per_worker < WORKER_BUSY_MIN


def _from_probe(v: FactView, workers: int) -> StepBudget | None:
    loop = v.probe.loop_step_s
    ceiling = v.probe.ceiling_step_s
    if not loop or ceiling is None or loop <= 0:
        return None
    stall = v.probe.stall_share
    wait = min(1.0, max(0.0, stall if stall is not None else 1.0 - ceiling / loop))
    compute = min(ceiling / loop, 1.0 - wait)
    measured = v.probe.loop_step_spread
    spread = measured_spread(measured) if measured is not None else PROFILE_SPREAD
    worker_steps = _worker_steps(workers, wait, v)
    enough = v.probe.workers_for_95pct
    basis = [
        f"step time {_s(loop)}: measured, the probe's loop",
        f"spread {spread:.0%}: measured, the probe's loop windows (their range; at least "
        f"{MIN_SPREAD:.0%})"
        if measured is not None
        else f"spread {spread:.0%}: assumed, the probe gave no spread of its loop",
        f"ceiling {_s(ceiling)} a step (one batch on the device, repeated): measured, the probe",
        f"waiting for data {wait:.0%} of the step: measured, the probe",
    ]
    if enough:  # the probe timed the pipeline alone: its count replaces the estimate
        worker_steps = enough * (1.0 - wait) / 0.95
        basis.append(f"{enough} workers reach 95 % of the ceiling: measured, the probe")
    else:
        basis.append(_worker_note(workers, worker_steps, "the probe"))
    if v.probe.test_mode is True:
        basis.append("the probe ran with the device-time stand-in (a test mode, not the GPU)")
    return StepBudget(
        source="probe",
        wait=wait,
        transfer=0.0,
        compute=compute,
        sync=0.0,
        other=max(0.0, 1.0 - wait - compute),
        workers=workers,
        worker_steps=worker_steps,
        spread=spread,
        step_s=loop,
        batch_size=v.probe.batch_size,
        workers_measured=enough,
        basis=tuple(basis),
    )


@record
class _Shares:
    """A step's shares as an instrument measured them (a profile's line kinds, a trace's
    breakdown), and what to say of that instrument."""

    source: str
    wait: float
    transfer: float
    compute: float
    sync: float
    step_s: float | None
    steps: int | None
    shares_from: str  # "the profile's line kinds"
    steps_from: str  # "the profile (100 steps)"
    spread_why: str
    overhead: float
    overhead_why: str
    spread: float | None = None  # measured (the trace's steps); None: assumed
    # the instrument's cost in the pipeline's time per batch (the fast side only)
    pipeline_overhead: float = 0.0
    pipeline_overhead_why: str | None = None


def _measured(shares: _Shares, v: FactView, workers: int) -> StepBudget:
    """One budget from measured shares: the profile's and the trace's alike."""
    s = shares
    other = max(0.0, 1.0 - s.wait - s.transfer - s.compute - s.sync)
    worker_steps = _worker_steps(workers, s.wait, v)
    basis = [
        f"waiting for data {s.wait:.0%}, copies {s.transfer:.0%}, compute {s.compute:.0%}, "
        f"syncs {s.sync:.0%}, other {other:.0%} of the step: measured, {s.shares_from}",
        _worker_note(workers, worker_steps, f"the {s.source}"),
        f"spread {s.spread:.0%}: measured, {s.spread_why}"
        if s.spread is not None
        else f"spread {PROFILE_SPREAD:.0%}: assumed, {s.spread_why}",
        f"up to {s.overhead:.0%} faster without {s.overhead_why}, the range's fast side only",
    ]
    if s.pipeline_overhead_why is not None:
        basis.append(s.pipeline_overhead_why)
    if s.step_s is not None and s.steps:
        basis.insert(1, f"step time {_s(s.step_s)}: measured, {s.steps_from}")
    return StepBudget(
        source=s.source,
        wait=s.wait,
        transfer=s.transfer,
        compute=s.compute,
        sync=s.sync,
        other=other,
        workers=workers,
        worker_steps=worker_steps,
        spread=s.spread if s.spread is not None else PROFILE_SPREAD,
        step_s=s.step_s,
        storage_bound=storage_bound(v),
        basis=tuple(basis),
        overhead=s.overhead,
        pipeline_overhead=s.pipeline_overhead,
    )


def _from_profile(v: FactView, workers: int) -> StepBudget | None:
    wait = v.profile.loader_share
    if wait is None:
        return None
    steps = v.profile.steps
    # `run --profile` turns the tracer off in the workers it forks, and says so in its record:
    # their batches then cost what they cost plain (absent: unknown, the tracer assumed)
    untraced = workers >= 1 and v.run.profile_workers_traced is False
    shares = _Shares(
        source="profile",
        wait=wait,
        transfer=v.profile.transfer_share or 0.0,
        compute=v.profile.compute_share or 0.0,
        sync=v.profile.sync_share or 0.0,
        step_s=v.profile.step_s,
        steps=steps,
        shares_from="the profile's line kinds",
        steps_from=f"the profile ({steps} steps)",
        spread_why="one profiled run measures no spread",
        overhead=PROFILER_OVERHEAD,
        overhead_why="line_profiler: assumed (8-14 % measured on the bundled MNIST loop)",
        pipeline_overhead=0.0 if untraced else PROFILED_WORKERS_OVERHEAD,
        pipeline_overhead_why=(
            "the input pipeline's time a batch as measured: the profiled run's DataLoader "
            "workers ran without line_profiler's tracer (the run record beside the profile)"
            if untraced
            else f"the input pipeline up to {PROFILED_WORKERS_OVERHEAD:.0%} faster a batch without "
            "line_profiler: assumed, the range's fast side only (workers forked inside the "
            "profiled function run traced too, and their time is not in the profile; the "
            "bundled MNIST loop ran 15 % and 28 % slower profiled than plain, medium and high "
            "input cost)"
            if workers >= 1
            else f"the loop's own loading up to {PROFILED_WORKERS_OVERHEAD:.0%} faster a "
            "batch without line_profiler: assumed, the range's fast side only (its Python "
            "runs traced)"
        ),
    )
    budget = _measured(shares, v, workers)
    return _gpu_floor(budget, v)


def _gpu_floor(budget: StepBudget, v: FactView) -> StepBudget:
    """A line profile's host-side times on a GPU: kernels queued before ``next(batch)`` count
    as data wait. A trace's device time beside it gives the true floor, else a recording's
    GPU utilization (the time a kernel ran); without either the floor is a lower bound, and
    the basis says so."""
    t = v.trace
    device = sum(x or 0.0 for x in (t.kernel_share, t.memcpy_share, t.memset_share))
    if device > 0 and t.step_s and budget.step_s:
        floor = min(1.0, device * t.step_s / budget.step_s)
        note = (
            f"device time {_s(device * t.step_s)} a step: measured, the torch.profiler trace; "
            f"the floor is max(the loop's host time, the device's)"
        )
        return replace(budget, device_floor=floor, basis=(*budget.basis, note))
    util = v.gpu.util__mean
    if util is not None and v.gpu.count and util > 0:
        # the share of the time a kernel ran (nvidia-smi's utilization.gpu): the device's
        # time a step as a share of the profiled step, in the run the recording sampled
        floor = min(1.0, util / 100.0)
        note = (
            f"the device busy {util:.0f}% of the time: measured, the watch recording's GPU "
            "utilization (time a kernel ran; the recording taken as the profiled run's); "
            "the floor is max(the loop's host time, the device's)"
        )
        return replace(budget, device_floor=floor, basis=(*budget.basis, note))
    if v.job.gpus or v.gpu.count:
        note = (
            "the floor (the loop's time besides waiting) is a lower bound: line times of an "
            "asynchronous CUDA loop count kernels queued before the next batch as waiting; a "
            "torch.profiler trace or GPM's GPU time would give the device's"
        )
        return replace(budget, basis=(*budget.basis, note))
    return budget


def _from_trace(v: FactView, workers: int) -> StepBudget | None:
    """A torch.profiler trace: the plugin's exclusive breakdown of the steps. The DataLoader
    share is time in ``__next__`` with the device idle: the wait; kernels are the compute."""
    t = v.trace
    wait = t.dataloader_share
    if wait is None:
        return None

    def share(*values: float | None) -> float:
        return sum(value or 0.0 for value in values)

    steps = t.steps
    shares = _Shares(
        source="trace",
        wait=wait,
        transfer=share(t.memcpy_share, t.memset_share),
        compute=share(t.kernel_share, t.communication_share),
        sync=0.0,  # a trace's syncs are host time in runtime calls: in "other"
        step_s=t.step_s,
        steps=steps,
        shares_from="the torch.profiler trace's breakdown",
        steps_from=f"the trace ({steps} steps a rank)",
        spread_why=(
            f"half the range of the trace's {steps} steps (at least {MIN_SPREAD:.0%})"
            if t.step_spread is not None
            else "a few traced steps measure no spread"
        ),
        overhead=TRACE_OVERHEAD,
        overhead_why="torch.profiler: assumed",
        pipeline_overhead=TRACE_OVERHEAD,  # the same, assumed: the basis line says both
        spread=measured_spread(t.step_spread) if t.step_spread is not None else None,
    )
    return _measured(shares, v, workers)


def _from_recording(v: FactView, workers: int) -> StepBudget | None:
    util = v.gpu.util__mean
    main = v.host.proc__main_cpu_pct__mean
    if util is None or main is None:
        return None
    busy = min(1.0, max(0.0, util / 100.0))
    wait = 1.0 - busy
    worker_steps = _worker_steps(workers, wait, v)
    return StepBudget(
        source="recording",
        wait=wait,
        transfer=0.0,
        compute=busy,
        sync=0.0,
        other=0.0,
        workers=workers,
        worker_steps=worker_steps,
        spread=RECORDING_SPREAD,
        storage_bound=storage_bound(v),
        basis=(
            f"compute {busy:.0%} of the step: estimated, the GPU's mean busy share (recording)",
            f"waiting for data {wait:.0%}: estimated, the GPU's idle share (recording)",
            _worker_note(workers, worker_steps, "the recording"),
            f"spread {RECORDING_SPREAD:.0%}: assumed, a sampled busy share is coarse",
        ),
    )


def measured_workers(facts: Mapping[str, object] | FactView) -> int | None:
    """The measured run's workers (``alloc.workers``: what it was given or seen with)."""
    return as_view(facts).alloc.workers


def step_budget(facts: Mapping[str, object] | FactView) -> StepBudget | None:
    """The budget from the most direct evidence given; None when none can make one (no
    profile, recording or probe, or the measured run's workers are unknown)."""
    v = as_view(facts)
    workers = v.alloc.workers
    if workers is None and v.probe.workers is not None and _from_probe(v, 0) is not None:
        workers = v.probe.workers  # the probe file names its loop's
    if workers is None:
        # a probe that swept the worker counts sizes without the loop's own: its count
        if v.probe.workers_for_95pct:
            budget = _from_probe(v, 0)
            if budget is not None:
                note = "the probed loop's DataLoader workers: not known, the probe's sweep sizes"
                budget = replace(budget, basis=(*budget.basis, note))
                return _finish(budget, v)
        return None
    for make in (_from_probe, _from_profile, _from_trace, _from_recording):
        budget = make(v, workers)
        if budget is not None:
            return _finish(budget, v)
    return None


def _finish(budget: StepBudget, v: FactView) -> StepBudget:
    """What every source's budget shares: the run record beside it, the main process's
    threads and its cost of receiving batches, then the measured workers' time per batch
    on the cores they had besides those."""
    return _settle(_with_receive(_with_threads(_with_run(budget, v), v)), v)


def on_cpu(v: FactView) -> bool:
    """The step's compute runs on the CPU: no GPU asked for and none sampled."""
    return not v.job.gpus and not v.gpu.count


def _with_threads(budget: StepBudget, v: FactView) -> StepBudget:
    """The main process's other threads that take cores from the workers: the pin-memory
    thread where the script pins (assumed cost); the intra-op threads where the compute runs
    on the CPU with OMP_NUM_THREADS following the task's cores (they hold every core while
    it runs: counted), else where they may compete (said, not counted)."""
    if v.script.pin_memory is True:
        note = (
            f"the pin-memory thread ~{PIN_THREAD:g} of a core beside the main process: "
            "assumed, pin_memory=True in the script"
        )
        budget = replace(budget, pin_thread=PIN_THREAD, basis=(*budget.basis, note))
    if not on_cpu(v) or budget.compute <= 0.0:
        return budget
    if v.job.omp_threads_follow_cores is True:
        note = (
            f"intra-op threads: OMP_NUM_THREADS follows the task's cores (the job script), "
            f"and the compute ({budget.compute:.0%} of the step) runs on the CPU: its threads "
            "hold every core of the task while it runs, the workers work only in the rest of "
            "the step: assumed (its time as measured, more threads not counted as faster)"
        )
        budget = replace(budget, threads_hold_compute=True, basis=(*budget.basis, note))
        return _oversubscribed(budget, v)
    if budget.compute >= 0.1:
        if v.job.omp_threads_follow_cores is False:
            omp = "set to a fixed count"
        elif v.job.omp_threads_set:
            omp = "set"
        else:
            omp = "not known (torch's default: the CPUs it may use)"
        note = (
            f"intra-op threads: OMP_NUM_THREADS {omp}; the compute ({budget.compute:.0%} of "
            "the step) runs on the CPU, where its threads compete with the workers: not "
            "counted, so the prediction may be optimistic"
        )
        return replace(budget, basis=(*budget.basis, note))
    return budget


def _oversubscribed(budget: StepBudget, v: FactView) -> StepBudget:
    """Threads that follow the cores, at a setting where two or more share them with
    workers, may make the compute longer (OVERSUBSCRIBED_MOST, the slow side): counted
    where the measured run's threads had their cores to themselves. Where they shared them
    already, its compute carries that cost as measured, and how much of it is that cannot be
    told: not counted."""
    cores = v.alloc.cpus_per_task
    ranks = max(v.job.ranks_per_task or 1, 1)
    if cores is None:
        return budget
    if budget.workers >= 1 and cores / ranks >= 2:
        note = (
            "the measured run's intra-op threads shared their cores with its workers: its "
            "compute carries whatever that cost it, as measured (not counted again; a "
            "setting with fewer threads a core may be faster: not counted either)"
        )
        return replace(budget, basis=(*budget.basis, note))
    return replace(budget, oversubscribed=OVERSUBSCRIBED_MOST)


def _with_receive(budget: StepBudget) -> StepBudget:
    """The main process's cost of receiving a batch from a worker, where the step time is
    known: assumed (RECEIVE_S), never more than the measured wait it was inside. An assumed
    figure never takes more than half of a measured wait in the expected value (the evidence
    cannot tell how much of the wait was receiving; the other half is the measured sign that
    the workers kept the loop waiting): the rest of it goes to the range's slow side."""
    if budget.step_s is None or budget.step_s <= 0:
        return budget
    most = min(RECEIVE_S / budget.step_s, budget.wait)
    receive = min(most, budget.wait / 2)
    note = (
        f"receiving a batch from a worker ~{_s(RECEIVE_S)} in the main process "
        f"({most:.1%} of the measured step): assumed (0.8-1.2 ms of CPU measured for a "
        "32-image MNIST batch on the 2-CPU test machine, more for larger batches), a floor "
        "more workers cannot remove"
    )
    if receive < most:
        note += (
            f"; over half the measured wait, so the expected value counts {receive:.1%} "
            "(half the wait) and the range's slow side all of it"
        )
    return replace(budget, receive=receive, receive_max=most, basis=(*budget.basis, note))


def _settle(budget: StepBudget, v: FactView) -> StepBudget:
    """The measured workers' time per batch on a core of their own, from the cores they had
    beside the main process (its loop, receiving, its threads) in the time the intra-op
    threads left them: the model's own ``usable`` at the measured setting, so that the
    measured setting predicts the measured step."""
    cores = v.alloc.cpus_per_task
    if budget.workers < 1 or budget.workers_measured or cores is None:
        return budget
    ranks = max(v.job.ranks_per_task or 1, 1)
    usable = budget.usable(budget.workers, cores, ranks)
    steps = usable * (1.0 - budget.held)
    how = f"the {budget.source}"
    basis = tuple(
        _worker_note(budget.workers, steps, how)
        if b.startswith("one worker's time per batch")
        else b
        for b in budget.basis
    )
    return replace(budget, worker_steps=steps, basis=basis, measured_usable=usable)


def _with_run(budget: StepBudget, v: FactView) -> StepBudget:
    """The batch size (the script's, else the run record's) and, from the run record beside
    the evidence (`tuneadvisor run` wrote both), its steady rate: the step time where the
    evidence has none (a recording), and the spread of its window where it is measured."""
    if budget.batch_size is None:
        budget = replace(budget, batch_size=v.script.batch_size or v.run.batch_size)
    rate = v.run.samples_per_s
    if rate is None:
        return _with_others(budget, v)
    basis = [
        *budget.basis,
        f"{rate:,.1f} samples/s: measured, the run record beside the evidence (its steady window)",
    ]
    if budget.step_s is None and budget.batch_size:
        step = budget.batch_size / rate
        basis.append(f"step time {_s(step)}: measured, batch {budget.batch_size} / that rate")
        budget = replace(budget, step_s=step)
    spread = v.run.spread
    if spread is not None and budget.source != "probe":
        spread = measured_spread(spread)
        basis = [b for b in basis if not b.startswith("spread ")]
        basis.append(
            f"spread {spread:.0%}: measured, the run record's steady window (its blocks' "
            f"rates; at least {MIN_SPREAD:.0%})"
        )
        budget = replace(budget, spread=spread)
    return _with_others(replace(budget, basis=tuple(basis)), v)


def _with_others(budget: StepBudget, v: FactView) -> StepBudget:
    """Other processes' load on the CPUs the measured run could use (its run record): the
    setting shares those CPUs with them, the kernel's fair share (the expected value: they
    keep their load; the range's fast side: they leave). On a node whose CPUs are the
    job's own (a Slurm cgroup) it is about nothing, and nothing changes."""
    others, pool = v.run.others_cores, v.run.allowed_cpus
    if others is None or not pool or others < OTHERS_MIN:
        return budget
    held = min(others, float(pool))
    note = (
        f"other processes held {held:.1f} of the {pool} CPUs the run could use: measured, "
        "the run record; the setting shares them, the kernel's fair share (each runnable "
        "thread alike: the expected value, they keep their load, assumed; the range's fast "
        "side: they leave)"
    )
    return replace(budget, others=held, pool=pool, basis=(*budget.basis, note))
