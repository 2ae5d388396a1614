"""The live GPU sampler: NVML (nvidia-ml-py) wrapped once, every call guarded.

This is the only module that imports ``pynvml`` (an import-linter contract holds everything
else to it), and it imports it lazily, on ``NvmlSampler.open()``. Every NVML call goes through
``_call``: a value, or ``None`` with the reason. No library, no driver, no device, a device lost
mid-run (``GPU is lost``), a value the device does not offer (``Not Supported``, e.g.
utilization of a GPU in MIG mode) or a permission error become "no data" with the reason shown,
never an exception out of this module.

Calls that answered ``Not Supported`` or ``Insufficient Permissions`` once are not repeated (the
answer does not change while the driver runs); a device that answered ``GPU is lost`` is not
asked again. PCIe throughput is a sampled counter that NVML measures over ~20 ms inside the call,
so it is optional (``pcie=False`` for short intervals).

Memory used is read with ``nvmlDeviceGetMemoryInfo_v2`` where the driver has it: its ``used``
leaves out the memory the driver reserves for itself, as ``nvidia-smi`` does (on an H200 with
driver 580 the first version's ``used`` was about 600 MiB higher than nvidia-smi's: see
bench/RESULTS.md, the GPU acceptance run); older drivers answer with the first version.

SM activity, SM occupancy, tensor-pipe and DRAM activity and NVLink traffic come from NVML's GPM
interface (Hopper and newer, driver R520+; ``metrics/gpm.py`` holds its metric table): one
``nvmlGpmSampleGet`` per device and round, the metrics computed between it and the round
before (the first pair at ``open()``), ``nvmlGpmMigSampleGet`` on the parent GPU for a MIG
instance. A device or driver without GPM is said once (``activity_reason``), never each round.
Where GPM gives PCIe traffic, the older ``nvmlDeviceGetPcieThroughput`` (a 20 ms wait inside
each call) is not asked.

``inventory()`` is `tuneadvisor doctor`'s one look: the library, driver and CUDA versions, every
device with its MIG mode, and whether the per-process queries answer for this user.

Units at the boundary: memory in bytes, power in mW, PCIe throughput in KB/s; the samples are
in MiB, W and MiB/s (see ``model``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from tuneadvisor.metrics import gpm
from tuneadvisor.metrics.model import GpuSample
from tuneadvisor.metrics.snapshot import GpuProcess
from tuneadvisor.numbers import is_ascii_digits

MIB = 1024 * 1024

# The values NVML answers that mean "do not ask again".
_STICKY = ("Not Supported", "Insufficient Permissions", "Function Not Found")
_LOST = "GPU is lost"


def describe_error(exc: BaseException) -> str:
    """NVML's own words for its errors ("GPU is lost"), the type name for anything else."""
    if type(exc).__name__.startswith("NVMLError"):
        try:
            return str(exc)
        except Exception:  # pragma: no cover - str() of a broken error object
            return type(exc).__name__
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _import_pynvml(name: str) -> ModuleType:
    """The one import of nvidia-ml-py in the package (lazy: only when sampling starts)."""
    assert name == "pynvml"
    import pynvml

    module: ModuleType = pynvml
    return module


def _text(value: object) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


@dataclass
class _Device:
    """A device (a whole GPU or a MIG instance) found at open()."""

    handle: object
    index: int  # the physical GPU's index (a MIG instance has its parent's)
    uuid: str | None
    name: str | None
    pci_bus_id: str | None
    mig_parent: str | None = None  # parent GPU's uuid for a MIG instance
    parent_handle: object = None  # the parent GPU's handle for a MIG instance
    gpm: gpm.GpmState | None = None  # GPM samples kept between rounds, where it answers
    gpm_why: str | None = None  # why there is no GPM (None: it answers, or not asked)
    mig_mode: tuple[int, int] | None = None  # (current, pending); None: not asked or refused
    lost: str | None = None
    skip: dict[str, str] = field(default_factory=dict)  # call -> sticky reason

    @property
    def key(self) -> str:
        return self.uuid or f"gpu{self.index}"


