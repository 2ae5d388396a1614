"""DDP in a training script: the wrap, init_process_group, DistributedSampler, set_epoch,
spawn, nn.DataParallel (what DDP replaces), and where the world size, ranks and process
count come from."""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet

from tuneadvisor.trainscript.names import (
    DDP_WRAPPERS,
    LOCAL_RANK_NAMES,
    NPROC_NAMES,
    RANK_NAMES,
    WORLD_SIZE_NAMES,
)
from tuneadvisor.trainscript.node_index import NodeIndex, argument, keyword_arg, last_part
from tuneadvisor.trainscript.resolve import Resolver
from tuneadvisor.trainscript.scans.results import CALL, UNKNOWN, VARIABLE, DdpScan, Origin


def scan_ddp(index: NodeIndex, resolver: Resolver) -> DdpScan:
    groups: dict[str, list[ast.Call]] = {}
    for call in index.calls:
        func = call.func
        qual = index.qual(func) or (func.attr if isinstance(func, ast.Attribute) else "")
        group = _ddp_group(qual)
        if group is not None:
            groups.setdefault(group, []).append(call)
    inits = groups.get("init", [])
    spawns = groups.get("spawn", [])
    backend_node = argument(inits[0], "backend", 0) if inits else None
    backend = resolver.resolve(backend_node).value if backend_node is not None else None
    env_reads = _env_reads(index)
    ranks = _Ranks(index, resolver, env_reads)
    return DdpScan(
        wrap_lines=_lines(groups.get("wrap", [])),
        init_lines=_lines(inits),
        backend=backend if isinstance(backend, str) else None,
        sampler_lines=_lines(groups.get("sampler", [])),
        set_epoch_lines=_lines(groups.get("set_epoch", [])),
        spawn_lines=_lines(spawns),
        data_parallel_lines=_lines(groups.get("data_parallel", [])),
        world_size=ranks.find(
            inits, "world_size", WORLD_SIZE_NAMES, {"WORLD_SIZE", "SLURM_NTASKS"}
        ),
        rank=ranks.find(inits, "rank", RANK_NAMES, {"RANK", "SLURM_PROCID"}),
        local_rank=ranks.find([], "", LOCAL_RANK_NAMES, {"LOCAL_RANK", "SLURM_LOCALID"}),
        nprocs=ranks.nprocs(spawns),
        env_reads=env_reads,
    )


def _ddp_group(qual: str) -> str | None:
    last = last_part(qual)
    if last in DDP_WRAPPERS:
        return "wrap"
    if last == "DataParallel":  # torch.nn.DataParallel: threads in one process, not DDP
        return "data_parallel"
    if last == "init_process_group":
        return "init"
    if last.endswith("DistributedSampler"):
        return "sampler"
    if last == "set_epoch":
        return "set_epoch"
    if qual.endswith("multiprocessing.spawn") or qual == "mp.spawn":
        return "spawn"
    return None


def _lines(calls: Sequence[ast.Call]) -> tuple[int, ...]:
    return tuple(call.lineno for call in calls)


def _env_reads(index: NodeIndex) -> dict[str, tuple[int, ...]]:
    reads: dict[str, list[int]] = {}
    for name, node in index.env_nodes:
        reads.setdefault(name, []).append(node.lineno)
    return {name: tuple(lines) for name, lines in reads.items()}


class _Ranks:
    """World size, ranks and process counts: from init_process_group, names, or env reads."""

    _VAGUE = (VARIABLE, UNKNOWN, CALL)

    def __init__(
        self, index: NodeIndex, resolver: Resolver, env_reads: Mapping[str, tuple[int, ...]]
    ) -> None:
        self.index = index
        self.resolver = resolver
        self.env_reads = env_reads

    def find(
        self, inits: list[ast.Call], keyword: str, names: AbstractSet[str], env: set[str]
    ) -> Origin | None:
        fallback: Origin | None = None
        for call in inits:
            node = keyword_arg(call, keyword) if keyword else None
            if node is not None:
                origin = self.resolver.resolve(node)
                if origin.source not in self._VAGUE:
                    return origin
                fallback = fallback or origin
        return (
            self._from_names(names) or self._from_env(env) or self._from_options(names) or fallback
        )

    def nprocs(self, spawns: list[ast.Call]) -> Origin | None:
        for call in spawns:
            node = argument(call, "nprocs", 2)
            if node is not None:
                return self.resolver.resolve(node)
        return self._from_names(NPROC_NAMES) or self._from_keywords(NPROC_NAMES)

    def _from_names(self, names: AbstractSet[str]) -> Origin | None:
        bindings = [
            binding
            for name, found in self.index.bindings.items()
            if last_part(name).lower() in names
            for binding in found
        ]
        for binding in sorted(bindings, key=lambda b: b.end):
            origin = self.resolver.resolve(binding.value)
            if origin.source not in self._VAGUE:
                return origin
        return None

    def _from_env(self, env: set[str]) -> Origin | None:
        for name, node in self.index.env_nodes:
            if name in env:
                return self.resolver.resolve(node)
        return None

    def _from_options(self, names: AbstractSet[str]) -> Origin | None:
        dests = sorted(names & set(self.resolver.options))
        if not dests:
            return None
        return self.resolver.argparse(self.resolver.options[dests[0]], f"args.{dests[0]}")

    def _from_keywords(self, names: frozenset[str]) -> Origin | None:
        for call in self.index.calls:
            for kw in call.keywords:
                if kw.arg in names:
                    origin = self.resolver.resolve(kw.value)
                    if origin.source not in self._VAGUE:
                        return origin
        return None
