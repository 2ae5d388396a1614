"""The settings a tune of the user's own job tries: the start (the job as written), the
prediction's setting, and their neighbours in cores x workers, within the node's cores; each
setting left out says why."""

from __future__ import annotations

from dataclasses import dataclass

MAX_SETTINGS = 8  # one array of short trials; more is a sweep, not a tune


@dataclass(frozen=True, order=True)
class JobSetting:
    cores: int  # --cpus-per-task
    workers: int  # DataLoader num_workers

    def describe(self) -> str:
        return (
            f"{self.cores} core{'s' if self.cores != 1 else ''}, "
            f"{self.workers} worker{'s' if self.workers != 1 else ''}"
        )

    def as_json(self) -> dict[str, int]:
        return {"cpus_per_task": self.cores, "num_workers": self.workers}


@dataclass(frozen=True)
class Grid:
    start: JobSetting
    predicted: JobSetting | None
    settings: tuple[JobSetting, ...]  # the start first
    left_out: tuple[str, ...]  # "4 cores, 3 workers: the node has 2 CPUs (sinfo)"


def job_grid(
    start: JobSetting,
    predicted: JobSetting | None,
    node_cores: int | None,
    node_source: str = "sinfo",
) -> Grid:
    """The start, the prediction and each one's neighbours: half and twice the cores, and
    per core count the workers the start or prediction had, one less than the cores (the
    main process keeps one) and as many as the cores."""
    centers = [start] if predicted is None or predicted == start else [start, predicted]
    cores: set[int] = set()
    for center in centers:
        cores |= {center.cores, center.cores // 2, center.cores * 2}
    wanted: list[JobSetting] = []
    for k in sorted(c for c in cores if c >= 1):
        workers = {k - 1, k} | {c.workers for c in centers if c.cores == k}
        wanted += [JobSetting(k, w) for w in sorted(workers) if w >= 0]
    left_out: list[str] = []
    kept = [start]
    for setting in wanted:
        if setting == start:
            continue
        if node_cores is not None and setting.cores > node_cores:
            left_out.append(f"{setting.describe()}: the node has {node_cores} CPUs ({node_source})")
        elif len(kept) >= MAX_SETTINGS:
            left_out.append(f"{setting.describe()}: at most {MAX_SETTINGS} settings per tune")
        else:
            kept.append(setting)
    fits = predicted is not None and (node_cores is None or predicted.cores <= node_cores)
    if predicted is not None and fits and predicted not in kept:  # the prediction is tried
        if len(kept) < MAX_SETTINGS:
            kept.append(predicted)
        else:
            left_out.append(f"{kept[-1].describe()}: at most {MAX_SETTINGS} settings per tune")
            kept[-1] = predicted
    return Grid(start, predicted, tuple(kept), tuple(left_out))