@dataclass(frozen=True)
class NvmlReading:
    """One round: a sample per device, their processes, and what could not be read."""

    gpus: tuple[GpuSample, ...] = ()
    procs: tuple[GpuProcess, ...] = ()
    problems: tuple[str, ...] = ()  # "GPU-...: power: Not Supported", "no GPU: ..."


def visible_filter(spec: str | None) -> tuple[str, ...] | None:
    """``CUDA_VISIBLE_DEVICES`` (or Slurm's GPU list) as tokens; None when unset.

    Tokens are indices (``0,1``), GPU or MIG UUIDs or their unique prefixes
    (``GPU-4cf8db2d``, ``MIG-...``). An empty value hides every GPU, as CUDA does.
    """
    if spec is None:
        return None
    return tuple(tok.strip() for tok in spec.split(",") if tok.strip())


def token_matches(token: str, index: int, uuid: str | None, mig_parent: str | None) -> bool:
    """Whether one ``CUDA_VISIBLE_DEVICES`` token names this device: an index names a whole
    GPU (never a MIG instance), a UUID or its prefix names a GPU, a MIG instance, or every
    instance of the GPU it names."""
    if is_ascii_digits(token):
        return mig_parent is None and int(token) == index
    return any(u and u.startswith(token) for u in (uuid, mig_parent))


