"""The facts as the Python that uses them reads them: typed sections, one per prefix, built
once from the flat mapping (issue 29).

Rule files name facts (``usage.mem_peak_mib``) and keep the flat mapping; the registry
(``advisor/facts.py``) stays the one list of names, units and types. The model, the plan and
the readers above them read ``view.usage.mem_peak_mib`` instead: mypy checks the attribute,
and each field's fact name is its section's prefix and the field's name, ``__`` for a dot
(``Host.proc__cpu_cores__mean`` is ``host.proc.cpu_cores.mean``). A field whose name is not
registered, or whose type is not the registry's, stops the import (``_check`` below): a
misspelt name cannot read as "absent".

A field is None where the fact is absent or of another type. Values are not converted: an
``int`` in a ``float`` fact stays an int (its text and its JSON are the producer's), and an
``int`` field also takes a whole float (a hand-written mapping's ``8.0``).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping
from typing import ClassVar, Self, TypeVar, dataclass_transform

from tuneadvisor.advisor.facts import FACTS
from tuneadvisor.records import record

N = TypeVar("N", int, float)
T = TypeVar("T")


def _read(kind: str, value: object) -> object:
    """``value`` as a fact of registry type ``kind``, or None."""
    if value is None or (isinstance(value, bool) and kind != "bool"):
        return None
    if kind == "int":
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value if isinstance(value, int) else None
    if kind == "float":
        return value if isinstance(value, int | float) else None
    if kind == "bool":
        return value if isinstance(value, bool) else None
    return value if isinstance(value, str) else None


def positive(value: N | None) -> N | None:
    """``value`` where it is above 0 (a count, a size that says something), else None."""
    return value if value is not None and value > 0 else None


def first(*values: T | None) -> T | None:
    """The first of ``values`` that is given (a fact several sources may give)."""
    return next((v for v in values if v is not None), None)


@dataclass_transform(eq_default=False, kw_only_default=True, frozen_default=True)
class Section:
    """Facts of one prefix. Each subclass declares its fields, all defaulting to None: set by
    keyword, read-only, compared by identity and shown as a frozen dataclass with eq=False
    would be; built without dataclasses, whose generated code for the sixteen sections cost
    ~20 ms of every command's start (issue 29)."""

    PREFIX: ClassVar[str]
    FIELDS: ClassVar[tuple[str, ...]] = ()  # in their order, inherited ones first

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        own = [
            name
            for name, annotation in inspect.get_annotations(cls).items()
            if not str(annotation).startswith("ClassVar") and name not in cls.FIELDS
        ]
        for name in own:
            if cls.__dict__.get(name) is not None:
                raise TypeError(f"{cls.__name__}.{name}: a section's fields default to None")
        cls.FIELDS = (*cls.FIELDS, *own)

    def __init__(self, **values: object) -> None:
        unknown = values.keys() - set(self.FIELDS)
        if unknown:
            name = sorted(unknown)[0]
            raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument {name!r}")
        for name in self.FIELDS:
            object.__setattr__(self, name, values.get(name))

    def __setattr__(self, name: str, value: object) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.FIELDS)
        return f"{type(self).__name__}({shown})"

    def replace(self, **changes: object) -> Self:
        """A copy with ``changes`` (``dataclasses.replace`` for a section)."""
        return type(self)(**{**{name: getattr(self, name) for name in self.FIELDS}, **changes})

    @classmethod
    def fact_name(cls, field: str) -> str:
        """The fact a field reads; a KeyError for a field the section does not have."""
        if field not in cls.FIELDS:
            raise KeyError(f"{cls.__name__} has no field {field}")
        return cls._name(field)

    @classmethod
    def _name(cls, field: str) -> str:
        return f"{cls.PREFIX}.{field.replace('__', '.')}"

    @classmethod
    def names(cls) -> dict[str, str]:
        """Field -> fact name."""
        return {name: cls._name(name) for name in cls.FIELDS}

    @classmethod
    def read(cls, facts: Mapping[str, object]) -> Self:
        values = {
            field: _read(FACTS[name].type, facts.get(name)) for field, name in cls.names().items()
        }
        return cls(**values)

    def facts(self) -> dict[str, object]:
        """The fields that are given, as flat facts (for a derivation's output)."""
        out: dict[str, object] = {}
        for field, name in self.names().items():
            value = getattr(self, field)
            if value is not None:
                out[name] = value
        return out


