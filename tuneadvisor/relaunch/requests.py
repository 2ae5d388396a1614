"""From command-line arguments to a run request: the settings flags shared by ``run`` and
``tune`` (declared in tuneadvisor.commands.relaunch_options), a report's advice
(``--from REPORT.json`` or the inputs of ``report``), the data set and the interpreter."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tuneadvisor.relaunch.bundled import Bundled
    from tuneadvisor.relaunch.runner import RunRequest
    from tuneadvisor.relaunch.settings import Settings
    from tuneadvisor.session.inputs import Inputs
    from tuneadvisor.session.workspace import Workspace


def settings_from_args(args: argparse.Namespace, advised: Settings | None = None) -> Settings:
    """The settings flags over ``advised`` (the advice's settings, or the defaults)."""
    from dataclasses import replace

    from tuneadvisor.errors import InputError
    from tuneadvisor.relaunch.settings import KNOBS, Settings, checked_settings

    settings = advised if advised is not None else Settings()
    changes: dict[str, Any] = {}
    for key in ("cpus_per_task", "ntasks", "gpus", "mem", "time", "nodes", "ntasks_per_node"):
        value = getattr(args, key, None)
        if value is not None:
            if isinstance(value, int) and (value < (0 if key == "gpus" else 1)):
                raise InputError(None, f"--{key.replace('_', '-')} must be at least 1")
            changes[key] = value
    # --nodes alone keeps the tasks of each node; --ntasks-per-node gives them
    nodes = changes.get("nodes", settings.nodes)
    per_node = changes.pop("ntasks_per_node", None)
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
    knobs = dict(settings.knobs)
    because = dict(settings.because)
    for key in KNOBS:
        value = getattr(args, key, None)
        if value is not None:
            knobs[key] = value
            because.pop(key, None)  # the user's word, not the advice's
    extra = tuple(getattr(args, "extra", ()) or ())
    given = replace(settings, **changes, knobs=knobs, because=because, extra_args=extra)
    # Each value goes on a command line or into a job script: checked before any is written.
    return checked_settings(given.check_shape(), None)


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


def advised_settings(
    args: argparse.Namespace, request: Inputs | None
) -> tuple[Settings | None, str | None]:
    """The advice's settings and where they came from: a saved report (``--from``), else
    the advice on the inputs given; (None, None) without either."""
    from tuneadvisor.relaunch.settings import Settings, load_report, settings_from_report

    if args.from_report:
        report = load_report(args.from_report)
        return settings_from_report(Settings(), report, args.from_report), args.from_report
    if request is not None:
        from tuneadvisor.session.workspace import load_workspace

        source = "the report of " + (", ".join(request.profiles) or request.job or "the inputs")
        return settings_from_workspace(Settings(), load_workspace(request), source), source
    return None, None


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


def build_request(args: argparse.Namespace, name: str, request: Inputs | None = None) -> RunRequest:
    from tuneadvisor.relaunch.bundled import (
        bundled,
        generator_path,
        has_data,
        synthetic_data,
        torch_python,
    )
    from tuneadvisor.relaunch.records import runs_dir
    from tuneadvisor.relaunch.runner import RunRequest

    spec = bundled(name)
    advised, source = advised_settings(args, request)
    settings = settings_from_args(args, advised)
    _check_nodes(spec, settings, submit=bool(getattr(args, "submit", False)))
    python = torch_python(args.python)
    root = runs_dir(args.runs).resolve()
    if args.synthetic:
        data_dir = synthetic_data(spec.dataset, root / "data", args.synthetic, python)
    else:
        data_dir = Path(args.data_dir or "data")
        if not has_data(spec.dataset, data_dir):
            from tuneadvisor.errors import InputError

            raise InputError(
                data_dir,
                f"no {spec.dataset} data here: give --data-dir, --synthetic N, or make it with "
                f"python {generator_path(spec.dataset)} DIR",
            )
    return RunRequest(
        spec=spec,
        settings=settings,
        runs_root=root,
        python=python,
        data_dir=data_dir.resolve(),
        label=getattr(args, "label", None),
        profile=getattr(args, "profile", False),
        watch=getattr(args, "watch", True),
        source={"report": source} if source else {},
        max_restarts=getattr(args, "max_restarts", 0) or 0,
    )
