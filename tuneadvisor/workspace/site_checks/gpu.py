"""The GPU lines of `doctor`, from one NVML inventory and ``CUDA_VISIBLE_DEVICES``."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from tuneadvisor.metrics.gpm import NOT_THIS_GPU
from tuneadvisor.metrics.nvml import DeviceInfo, NvmlInventory, token_matches, visible_filter
from tuneadvisor.workspace.site_checks.model import Check

ON_A_GPU_NODE = "srun --gres=gpu:1 --pty python -m tuneadvisor doctor"
_NO_DRIVER = ("Library Not Found", "Driver Not Loaded")
_NO_PERMISSION = "Insufficient Permissions"
_CAPITALS = re.compile(r"[A-Z]+")
_HEX8 = re.compile(r"[0-9a-fA-F]{8}")


def short_uuid(uuid: str | None) -> str:
    """``GPU-4cf8db2d`` (a prefix CUDA_VISIBLE_DEVICES also accepts)."""
    if uuid is None:
        return "?"
    # what ``(?:[A-Z]+-)+[0-9a-fA-F]{8}`` took from the start: the most words of capitals
    # then 8 hex digits (``MIG-GPU-`` too), found over the parts between the "-"
    parts = uuid.split("-")
    words = 0
    while words < len(parts) - 1 and _CAPITALS.fullmatch(parts[words]):
        words += 1
    for last in range(words, 0, -1):
        if _HEX8.match(parts[last]):
            return "-".join(parts[:last]) + "-" + parts[last][:8]
    return uuid


def mig_profile(name: str | None) -> str:
    """``NVIDIA A100-SXM4-40GB MIG 3g.20gb`` -> ``3g.20gb``."""
    return (name or "?").rpartition(" MIG ")[2]


def gpu_checks(inv: NvmlInventory, cuda_visible: str | None, *, root: bool) -> list[Check]:
    checks = [_library(inv), _driver(inv)]
    if inv.reason is not None:
        why = f"not checked: no NVML ({inv.reason.removeprefix('NVML did not start: ')})"
        if inv.started:  # NVML started but could not count the GPUs
            fix = "nvidia-smi should say the same: tell the site's admins"
            checks.append(Check("gpu.devices", "failed", inv.reason, fix))
        else:
            checks.append(Check("gpu.devices", "not-applicable", why))
        shown = "unset" if cuda_visible is None else repr(cuda_visible)
        checks.append(
            Check("gpu.visible", "not-applicable", f"CUDA_VISIBLE_DEVICES {shown}; {why}")
        )
        for name in ("gpu.mig", "gpu.processes", "gpu.process_util", "gpu.activity"):
            checks.append(Check(name, "not-applicable", why))
        return checks
    gpus = [d for d in inv.devices if d.mig_parent is None]
    checks.append(_devices(gpus))
    visible_check, used = _visible(inv.devices, cuda_visible)
    checks.append(visible_check)
    checks.append(_mig(inv.devices))
    asked = [d for d in (used or inv.devices) if d.unreachable is None]
    if not asked:
        for name in ("gpu.processes", "gpu.process_util", "gpu.activity"):
            checks.append(Check(name, "not-applicable", "not checked: no GPU open to this process"))
        return checks
    checks.append(_processes(asked, root))
    checks.append(_process_util(asked, root))
    checks.append(_activity(asked))
    return checks


def _library(inv: NvmlInventory) -> Check:
    bindings = f"nvidia-ml-py {inv.bindings}" if inv.bindings else "nvidia-ml-py"
    if inv.missing:
        return Check(
            "nvml.library",
            "missing",
            "nvidia-ml-py (pynvml) is not installed",
            "pip install nvidia-ml-py into tuneadvisor's environment",
        )
    if inv.reason is not None and not inv.started:
        if any(word in inv.reason for word in _NO_DRIVER):
            return Check(
                "nvml.library",
                "missing",
                f"{bindings}; {inv.reason} (no NVIDIA driver on this node)",
                f"GPU lines need a GPU node: {ON_A_GPU_NODE}",
            )
        return Check(
            "nvml.library",
            "failed",
            f"{bindings}; {inv.reason}",
            "the driver is there but NVML does not start (nvidia-smi says the same): "
            "tell the site's admins",
        )
    version = f", NVML {inv.nvml_version}" if inv.nvml_version else ""
    return Check("nvml.library", "ok", f"{bindings}{version}")


def _driver(inv: NvmlInventory) -> Check:
    if inv.driver is None:
        if not inv.started:
            why = (inv.reason or "?").removeprefix("NVML did not start: ")
            return Check("nvml.driver", "not-applicable", f"not checked: no NVML ({why})")
        return Check(
            "nvml.driver",
            "failed",
            "NVML started but gave no driver version",
            "nvidia-smi should show it; if it does not either, tell the site's admins",
        )
    cuda = f" (supports CUDA {inv.cuda_driver})" if inv.cuda_driver else ""
    return Check("nvml.driver", "ok", f"{inv.driver}{cuda}")


def _devices(gpus: Sequence[DeviceInfo]) -> Check:
    ask_for_one = "in a job, ask for a GPU (--gres=gpu:1 or --gpus=1); else run on a GPU node"
    if not gpus:
        return Check("gpu.devices", "failed", "NVML sees no GPU on this node", ask_for_one)
    open_ = [d for d in gpus if d.unreachable is None]
    names = Counter(d.name or "?" for d in open_)
    kinds = ", ".join(f"{n} {name}" if n > 1 else name for name, n in names.items())
    listed = ", ".join(f"{d.index} {short_uuid(d.uuid)}" for d in open_)
    value = f"{len(open_)} GPU{'s' if len(open_) != 1 else ''}" + (
        f": {kinds} ({listed})" if open_ else ""
    )
    # A job's cgroup can close the other jobs' GPUs to NVML: counted, not opened, not wrong.
    closed = [d.index for d in gpus if d.unreachable == _NO_PERMISSION]
    if closed:
        value += f"; GPU {', '.join(map(str, closed))} closed to this process ({_NO_PERMISSION})"
    lost = [d for d in gpus if d.unreachable not in (None, _NO_PERMISSION)]
    if lost:
        where = "; ".join(f"GPU {d.index}: {d.unreachable}" for d in lost)
        return Check(
            "gpu.devices",
            "failed",
            f"{value}; cannot open {where}",
            "NVML counts a GPU it cannot open: nvidia-smi shows the same; tell the site's "
            "admins (a GPU that is lost needs a reset)",
        )
    if not open_:
        return Check("gpu.devices", "failed", value, ask_for_one)
    return Check("gpu.devices", "ok", value)


def _visible(
    devices: Sequence[DeviceInfo], cuda_visible: str | None
) -> tuple[Check, list[DeviceInfo]]:
    """CUDA_VISIBLE_DEVICES against NVML, and the devices it names (all of them when unset).
    CUDA takes the tokens in order and stops at the first that names no device."""
    tokens = visible_filter(cuda_visible)
    gpus = [d for d in devices if d.mig_parent is None]
    if tokens is None:
        value = f"CUDA_VISIBLE_DEVICES unset: CUDA may use all {len(gpus)} GPU(s) NVML lists"
        return Check("gpu.visible", "ok", value), list(devices)
    shown = f"CUDA_VISIBLE_DEVICES={cuda_visible}"
    if not tokens:
        return (
            Check(
                "gpu.visible",
                "failed",
                f"{shown}: empty, CUDA sees no GPU",
                "unset it, or name the GPUs to use (indices or UUIDs as gpu.devices lists)",
            ),
            [],
        )
    used: list[DeviceInfo] = []
    named: list[str] = []
    for token in tokens:
        found = [d for d in devices if token_matches(token, d.index, d.uuid, d.mig_parent)]
        if not found:
            seen = ", ".join(named) if named else "nothing"
            return (
                Check(
                    "gpu.visible",
                    "failed",
                    f"{shown}: {token!r} names no device NVML lists (CUDA stops there and "
                    f"sees {seen})",
                    "Slurm sets it to the job's GPUs; set it yourself only to indices or UUID "
                    "prefixes from gpu.devices",
                ),
                used,
            )
        used.extend(d for d in found if d not in used)
        named.extend(
            f"GPU {d.index} {short_uuid(d.uuid)}"
            if d.mig_parent is None
            else f"{short_uuid(d.uuid)} on GPU {d.index}"
            for d in found
        )
    return Check("gpu.visible", "ok", f"{shown} -> {', '.join(named)}"), used


def _mig(devices: Sequence[DeviceInfo]) -> Check:
    gpus = [d for d in devices if d.mig_parent is None and d.mig_mode is not None]
    if not gpus:
        return Check("gpu.mig", "not-applicable", "these GPUs have no MIG mode")
    parts: list[str] = []
    empty: list[int] = []
    for gpu in gpus:
        assert gpu.mig_mode is not None
        current, pending = gpu.mig_mode
        if current != 1:
            if pending == 1:
                parts.append(f"GPU {gpu.index}: MIG on after the next GPU reset")
            continue
        instances = [d for d in devices if d.mig_parent is not None and d.mig_parent == gpu.uuid]
        if not instances:
            empty.append(gpu.index)
        listed = ", ".join(f"{short_uuid(d.uuid)} {mig_profile(d.name)}" for d in instances)
        pending_off = " (off after the next GPU reset)" if pending != 1 else ""
        parts.append(
            f"GPU {gpu.index}: MIG on{pending_off}, {len(instances)} instance(s)"
            + (f": {listed}" if listed else "")
        )
    value = "; ".join(parts) if parts else "MIG off on every GPU"
    if empty:
        return Check(
            "gpu.mig",
            "failed",
            value,
            f"MIG is on but GPU {', '.join(map(str, empty))} has no instance, so CUDA can use "
            "nothing there: ask the admins to create instances",
        )
    return Check("gpu.mig", "ok", value)


def _device_name(device: DeviceInfo) -> str:
    return f"GPU {device.index}" if device.mig_parent is None else short_uuid(device.uuid)


def _as_root(root: bool) -> str:
    return " (asked as root: a user may be refused)" if root else " without root"


def _processes(devices: Sequence[DeviceInfo], root: bool) -> Check:
    refused = [d for d in devices if d.processes_error is not None]
    if refused:
        where = "; ".join(f"{_device_name(d)}: {d.processes_error}" for d in refused)
        return Check(
            "gpu.processes",
            "failed",
            f"per-process GPU memory not readable: {where}",
            "watch then shows each GPU's totals, not which process holds what: ask the "
            "site's admins whether users may list the processes on their GPUs",
        )
    count = sum(d.processes or 0 for d in devices)
    value = (
        f"per-process GPU memory readable on {len(devices)} device(s), {count} process(es) "
        f"now{_as_root(root)}"
    )
    return Check("gpu.processes", "ok", value)


def _process_util(devices: Sequence[DeviceInfo], root: bool) -> Check:
    refused = [d for d in devices if d.process_util_error is not None]
    if not refused:
        value = f"per-process GPU utilisation readable on {len(devices)} device(s){_as_root(root)}"
        return Check("gpu.process_util", "ok", value)
    where = "; ".join(f"{_device_name(d)}: {d.process_util_error}" for d in refused)
    if all(d.process_util_error == "Not Supported" for d in refused):
        mig = any(d.mig_parent is not None or (d.mig_mode or (0,))[0] == 1 for d in refused)
        why = "GPUs in MIG mode do not offer it" if mig else "this GPU or driver does not offer it"
        return Check(
            "gpu.process_util",
            "not-applicable",
            f"per-process GPU utilisation not offered: {where} ({why})",
        )
    return Check(
        "gpu.process_util",
        "failed",
        f"per-process GPU utilisation not readable: {where}",
        "tuneadvisor works without it (it reads each GPU's utilisation); the site's admins "
        "decide whether users may read it",
    )


_DCGM_INSTEAD = (
    "watch shows utilization (share of time any kernel ran) only; for SM activity give "
    "--metrics a `dcgmi dmon -e 203,1002,1003,1004,1005` log or a dcgm-exporter scrape"
)


def _activity(devices: Sequence[DeviceInfo]) -> Check:
    """Whether watch can read SM, tensor-pipe and DRAM activity (NVML GPM) here."""
    asked = [d for d in devices if d.activity is not None]
    if not asked:
        return Check("gpu.activity", "not-applicable", "not checked: GPUs in MIG mode only")
    missing = [d for d in asked if not d.activity]
    if not missing:
        value = (
            f"SM activity readable on {len(asked)} device(s) (NVML GPM): watch shows SM, "
            "tensor-pipe and DRAM activity beside utilization"
        )
        return Check("gpu.activity", "ok", value)
    where = "; ".join(f"{_device_name(d)}: {d.activity_error}" for d in missing)
    if all(d.activity_error == NOT_THIS_GPU for d in missing):
        return Check("gpu.activity", "not-applicable", f"no SM activity: {where}; {_DCGM_INSTEAD}")
    return Check(
        "gpu.activity",
        "failed",
        f"no SM activity: {where}",
        "GPM needs driver R520 or newer and may be closed to users: ask the site's admins; "
        + _DCGM_INSTEAD,
    )