class Job(Section):
    """The job script as sbatch applies it (or the job as Slurm ran it)."""

    PREFIX = "job"
    cpus_per_task: int | None = None
    mem_mib: float | None = None
    mem_per_cpu_mib: float | None = None
    time_s: int | None = None
    nodes: int | None = None
    gpus: int | None = None
    partition: str | None = None
    tasks_total: int | None = None
    tasks_per_node: int | None = None
    ranks_per_task: int | None = None
    srun_cpus_unset: bool | None = None
    dos_line_breaks: bool | None = None
    tuned_from__digest: str | None = None
    tuned_from__cpus_per_task: int | None = None
    tuned_from__mem_mib: float | None = None
    tuned_from__workers: int | None = None
    omp_threads_set: bool | None = None
    omp_threads_follow_cores: bool | None = None


class Node(Section):
    """The node's shape (site file, cluster or the assumed default)."""

    PREFIX = "node"
    cores: int | None = None
    mem_mib: float | None = None
    gpus: int | None = None
    max_cores_per_gpu: int | None = None
    max_time_s: int | None = None
    assumed: bool | None = None


class Alloc(Section):
    """The allocation the evidence was measured under."""

    PREFIX = "alloc"
    cpus_per_task: int | None = None
    mem_mib: float | None = None
    workers: int | None = None


class Usage(Section):
    """sacct's, else seff's (jobstats' where it measured): advisor/evidence.py."""

    PREFIX = "usage"
    state: str | None = None
    cores: int | None = None
    cpu_efficiency_pct: float | None = None
    mem_peak_mib: float | None = None
    elapsed_s: float | None = None
    mem_efficiency_pct: float | None = None
    mem_requested_mib: float | None = None
    nodes: int | None = None
    killed_for_memory: bool | None = None
    mem_peak_node_mib: float | None = None


class Seff(Section):
    """What seff said about the job."""

    PREFIX = "seff"
    state: str | None = None
    cores: int | None = None
    cpu_efficiency_pct: float | None = None
    mem_used_mib: float | None = None
    mem_requested_mib: float | None = None
    mem_efficiency_pct: float | None = None
    wall_s: float | None = None
    final: bool | None = None
    nodes: int | None = None
    cores_per_node: int | None = None
    mem_used_estimated: bool | None = None
    mem_used_node_mib: float | None = None


class Sacct(Section):
    """What sacct said about the job."""

    PREFIX = "sacct"
    state: str | None = None
    alloc_cpus: int | None = None
    cpu_efficiency_pct: float | None = None
    mem_peak_mib: float | None = None
    elapsed_s: float | None = None
    mem_efficiency_pct: float | None = None
    req_mem_mib: float | None = None
    alloc_nodes: int | None = None
    max_tasks: int | None = None
    mem_peak_estimated: bool | None = None
    mem_peak_node_mib: float | None = None


class Jobstats(Section):
    """What jobstats said about the job."""

    PREFIX = "jobstats"
    cores: int | None = None
    cpu_efficiency_pct: float | None = None
    mem_peak_mib: float | None = None
    mem_peak_node_mib: float | None = None
    mem_efficiency_pct: float | None = None


class Profile(Section):
    """What the line profile says."""

    PREFIX = "profile"
    loader_share: float | None = None
    transfer_share: float | None = None
    compute_share: float | None = None
    sync_share: float | None = None
    step_s: float | None = None
    steps: int | None = None
    other_program: bool | None = None
    epochs: int | None = None
    epoch_steps: int | None = None


class Trace(Section):
    """What the torch.profiler traces say."""

    PREFIX = "trace"
    dataloader_share: float | None = None
    memcpy_share: float | None = None
    memset_share: float | None = None
    kernel_share: float | None = None
    communication_share: float | None = None
    step_s: float | None = None
    steps: int | None = None
    step_spread: float | None = None


class Probe(Section):
    """What the training's probe file says."""

    PREFIX = "probe"
    loop_step_s: float | None = None
    ceiling_step_s: float | None = None
    stall_share: float | None = None
    loop_step_spread: float | None = None
    workers_for_95pct: int | None = None
    test_mode: bool | None = None
    batch_size: int | None = None
    workers: int | None = None


class Host(Section):
    """A watch recording's host figures (the job's process tree)."""

    PREFIX = "host"
    samples: int | None = None
    duration_s: float | None = None
    proc__cpu_cores__mean: float | None = None
    proc__cpu_cores__p95: float | None = None
    proc__rss__max_mib: float | None = None
    proc__count__max: int | None = None
    proc__main_cpu_pct__mean: float | None = None
    proc__workers__max: int | None = None
    proc__storage_read__mean_mib_s: float | None = None
    proc__storage_read__max_mib_s: float | None = None
    proc__affinity__min_cpus: int | None = None
    proc__affinity__short_ranks: int | None = None
    cpu__count: int | None = None
    cpu__busy_cores__mean: float | None = None


