"""What a scan of a training script found (`ScriptScan`, built by `scan.scan_script`) and the
flat `script.*` facts it gives (the rows of `fact_rows`); unknown values stay absent.

`ScriptScan` is defined here, not in `scan`, so that imports run one way: `scan` imports this
module to build one, and this module needs nothing of `scan`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tuneadvisor.trainscript.argparse_options import option_default
from tuneadvisor.trainscript.fact_rows import FACT_ROWS
from tuneadvisor.trainscript.node_index import convert_value, is_number, last_part
from tuneadvisor.trainscript.scans.length import Length
from tuneadvisor.trainscript.scans.results import (
    LITERAL,
    LOADER_PARAMS,
    AmpScan,
    ArgOption,
    DataLoaderScan,
    DdpScan,
    LoaderLoop,
    Origin,
    SyncSite,
)

# Every fact a scan can emit: (name, type, unit, description), the row format of
# `tuneadvisor.advisor.facts`. Values of the wrong type are dropped, never emitted.
_FACT_TYPES: Mapping[str, str] = {row[0]: row[1] for row in FACT_ROWS}


@dataclass(frozen=True)
class ScriptScan:
    parse_error: str | None = None
    dataloaders: tuple[DataLoaderScan, ...] = ()
    train_loader_index: int | None = None
    loops: tuple[LoaderLoop, ...] = ()
    syncs: tuple[SyncSite, ...] = ()  # every sync call; see step_syncs
    options: Mapping[str, ArgOption] = field(default_factory=dict)  # by dest
    ddp: DdpScan = field(default_factory=DdpScan)
    amp: AmpScan = field(default_factory=AmpScan)
    cudnn_benchmark: Origin | None = None
    torch_threads: Origin | None = None
    omp_num_threads: Origin | None = None
    # Where a new top-level import goes (a 0-based line index): for a patch, which is
    # written from this scan without parsing the script again.
    import_at: int = 0
    # the run's length where its options say it: "max_steps" and "epochs" (scans/length.py)
    length: Mapping[str, Length] = field(default_factory=dict)

    @property
    def train_loader(self) -> DataLoaderScan | None:
        if self.train_loader_index is None:
            return None
        return self.dataloaders[self.train_loader_index]

    @property
    def step_syncs(self) -> tuple[SyncSite, ...]:
        """Syncs run once per training step (every loader loop's when none looks like training)."""
        per_step = [s for s in self.syncs if s.per_step]
        if any(loop.training for loop in self.loops):
            per_step = [s for s in per_step if s.training]
        return tuple(per_step)

    def facts(self) -> dict[str, object]:
        """The flat `script.*` facts; unknown values are absent, never None."""
        return scan_facts(self)


def scan_facts(scan: ScriptScan) -> dict[str, object]:
    """The flat `script.*` facts; unknown values are absent, never None."""
    if scan.parse_error is not None:
        return {}
    out: dict[str, object] = {}
    _put(out, "script.dataloaders", len(scan.dataloaders))
    _loader_facts(out, scan.train_loader)
    _ddp_facts(out, scan.ddp, scan.train_loader)
    _amp_facts(out, scan.amp)
    _sync_facts(out, scan)
    _misc_facts(out, scan)
    for key, length in scan.length.items():
        _put(out, f"script.{key}", length.value)
        _put(out, f"script.{key}.how", length.how)
    return out


def helper_loader_facts(helper: ScriptScan, script: ScriptScan, name: str) -> dict[str, object]:
    """The DataLoader facts of a local module the training script imports (``name``, as the
    script's folder sees it), for a script that builds no DataLoader itself."""
    out: dict[str, object] = {}
    if helper.parse_error is not None or helper.train_loader is None:
        return out
    loader = helper.train_loader
    _put(out, "script.dataloaders", len(helper.dataloaders))
    _put(out, "script.dataloader.file", name)
    _loader_facts(out, loader)
    sampler = loader.distributed_sampler
    if sampler is None and (helper.ddp.sampler_lines or script.ddp.sampler_lines):
        sampler = True  # built, and passed some way the scan cannot follow: do not accuse
    if sampler is not None:
        _put(out, "script.ddp.distributed_sampler", sampler)
    return out


def _put(out: dict[str, object], name: str, value: object) -> None:
    """Set a fact when the value has the fact's type (numeric strings count as ints)."""
    kind = _FACT_TYPES[name]
    if kind == "int" and isinstance(value, str):
        value = convert_value(value.strip(), int)  # OMP_NUM_THREADS="4"
    if kind == "bool" and is_number(value) and value in (0, 1):
        value = bool(value)
    ok = {
        "int": isinstance(value, int) and not isinstance(value, bool),
        "bool": isinstance(value, bool),
        "str": isinstance(value, str) and value != "",
        "float": is_number(value),
    }[kind]
    if ok:
        out[name] = value


def _origin_facts(out: dict[str, object], prefix: str, origin: Origin) -> None:
    """`prefix`, `prefix.source`, and whichever details the registry lists for `prefix`."""
    details: dict[str, object] = {
        "source": origin.source,
        "line": origin.line,
        "expr": origin.expr,
        "env": origin.env,
        "env_default": origin.env_default,
        "cpu_call": origin.cpu_call,
        "conditional": origin.conditional,
        "derived": origin.derived,
        "passed": origin.passed,
        "passed_source": origin.passed_origin.source if origin.passed_origin else None,
        "literal": origin.value if origin.source == LITERAL else None,
    }
    if origin.option is not None:
        details["option"] = origin.option.name
        details["default"] = option_default(origin.option)
        default = origin.option.default
        details["default_source"] = default.source if default is not None else None
    for key, value in details.items():
        name = f"{prefix}.{key}"
        if name in _FACT_TYPES and value is not None:
            _put(out, name, value)
    if origin.value is not None and prefix in _FACT_TYPES:
        _put(out, prefix, origin.value)


def _loader_facts(out: dict[str, object], loader: DataLoaderScan | None) -> None:
    if loader is None:
        return
    _put(out, "script.dataloader.line", loader.line)
    if loader.name:
        _put(out, "script.dataloader.name", loader.name)
    for param in LOADER_PARAMS:
        _origin_facts(out, f"script.{param}", loader.params[param])
    sampler = loader.params["sampler"]
    if sampler.call:
        _put(out, "script.sampler", last_part(sampler.call))


def _ddp_facts(out: dict[str, object], ddp: DdpScan, loader: DataLoaderScan | None) -> None:
    _put(out, "script.ddp", ddp.used)
    _put(out, "script.ddp.init", bool(ddp.init_lines))
    if ddp.wrap_lines or ddp.init_lines:
        _put(out, "script.ddp.line", min(ddp.wrap_lines + ddp.init_lines))
    if ddp.backend:
        _put(out, "script.ddp.backend", ddp.backend)
    _put(out, "script.ddp.set_epoch", bool(ddp.set_epoch_lines))
    if ddp.sampler_lines:
        _put(out, "script.ddp.sampler.line", min(ddp.sampler_lines))
    _put(out, "script.data_parallel", bool(ddp.data_parallel_lines))
    if ddp.data_parallel_lines:
        _put(out, "script.data_parallel.line", min(ddp.data_parallel_lines))
    _put(out, "script.ddp.spawn", bool(ddp.spawn_lines))
    _put(out, "script.ddp.slurm_env", ddp.reads_slurm_env)
    _put(out, "script.ddp.torchrun_env", ddp.reads_torchrun_env)
    sampler = loader.distributed_sampler if loader is not None else None
    if sampler is None and loader is not None and ddp.sampler_lines:
        sampler = True  # built, and passed some way the scan cannot follow: do not accuse
    if sampler is not None:
        _put(out, "script.ddp.distributed_sampler", sampler)
    for prefix, origin in (
        ("script.world_size", ddp.world_size),
        ("script.rank", ddp.rank),
        ("script.local_rank", ddp.local_rank),
        ("script.nprocs", ddp.nprocs),
    ):
        if origin is not None:
            _origin_facts(out, prefix, origin)


def _amp_facts(out: dict[str, object], amp: AmpScan) -> None:
    _put(out, "script.amp", amp.used)
    deprecated = amp.deprecated
    _put(out, "script.amp.deprecated", bool(deprecated))
    if deprecated:
        _put(out, "script.amp.deprecated.line", deprecated[0].line)
        _put(out, "script.amp.deprecated.count", len(deprecated))
    _put(out, "script.amp.grad_scaler", any(u.kind == "grad_scaler" for u in amp.uses))
    if amp.dtype:
        _put(out, "script.amp.dtype", amp.dtype)


def _sync_facts(out: dict[str, object], scan: ScriptScan) -> None:
    if not scan.loops:
        return  # no step loop found: "no syncs" would be a guess
    _put(out, "script.loader_loops", len(scan.loops))
    syncs = scan.step_syncs
    unguarded = [s for s in syncs if s.guard is None]
    _put(out, "script.sync_in_loop.count", len(syncs))
    _put(out, "script.sync_in_loop.unguarded", len(unguarded))
    _put(out, "script.sync_in_loop.guarded", len(syncs) - len(unguarded))
    if syncs:
        _put(out, "script.sync_in_loop.line", (unguarded or list(syncs))[0].line)
        _put(out, "script.sync_in_loop.kinds", ",".join(sorted({s.kind for s in syncs})))


def _misc_facts(out: dict[str, object], scan: ScriptScan) -> None:
    if scan.cudnn_benchmark is not None and scan.cudnn_benchmark.value is not None:
        _put(out, "script.cudnn_benchmark", scan.cudnn_benchmark.value)
    if scan.torch_threads is not None:
        _origin_facts(out, "script.torch_threads", scan.torch_threads)
    if scan.omp_num_threads is not None:
        _origin_facts(out, "script.omp_num_threads", scan.omp_num_threads)