class NvmlSampler:
    """Open once, sample every interval, close at the end. Never raises NVML errors."""

    def __init__(
        self,
        visible: Sequence[str] | None = None,
        *,
        pcie: bool = True,
        activity: bool = True,
        import_module: Callable[[str], ModuleType] | None = None,
    ) -> None:
        self._visible = None if visible is None else tuple(visible)
        self._pcie = pcie
        self._activity = activity
        self._import = import_module or _import_pynvml
        self._nvml: Any = None
        self._devices: list[_Device] = []
        self.reason: str | None = "not opened"  # why there is no GPU data at all
        self.driver: str | None = None

    # ------------------------------------------------------------------ open / close

    def open(self) -> str | None:
        """Load the library and find the devices; the reason when there is no GPU data."""
        try:
            nvml = self._import("pynvml")
        except ImportError:
            self.reason = "nvidia-ml-py (pynvml) is not installed"
            return self.reason
        try:
            nvml.nvmlInit()
        except Exception as exc:
            self.reason = f"NVML did not start: {describe_error(exc)}"
            return self.reason
        self._nvml = nvml
        self.driver, _ = self._call("driver", nvml.nvmlSystemGetDriverVersion)
        count, why = self._call("count", nvml.nvmlDeviceGetCount)
        if count is None:
            self.reason = f"no GPU count: {why}"
            return self.reason
        for index in range(int(count)):
            self._add_device(index)
        self._devices = [d for d in self._devices if self._is_visible(d)]
        if not self._devices:
            self.reason = "no GPU visible" if count else "no GPU on this node"
            return self.reason
        if self._activity:
            for device in self._devices:
                # A GPU in MIG mode is sampled through its instances (MIG sample calls).
                if device.lost is None and (device.mig_mode or (0,))[0] != 1:
                    self._gpm_open(device)
        self.reason = None
        return None

    def close(self) -> None:
        if self._nvml is not None:
            for device in self._devices:
                if device.gpm is not None:
                    for sample in device.gpm.samples:
                        self._call("gpm free", self._nvml.nvmlGpmSampleFree, sample)
                    device.gpm = None
            self._call("shutdown", self._nvml.nvmlShutdown)
            self._nvml = None

    @property
    def activity_reason(self) -> str | None:
        """Why some device has no SM activity figures (one line for all of them), or None."""
        whys: dict[str, list[str]] = {}
        for device in self._devices:
            if device.gpm_why is not None:
                label = f"GPU {device.index}" if device.mig_parent is None else device.key
                whys.setdefault(device.gpm_why, []).append(label)
        if not whys:
            return None
        parts = [f"{', '.join(labels)}: {why}" for why, labels in whys.items()]
        return "no SM activity (NVML GPM): " + "; ".join(parts)

    def _gpm_open(self, device: _Device) -> None:
        """Ask whether the device offers GPM and take the first sample of the first pair."""
        nvml = self._nvml
        query = getattr(nvml, "nvmlGpmQueryDeviceSupport", None)
        if query is None:
            device.gpm_why = "not in this nvidia-ml-py"
            return
        whole = device.parent_handle if device.mig_parent is not None else device.handle
        support, why = self._call("gpm support", query, whole)
        if support is None:
            device.gpm_why = gpm.why_not(why)
            return
        if not int(getattr(support, "isSupportedDevice", 0)):
            device.gpm_why = gpm.NOT_THIS_GPU
            return
        instance = None
        if device.mig_parent is not None:
            instance, why = self._call(
                "gpu instance", nvml.nvmlDeviceGetGpuInstanceId, device.handle
            )
            if instance is None:
                device.gpm_why = gpm.why_not(why)
                return
        samples: list[object] = []
        for _ in range(2):
            sample, why = self._call("gpm alloc", nvml.nvmlGpmSampleAlloc)
            if sample is None:
                for taken in samples:
                    self._call("gpm free", nvml.nvmlGpmSampleFree, taken)
                device.gpm_why = gpm.why_not(why)
                return
            samples.append(sample)
        device.gpm = gpm.GpmState(samples[0], samples[1], whole, instance)
        why = self._gpm_take(device.gpm, device.gpm.previous)
        if why is not None:
            self._gpm_off(device, why)

    def _gpm_take(self, state: gpm.GpmState, into: object) -> str | None:
        nvml = self._nvml
        if state.instance is None:
            _, why = self._call("gpm sample", nvml.nvmlGpmSampleGet, state.handle, into)
        else:
            fn = nvml.nvmlGpmMigSampleGet
            _, why = self._call("gpm sample", fn, state.handle, state.instance, into)
        return why

    def _gpm_off(self, device: _Device, why: str) -> None:
        if device.gpm is not None:
            for sample in device.gpm.samples:
                self._call("gpm free", self._nvml.nvmlGpmSampleFree, sample)
        device.gpm = None
        if why == _LOST:
            device.lost = why
        else:
            device.gpm_why = gpm.why_not(why)

    def _activity_of(self, device: _Device, problems: list[str]) -> dict[str, float]:
        """This round's GPM figures, keyed by GpuSample field (empty without GPM)."""
        state = device.gpm
        if state is None or device.lost is not None:
            return {}
        why = self._gpm_take(state, state.current)
        if why is None:
            request = gpm.metrics_request(self._nvml, state.previous, state.current)
            got, why = self._call("gpm metrics", self._nvml.nvmlGpmMetricsGet, request)
            if got is not None:
                state.swap()
                return gpm.read_metrics(got)
        # "Invalid Argument": a driver that does not know a metric id refuses the whole batch
        if why == _LOST or why in _STICKY or why == "Invalid Argument":
            self._gpm_off(device, why)  # said once by activity_reason, not every round
            if why == _LOST:
                problems.append(f"{device.key}: GPM: {why}")
        else:
            problems.append(f"{device.key}: GPM: {why}")
        return {}

    @property
    def devices(self) -> tuple[str, ...]:
        return tuple(d.key for d in self._devices)

    def _add_device(self, index: int) -> None:
        nvml = self._nvml
        handle, why = self._call("handle", nvml.nvmlDeviceGetHandleByIndex, index)
        if handle is None:
            # Counted but not reachable (lost at start, or no permission on its /dev node).
            self._devices.append(_Device(None, index, None, None, None, lost=why or "no handle"))
            return
        uuid, _ = self._call("uuid", nvml.nvmlDeviceGetUUID, handle)
        name, _ = self._call("name", nvml.nvmlDeviceGetName, handle)
        pci, _ = self._call("pci", nvml.nvmlDeviceGetPciInfo, handle)
        bus = _text(pci.busId) if pci is not None else None
        device = _Device(
            handle,
            index,
            None if uuid is None else _text(uuid),
            None if name is None else _text(name),
            bus,
        )
        self._devices.append(device)
        mode, _ = self._call("mig mode", nvml.nvmlDeviceGetMigMode, handle)
        if mode:
            device.mig_mode = (int(mode[0]), int(mode[1]))
        if not mode or mode[0] != getattr(nvml, "NVML_DEVICE_MIG_ENABLE", 1):
            return
        slots, _ = self._call("mig count", nvml.nvmlDeviceGetMaxMigDeviceCount, handle)
        for slot in range(int(slots or 0)):
            mig, _ = self._call("mig", nvml.nvmlDeviceGetMigDeviceHandleByIndex, handle, slot)
            if mig is None:  # an empty slot answers Not Found
                continue
            mig_uuid, _ = self._call("uuid", nvml.nvmlDeviceGetUUID, mig)
            mig_name, _ = self._call("name", nvml.nvmlDeviceGetName, mig)
            self._devices.append(
                _Device(
                    mig,
                    index,
                    None if mig_uuid is None else _text(mig_uuid),
                    None if mig_name is None else _text(mig_name),
                    bus,
                    mig_parent=device.uuid,
                    parent_handle=handle,
                )
            )

    def _is_visible(self, device: _Device) -> bool:
        if self._visible is None:
            return True
        return any(
            token_matches(token, device.index, device.uuid, device.mig_parent)
            for token in self._visible
        )

    # ------------------------------------------------------------------ sampling

    def _call(self, what: str, fn: Callable[..., Any], *args: Any) -> tuple[Any, str | None]:
        """``fn(*args)``, or None and the reason. The one place NVML errors are caught."""
        try:
            return fn(*args), None
        except Exception as exc:
            return None, describe_error(exc)

    def _device_call(
        self, device: _Device, what: str, problems: list[str], fn_name: str, *args: Any
    ) -> Any:
        if device.lost is not None or what in device.skip:
            return None
        fn = getattr(self._nvml, fn_name, None)
        if fn is None:
            device.skip[what] = "not in this nvidia-ml-py"
            problems.append(f"{device.key}: {what}: not in this nvidia-ml-py")
            return None
        value, why = self._call(what, fn, device.handle, *args)
        if why is None:
            return value
        if why == _LOST:
            device.lost = why
        elif why in _STICKY:
            device.skip[what] = why
        problems.append(f"{device.key}: {what}: {why}")
        return None

    def sample(self, t: float) -> NvmlReading:
        """One round over the devices found at ``open()``."""
        if self._nvml is None:
            return NvmlReading(problems=(f"no GPU data: {self.reason}",))
        nvml = self._nvml
        samples: list[GpuSample] = []
        procs: list[GpuProcess] = []
        problems: list[str] = []
        for device in self._devices:
            if device.lost is not None:
                problems.append(f"{device.key}: no data: {device.lost}")
                samples.append(self._identity(device, t))
                continue
            call = self._device_call
            util = call(device, "utilization", problems, "nvmlDeviceGetUtilizationRates")
            mem = self._memory(device, problems)
            power = call(device, "power", problems, "nvmlDeviceGetPowerUsage")
            limit = call(device, "power limit", problems, "nvmlDeviceGetEnforcedPowerLimit")
            temp = call(
                device,
                "temperature",
                problems,
                "nvmlDeviceGetTemperature",
                getattr(nvml, "NVML_TEMPERATURE_GPU", 0),
            )
            sm = call(device, "SM clock", problems, "nvmlDeviceGetClockInfo", nvml.NVML_CLOCK_SM)
            mem_clock = call(
                device, "memory clock", problems, "nvmlDeviceGetClockInfo", nvml.NVML_CLOCK_MEM
            )
            pstate = call(device, "pstate", problems, "nvmlDeviceGetPerformanceState")
            activity = self._activity_of(device, problems)
            # GPM's PCIe traffic (MiB/s over the round) where it answers; else the older
            # counter, KB/s over ~20 ms that NVML waits for inside each call.
            rx, tx = activity.pop("pcie_rx_mib_s", None), activity.pop("pcie_tx_mib_s", None)
            if self._pcie and (rx is None or tx is None):
                rx_kb = call(
                    device,
                    "PCIe rx",
                    problems,
                    "nvmlDeviceGetPcieThroughput",
                    nvml.NVML_PCIE_UTIL_RX_BYTES,
                )
                tx_kb = call(
                    device,
                    "PCIe tx",
                    problems,
                    "nvmlDeviceGetPcieThroughput",
                    nvml.NVML_PCIE_UTIL_TX_BYTES,
                )
                rx = None if rx_kb is None else rx_kb / 1024.0
                tx = None if tx_kb is None else tx_kb / 1024.0
            running = call(device, "processes", problems, "nvmlDeviceGetComputeRunningProcesses")
            if device.lost is not None:  # lost during this round: nothing of it counts
                samples.append(self._identity(device, t))
                continue
            samples.append(
                GpuSample(
                    t=t,
                    index=device.index,
                    uuid=device.uuid,
                    name=device.name,
                    pci_bus_id=device.pci_bus_id,
                    util_pct=None if util is None else float(util.gpu),
                    mem_util_pct=None if util is None else float(util.memory),
                    mem_used_mib=None if mem is None else mem.used / MIB,
                    mem_total_mib=None if mem is None else mem.total / MIB,
                    power_w=None if power is None else power / 1000.0,
                    power_limit_w=None if limit is None else limit / 1000.0,
                    temp_c=None if temp is None else float(temp),
                    sm_clock_mhz=None if sm is None else float(sm),
                    mem_clock_mhz=None if mem_clock is None else float(mem_clock),
                    pcie_rx_mib_s=rx,
                    pcie_tx_mib_s=tx,
                    pstate=None if pstate is None else f"P{int(pstate)}",
                    **activity,
                )
            )
            for proc in running or ():
                used = getattr(proc, "usedGpuMemory", None)
                procs.append(
                    GpuProcess(
                        gpu_key=device.key,
                        pid=int(proc.pid),
                        used_mib=None if used is None else used / MIB,
                    )
                )
        return NvmlReading(tuple(samples), tuple(procs), tuple(problems))

    def _memory(self, device: _Device, problems: list[str]) -> Any:
        """Memory as nvidia-smi shows it (v2: without the driver's reserve), else v1's."""
        version = getattr(self._nvml, "nvmlMemory_v2", None)
        if version is not None and "memory v2" not in device.skip:
            unused: list[str] = []  # v2 missing or refused is no problem: v1 answers
            mem = self._device_call(device, "memory v2", unused, "nvmlDeviceGetMemoryInfo", version)
            if mem is not None:
                return mem
            if device.lost is not None:
                problems += unused
                return None
            device.skip["memory v2"] = unused[-1] if unused else "no answer"
        return self._device_call(device, "memory", problems, "nvmlDeviceGetMemoryInfo")

    @staticmethod
    def _identity(device: _Device, t: float) -> GpuSample:
        return GpuSample(
            t=t,
            index=device.index,
            uuid=device.uuid,
            name=device.name,
            pci_bus_id=device.pci_bus_id,
        )


