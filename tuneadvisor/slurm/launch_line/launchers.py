"""How the launchers' options read (``srun``, ``mpirun``, ``torchrun``, ``accelerate``,
``deepspeed``, ``kernprof``, containers, ``conda``/``uv run``...): which take a value, so the
command they start is found after them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tuneadvisor.slurm.jobscript.plugins import VALUE_OPTIONS
from tuneadvisor.slurm.options import OPTIONS, Arg


def _long_names(arg: Arg) -> frozenset[str]:
    return frozenset(f"--{name}" for o in OPTIONS if o.arg is arg for name in (o.name, *o.aliases))


# srun's own options that take a value, sbatch's among them, and site plugins' (``srun
# --container-image IMAGE``, ``--uenv X``)
_SRUN_LONG_VALUES = (
    VALUE_OPTIONS
    | _long_names(Arg.REQUIRED)
    | {
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
            "relative",
        )
    }
)
# Open MPI (mpirun/orterun, prterun), MPICH/Intel MPI hydra (mpiexec): the options that take
# a value; every other option is a flag.
_MPI_TWO_VALUES = {"-mca", "--mca", "-gmca", "--gmca", "-genv", "-env", "--env"}
_MPI_TWO_VALUES |= {"--pmixmca", "--prtemca"}
_MPI_VALUES = {
    *("-n", "-np", "--np", "-c", "-N", "-H", "-host", "--host", "-hosts", "-f"),
    *("-hostfile", "--hostfile", "-machinefile", "--machinefile", "--default-hostfile"),
    *("-x", "--map-by", "-map-by", "--bind-to", "-bind-to", "--rank-by", "-rank-by"),
    *("-ppn", "-perhost", "-npernode", "--npernode", "-npersocket", "--npersocket"),
    *("-wdir", "--wdir", "-wd", "--wd", "--prefix", "-prefix", "--path", "--app"),
    *("-genvlist", "-envlist", "-bootstrap", "-bootstrap-exec", "-launcher", "-iface"),
    *("-configfile", "-rmk", "-rf", "--rankfile", "--cpus-per-proc", "--cpus-per-rank"),
    *("-cpu-set", "--cpu-set", "--slot-list", "--output-filename", "-output-filename"),
    *("--tmpdir", "--timeout", "--personality", "--preload-files", "-tune", "--tune"),
    *("--display", "--output", "--runtime-options", "-am", "--am"),
}
# torchrun / python -m torch.distributed.run (torch 2.x get_args_parser: its store_true
# options); every other ``--option`` takes a value.
_TORCHRUN_FLAGS = {"-h", "--help", "--standalone", "-m", "--module", "--no-python", "--no_python"}
_TORCHRUN_FLAGS |= {"--run-path", "--run_path", "--virtual-local-rank", "--virtual_local_rank"}
# python -m torch.distributed.launch adds one flag: without it, `--use_env main.py` would
# read the script as --use_env's value.
_LAUNCH_FLAGS = _TORCHRUN_FLAGS | {"--use-env", "--use_env"}
# accelerate launch (commands/launch.py, store_true/store_false); it reads ``--multi-gpu``
# as ``--multi_gpu``, so names are compared with underscores.
_ACCELERATE_FLAGS = {
    *("-h", "--help", "-q", "--quiet", "--cpu", "--multi_gpu", "--tpu", "--ipex", "--mps"),
    *("--enable_cpu_affinity", "--dynamo_use_fullgraph", "--dynamo_use_dynamic"),
    *("--dynamo_use_regional_compilation", "--use_deepspeed", "--use_fsdp"),
    *("--use_megatron_lm", "--use_xpu", "--use_mps_device", "--same_network", "-m"),
    *("--module", "--no_python", "--tpu_cluster", "--no_tpu_cluster", "--tpu_use_sudo"),
    *("--downcast_bf16", "--fp8_use_autocast_during_eval", "--debug"),
}
# deepspeed (launcher/runner.py): short -H/-i/-e take a value, these are flags.
_DEEPSPEED_FLAGS = {
    *("-h", "--help", "--no_python", "--no_local_rank", "--module", "--force_multi"),
    *("--elastic_training", "--bind_cores_to_rank", "--no_ssh_check", "--no_ssh"),
    "--save_pid",
}
_KERNPROF_VALUES = {"--outfile", "--setup", "--unit", "--output-interval", "--prof-mod"}
# apptainer/singularity exec|run: the options that take a value (cmd/internal/cli).
_CONTAINER_VALUES = {
    *("-B", "--bind", "--mount", "--env", "--env-file", "-H", "--home", "-W", "--workdir"),
    *("--pwd", "--cwd", "-o", "--overlay", "-S", "--scratch", "--security", "--network"),
    *("--network-args", "--hostname", "--dns", "--apply-cgroups", "--fusemount", "--app"),
    *("--no-mount", "--containlibs", "--drop-caps", "--add-caps", "--pem-path"),
    *("--authfile", "--cpus", "--cpu-shares", "--cpuset-cpus", "--cpuset-mems", "--memory"),
    *("--memory-reservation", "--memory-swap", "--pids-limit", "--blkio-weight"),
    *("--blkio-weight-device", "--config", "--library", "--docker-host"),
}
# docker/podman run: bool flags (every other long option takes a value).
_DOCKER_FLAGS = {
    *("-d", "--detach", "--init", "-i", "--interactive", "--no-healthcheck", "--rm"),
    *("--oom-kill-disable", "--privileged", "-P", "--publish-all", "-q", "--quiet"),
    *("--read-only", "--sig-proxy", "-t", "--tty", "--help", "--disable-content-trust"),
    *("--env-host", "--http-proxy", "--no-hosts", "--passwd", "--read-only-tmpfs"),
    *("--replace", "--rmi", "--rootfs", "--tls-verify", "--use-api-socket"),
}
_ENROOT_VALUES = {"-c", "--conf", "-e", "--env", "-m", "--mount"}
_CHARLIECLOUD_VALUES = {"--bind", "--cd", "--gid", "--join-ct", "--join-pid", "--join-tag"}
_CHARLIECLOUD_VALUES |= {"--mount", "--storage", "--unset-env", "--uid"}
_SHIFTER_VALUES = {"--image", "-i", "--volume", "-V", "--module", "-m", "--env", "-e"}
_SHIFTER_VALUES |= {"--env-file", "--workdir", "-w", "--user", "-u"}
_NUMACTL_VALUES = {"--physcpubind", "--cpunodebind", "--membind", "--preferred", "--interleave"}
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
    image: bool = False  # a container image comes before the command


def _long_except(flags: set[str], underscores: bool = False) -> Callable[[str], bool]:
    """Every ``--option`` takes a value but these flags (argparse and click launchers)."""

    def takes_value(word: str) -> bool:
        name = "--" + word[2:].replace("-", "_") if underscores else word
        return word.startswith("--") and name not in flags and word not in flags

    return takes_value


_SRUN = Spec("ABCDGJLMNSTWbcdeimnopqrtwx", lambda w: w in _SRUN_LONG_VALUES)
_MPI = Spec("", lambda w: w in _MPI_VALUES, frozenset(_MPI_TWO_VALUES))
_MODULE = frozenset({"-m", "--module"})
_TORCHRUN = Spec("rt", _long_except(_TORCHRUN_FLAGS), module_flags=_MODULE)
_TORCH_LAUNCH = Spec("rt", _long_except(_LAUNCH_FLAGS), module_flags=_MODULE)
ACCELERATE = Spec("t", _long_except(_ACCELERATE_FLAGS, underscores=True), module_flags=_MODULE)
_DEEPSPEED = Spec("Hie", _long_except(_DEEPSPEED_FLAGS), module_flags=frozenset({"--module"}))
LIGHTNING = Spec("", _long_except({"--help"}))  # `lightning run model`, `fabric run`
_KERNPROF = Spec("osuip", lambda w: w in _KERNPROF_VALUES, module_flags=frozenset({"-m"}))
_CPROFILE = Spec("os", lambda w: w in ("--outfile", "--sort"), module_flags=frozenset({"-m"}))
_CONTAINER = Spec("BHWoS", lambda w: w in _CONTAINER_VALUES, image=True)
# a site's wrapper (`apptainer_wrapper exec CMD`) knows its image: the command comes next
CONTAINER_WRAPPER = Spec("BHWoS", lambda w: w in _CONTAINER_VALUES)
_DOCKER = Spec("acehlmpuvw", _long_except(_DOCKER_FLAGS), image=True)
_ENROOT = Spec("cem", lambda w: w in _ENROOT_VALUES, image=True)
CHARLIECLOUD = Spec("bcgmsu", lambda w: w in _CHARLIECLOUD_VALUES, image=True)
SHIFTER = Spec("iVmewu", lambda w: w in _SHIFTER_VALUES)
_NUMACTL = Spec("CNmpi", lambda w: w in _NUMACTL_VALUES)
_TASKSET = Spec("", image=True)  # `taskset -c 0-7 CMD`: the CPU list comes first
_CONDA = Spec("", lambda w: w in _CONDA_VALUES)
_UV = Spec("", lambda w: w in _UV_VALUES)

# Programs that take options and then a command to run (containers: then an image).
WRAPPERS: dict[str, Spec] = {"srun": _SRUN, "mpirun": _MPI, "mpiexec": _MPI, "orterun": _MPI}
WRAPPERS |= {"prterun": _MPI, "ch-run": CHARLIECLOUD, "shifter": SHIFTER}
WRAPPERS |= {"numactl": _NUMACTL, "taskset": _TASKSET}
# Programs whose subcommand takes options and then a command (containers: then an image).
SUBCOMMANDS: dict[tuple[str, str], Spec] = {
    ("apptainer", "exec"): _CONTAINER,
    ("apptainer", "run"): _CONTAINER,
    ("singularity", "exec"): _CONTAINER,
    ("singularity", "run"): _CONTAINER,
    ("docker", "run"): _DOCKER,
    ("podman", "run"): _DOCKER,
    ("enroot", "start"): _ENROOT,
    ("conda", "run"): _CONDA,
    ("mamba", "run"): _CONDA,
    ("micromamba", "run"): _CONDA,
    ("uv", "run"): _UV,
}
# Programs that take options and then the training script.
RUNNERS: dict[str, Spec] = {"torchrun": _TORCHRUN, "deepspeed": _DEEPSPEED, "kernprof": _KERNPROF}
PYTHON_MODULES: dict[str, tuple[str, Spec]] = {
    "torch.distributed.run": ("python -m torch.distributed.run", _TORCHRUN),
    "torch.distributed.launch": ("python -m torch.distributed.launch", _TORCH_LAUNCH),
    "accelerate.commands.launch": ("accelerate launch", ACCELERATE),
    "kernprof": ("kernprof", _KERNPROF),
    "cProfile": ("python -m cProfile", _CPROFILE),
    "profile": ("python -m profile", _CPROFILE),
    "deepspeed.launcher.runner": ("deepspeed", _DEEPSPEED),
}


def split_options(words: list[str], spec: Spec) -> tuple[list[str], list[str]]:
    """A launcher's option words, and the words after them (a container's image with the
    options)."""
    options, rest = _split(words, spec)
    if spec.image and rest:
        options, rest = options + rest[:1], rest[1:]
        if rest[:1] == ["--"]:  # `ch-run [options] IMAGE -- COMMAND`
            rest = rest[1:]
    return options, rest


def _split(words: list[str], spec: Spec) -> tuple[list[str], list[str]]:
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
