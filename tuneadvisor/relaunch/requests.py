"""What ``run`` and ``tune`` ask for (built from the command line by
tuneadvisor.commands.relaunch_options), and how it becomes a run: the settings flags over a
report's advice (``--from REPORT.json`` or the inputs of ``report``), the data set and the
interpreter. ``RelaunchRequest`` is what was asked; ``RunRequest`` (runner) the resolved run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tuneadvisor.advisor.prediction import Prediction
    from tuneadvisor.relaunch.bundled import Bundled
    from tuneadvisor.relaunch.runner import RunRequest
    from tuneadvisor.relaunch.settings import Settings
    from tuneadvisor.workspace.inputs import Inputs
    from tuneadvisor.workspace.load import Workspace


@dataclass(frozen=True)
class SettingsOverrides:
    """The settings flags given (None: not given); they go over the advice's settings."""

    cpus_per_task: int | None = None
    ntasks: int | None = None  # all the tasks, on every node
    nodes: int | None = None
    ntasks_per_node: int | None = None
    gpus: int | None = None
    mem: str | None = None  # as sbatch spells it
    time: str | None = None  # as sbatch spells it
    knobs: Mapping[str, int | bool | str] = field(default_factory=dict)  # given ones only
    extra: tuple[str, ...] = ()  # more arguments for the training script


@dataclass(frozen=True)
class RelaunchRequest:
    """A relaunch of the bundled script ``name``, as asked."""

    name: str
    overrides: SettingsOverrides = field(default_factory=SettingsOverrides)
    from_report: str | None = None  # start from this saved report's advice
    inputs: Inputs | None = None  # else from the advice on these inputs
    python: str | None = None  # None: $TUNEADVISOR_TORCH_PYTHON, else this interpreter
    runs: str | None = None  # None: $TUNEADVISOR_RUNS_DIR or ./runs
    data_dir: str | None = None  # None: ./data
    synthetic: int | None = None  # make and use a synthetic data set of N images
    label: str | None = None
    profile: bool = False  # kernprof: one .lprof per rank
    torch_profile: bool = False  # torch.profiler: one trace per rank
    watch: bool = True
    submit: bool = False
    max_restarts: int = 0


def settings_with(overrides: SettingsOverrides, advised: Settings | None = None) -> Settings:
    """The settings flags over ``advised`` (the advice's settings, or the defaults)."""
    from dataclasses import replace

    from tuneadvisor.errors import InputError
    from tuneadvisor.relaunch.settings import Settings, checked_settings

    settings = advised if advised is not None else Settings()
    given = {
        "cpus_per_task": overrides.cpus_per_task, "ntasks": overrides.ntasks,
        "gpus": overrides.gpus, "mem": overrides.mem, "time": overrides.time,
        "nodes": overrides.nodes,
    }  # fmt: skip
    changes: dict[str, Any] = {key: value for key, value in given.items() if value is not None}
    # --nodes alone keeps the tasks of each node; --ntasks-per-node gives them
    nodes = changes.get("nodes", settings.nodes)
    per_node = overrides.ntasks_per_node
    if per_node is not None:
        if "ntasks" in changes and changes["ntasks"] != per_node * nodes:
            raise InputError(
                None,
                f"--ntasks {changes['ntasks']} is not --nodes {nodes} x --ntasks-per-node "
                f"{per_node}: give one of --ntasks and --ntasks-per-node",
            )
        changes["ntasks"] = per_node * nodes
    elif "nodes" in changes and "ntasks" not in changes:
        changes["ntasks"] = settings.tasks_per_node * nodes
    knobs = {**settings.knobs, **overrides.knobs}
    # the user's word, not the advice's
    because = {k: v for k, v in settings.because.items() if k not in overrides.knobs}
    given_settings = replace(
        settings, **changes, knobs=knobs, because=because, extra_args=overrides.extra
    )
    # Each value goes on a command line or into a job script: checked before any is written.
    return checked_settings(given_settings.check_shape(), None)


def settings_from_workspace(base: Settings, workspace: Workspace, source: str) -> Settings:
    """``base`` with the advice of these inputs: the job script's directives as given, then
    the plan (as ``report`` shows them; nothing without advice)."""
    from tuneadvisor.relaunch.settings import settings_from_advice

    advice = workspace.advice
    if advice is None:
        return base
    job = workspace.tuned.original_job if workspace.job is not None else None
    directives = job.directives() if job is not None else {}
    return settings_from_advice(base, directives, advice.plan, source)


@dataclass(frozen=True)
class Advised:
    """What the advice gives a relaunch: its settings, where they came from, and what it
    predicts for them (None: no advice, or none predicted)."""

    settings: Settings | None = None
    source: str | None = None
    prediction: Prediction | None = None