# ---------------------------------------------------------------------- what this site offers

# NVML's words for "the call works, it has nothing to say": no process sampled in the window
# (nvidia-ml-py raises NVMLError(0) when the first call answers Success with no samples).
_NOTHING_YET = ("Not Found", "NVML Error with code 0")


@dataclass(frozen=True)
class DeviceInfo:
    """One device as ``tuneadvisor doctor`` reports it (a whole GPU or a MIG instance)."""

    index: int  # the physical GPU's index (a MIG instance has its parent's)
    uuid: str | None
    name: str | None
    mig_parent: str | None  # the parent GPU's uuid for a MIG instance
    mig_mode: tuple[int, int] | None  # (current, pending), 1 = enabled; None: not supported
    unreachable: str | None  # NVML counted it but gave no handle (why)
    processes: int | None  # processes nvmlDeviceGetComputeRunningProcesses listed
    processes_error: str | None  # why it did not answer
    process_util_error: str | None  # why nvmlDeviceGetProcessUtilization did not answer
    # NVML GPM (SM activity): True it answers, False not (``activity_error`` says why),
    # None not asked (a GPU in MIG mode: its instances are asked)
    activity: bool | None = None
    activity_error: str | None = None


@dataclass(frozen=True)
class NvmlInventory:
    """NVML on this node: the library, the driver, the devices and which queries answer."""

    reason: str | None  # why there is no device list (None: NVML started and counted)
    started: bool = False  # nvmlInit succeeded
    missing: bool = False  # nvidia-ml-py itself is not installed
    bindings: str | None = None  # the nvidia-ml-py version
    nvml_version: str | None = None
    driver: str | None = None
    cuda_driver: str | None = None  # the newest CUDA the driver supports, "12.4"
    devices: tuple[DeviceInfo, ...] = ()


