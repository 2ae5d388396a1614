"""How many GPUs a training program can drive, read from its source: one, when it puts its
work on a CUDA device and nothing in it spreads work over more (DDP, nn.DataParallel, a
launcher library, a second device index, the device count); otherwise it is not said.

Read over the script and the local modules it imports together: a model wrapped in DDP in a
helper module is a program that drives several GPUs.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass

from tuneadvisor.trainscript.parsed import ParsedScript
from tuneadvisor.trainscript.pyast import dotted_name

# Names whose presence means the program may drive several GPUs (or hands the choice to a
# library that does): any of them, called, imported or referred to, and one GPU is not said.
_MULTI_NAMES = frozenset(
    {
        "DistributedDataParallel",
        "FullyShardedDataParallel",
        "fully_shard",
        "DataParallel",
        "init_process_group",
        "spawn",
        "start_processes",
        "device_count",
        "set_device",
        "device_map",
        "Accelerator",
        "Trainer",  # Lightning and Hugging Face: both use every visible GPU by default
        "Fabric",
        "pipeline",
        "parallelize_module",
        "DeviceMesh",
        "init_device_mesh",
    }
)
_MULTI_MODULES = frozenset(
    {
        "torch.distributed",
        "torch.multiprocessing",
        "multiprocessing",
        "deepspeed",
        "horovod",
        "accelerate",
        "lightning",
        "pytorch_lightning",
        "transformers",
        "ray",
        "jax",
        "tensorflow",
        "keras",
        "colossalai",
        "fairscale",
        "megatron",
        "subprocess",
    }
)
_CUDA_INDEX = re.compile(r"^cuda:\s*([0-9]+)$")
_ONE_DEVICE = re.compile(r"^cuda(:0)?$")


@dataclass(frozen=True)
class DeviceUse:
    """``single`` is True only when the source shows one CUDA device and nothing more."""

    single: bool = False
    line: int | None = None  # the first line that puts work on the device
    why_not: str | None = None  # what may drive more GPUs, when single is False


def device_use(modules: Iterable[ParsedScript]) -> DeviceUse:
    # A call that places work (`.to("cuda")`, `torch.device("cuda")`) names the line; the
    # bare string "cuda" (kept in a variable, or an option's choice) only when none does.
    first: int | None = None
    named: int | None = None
    for parsed in modules:
        if parsed.tree is None:
            return DeviceUse(why_not="a module does not parse")
        for node in ast.walk(parsed.tree):
            why = _multi(node)
            if why is not None:
                return DeviceUse(why_not=why)
            line = _cuda_use(node)
            if line is not None and isinstance(node, ast.Constant):
                named = line if named is None else min(named, line)
            elif line is not None:
                first = line if first is None else min(first, line)
    line = first if first is not None else named
    return DeviceUse(single=line is not None, line=line)


def _multi(node: ast.AST) -> str | None:
    if isinstance(node, ast.Import | ast.ImportFrom):
        modules = [a.name for a in node.names]
        if isinstance(node, ast.ImportFrom):
            modules = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
        for module in modules:
            if any(module == m or module.startswith(m + ".") for m in _MULTI_MODULES):
                return f"imports {module}"
        named = [a.name for a in node.names if a.name in _MULTI_NAMES]
        return f"imports {named[0]}" if named else None
    if isinstance(node, ast.Attribute | ast.Name):
        name = node.attr if isinstance(node, ast.Attribute) else node.id
        if name in _MULTI_NAMES:
            return f"uses {dotted_name(node) or name}"
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value.strip()
        index = _CUDA_INDEX.match(text)
        if index is not None and index.group(1) != "0":
            return f"names the device {text}"
        if text == "CUDA_VISIBLE_DEVICES":
            return "reads CUDA_VISIBLE_DEVICES"
    if isinstance(node, ast.JoinedStr) and any(
        isinstance(v, ast.Constant) and "cuda:" in str(v.value) for v in node.values
    ):
        return "names a device by a computed index"
    return None


def _cuda_use(node: ast.AST) -> int | None:
    """A line that puts work on one CUDA device: ``.cuda()``, ``torch.device("cuda")``,
    ``.to("cuda")``, the string ``"cuda"`` (the device a script keeps in a variable)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        # device = "cuda" if torch.cuda.is_available() else "cpu"; model.to(device)
        return node.lineno if _ONE_DEVICE.match(node.value.strip()) else None
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr == "cuda" and not node.args:
        return node.lineno
    if (dotted_name(func) or "").endswith("device") and node.args:
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            return node.lineno if _ONE_DEVICE.match(arg.value.strip()) else None
        if isinstance(arg, ast.IfExp):  # "cuda" if torch.cuda.is_available() else "cpu"
            return node.lineno if _mentions_cuda(arg) else None
    if isinstance(func, ast.Attribute) and func.attr == "to" and node.args:
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            return node.lineno if _ONE_DEVICE.match(arg.value.strip()) else None
    return None


def _mentions_cuda(node: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Constant) and isinstance(n.value, str) and _ONE_DEVICE.match(n.value)
        for n in ast.walk(node)
    )