def advised_settings(request: RelaunchRequest) -> Advised:
    """The advice's settings, their source and prediction: a saved report (``--from``; a
    malformed prediction in it is one InputError naming it), else the advice on the inputs
    given; all None without either."""
    from tuneadvisor.relaunch.settings import Settings, settings_from_report

    if request.from_report:
        from tuneadvisor.relaunch.saved_report import read_report

        report = read_report(request.from_report)
        settings = settings_from_report(Settings(), report)
        advised = Advised(settings, report.source, report.prediction)
        return _here(request, report.facts, advised)
    inputs = request.inputs
    if inputs is not None:
        from tuneadvisor.workspace.load import load_workspace

        source = "the report of " + (", ".join(inputs.profiles) or inputs.job or "the inputs")
        workspace = load_workspace(inputs)
        advice = workspace.advice
        prediction = advice.prediction if advice is not None else None
        settings = settings_from_workspace(Settings(), workspace, source)
        facts = advice.facts if advice is not None else None
        return _here(request, facts, Advised(settings, source, prediction))
    return Advised()


def _here(
    request: RelaunchRequest, facts: Mapping[str, object] | None, advised: Advised
) -> Advised:
    """A local run's advice sized for this machine's cores (the processes run here, whatever
    node the advice sized for); a submitted one as the advice says."""
    if request.submit or advised.settings is None:
        return advised
    from tuneadvisor.relaunch.here import sized_here
    from tuneadvisor.relaunch.local_allocation import available_cores

    here = sized_here(facts, advised.settings, advised.prediction, len(available_cores()))
    return Advised(here.settings, advised.source, here.prediction)


def _check_nodes(spec: Bundled, settings: Settings, *, submit: bool) -> None:
    """Several nodes need sbatch (a run here is this one machine) and srun's tasks, which
    Slurm spreads over the nodes (each rank finds the first node from the job's node list)."""
    from tuneadvisor.errors import InputError

    if settings.nodes <= 1:
        return
    if spec.launcher == "torchrun":  # its rendezvous here is --standalone, one node
        raise InputError(
            None, f"--nodes {settings.nodes}: {spec.name} runs on one node here; over several, "
            f"submit the bundled slurm/{spec.job} (tuneadvisor apply --submit tunes it)",
        )  # fmt: skip
    if spec.launcher != "srun":
        raise InputError(
            None, f"--nodes {settings.nodes}: {spec.name} is one process on one node "
            "(mnist_ddp runs one rank per task over several)",
        )  # fmt: skip
    if not submit:
        raise InputError(
            None, f"--nodes {settings.nodes}: a run here is on this one machine; add --submit "
            "to run it through sbatch",
        )  # fmt: skip


def _check_local(overrides: SettingsOverrides, settings: Settings, source: str | None) -> None:
    from tuneadvisor.relaunch.local_allocation import available_cores
    from tuneadvisor.relaunch.local_processes import check_local_processes

    check_local_processes(
        settings,
        len(available_cores()),
        source,
        tasks_given=overrides.ntasks is not None or overrides.ntasks_per_node is not None,
        workers_given="num_workers" in overrides.knobs,
    )


def resolve_run(request: RelaunchRequest) -> RunRequest:
    """The run asked for: the bundle, its settings (flags over advice), the interpreter, the
    runs folder and the data set (made first when synthetic)."""
    from tuneadvisor.relaunch.bundled import bundled, torch_python
    from tuneadvisor.relaunch.records import runs_dir
    from tuneadvisor.relaunch.runner import RunRequest

    spec = bundled(request.name)
    advised = advised_settings(request)
    source = advised.source
    settings = settings_with(request.overrides, advised.settings)
    _check_nodes(spec, settings, submit=request.submit)
    if not request.submit:  # the processes started here: the command line's, or bounded
        _check_local(request.overrides, settings, source)
    python = torch_python(request.python)
    if not request.submit:  # a job runs where its own modules and environment are loaded
        from tuneadvisor.relaunch.preflight import require_torch

        require_torch(python)  # before the data is made or any run folder written
    root = runs_dir(request.runs).resolve()
    return RunRequest(
        spec=spec,
        settings=settings,
        runs_root=root,
        python=python,
        data_dir=_data_dir(request, spec, root, python).resolve(),
        label=request.label,
        profile=request.profile,
        torch_profile=request.torch_profile,
        watch=request.watch,
        source={"report": source} if source else {},
        max_restarts=request.max_restarts,
        prediction=advised.prediction,
    )


def _data_dir(request: RelaunchRequest, spec: Bundled, root: Path, python: str) -> Path:
    """The synthetic data set (made once, in the runs folder) or the folder given."""
    from tuneadvisor.relaunch.bundled import generator_path, has_data, synthetic_data

    if request.synthetic:
        return synthetic_data(spec.dataset, root / "data", request.synthetic, python)
    data_dir = Path(request.data_dir or "data")
    if not has_data(spec.dataset, data_dir):
        from tuneadvisor.errors import InputError

        raise InputError(
            data_dir,
            f"no {spec.dataset} data here: give --data-dir, --synthetic N, or make it with "
            f"python {generator_path(spec.dataset)} DIR",
        )
    return data_dir