def _bindings_version() -> str | None:
    from importlib import metadata

    try:
        return metadata.version("nvidia-ml-py")
    except metadata.PackageNotFoundError:
        return None


def _cuda_version(value: object) -> str | None:
    """NVML's CUDA version integer (12040) as text ("12.4")."""
    if not isinstance(value, int) or value <= 0:
        return None
    return f"{value // 1000}.{value % 1000 // 10}"


def inventory(import_module: Callable[[str], ModuleType] | None = None) -> NvmlInventory:
    """Every device NVML sees (no ``CUDA_VISIBLE_DEVICES`` filter) and whether the
    per-process queries answer without root. Never raises NVML errors."""
    sampler = NvmlSampler(import_module=import_module)
    reason = sampler.open()
    nvml = sampler._nvml
    if nvml is None:
        missing = reason == "nvidia-ml-py (pynvml) is not installed"
        return NvmlInventory(reason=reason, missing=missing, bindings=_bindings_version())
    try:
        version, _ = sampler._call("nvml version", nvml.nvmlSystemGetNVMLVersion)
        cuda, _ = sampler._call("cuda version", nvml.nvmlSystemGetCudaDriverVersion)
        devices = tuple(_describe(sampler, nvml, d) for d in sampler._devices)
    finally:
        sampler.close()
    # No device at all is a line of doctor's own, not a reason to skip the others.
    failed = reason if reason is not None and reason.startswith("no GPU count") else None
    return NvmlInventory(
        reason=failed,
        started=True,
        bindings=_bindings_version(),
        nvml_version=None if version is None else _text(version),
        driver=sampler.driver if sampler.driver is None else _text(sampler.driver),
        cuda_driver=_cuda_version(cuda),
        devices=devices,
    )


def _describe(sampler: NvmlSampler, nvml: Any, device: _Device) -> DeviceInfo:
    procs: Any = None
    procs_error = util_error = device.lost
    if device.lost is None:
        procs, procs_error = sampler._call(
            "processes", nvml.nvmlDeviceGetComputeRunningProcesses, device.handle
        )
        fn = getattr(nvml, "nvmlDeviceGetProcessUtilization", None)
        if fn is None:
            util_error = "not in this nvidia-ml-py"
        else:
            _, util_error = sampler._call("process utilization", fn, device.handle, 0)
            if util_error in _NOTHING_YET:
                util_error = None
    return DeviceInfo(
        index=device.index,
        uuid=device.uuid,
        name=device.name,
        mig_parent=device.mig_parent,
        mig_mode=device.mig_mode,
        unreachable=device.lost,
        processes=None if procs is None else len(procs),
        processes_error=procs_error,
        process_util_error=util_error,
        activity=True if device.gpm is not None else (False if device.gpm_why else None),
        activity_error=device.gpm_why,
    )
