"""The NVML sampler at the pynvml call boundary.

No GPU here: a stand-in ``pynvml`` (tests/fixtures/nvml/fake/pynvml.py) answers with values
recorded from ``nvidia-smi -q`` on A100 and V100 nodes, and raises the REAL nvidia-ml-py error
classes (LibraryNotFound, DriverNotLoaded, GPU is lost, Not Supported, NoPermission).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tuneadvisor.metrics.model import MetricsSeries
from tuneadvisor.metrics.nvml import NvmlSampler, describe_error, visible_filter

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "nvml"
U0 = "GPU-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c"
U1 = "GPU-4404041a-04cf-1ccf-9e70-f139a9b1e23c"
MIB = 1024 * 1024


def _fake_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("pynvml", FIXTURES / "fake" / "pynvml.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    module = _fake_module()
    monkeypatch.setitem(sys.modules, "pynvml", module)
    return module


def opened(fake: ModuleType, fixture: str, **kwargs: object) -> NvmlSampler:
    fake.load(FIXTURES / fixture)
    sampler = NvmlSampler(**kwargs)  # type: ignore[arg-type]
    sampler.open()
    return sampler


def test_the_fake_raises_the_real_error_classes(fake: ModuleType) -> None:
    real = sys.modules["_real_pynvml"]
    assert fake.NVMLError is real.NVMLError
    err = fake.NVMLError(fake.NVML_ERROR_GPU_IS_LOST)
    assert isinstance(err, real.NVMLError_GpuIsLost)
    assert str(err) == "GPU is lost"
    assert describe_error(err) == "GPU is lost"
    assert describe_error(real.NVMLError_NotSupported()) == "Not Supported"
    assert describe_error(real.NVMLError_NoPermission()) == "Insufficient Permissions"


def test_a100_values_in_model_units(fake: ModuleType) -> None:
    sampler = opened(fake, "a100-2gpu.json")
    assert sampler.reason is None
    assert sampler.driver == "535.104.05"
    assert sampler.devices == (U0, U1)
    reading = sampler.sample(10.0)
    busy, idle = reading.gpus
    assert busy.t == 10.0
    assert (busy.index, busy.uuid, busy.name) == (0, U0, "NVIDIA A100-SXM4-40GB")
    assert busy.pci_bus_id == "00000000:07:00.0"  # bytes at the boundary, text here
    assert (busy.util_pct, busy.mem_util_pct) == (97.0, 61.0)
    assert (busy.mem_used_mib, busy.mem_total_mib) == (17935.0, 40960.0)
    assert (busy.power_w, busy.power_limit_w) == (312.45, 400.0)
    assert (busy.temp_c, busy.sm_clock_mhz, busy.mem_clock_mhz) == (41.0, 1410.0, 1215.0)
    assert busy.pstate == "P0"
    assert busy.pcie_rx_mib_s == pytest.approx(450000 / 1024)
    assert busy.pcie_tx_mib_s == pytest.approx(12000 / 1024)
    assert idle.util_pct == 0.0 and idle.sm_clock_mhz == 210.0
    assert [(p.gpu_key, p.pid, p.used_mib) for p in reading.procs] == [(U0, 4242, 17920.0)]
    assert reading.problems == ()
    facts = MetricsSeries.from_samples(reading.gpus, source="nvml").facts()
    assert facts["gpu.count"] == 2
    assert facts["gpu.util.mean"] == pytest.approx(48.5)
    assert facts["gpu.idle_count"] == 1


def test_library_not_found_is_no_data_with_the_reason(fake: ModuleType) -> None:
    sampler = opened(fake, "no-library.json")
    assert sampler.reason == "NVML did not start: NVML Shared Library Not Found"
    reading = sampler.sample(1.0)
    assert reading.gpus == () and reading.procs == ()
    assert reading.problems == ("no GPU data: NVML did not start: NVML Shared Library Not Found",)
    sampler.close()  # nothing to shut down, and no error


def test_driver_not_loaded(fake: ModuleType) -> None:
    sampler = opened(fake, "no-driver.json")
    assert sampler.reason == "NVML did not start: Driver Not Loaded"


def test_without_nvidia_ml_py_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(name: str) -> ModuleType:
        raise ModuleNotFoundError(f"No module named {name!r}")

    sampler = NvmlSampler(import_module=refuse)
    assert sampler.open() == "nvidia-ml-py (pynvml) is not installed"
    assert sampler.sample(0.0).gpus == ()


def test_the_real_library_on_this_gpu_less_machine() -> None:
    """The real nvidia-ml-py, no libnvidia-ml.so.1 here: no data, never a crash."""
    sampler = NvmlSampler()
    reason = sampler.open()
    assert reason is not None and "NVML" in reason
    assert sampler.sample(0.0).gpus == ()


def test_gpu_lost_mid_run_keeps_the_other_gpu(fake: ModuleType) -> None:
    sampler = opened(fake, "v100-lost.json")
    first, second, third, fourth = (sampler.sample(float(t)) for t in range(4))
    assert [g.util_pct for g in first.gpus] == [88.0, 71.0]
    assert [g.util_pct for g in second.gpus] == [88.0, 73.0]
    assert [g.util_pct for g in third.gpus] == [88.0, None]
    lost = third.gpus[1]
    assert lost.uuid == "GPU-f0e1d2c3-7777-8888-9999-aaaabbbbcccc"
    assert lost.mem_used_mib is None and lost.power_w is None  # nothing of that round counts
    assert any("utilization: GPU is lost" in p for p in third.problems)
    # Not asked again: the next round only says it is lost.
    assert [g.util_pct for g in fourth.gpus] == [88.0, None]
    assert any(p.endswith("no data: GPU is lost") for p in fourth.problems)
    calls_before = len(fake.CALLS)
    sampler.sample(5.0)
    assert fake.CALLS[calls_before:].count("nvmlDeviceGetUtilizationRates") == 1  # GPU 0 only
    series = MetricsSeries.from_samples([g for r in (first, second, third, fourth) for g in r.gpus])
    assert series.facts()["gpu.util.mean"] == pytest.approx((88 * 4 + 71 + 73) / 6)


def test_not_supported_and_no_permission_are_asked_once(fake: ModuleType) -> None:
    sampler = opened(fake, "v100-lost.json")
    first = sampler.sample(0.0)
    assert first.gpus[0].pcie_rx_mib_s is None
    assert f"{'GPU-a0b1c2d3-1111-2222-3333-444455556666'}: PCIe rx: Not Supported" in (
        first.problems
    )
    assert any("processes: Insufficient Permissions" in p for p in first.problems)
    fake.CALLS.clear()
    second = sampler.sample(1.0)
    assert "nvmlDeviceGetPcieThroughput" not in fake.CALLS
    assert "nvmlDeviceGetComputeRunningProcesses" not in fake.CALLS
    assert not any("Not Supported" in p for p in second.problems)


def test_pcie_can_be_left_out(fake: ModuleType) -> None:
    sampler = opened(fake, "a100-2gpu.json", pcie=False)
    fake.CALLS.clear()
    gpu = sampler.sample(0.0).gpus[0]
    assert gpu.pcie_rx_mib_s is None
    assert "nvmlDeviceGetPcieThroughput" not in fake.CALLS


def test_mig_instances_are_devices_of_their_own(fake: ModuleType) -> None:
    sampler = opened(fake, "a100-mig.json")
    assert sampler.devices == (
        U0,
        "MIG-1a2b3c4d-5e6f-5a7b-8c9d-0e1f2a3b4c5d",
        "MIG-9f8e7d6c-5b4a-5392-8170-6f5e4d3c2b1a",
    )
    parent, used, empty = sampler.sample(0.0).gpus
    assert parent.util_pct is None and parent.power_w == pytest.approx(143.88)
    assert used.name == "NVIDIA A100-SXM4-40GB MIG 3g.20gb"
    assert (used.index, used.mem_used_mib, used.mem_total_mib) == (0, 11999.0, 19968.0)
    assert used.util_pct is None and used.power_w is None  # Not Supported on an instance
    assert empty.mem_used_mib == 12.0


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("1", (U1,)),
        ("0,1", (U0, U1)),
        ("GPU-4404041a", (U1,)),
        (U0, (U0,)),
        ("", ()),
        (None, (U0, U1)),
    ],
)
def test_only_the_jobs_gpus(fake: ModuleType, spec: str | None, expected: tuple[str, ...]) -> None:
    sampler = opened(fake, "a100-2gpu.json", visible=visible_filter(spec))
    assert sampler.devices == expected
    if not expected:
        assert sampler.reason == "no GPU visible"


def test_one_mig_instance_visible(fake: ModuleType) -> None:
    sampler = opened(fake, "a100-mig.json", visible=("MIG-9f8e7d6c",))
    assert sampler.devices == ("MIG-9f8e7d6c-5b4a-5392-8170-6f5e4d3c2b1a",)


def test_memory_used_as_nvidia_smi_shows_it_on_a_recorded_h200(fake: ModuleType) -> None:
    """Recorded on an H200 (driver 580): v1's `used` counts the driver's reserve (4434 MiB),
    v2's does not (3819 MiB, what nvidia-smi printed at that moment). The sampler reads v2."""
    sampler = opened(fake, "h200-memory-v2.json")
    fake.CALLS.clear()
    reading = sampler.sample(1.0)
    (gpu,) = reading.gpus
    assert gpu.mem_used_mib == pytest.approx(4004315136 / MIB)
    assert round(gpu.mem_used_mib or 0) == 3819 and gpu.mem_total_mib == 143771.0
    recorded = json.loads((FIXTURES / "h200-memory-v2.json").read_text())["devices"][0]
    assert gpu.name == "NVIDIA H200"
    assert gpu.power_w == pytest.approx(recorded["nvmlDeviceGetPowerUsage"] / 1000)
    assert [(p.pid, p.used_mib) for p in reading.procs] == [(494, 3810.0)]
    assert (
        "nvmlDeviceGetMemoryInfo_v2" in fake.CALLS and "nvmlDeviceGetMemoryInfo" not in fake.CALLS
    )
    assert reading.problems == ()


def test_a_driver_without_memory_v2_is_read_with_v1_and_asked_once(fake: ModuleType) -> None:
    sampler = opened(fake, "a100-2gpu.json")  # recorded before v2: Function Not Found
    fake.CALLS.clear()
    first = sampler.sample(1.0)
    second = sampler.sample(2.0)
    assert first.gpus[0].mem_used_mib == second.gpus[0].mem_used_mib == 17935.0
    assert fake.CALLS.count("nvmlDeviceGetMemoryInfo_v2") == 2  # once per GPU, then never
    assert fake.CALLS.count("nvmlDeviceGetMemoryInfo") == 4
    assert first.problems == second.problems == ()  # v1 answered: nothing is missing
