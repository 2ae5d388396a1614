"""Rerun every benchmark and rewrite bench/RESULTS.md (entry point: ``bash bench/run.sh``).

Numbers are recorded here, never asserted in tests: timings depend on the machine and on
whatever else runs on it. Each target gets PASS, MISS, or "not measured: <why>" when a piece
it needs (the example profile, the loader, the TUI) is missing or fails.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import pstats
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_profile import generate
from results_index import refresh as refresh_index
from results_index import split_sections
from timing import (
    CommandFailed,
    Stats,
    hyperfine_path,
    hyperfine_version,
    run_once,
    time_hyperfine,
    time_interleaved,
    time_python,
)

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
DATA = BENCH / ".data"
PY = ROOT / ".venv" / "bin" / "python"
TA = ROOT / ".venv" / "bin" / "tuneadvisor"
EXAMPLE = ROOT / "examples" / "mnist" / "24752610.lprof"
TUI_APP = ROOT / "tuneadvisor" / "tui" / "app.py"
FUNCTIONS, LINES = 500, 100
FUNC_NAME_RE = re.compile(r"train_\d{4}")


def rel(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def show_cmd(cmd: Sequence[str | Path]) -> str:
    return " ".join(shlex.quote(rel(Path(c)) if isinstance(c, Path) else c) for c in cmd)


@dataclass
class Target:
    key: str
    title: str
    goal: str
    limit: float | None  # None: recorded, no goal
    unit: str = "s"
    value: float | None = None
    not_measured: str | None = None
    details: list[str] = field(default_factory=list)
    load_share: float | None = None  # 3c: share of first paint spent in load_workspace

    @property
    def verdict(self) -> str:
        if self.value is None:
            return f"not measured: {self.not_measured or 'unknown reason'}"
        if self.limit is None:
            return "recorded"
        return "PASS" if self.value <= self.limit else "MISS"

    @property
    def measured(self) -> str:
        if self.value is None:
            return "-"
        digits = {"s": 3, "x": 2}.get(self.unit, 1)
        return f"{self.value:.{digits}f}{' ' if self.unit == 's' else ''}{self.unit}"


@dataclass
class Config:
    scale: float  # 1.0 normal; smaller for a quick check of the harness
    timer: str  # "auto", "python", "hyperfine"
    diagnose: str  # "misses", "all", "none"

    def runs(self, n: int) -> int:
        return max(3, round(n * self.scale))

    @property
    def use_hyperfine(self) -> bool:
        if self.timer == "python":
            return False
        if self.timer == "hyperfine" and hyperfine_path() is None:
            raise SystemExit("--timer hyperfine: hyperfine is not installed")
        return hyperfine_path() is not None


# --------------------------------------------------------------------------- machine


def _cmd_out(cmd: Sequence[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT)
    except OSError:
        return ""
    return out.stdout.strip()


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _venv_versions() -> dict[str, str]:
    code = (
        "import json, sys; from importlib import metadata as m\n"
        "def v(d):\n"
        "    try: return m.version(d)\n"
        "    except m.PackageNotFoundError: return 'not installed'\n"
        "print(json.dumps({'python': sys.version.split()[0], **{d: v(d) for d in sys.argv[1:]}}))"
    )
    dists = ["tuneadvisor", "line_profiler", "textual", "rich"]
    out = _cmd_out([str(PY), "-c", code, *dists])
    try:
        return dict(json.loads(out))
    except json.JSONDecodeError:
        return {d: _version(d) for d in dists}


def machine_info() -> list[tuple[str, str]]:
    cpu_model = "unknown"
    mem = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
                break
    except OSError:
        pass
    versions = _venv_versions()
    commit = _cmd_out(["git", "rev-parse", "--short", "HEAD"]) or "unknown"
    dirty = _cmd_out(["git", "status", "--porcelain", "--untracked-files=no"])
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return [
        ("nproc", _cmd_out(["nproc"]) or str(os.cpu_count())),
        ("CPU", cpu_model),
        ("Memory", mem),
        ("OS", f"{platform.system()} {platform.release()}"),
        ("Python (.venv)", versions.get("python", "?")),
        ("tuneadvisor", versions.get("tuneadvisor", "?")),
        ("line_profiler", versions.get("line_profiler", "?")),
        ("textual", versions.get("textual", "?")),
        ("rich", versions.get("rich", "?")),
        ("hyperfine", hyperfine_version() or "not installed (Python timer used)"),
        ("tmux", _cmd_out(["tmux", "-V"]) or "not installed"),
        ("git", f"{commit}{' (uncommitted changes)' if dirty else ''}"),
        ("load average at start", load),
    ]


# --------------------------------------------------------------------------- measuring


def time_single(
    cfg: Config, cmd: Sequence[str], runs: int, warmup: int, python_runs: int | None = None
) -> tuple[Stats, Stats]:
    """(primary, python): hyperfine when available, else the Python loop. The Python loop
    always runs too (``python_runs`` times when hyperfine is the primary), because it is
    the one that records each run's peak RSS."""
    if cfg.use_hyperfine:
        py_stats = time_python(cmd, python_runs or runs, warmup, cwd=ROOT)
        return time_hyperfine(cmd, runs, warmup, cwd=ROOT), py_stats
    py_stats = time_python(cmd, runs, warmup, cwd=ROOT)
    return py_stats, py_stats