class Gpu(Section):
    """The GPUs' figures as measured."""

    PREFIX = "gpu"
    count: int | None = None
    util__mean: float | None = None
    mem_used__max_mib: float | None = None


class Run(Section):
    """The run record beside a profile."""

    PREFIX = "run"
    profile_workers_traced: bool | None = None  # false: trainkit untraced the workers
    batch_size: int | None = None
    samples_per_s: float | None = None
    spread: float | None = None
    others_cores: float | None = None
    allowed_cpus: int | None = None


class Script(Section):
    """The training script's settings, as its scan read them."""

    PREFIX = "script"
    batch_size: int | None = None
    num_workers: int | None = None
    num_workers__source: str | None = None
    num_workers__expr: str | None = None
    num_workers__passed: str | None = None
    num_workers__passed_source: str | None = None
    pin_memory: bool | None = None
    dataloaders: int | None = None  # present wherever a training script was scanned
    max_steps: int | None = None
    max_steps__how: str | None = None
    epochs: int | None = None
    epochs__how: str | None = None


class Model(Section):
    """The step-time model's sizing (advisor/sizing.py)."""

    PREFIX = "model"
    storage_bound: bool | None = None
    workers: int | None = None
    cores_per_task: int | None = None


class Slurm(Section):
    """The Slurm that runs the job (advisor/slurm_release.py)."""

    PREFIX = "slurm"
    version: str | None = None
    srun_drops_cpus: bool | None = None
    version_known: bool | None = None
    version_note: str | None = None


SECTIONS: tuple[type[Section], ...] = (
    Job,
    Node,
    Alloc,
    Usage,
    Seff,
    Sacct,
    Jobstats,
    Profile,
    Trace,
    Probe,
    Host,
    Gpu,
    Run,
    Script,
    Model,
    Slurm,
)


@record(eq=False)
class FactView:
    """Every section, read once from one report's facts (``view``)."""

    job: Job
    node: Node
    alloc: Alloc
    usage: Usage
    seff: Seff
    sacct: Sacct
    jobstats: Jobstats
    profile: Profile
    trace: Trace
    probe: Probe
    host: Host
    gpu: Gpu
    run: Run
    script: Script
    model: Model
    slurm: Slurm


def view(facts: Mapping[str, object]) -> FactView:
    return FactView(
        job=Job.read(facts),
        node=Node.read(facts),
        alloc=Alloc.read(facts),
        usage=Usage.read(facts),
        seff=Seff.read(facts),
        sacct=Sacct.read(facts),
        jobstats=Jobstats.read(facts),
        profile=Profile.read(facts),
        trace=Trace.read(facts),
        probe=Probe.read(facts),
        host=Host.read(facts),
        gpu=Gpu.read(facts),
        run=Run.read(facts),
        script=Script.read(facts),
        model=Model.read(facts),
        slurm=Slurm.read(facts),
    )


def field_kind(section: type[Section], field: str) -> str:
    """The registry type a field's annotation (``int | None``, ...) stands for: read from
    its text (the module's annotations are strings), which costs nothing at start-up."""
    annotation = str(section.__annotations__[field])
    kind, none = annotation.split(" | ")
    if none != "None" or kind not in ("int", "float", "bool", "str"):
        raise TypeError(f"{section.__name__}.{field}: {annotation} is no fact's type")
    return kind


def check(section: type[Section]) -> None:
    """Every field of ``section`` a registered fact of the registry's type (a TypeError
    naming the field otherwise)."""
    for field, name in section.names().items():
        if name not in FACTS:
            raise TypeError(f"{section.__name__}.{field}: {name} is not a registered fact")
        if field_kind(section, field) != FACTS[name].type:
            raise TypeError(f"{section.__name__}.{field}: {name} is {FACTS[name].type}")


def _check() -> None:
    """Every section checked, and each in the view under its prefix: at import, so that a
    misspelt field stops the program instead of reading as absent."""
    sections = FactView.__annotations__
    for section in SECTIONS:
        if sections.get(section.PREFIX) != section.__name__:
            raise TypeError(f"FactView.{section.PREFIX} is not the {section.__name__} section")
        check(section)


_check()


def as_view(facts: Mapping[str, object] | FactView) -> FactView:
    """The view of ``facts``; a view as it is (built once, handed on)."""
    return facts if isinstance(facts, FactView) else view(facts)
