"""How the launchers' options read (``srun``, ``mpirun``, ``torchrun``, ``accelerate``,
``deepspeed``, ``kernprof``, containers, ``conda``/``uv run``...): which take a value, so the
command they start is found after them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tuneadvisor.slurm.options import OPTIONS, Arg


def _long_names(arg: Arg) -> frozenset[str]:
    return frozenset(f"--{name}" for o in OPTIONS if o.arg is arg for name in (o.name, *o.aliases))


_SRUN_LONG_VALUES = _long_names(Arg.REQUIRED) | {
    f"--{name}"
    for name in (
        "cpu-bind",
        "mpi",
        "accel-bind",
        "epilog",
        "prolog",
        "task-epilog",
        "task-prolog",
        "jobid",
        "slurmd-debug",
        "het-group",
        "tres-per-task",
        "wait",
        "multi-prog-file",
    )
}
_MPI_TWO_VALUES = {"-mca", "--mca", "-gmca", "--gmca", "-genv", "-env", "--env"}
_MPI_VALUES = {
    "-n",
    "-np",
    "-c",
    "-N",
    "-H",
    "-host",
    "--host",
    "-hostfile",
    "--hostfile",
    "-machinefile",
    "--machinefile",
    "-f",
    "-x",
    "--map-by",
    "-map-by",
    "--bind-to",
    "-bind-to",
    "--rank-by",
    "-rank-by",
    "-ppn",
    "-npernode",
    "--npernode",
    "-wdir",
    "--wdir",
    "-genvlist",
    "-bootstrap",
}
_TORCHRUN_FLAGS = {"--standalone", "--no-python", "--no_python", "--run-path", "--run_path"}
_TORCHRUN_FLAGS |= {"-m", "--module"}
_ACCELERATE_FLAGS = {
    "--cpu",
    "--multi_gpu",
    "--multi-gpu",
    "--tpu",
    "--ipex",
    "--use_deepspeed",
    "--use-deepspeed",
    "--use_fsdp",
    "--use-fsdp",
    "--use_megatron_lm",
    "--use-megatron-lm",
    "--use_xpu",
    "--use-xpu",
    "-m",
    "--module",
    "--no_python",
    "--no-python",
    "--debug",
    "-q",
    "--quiet",
    "--same_network",
    "--same-network",
}
_DEEPSPEED_FLAGS = {
    "--no_python",
    "--no_local_rank",
    "--module",
    "--force_multi",
    "--elastic_training",
    "--bind_cores_to_rank",
    "--no_ssh_check",
    "--no_ssh",
}
_KERNPROF_VALUES = {"--outfile", "--setup", "--unit", "--output-interval", "--prof-mod"}
_CONTAINER_VALUES = {
    *("-B", "--bind", "--mount", "--env", "--env-file", "-H", "--home", "-W", "--workdir"),
    *("--pwd", "-o", "--overlay", "-S", "--scratch", "--security", "--network"),
    *("--network-args", "--hostname", "--dns", "--apply-cgroups", "--fusemount"),
}
_CONDA_VALUES = {"-n", "--name", "-p", "--prefix", "--cwd"}
_UV_VALUES = {"--with", "--with-requirements", "--python", "-p", "--project", "--directory"}
_UV_VALUES |= {"--env-file", "--group", "--extra", "--package", "--index", "--index-url"}


@dataclass(frozen=True)
class Spec:
    """How a launcher's options read: which take a value (one or two words)."""

    value_letters: str = ""  # short options that take a value (``-n 2``, ``-n2``)
    long_values: Callable[[str], bool] = lambda word: False
    two_values: frozenset[str] = frozenset()
    module_flags: frozenset[str] = frozenset()  # the target is a module, not a file


_SRUN = Spec("ABCDGJLMNSTWbcdeimnopqstwx", lambda w: w in _SRUN_LONG_VALUES)
_MPI = Spec("", lambda w: w in _MPI_VALUES, frozenset(_MPI_TWO_VALUES))
_TORCHRUN = Spec(
    "rt",
    lambda w: w.startswith("--") and w not in _TORCHRUN_FLAGS,
    module_flags=frozenset({"-m", "--module"}),
)
ACCELERATE = Spec(
    "",
    lambda w: w.startswith("--") and w not in _ACCELERATE_FLAGS,
    module_flags=frozenset({"-m", "--module"}),
)
_DEEPSPEED = Spec(
    "",
    lambda w: w.startswith("--") and w not in _DEEPSPEED_FLAGS,
    module_flags=frozenset({"--module"}),
)
_KERNPROF = Spec("osuip", lambda w: w in _KERNPROF_VALUES, module_flags=frozenset({"-m"}))
_CPROFILE = Spec("os", lambda w: w in ("--outfile", "--sort"), module_flags=frozenset({"-m"}))
_CONTAINER = Spec("", lambda w: w in _CONTAINER_VALUES)
_CONDA = Spec("", lambda w: w in _CONDA_VALUES)
_UV = Spec("", lambda w: w in _UV_VALUES)

# Programs that take options and then a command to run.
WRAPPERS: dict[str, Spec] = {"srun": _SRUN, "mpirun": _MPI, "mpiexec": _MPI, "orterun": _MPI}
# Programs whose subcommand takes options and then a command (containers: then an image).
SUBCOMMANDS: dict[tuple[str, str], Spec] = {
    ("apptainer", "exec"): _CONTAINER,
    ("singularity", "exec"): _CONTAINER,
    ("conda", "run"): _CONDA,
    ("mamba", "run"): _CONDA,
    ("micromamba", "run"): _CONDA,
    ("uv", "run"): _UV,
}
# Programs that take options and then the training script.
RUNNERS: dict[str, Spec] = {"torchrun": _TORCHRUN, "deepspeed": _DEEPSPEED, "kernprof": _KERNPROF}
PYTHON_MODULES: dict[str, tuple[str, Spec]] = {
    "torch.distributed.run": ("python -m torch.distributed.run", _TORCHRUN),
    "torch.distributed.launch": ("python -m torch.distributed.launch", _TORCHRUN),
    "accelerate.commands.launch": ("accelerate launch", ACCELERATE),
    "kernprof": ("kernprof", _KERNPROF),
    "cProfile": ("python -m cProfile", _CPROFILE),
    "profile": ("python -m profile", _CPROFILE),
    "deepspeed.launcher.runner": ("deepspeed", _DEEPSPEED),
}


def split_options(words: list[str], spec: Spec) -> tuple[list[str], list[str]]:
    """A launcher's option words, and the words after them."""
    index = 0
    while index < len(words) and words[index].startswith("-") and words[index] != "-":
        word = words[index]
        index += 1
        if word == "--":
            break
        if word.startswith("--") and "=" in word:
            continue
        if word in spec.two_values:
            index += 2
        elif spec.long_values(word) or _short_takes_next(word, spec):
            index += 1
    return words[: min(index, len(words))], words[min(index, len(words)) :]


def _short_takes_next(word: str, spec: Spec) -> bool:
    """``-n`` (value next) versus ``-n2``/``-lv`` (value attached, or flags only)."""
    if word.startswith("--") or len(word) < 2:
        return False
    for position, letter in enumerate(word[1:], start=1):
        if letter in spec.value_letters:
            return position == len(word) - 1
    return False