def probe(cmd: Sequence[str]) -> str | None:
    """None when ``cmd`` runs and exits 0; else why not (one line)."""
    try:
        run_once(cmd, cwd=ROOT)
    except CommandFailed as exc:
        return f"`{show_cmd([Path(c) if c.startswith('/') else c for c in cmd])}` {exc}"
    except OSError as exc:
        return f"{cmd[0]}: {exc}"
    return None


def bench_help(cfg: Config) -> Target:
    t = Target("1", "`tuneadvisor --help` wall time", "<= 0.15 s (median)", 0.15)
    cmd = [str(TA), "--help"]
    why = probe(cmd)
    if why:
        t.not_measured = why
        return t
    primary, py = time_single(cfg, cmd, cfg.runs(20), warmup=3)
    t.value = primary.median
    t.details += [
        f"command: `{show_cmd([TA, '--help'])}` (the installed console script)",
        f"{primary.describe()}",
    ]
    if primary is not py:
        t.details.append(f"cross-check: {py.describe()}")
    t.details.append(f"peak RSS: {py.peak_rss_mib:.1f} MiB")
    return t


def bench_ratio(cfg: Config, example: Path) -> Target:
    t = Target(
        "2",
        "`tuneadvisor report` vs `python -m line_profiler -rmt` on the MNIST example",
        "ratio <= 1.0x (medians, one interleaved run)",
        1.0,
        unit="x",
    )
    if not example.is_file():
        t.not_measured = f"{rel(example)} does not exist yet"
        return t
    ta = [str(TA), "report", str(example)]
    lp = [str(PY), "-m", "line_profiler", "-rmt", str(example)]
    for cmd in (ta, lp):
        why = probe(cmd)
        if why:
            t.not_measured = why
            return t
    res = time_interleaved({"tuneadvisor": ta, "line_profiler": lp}, cfg.runs(12), warmup=1)
    a, b = res["tuneadvisor"], res["line_profiler"]
    t.value = a.median / b.median
    per_round = [x / y for x, y in zip(a.walls, b.walls, strict=True)]
    t.details += [
        f"tuneadvisor: `{show_cmd([TA, 'report', example])}`: {a.describe()}, "
        f"peak RSS {a.peak_rss_mib:.1f} MiB",
        f"line_profiler: `{show_cmd(['.venv/bin/python', '-m', 'line_profiler', '-rmt', example])}`"
        f": {b.describe()}, peak RSS {b.peak_rss_mib:.1f} MiB",
        f"ratio of medians {t.value:.2f}x; per-round ratios: median "
        f"{statistics.median(per_round):.2f}x, min {min(per_round):.2f}x, "
        f"max {max(per_round):.2f}x",
        "both commands write to /dev/null; rounds alternate the order (A B, B A, ...)",
    ]
    return t


