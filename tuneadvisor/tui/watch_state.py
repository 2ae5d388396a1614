"""What the watch screen draws, as one frozen value, and how its numbers read.

``WatchApp`` builds one ``ScreenState`` per drawn sample (the session's ``state()`` and
``span()`` copies plus the screen's own choices: zoom, selected GPU, paused, ended) and hands
it to the panels of ``watch_panels``; a panel draws from that value alone, so it can be shown
and tested without the app or a session. The functions here are pure text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text

from tuneadvisor.metrics.affinity import cpu_list, rank_bindings
from tuneadvisor.metrics.model import GpuSample
from tuneadvisor.metrics.snapshot import ROLE_WORKER, GpuProcess, ProcSample, Snapshot
from tuneadvisor.present.counts import counted
from tuneadvisor.present.live_findings import findings_heading, no_findings, screen_line
from tuneadvisor.present.requests_use import (
    LABEL,
    cores_use,
    memory_use,
    per_node_heading,
    requested_cpus,
    requested_mem_mib,
    requests_line,
    workers_seen,
)
from tuneadvisor.watch.replay import Playback
from tuneadvisor.watch.session import LiveState, WatchSpan


# eq=False: a new state is a new sample to draw. Comparing field by field would walk every
# round of the span at each sample, and two equal samples are not worth saving a redraw.
@dataclass(frozen=True, eq=False)
class ScreenState:
    """One sample as the screen shows it."""

    live: LiveState  # the session's state: newest round, findings, job, counts
    span: WatchSpan  # the rounds of the zoom window and their statistics
    zoom_label: str = "last 1 min"
    gpu_index: int = 0  # the selected GPU, among the newest round's of the span
    paused: bool = False
    ended: bool = False  # live: the session's run returned
    playback: Playback | None = None  # a replay: where it is

    @property
    def newest(self) -> Snapshot | None:
        """The newest round of the window (the GPU panel's; the rest read ``live.latest``)."""
        return self.span.rounds[-1] if self.span.rounds else None


def fmt(value: float | None, spec: str = ".0f") -> str:
    return "–" if value is None else format(value, spec)


# The GPU panel's subtitle where SM activity is shown: which chart is which figure.
FIGURES = "util: time a kernel ran · SM: SMs busy"  # fits the panel at 100 columns


def has_activity(gpu: GpuSample) -> bool:
    """Whether the sample has SM activity (NVML GPM, DCGM): its chart beside utilisation."""
    return gpu.sm_active_pct is not None


def gpu_fields(gpu: GpuSample, selected: bool) -> list[str]:
    """The GPU's name and the values without a chart (utilisation, SM activity and memory
    have one); tensor-pipe and DRAM activity where the GPU gives them. A field is never
    split across lines ("410/700 W"): ``gpu_line`` breaks between them."""
    name = gpu.name or gpu.gpu_key
    mark = "▶ " if selected else "  "
    label = f"GPU {gpu.index}" if gpu.index is not None else gpu.gpu_key
    fields = [
        f"{mark}{label} {name}",
        f"{fmt(gpu.mem_used_mib)}/{fmt(gpu.mem_total_mib)} MiB",
        f"{fmt(gpu.power_w)}/{fmt(gpu.power_limit_w)} W",
        f"{fmt(gpu.temp_c)}°C",
        f"SM {fmt(gpu.sm_clock_mhz)} MHz",
    ]
    if gpu.tensor_active_pct is not None:
        fields.append(f"tensor {pct_text(gpu.tensor_active_pct)}")
    if gpu.dram_active_pct is not None:
        fields.append(f"DRAM {pct_text(gpu.dram_active_pct)}")
    return fields


def gpu_line(gpu: GpuSample, selected: bool, width: int = 0) -> str:
    """``gpu_fields`` two spaces apart, a new line where the next would pass ``width`` (0:
    one line)."""
    lines: list[str] = []
    for field in gpu_fields(gpu, selected):
        if lines and (not width or len(lines[-1]) + 2 + len(field) <= width):
            lines[-1] += "  " + field
        else:
            lines.append(field if not lines else "  " + field)
    return "\n".join(lines)


def mem_pct(gpu: GpuSample) -> float | None:
    """Memory used, % of the total (the memory chart's scale)."""
    if gpu.mem_used_mib is None or not gpu.mem_total_mib:
        return None
    return 100.0 * gpu.mem_used_mib / gpu.mem_total_mib


def pct_text(value: float | None) -> str:
    return "–" if value is None else f"{value:.0f}%"


def proc_key(p: ProcSample | GpuProcess) -> str:
    """A process's row key: pids repeat across nodes, so a merged watch keys by both."""
    return f"{p.node}:{p.pid}" if p.node else str(p.pid)


def tree_rows(procs: Sequence[ProcSample]) -> list[tuple[int, ProcSample]]:
    """Processes in tree order with their depth (parents first, children indented); a
    parent is looked up on the process's own node."""
    keys = {(p.node, p.pid) for p in procs}
    children: dict[tuple[str | None, int] | None, list[ProcSample]] = {}
    for p in procs:
        parent = (p.node, p.ppid) if p.ppid is not None and (p.node, p.ppid) in keys else None
        children.setdefault(parent, []).append(p)
    out: list[tuple[int, ProcSample]] = []

    def walk(parent: tuple[str | None, int] | None, depth: int) -> None:
        for p in sorted(children.get(parent, []), key=lambda q: (q.node or "", q.pid)):
            out.append((depth, p))
            walk((p.node, p.pid), depth + 1)

    walk(None, 0)
    return out


def replay_position(playback: Playback) -> str:
    """``t=12.3 s of 60.0 s, x10`` (``end of recording`` once it is all played)."""
    part = ""
    if playback.parts > 1:  # several watches appended to one file: which one, of what
        part = f"recording {playback.part} of {playback.parts} ({playback.target}), "
    where = (
        f"end of recording, {playback.duration:.1f} s"
        if playback.ended
        else f"t={playback.t:.1f} s of {playback.duration:.1f} s"
    )
    return f"{part}{where}, x{playback.speed:g}"


def status_text(state: ScreenState) -> str:
    """The status line: what is shown (paused, ended, replay position, zoom) and how the
    sampling goes."""
    live, own = state.live, state.span.sampler_cpu
    flags = ["PAUSED"] if state.paused else []
    if state.ended:
        flags.append("ENDED ·")
    if state.playback is not None:
        flags.append(f"REPLAY {replay_position(state.playback)} ·")
    # the sampler's own use is a difference of two readings: none after one round
    sampler = f"sampler {own.mean:.1f} % of a core" if own else "sampler: from round 2"
    return (
        f"{' '.join(flags)} {state.zoom_label} · {counted(live.rounds, 'round')} every "
        f"{live.interval_s:g} s · {sampler} · window {live.window_s:g} s"
    ).strip()


def marks_text(state: ScreenState, most: int) -> str | None:
    """The window's marks, the newest ``most`` of them on one line (None: no marks)."""
    marks = [s for s in state.span.rounds if s.mark]
    if not marks:
        return None
    shown = marks[-most:]
    more = f"({len(marks) - len(shown)} earlier) " if len(marks) > len(shown) else ""
    listed = " · ".join(f"{s.t - state.live.started:.1f} s {s.mark}" for s in shown)
    return f"Marks: {more}{listed}"


def detail_text(p: ProcSample, procs: Sequence[ProcSample]) -> str:
    """The line under the table for the selected process: who, I/O, workers, what was
    unreadable."""
    io = f"read {fmt(p.read_mib_s, '.1f')} MiB/s, write {fmt(p.write_mib_s, '.1f')} MiB/s"
    denied = f" · not readable: {', '.join(p.denied)}" if p.denied else ""
    workers = sum(
        1 for q in procs if q.role == ROLE_WORKER and q.ppid == p.pid and q.node == p.node
    )
    kids = f" · {counted(workers, 'worker')}" if workers else ""
    cpus = f" · {binding_text(p, procs)}" if p.affinity else ""
    return f"pid {p.pid} ({p.user or '?'}) {p.cmdline or p.name} · {io}{kids}{cpus}{denied}"


def binding_text(p: ProcSample, procs: Sequence[ProcSample]) -> str:
    """'CPUs 0-1 (2)', and for a rank its share: 'CPUs 0 (1) of a share of 2: bound short'."""
    cpus = cpu_list(p.affinity or "")
    text = f"CPUs {p.affinity} ({len(cpus)})"
    mine = next((b for b in rank_bindings(procs) if b.pid == p.pid and b.node == p.node), None)
    if mine is None:
        return text
    return f"{text} of a share of {mine.share:g}" + (": bound short" if mine.short else "")


def short_ranks(procs: Sequence[ProcSample]) -> frozenset[tuple[str | None, int]]:
    """(node, pid) of the ranks bound to fewer CPUs than their share."""
    return frozenset((b.node, b.pid) for b in rank_bindings(procs) if b.short)


def requests_text(state: ScreenState) -> str | Text:
    """The job's requests against the use: cores, peak memory, workers; per node for a
    merged watch (sums over nodes are no match for per-task asks)."""
    live = state.live
    latest = live.latest
    nodes = sorted({p.node for p in latest.procs if p.node} if latest else set())
    if len(nodes) > 1:
        parts = []
        for node in nodes:
            procs = [p for p in (latest.procs if latest else ()) if p.node == node]
            cores = sum(p.cpu_pct or 0.0 for p in procs) / 100.0
            rss = sum(p.rss_mib or 0.0 for p in procs)
            parts.append(f"{node} {cores:.2f} cores, {rss:.0f} MiB")
        return Text(f"{per_node_heading(live.job)}: " + " · ".join(parts))  # names: no markup
    req = []
    host = latest.host if latest else None
    if host is not None and host.proc_cpu_cores is not None:
        req.append(cores_use(f"{host.proc_cpu_cores:.2f}", requested_cpus(live.job)))
    if state.span.proc_rss is not None:
        req.append(memory_use(state.span.proc_rss.max, requested_mem_mib(live.job)))
    if any(s.host is not None and s.host.workers is not None for s in state.span.rounds):
        req.append(workers_seen(state.span.workers))
    return requests_line(req, " · ") if req else f"{LABEL}: no process tree"


def findings_text(state: ScreenState) -> str | Text:
    """The live findings over the evidence window, one line each."""
    live = state.live
    if not live.findings:
        gpu = any(s.gpus for s in state.span.rounds)
        return no_findings(live.window_s, brief=True, gpu=gpu)
    lines = [findings_heading(live.window_s)]
    lines += [screen_line(f) for f in live.findings]
    return Text("\n".join(lines))  # not markup: "[warning]" is shown as it is
