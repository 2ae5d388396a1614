"""Hypothesis strategies for issue 20's properties: random valid ``#SBATCH`` headers (short
and long option forms, ``=`` or a blank before the value, one or two options a line, comments
after them) and the evidence of a run of such a job (seff's output of it).

A header is drawn as a ``Header`` (what it asks for) and rendered by ``render``; a node
shape bounds it, so that every request fits the node (the local cluster's for
``sbatch --test-only``, a larger one in-process).
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st


@dataclass(frozen=True)
class Node:
    cores: int
    mem_gib: int
    gpus: int
    max_nodes: int
    partitions: tuple[str, ...]

    def site(self) -> str:
        """A site file of this node shape (the first partition the default)."""
        text = ""
        for i, name in enumerate(self.partitions):
            text += f'[partitions.{name}]\ncores = {self.cores}\nmem = "{self.mem_gib}G"\n'
            text += f"gpus = {self.gpus}\n" + ("default = true\n" if i == 0 else "")
        return text


# the local cluster (tests/integration/slurm_cluster.py): one node, 2 CPUs, 22899 MiB, 1 GPU
LOCAL = Node(cores=2, mem_gib=22, gpus=1, max_nodes=1, partitions=("debug", "gpu"))
LARGE = Node(cores=32, mem_gib=256, gpus=4, max_nodes=4, partitions=("p",))

# option -> its short letter (sbatch's), for the forms a user may write
SHORT = {
    "nodes": "N",
    "ntasks": "n",
    "cpus-per-task": "c",
    "time": "t",
    "partition": "p",
    "job-name": "J",
    "output": "o",
    "gpus": "G",
}


@dataclass(frozen=True)
class Header:
    options: tuple[tuple[str, str], ...]  # (long name, value), in the order written
    nodes: int
    tasks_per_node: int
    cpus_per_task: int
    mem_per_node_mib: int | None  # what the memory option comes to per node; None: none


@st.composite
def headers(draw: st.DrawFn, node: Node) -> Header:
    nodes = draw(st.integers(1, node.max_nodes))
    # tasks per node within the node's cores, cores per task within what is left
    per_node = draw(st.integers(1, min(4, node.cores)))
    cores = draw(st.integers(1, max(1, min(8, node.cores // per_node))))
    options: list[tuple[str, str]] = []
    if nodes > 1 or draw(st.booleans()):
        options.append(("nodes", str(nodes)))
    tasks = draw(st.sampled_from(["ntasks", "ntasks-per-node", "both", "none"]))
    if per_node == 1 and nodes == 1 and tasks == "none":
        pass
    elif tasks in ("ntasks", "both") or (tasks == "none" and per_node * nodes > 1):
        options.append(("ntasks", str(nodes * per_node)))
    if tasks in ("ntasks-per-node", "both"):
        options.append(("ntasks-per-node", str(per_node)))
    if cores > 1 or draw(st.booleans()):
        options.append(("cpus-per-task", str(cores)))
    mem_per_node = None
    memory = draw(st.sampled_from(["mem", "mem-per-cpu", "none"]))
    if memory == "mem":
        gib = draw(st.integers(1, node.mem_gib))
        mib = draw(st.sampled_from([gib * 1024, gib * 1000]))
        options.append(("mem", draw(st.sampled_from([f"{gib}G", f"{mib}M", str(mib)]))))
        mem_per_node = gib * 1024 if options[-1][1] == f"{gib}G" else mib
    elif memory == "mem-per-cpu":
        most = max(1, node.mem_gib * 1024 // (per_node * cores) // 1024)
        gib = draw(st.integers(1, min(8, most)))
        options.append(("mem-per-cpu", f"{gib}G"))
        mem_per_node = gib * 1024 * per_node * cores
    if node.gpus:
        gpus = draw(st.integers(0, node.gpus))
        form = draw(st.sampled_from(["gres", "gpus-per-node", "gpus"]))
        if gpus and form == "gres":
            options.append(("gres", f"gpu:{gpus}"))
        elif gpus and form == "gpus-per-node":
            options.append(("gpus-per-node", str(gpus)))
        elif gpus:
            options.append(("gpus", str(gpus * nodes)))
        # per GPU instead (sbatch takes one core option and one memory option): one task a node
        if gpus and per_node == 1 and draw(st.booleans()):
            cores, mem_per_node = _per_gpu(draw, options, gpus, cores, mem_per_node)
    time = draw(st.sampled_from(["01:00:00", "30", "1-00:00:00", "2:30:00", "0-06", None]))
    if time is not None:
        options.append(("time", time))
    if draw(st.booleans()):
        options.append(("partition", draw(st.sampled_from(node.partitions))))
    if draw(st.booleans()):
        options.append(("job-name", draw(st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True))))
    if draw(st.booleans()):
        options.append(("output", draw(st.sampled_from(["slurm-%j.out", "%x-%j.log"]))))
    order = draw(st.permutations(options))
    return Header(tuple(order), nodes, per_node, cores, mem_per_node)


def _per_gpu(
    draw: st.DrawFn, options: list[tuple[str, str]], gpus: int, cores: int, mem: int | None
) -> tuple[int, int | None]:
    """--cpus-per-gpu for --cpus-per-task and, where drawn, --mem-per-gpu for --mem (in
    ``options``, in place): the cores a task and the memory a node they come to."""
    names = [name for name, _ in options]
    if "cpus-per-task" in names and draw(st.booleans()):
        per_gpu = max(1, cores // gpus)
        options[names.index("cpus-per-task")] = ("cpus-per-gpu", str(per_gpu))
        cores = per_gpu * gpus
    if "mem" in names and mem is not None and draw(st.booleans()):
        gib = max(1, -(-mem // 1024 // gpus))
        options[names.index("mem")] = ("mem-per-gpu", f"{gib}G")
        mem = gib * 1024 * gpus
    return cores, mem


# an earlier value of an option that a later line sets again
_STALE = {"cpus-per-task": "1", "mem": "2G", "time": "10", "mem-per-cpu": "1G", "job-name": "old"}


def _argument(option: str, value: str, form: str) -> str:
    letter = SHORT.get(option)
    if form == "short" and letter:
        return f"-{letter} {value}"
    if form == "short-attached" and letter:
        return f"-{letter}{value}"
    if form == "long-blank":
        return f"--{option} {value}"
    return f"--{option}={value}"


@st.composite
def scripts(draw: st.DrawFn, header: Header) -> str:
    """``header`` written as a job script: each option in a form drawn for it, one or two
    options a line, some lines with a comment after them, a training launch below."""
    forms = st.sampled_from(["long", "long-blank", "short", "short-attached"])
    options = list(header.options)
    stale = [o for o in options if o[0] in _STALE]
    if stale and draw(st.integers(0, 3)) == 0:  # set twice, the last wins (as sbatch reads)
        option = draw(st.sampled_from(stale))
        options.insert(draw(st.integers(0, options.index(option))), (option[0], _STALE[option[0]]))
    arguments = [_argument(o, v, draw(forms)) for o, v in options]
    lines = []
    while arguments:
        take = draw(st.integers(1, min(2, len(arguments))))
        line = "#SBATCH " + " ".join(arguments[:take])
        if draw(st.booleans()):
            line += draw(st.sampled_from(["  # as the site asks", " #x"]))
        lines.append(line)
        arguments = arguments[take:]
    body = draw(st.sampled_from(["srun python train.py\n", "python train.py --epochs 3\n"]))
    return "#!/bin/bash\n" + "\n".join(lines) + "\n\nmodule load cuda\n" + body


def _duration(seconds: int) -> str:
    days, rest = divmod(seconds, 86400)
    text = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{text}" if days else text


@st.composite
def seffs(draw: st.DrawFn, header: Header) -> str:
    """seff's output of a run of ``header``'s job: its cores and memory request, a state, a
    CPU efficiency and a memory peak (under, at or over the request)."""
    cores_per_node = header.tasks_per_node * header.cpus_per_task
    # a job without a memory option got the site default: 4 GiB a core, as on the local cluster
    requested = header.mem_per_node_mib or 4096 * cores_per_node
    requested_total = requested * header.nodes
    state = draw(st.sampled_from(["COMPLETED", "COMPLETED", "OUT_OF_MEMORY", "TIMEOUT", "FAILED"]))
    share = draw(st.sampled_from([0.0, 0.05, 0.4, 0.95, 1.0, 1.3]))
    used_mib = requested_total * (min(share, 1.0) if state != "OUT_OF_MEMORY" else share + 0.1)
    efficiency = draw(st.sampled_from([3.0, 12.0, 50.0, 94.64, 99.9]))
    wall = draw(st.sampled_from([600, 2500, 36000, 90000]))
    cores = cores_per_node * header.nodes
    used = int(cores * wall * efficiency / 100)
    where = (
        f"Nodes: {header.nodes}\nCores per node: {cores_per_node}\n"
        if header.nodes > 1
        else f"Cores: {cores}\n"
    )
    exit_code = 0 if state == "COMPLETED" else 1
    return (
        f"Job ID: 4242\nCluster: gen\nUser/Group: alice/users\n"
        f"State: {state} (exit code {exit_code})\n{where}"
        f"CPU Utilized: {_duration(used)}\n"
        f"CPU Efficiency: {efficiency:.2f}% of {_duration(cores * wall)} core-walltime\n"
        f"Job Wall-clock time: {_duration(wall)}\n"
        f"Memory Utilized: {used_mib / 1024:.2f} GB\n"
        f"Memory Efficiency: {100 * used_mib / requested_total:.2f}% of "
        f"{requested_total / 1024:.2f} GB\n"
    )