def bench_big_report(cfg: Config, big: Path) -> tuple[Target, Target]:
    t = Target("3a", "`tuneadvisor report` on the 50,000-line profile", "<= 2 s (median)", 2.0)
    m = Target("3b", "peak memory (max RSS) of that report", "recorded (no goal)", None, " MiB")
    cmd = [str(TA), "report", str(big)]
    why = probe(cmd)
    if why:
        t.not_measured = m.not_measured = why
        return t, m
    # The probe was the warm-up of the Python timer; hyperfine does its own.
    primary, py = time_single(cfg, cmd, cfg.runs(5), warmup=0, python_runs=3)
    t.value = primary.median
    t.details += [f"command: `{show_cmd([TA, 'report', big])}`", primary.describe()]
    if primary is not py:
        t.details.append(f"cross-check: {py.describe()}")
    m.value = py.peak_rss_mib
    m.details.append(
        f"max over {len(py.maxrss_kib)} runs of each run's own `ru_maxrss` (`os.wait4`); "
        f"per run: {', '.join(f'{k / 1024:.1f}' for k in py.maxrss_kib)} MiB"
    )
    return t, m


def bench_line_profiler_big(big: Path) -> str:
    """For scale: line_profiler's own viewer on the same file (plain text, one run)."""
    cmd = [str(PY), "-m", "line_profiler", "-mt", str(big)]
    try:
        stats = time_python(cmd, runs=1, warmup=0, cwd=ROOT)
    except CommandFailed as exc:
        return f"`python -m line_profiler -mt` on the same file failed: {exc}"
    return (
        "for scale, line_profiler's own viewer on the same file, `.venv/bin/python -m "
        f"line_profiler -mt {rel(big)}` (plain text), one run: {stats.median:.2f} s, peak RSS "
        f"{stats.peak_rss_mib:.1f} MiB; with `-r` (rich) it takes several times longer, so "
        "that is not run"
    )


def _tui_missing() -> str | None:
    if not TUI_APP.is_file():
        return f"{rel(TUI_APP)} does not exist yet"
    code = "from tuneadvisor.tui.app import TuneAdvisorApp, run_open"
    out = subprocess.run([str(PY), "-c", code], capture_output=True, text=True, cwd=ROOT)
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["?"])[-1]
        return f"`{code}` fails: {last}"
    return None


def _one_paint(big: Path) -> dict[str, float]:
    """One fresh process; stamps relative to the parent's perf_counter before spawning."""
    same_clock = time.get_clock_info("perf_counter").implementation.startswith(
        "clock_gettime(CLOCK_MONOTONIC"
    )
    t0 = time.perf_counter()
    proc = subprocess.run(
        [str(PY), str(BENCH / "tui_first_paint.py"), str(big), "train_0"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    t_end = time.perf_counter()
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        raise CommandFailed(f"tui_first_paint.py exits {proc.returncode}: {lines[-1:]}")
    marks = json.loads(proc.stdout.strip().splitlines()[-1])
    if marks["timed_out"]:
        raise CommandFailed(
            f"the function table got no rows (app return code {marks.get('return_code')})"
        )
    if not same_clock:  # cannot subtract clocks across processes: use relative marks only
        raise CommandFailed("perf_counter is not CLOCK_MONOTONIC here")
    stamps = {
        k: float(v) - t0
        for k, v in marks.items()
        if isinstance(v, float) and not isinstance(v, bool)
    }
    stamps["process_exit"] = t_end - t0
    stamps["rows"] = float(marks["rows"])
    stamps["on_screen"] = 1.0 if marks.get("expected_text_on_screen") else 0.0
    return stamps


def bench_tui(cfg: Config, big: Path) -> Target:
    t = Target(
        "3c",
        "TUI first paint (quick, numbers-only stage) on the 50,000-line profile (headless, 160x50)",
        "<= 1.5 s (median)",
        1.5,
    )
    why = _tui_missing()
    if why:
        t.not_measured = why
        return t
    try:
        _one_paint(big)  # warm-up (page cache, .pyc)
        runs = [_one_paint(big) for _ in range(cfg.runs(5))]
    except (CommandFailed, subprocess.TimeoutExpired, json.JSONDecodeError, KeyError) as exc:
        t.not_measured = f"headless run failed: {exc}"
        return t

    def med(key: str) -> float:
        return statistics.median(r[key] for r in runs)

    def med_span(a: str, b: str) -> float:
        return statistics.median(r[b] - r[a] for r in runs)

    paints = [r["painted"] for r in runs]
    t.value = statistics.median(paints)
    t.details += [
        f"command: `{show_cmd(['.venv/bin/python', BENCH / 'tui_first_paint.py', big])}`, "
        f"{len(runs)} runs after 1 warm-up: first paint median {t.value:.3f} s "
        f"(min {min(paints):.3f}, max {max(paints):.3f})",
        f"function table rows: {int(runs[0]['rows'])}; a function name found in the "
        f"rendered screen: {'yes' if all(r['on_screen'] for r in runs) else 'NO'}",
        "phases (medians, seconds from before the spawn):",
        f"  - interpreter start-up until the script's first line: {med('script'):.3f}",
        f"  - `import tuneadvisor.tui.app` (+ textual): {med_span('script', 'imported'):.3f}",
        f"  - app constructed: {med_span('imported', 'constructed'):.3f}",
        f"  - app running (`run_test` entered, first screen mounted): "
        f"{med_span('constructed', 'running'):.3f}",
    ]
    if all("load_start" in r and "load_end" in r for r in runs):
        t.load_share = med_span("load_start", "load_end") / t.value
        t.details += [
            f"  - quick loader called at {med('load_start'):.3f}, "
            f"`load_quick_workspace` (the profile's numbers only) took "
            f"{med_span('load_start', 'load_end'):.3f}",
            f"  - quick loader done until rows seen: {med_span('load_end', 'rows_seen'):.3f}",
        ]
    t.details += [f"  - rows seen until painted: {med_span('rows_seen', 'painted'):.3f}"]
    fulls = [r["full_load_start"] - r["painted"] for r in runs if "full_load_start" in r]
    if fulls:
        lag = statistics.median(fulls)
        t.details.append(
            "  - (not part of the target) the full `load_workspace` started "
            f"{abs(lag):.3f} s {'before' if lag < 0 else 'after'} the first-paint stamp "
            f"(median of {len(fulls)} runs; the app starts it from an after-refresh callback "
            "of the first main screen, so it is queued behind the quick screen's paint; it "
            "goes on in the background and is not waited for)"
        )
    t.details.append(f"  - (not part of the target) process exit: {med('process_exit'):.3f}")
    return t


def bench_tmux(cfg: Config, big: Path) -> Target:
    t = Target(
        "3d",
        "real binary in tmux: `tuneadvisor open` until a function name is on screen",
        "recorded (no goal)",
        None,
    )
    if shutil.which("tmux") is None:
        t.not_measured = "tmux is not installed"
        return t
    why = _tui_missing()
    if why:
        t.not_measured = why
        return t
    sock = f"tuneadvisor-bench-{os.getpid()}"
    tmux = ["tmux", "-L", sock, "-f", "/dev/null"]
    env = {**os.environ, "TERM": "xterm-256color"}
    times: list[float] = []
    try:
        # Start the tmux server first so its start-up is not counted.
        subprocess.run([*tmux, "new-session", "-d", "-s", "keep"], check=True, env=env)
        subprocess.run([*tmux, "set-option", "-g", "remain-on-exit", "on"], check=True)
        for i in range(cfg.runs(3) + 1):
            name = f"open{i}"
            cmd = f"{shlex.quote(str(TA))} open {shlex.quote(str(big))}"
            t0 = time.perf_counter()
            subprocess.run(
                [*tmux, "new-session", "-d", "-s", name, "-x", "160", "-y", "50", cmd],
                check=True,
                env=env,
            )
            seen, pane, dead = None, "", False
            while time.perf_counter() - t0 < 30 and not dead:
                # One tmux call: the pane's text, then whether its process has exited.
                poll = ["capture-pane", "-p", "-t", name, ";", "display-message", "-p", "-t"]
                out = subprocess.run(
                    [*tmux, *poll, name, "#{pane_dead}"],
                    capture_output=True,
                    text=True,
                    check=False,
                ).stdout
                pane, _, flag = out.rstrip("\n").rpartition("\n")
                if FUNC_NAME_RE.search(pane):
                    seen = time.perf_counter() - t0
                    break
                dead = flag.strip() == "1"
                time.sleep(0.01)
            subprocess.run([*tmux, "kill-session", "-t", name], check=False)
            if seen is None:
                last = [ln for ln in pane.splitlines() if ln.strip()][-1:]
                t.not_measured = (
                    f"`tuneadvisor open` exited before showing a function name: {last}"
                    if dead
                    else "no function name appeared in the tmux pane within 30 s"
                )
                return t
            if i > 0:  # the first one is the warm-up
                times.append(seen)
    except (subprocess.CalledProcessError, OSError) as exc:
        t.not_measured = f"tmux failed: {exc}"
        return t
    finally:
        subprocess.run([*tmux, "kill-server"], check=False, capture_output=True)
        Path(f"/tmp/tmux-{os.getuid()}/{sock}").unlink(missing_ok=True)  # the stale socket
    t.value = statistics.median(times)
    t.details += [
        f"`tmux new-session -x 160 -y 50 '{show_cmd([TA, 'open', big])}'`, then "
        "`tmux capture-pane -p` every ~10 ms until a name like `train_0123` appears "
        f"(includes tmux's own redraw latency); {len(times)} runs after 1 warm-up: median "
        f"{t.value:.3f} s (min {min(times):.3f}, max {max(times):.3f})",
    ]
    return t


# --------------------------------------------------------------------------- diagnosis


def importtime_top(cmd_tail: Sequence[str], n: int = 10) -> list[str]:
    """The slowest imports (cumulative) of ``python -X importtime CMD_TAIL``."""
    proc = subprocess.run(
        [str(PY), "-X", "importtime", *cmd_tail],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    rows: list[tuple[int, str]] = []
    for line in proc.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if not line.startswith("import time:") or len(parts) != 3:
            continue
        try:
            rows.append((int(parts[1]), parts[2].rstrip()))
        except ValueError:  # the header line
            continue
    top = sorted(rows, reverse=True)[:n]
    return [f"    {cum / 1000:7.1f} ms  {name}" for cum, name in top]


def cprofile_top(cmd_tail: Sequence[str], n: int = 12) -> list[str]:
    """Markdown: the top of ``python -m cProfile CMD_TAIL`` by cumulative and by own time."""
    out = DATA / "diag.pstats"
    out.unlink(missing_ok=True)
    proc = subprocess.run(
        [str(PY), "-m", "cProfile", "-o", str(out), *cmd_tail],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        check=False,
    )
    if proc.returncode != 0 or not out.is_file():
        last = (proc.stderr.strip().splitlines() or ["(no stderr)"])[-1]
        return [f"(the profiled command exited {proc.returncode}: {last})", ""]
    lines: list[str] = []
    for order in ("cumulative", "tottime"):
        buf = io.StringIO()
        st = pstats.Stats(str(out), stream=buf)
        st.strip_dirs().sort_stats(order).print_stats(n)
        rows = [ln for ln in buf.getvalue().splitlines() if re.match(r"\s*(ncalls|\d)", ln)]
        total = [r.strip() for r in rows if "function calls" in r][:1]
        rows = [r for r in rows if "function calls" not in r]
        what = "cumulative time" if order == "cumulative" else "own time"
        lines += [f"cProfile, top {n} by {what} ({', '.join(total)}):", "", "```", *rows, "```"]
        lines.append("")
    return lines


def phases(big: Path) -> list[str]:
    """Markdown: ``bench/phases.py`` on the big profile (one run, no profiler overhead)."""
    proc = subprocess.run(
        [str(PY), str(BENCH / "phases.py"), str(big), str(big.parent / "train_big.py")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no stderr)"])[-1]
        return [f"(bench/phases.py exited {proc.returncode}: {last})", ""]
    data: dict[str, float | str] = json.loads(proc.stdout)
    rows = [
        ("imports", "importing the report path"),
        ("load_profiles", "`load_profiles`: read + safety-scan the pickle, build the model"),
        ("classify_source", "`classify_source` on the 2.2 MB source alone (line kinds)"),
        ("analysis_rest", "rest of `load_workspace`: source lookup, blocks, per-line analysis"),
        ("load_workspace", "= `load_workspace` in full"),
        ("render_text", "`render_text`"),
    ]
    out = [
        "Phases without a profiler (`bench/phases.py`: imports timed cold; then, after one "
        "untimed `load_workspace` as a warm-up, the fastest of 2 runs of each part, each "
        "timed on its own):",
        "",
        "| phase | seconds |",
        "|---|---|",
    ]
    for key, label in rows:
        value = data.get(key, "not measured")
        if isinstance(value, float) and value < 0:  # the parts alone took longer than the whole
            value = f"{value:.3f} (about 0: below the run-to-run noise)"
        out.append(
            f"| {label} | {value:.3f} |" if isinstance(value, float) else f"| {label} | {value} |"
        )
    return [*out, ""]


def diagnose(cfg: Config, targets: Sequence[Target], big: Path, example: Path) -> list[str]:
    out: list[str] = []
    want: Callable[[Target], bool]
    if cfg.diagnose == "none":
        return out
    if cfg.diagnose == "all":
        want = lambda t: t.value is not None  # noqa: E731
    else:
        want = lambda t: t.verdict == "MISS"  # noqa: E731
    by_key = {t.key: t for t in targets}
    if want(by_key["1"]):
        out += ["### `tuneadvisor --help`: slowest imports (`-X importtime`, cumulative)", ""]
        out += ["```", *importtime_top(["-m", "tuneadvisor", "--help"]), "```", ""]
    for key, path in (("2", example), ("3a", big)):
        if key in by_key and want(by_key[key]):
            tail = ["-m", "tuneadvisor", "report", str(path)]
            out += [f"### `tuneadvisor report {rel(path)}`", ""]
            if path == big:
                out += phases(big)
            out += ["Slowest imports (`-X importtime`, cumulative):", ""]
            out += ["```", *importtime_top(tail), "```", ""]
            out += cprofile_top(tail)
    if "3c" in by_key and want(by_key["3c"]):
        tui = by_key["3c"]
        out += ["### TUI first paint", ""]
        if tui.load_share is not None:
            out += [
                f"The quick loader, `load_quick_workspace` (in the app's loading thread: read "
                "and safety-scan the pickle, the numbers without source or advice), is "
                f"{tui.load_share:.0%} of the first paint (phases in 3c); the full "
                "`load_workspace` (3a's cost) only starts once the quick screen is painted. "
                "The rest:",
                "",
            ]
        tail = [str(BENCH / "tui_first_paint.py"), str(big)]
        out += ["Slowest imports of the TUI script (`-X importtime`, cumulative):", ""]
        out += ["```", *importtime_top(tail), "```", ""]
    return out


# --------------------------------------------------------------------------- results

FIRST_PAINT = """\
"First paint" (target 3c) is measured by `bench/tui_first_paint.py` in a fresh process, from
the parent's `time.perf_counter()` just before it spawns `.venv/bin/python
bench/tui_first_paint.py` (so interpreter start-up and every import count) until the first
moment at which **the function table holds the profile's rows and Textual has rendered
that update**. Loading is staged as in `tuneadvisor open`: the script imports
`tuneadvisor.tui.app` and constructs `TuneAdvisorApp(load=..., title=..., quick=...)` with a
quick loader, `load_quick_workspace(Inputs(profiles=(path,)))` (the profile's
numbers only: no source lookup, line kinds or advice), and the full one, `load_workspace(...)`,
which the app starts only once the quick screen is painted and swaps in later. It runs the
app headless with `App.run_test(size=(160, 50))` and polls every 5 ms (`asyncio.sleep`, not
`pilot.pause()`, which waits for the whole process to be idle and so would wait on the
background full load) until the function table (`DataTable#functions`, which the main
screen fills when it mounts, after the quick loader has returned) has rows; then
`Screen.wait_for_refresh()` returns once those rows are composited, and that instant is
"first paint". So 3c times the **quick, numbers-only first stage**; the full load (3a's
cost) is not waited for. Both processes read the same clock (`perf_counter` is
`CLOCK_MONOTONIC` on Linux), so the child reports stamps and the parent subtracts. After the
stamp (untimed) the script checks that a function name appears in `app.export_screenshot()`.
Headless Textual renders to no terminal, so the cost of writing escape codes to a real
terminal is not included: 3d measures that, on the real binary in tmux, from spawning `tmux
new-session ... tuneadvisor open` until `tmux capture-pane` shows a function name (the quick
stage, as in 3c; tmux's own redraw and the ~10 ms poll interval included)."""


METHOD = """\
- Wall times: with hyperfine installed, single commands (1, 3a) are timed by `hyperfine -N`
  (no shell) and the Python timer runs too as a cross-check; without hyperfine only the
  Python timer runs. The Python timer spawns each run with `subprocess.Popen`, reaps it with
  `os.wait4` and takes `time.perf_counter()` before the spawn and after the reap; it also
  gives each run's own peak RSS (`ru_maxrss`). Warm-up runs are discarded (for 3a the
  first run, which checks that the command works, is the warm-up); the goal is checked
  against the median.
- Target 2 needs both commands in one session: the Python timer alternates them round by
  round (A B, B A, ...) so drift on the machine hits both equally; hyperfine cannot
  interleave. Output goes to /dev/null for both.
- The 50,000-line profile is generated by `bench/gen_profile.py` into `bench/.data/gen/`
  (git-ignored): a real `LineStats(...).to_file(...)` pickle, as `kernprof` writes it, of
  500 training-loop functions x 100 timed lines, with the generated source next to it, so
  source lookup and line kinds run.
- Diagnosis of a MISS (below) runs `python -X importtime` and `python -m cProfile` on the
  missed command once.
- The machine is shared (other work may run during the benchmark); the load average before
  and after is recorded. Numbers are recorded here and never asserted in tests."""


def render(
    targets: Sequence[Target],
    machine: Sequence[tuple[str, str]],
    started: str,
    elapsed: float,
    notes: Sequence[str],
    diagnosis: Sequence[str],
    argv: Sequence[str],
    load_at_start: float,
) -> str:
    load_end = " ".join(f"{x:.2f}" for x in os.getloadavg())
    busy = max(os.getloadavg()[0], load_at_start) >= 0.5 * (os.cpu_count() or 1)
    busy_note = (
        [
            f"**The machine was busy** (1-minute load average {load_at_start:.2f} at the "
            f"start, {os.getloadavg()[0]:.2f} at the end, on {os.cpu_count()} CPUs): other "
            "work competed for the CPUs, so these times may be inflated.",
            "",
        ]
        if busy
        else []
    )
    opts = f" {' '.join(argv)}" if argv else ""
    lines = [
        "# Benchmarks",
        "",
        "Timings are recorded here, never asserted in tests.",
        "",
        "<!-- index:begin -->",
        "<!-- index:end -->",
        "",
        "## Profile viewer (targets 1-3d)",
        "",
        f"Recorded {started} UTC by `bash bench/run.sh{opts}` in {elapsed:.0f} s "
        f"(1-minute load average {load_at_start:.2f} at the start, {os.getloadavg()[0]:.2f} "
        f"at the end, on {os.cpu_count()} CPUs). Rerun with `bash bench/run.sh`: it rewrites "
        "this part of the file (everything above the sections of the other benchmarks, "
        "which it keeps as they are).",
        "",
        *busy_note,
        "## Targets",
        "",
        "| # | What | Goal | Measured | Result |",
        "|---|------|------|----------|--------|",
    ]
    for t in targets:
        cells = (t.key, t.title, t.goal, t.measured, t.verdict)
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    lines += ["", "## Machine", "", "| | |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in machine]
    lines += [f"| load average at end | {load_end} |", "", "## Details", ""]
    for t in targets:
        lines += [f"### {t.key}. {t.title}", ""]
        lines += [f"Result: **{t.verdict}**" + (f" ({t.measured})" if t.value is not None else "")]
        lines += ["", *[f"- {d}" if not d.startswith("  ") else d for d in t.details], ""]
    if notes:
        lines += ["### Notes", "", *[f"- {n}" for n in notes], ""]
    lines += ['## What "first paint" means', "", FIRST_PAINT, "", "## Method", "", METHOD, ""]
    if diagnosis:
        lines += ["## Where the time goes", "", *diagnosis]
    # Everything after this part's own heading sits one level below it.
    first = lines.index("## Profile viewer (targets 1-3d)") + 1
    fenced = False
    for i in range(first, len(lines)):
        if lines[i].startswith("```"):
            fenced = not fenced
        elif not fenced and lines[i].startswith("##"):
            lines[i] = "#" + lines[i]
    return "\n".join(lines).rstrip() + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description="Rerun the benchmarks, rewrite RESULTS.md.")
    parser.add_argument("--quick", action="store_true", help="fewer runs (checks the harness)")
    parser.add_argument("--timer", choices=("auto", "python", "hyperfine"), default="auto")
    parser.add_argument("--diagnose", choices=("misses", "all", "none"), default="misses")
    parser.add_argument("--out", type=Path, default=BENCH / "RESULTS.md")
    parser.add_argument(
        "--example",
        type=Path,
        default=EXAMPLE,
        help="the profile of target 2 (default: %(default)s)",
    )
    args = parser.parse_args()
    cfg = Config(scale=0.3 if args.quick else 1.0, timer=args.timer, diagnose=args.diagnose)
    started = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    t_start = time.perf_counter()

    def step(msg: str) -> None:
        print(f"[{time.perf_counter() - t_start:6.1f} s] {msg}", file=sys.stderr, flush=True)

    step("machine info")
    load_at_start = os.getloadavg()[0]
    machine = machine_info()
    step(f"generating {FUNCTIONS} x {LINES} profile")
    t_gen = time.perf_counter()
    big = generate(DATA / "gen", FUNCTIONS, LINES)
    notes = [
        f"generated `{rel(big)}` ({big.stat().st_size / 1e6:.2f} MB) and its source "
        f"`{rel(big.parent / 'train_big.py')}` "
        f"({(big.parent / 'train_big.py').stat().st_size / 1e6:.2f} MB) in "
        f"{time.perf_counter() - t_gen:.1f} s"
    ]
    targets: list[Target] = []
    step("1: --help")
    targets.append(bench_help(cfg))
    step("2: report vs line_profiler on the example")
    targets.append(bench_ratio(cfg, args.example.resolve()))
    step("3a/3b: report on the big profile")
    targets += bench_big_report(cfg, big)
    if targets[-2].value is not None:
        step("line_profiler -mt on the big profile (for scale)")
        notes.append(bench_line_profiler_big(big))
    step("3c: TUI first paint (headless)")
    targets.append(bench_tui(cfg, big))
    step("3d: tuneadvisor open in tmux")
    targets.append(bench_tmux(cfg, big))
    step("diagnosis")
    diagnosis = diagnose(cfg, targets, big, args.example.resolve())
    elapsed = time.perf_counter() - t_start
    text = render(targets, machine, started, elapsed, notes, diagnosis, sys.argv[1:], load_at_start)
    # Keep the other benchmarks' sections (between their own markers) as they are.
    old = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
    others = split_sections(old)[1]
    if others:
        text = text + "\n" + others.lstrip("\n")
    args.out.write_text(refresh_index(text), encoding="utf-8")
    step(f"wrote {rel(args.out)}")
    for t in targets:
        print(f"{t.key:>3}  {t.verdict:<12} {t.measured:>12}  {t.title}")


if __name__ == "__main__":
    main()
