"""NVML's GPM in the sampler, at the pynvml call boundary, against the values recorded on an
H200 (tests/fixtures/nvml/gpm-h200.json: six known loads, 4 rounds each, made by
bench/gpu_capture.py): what each round reads, how few calls it takes, what the rules say of
each load, and where GPM is missing (said once, never each round)."""

from __future__ import annotations

import copy
import ctypes
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tuneadvisor.advisor.engine import evaluate
from tuneadvisor.metrics import gpm
from tuneadvisor.metrics.model import MetricsSeries
from tuneadvisor.metrics.nvml import NvmlSampler
from tuneadvisor.workspace.rule_files import default_rules_dir, load_rules

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "nvml"
CAPTURE: dict[str, Any] = json.loads((FIXTURES / "gpm-h200.json").read_text())
H200 = json.loads((FIXTURES / "h200-1gpu.json").read_text())
SM_LEVEL = {"busy-but-underused", "tensor-cores-idle", "memory-bandwidth-bound"}


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    spec = importlib.util.spec_from_file_location("pynvml", FIXTURES / "fake" / "pynvml.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setitem(sys.modules, "pynvml", module)
    return module


def h200_under(load: str) -> dict[str, Any]:
    """The recorded H200 answering GPM as it did under ``load``, and its utilization then."""
    fixture: dict[str, Any] = copy.deepcopy(H200)
    device = fixture["devices"][0]
    recorded = CAPTURE["loads"][load]
    device["nvmlGpmQueryDeviceSupport"] = CAPTURE["gpm_support"]
    device["nvmlGpmMetricsGet"] = {"seq": [r["metrics"] for r in recorded["rounds"]]}
    device["nvmlDeviceGetUtilizationRates"] = recorded["utilization"]
    return fixture


def recorded(load: str, round_: int, metric: int) -> float:
    metrics = CAPTURE["loads"][load]["rounds"][round_]["metrics"]
    return float(next(m["value"] for m in metrics if m["metricId"] == metric))


def sampled(
    fake: ModuleType, fixture: dict[str, Any], rounds: int, **kw: Any
) -> tuple[NvmlSampler, list[Any]]:
    fake.load_data(fixture)
    sampler = NvmlSampler(**kw)
    assert sampler.open() is None
    return sampler, [sampler.sample(float(t)) for t in range(rounds)]


def test_each_round_reads_the_recorded_bf16_values(fake: ModuleType) -> None:
    sampler, readings = sampled(fake, h200_under("bf16_matmul"), 4)
    for n, reading in enumerate(readings):
        (gpu,) = reading.gpus
        assert gpu.sm_active_pct == recorded("bf16_matmul", n, 2)
        assert gpu.sm_occupancy_pct == recorded("bf16_matmul", n, 3)
        assert gpu.tensor_active_pct == recorded("bf16_matmul", n, 5)
        assert gpu.dram_active_pct == recorded("bf16_matmul", n, 10)
        # PCIe from GPM, in MiB/s as NVML gives it; NVLink 0 on this single GPU, not missing
        assert gpu.pcie_tx_mib_s == recorded("bf16_matmul", n, 20)
        assert gpu.pcie_rx_mib_s == recorded("bf16_matmul", n, 21)
        assert (gpu.nvlink_rx_mib_s, gpu.nvlink_tx_mib_s) == (0.0, 0.0)
        assert gpu.util_pct == 100.0  # utilization beside it, as before
        assert reading.problems == ()
    assert readings[1].gpus[0].tensor_active_pct > 90  # bf16 matmuls: tensor pipes busy
    assert sampler.activity_reason is None
    sampler.close()
    assert all(s.freed for s in fake.SAMPLES) and len(fake.SAMPLES) == 2


def test_one_sample_per_round_and_no_pcie_wait(fake: ModuleType) -> None:
    """Two samples make an interval: the previous round's is kept, one new one per round; with
    GPM's PCIe traffic, the 20 ms nvmlDeviceGetPcieThroughput is not asked."""
    fake.load_data(h200_under("idle"))
    sampler = NvmlSampler()
    sampler.open()
    assert fake.CALLS.count("nvmlGpmSampleGet") == 1  # the first of the first pair
    fake.CALLS.clear()
    for t in range(3):
        sampler.sample(float(t))
    assert fake.CALLS.count("nvmlGpmSampleGet") == 3
    assert fake.CALLS.count("nvmlGpmMetricsGet") == 3
    assert "nvmlDeviceGetPcieThroughput" not in fake.CALLS
    assert fake.CALLS.count("nvmlGpmSampleAlloc") == 0  # allocated once, at open


@pytest.mark.parametrize(
    ("load", "named"),
    [
        ("idle", set()),
        ("bf16_matmul", set()),  # tensor pipes 93 %: nothing to say
        ("tiny_kernels", set()),  # utilization 27 %: low-gpu-util's range, not SM-level
        ("tiny_graph", {"busy-but-underused"}),  # utilization 100 %, SM 0.3 %
        ("pcie_htod", {"busy-but-underused"}),  # utilization 100 %, SM 0 %, PCIe 59 GB/s
        ("copy_bound", {"memory-bandwidth-bound"}),  # DRAM 88 %
    ],
)
def test_the_rules_name_each_recorded_load(fake: ModuleType, load: str, named: set[str]) -> None:
    _, readings = sampled(fake, h200_under(load), 4)
    series = MetricsSeries.from_samples([g for r in readings for g in r.gpus], source="recording")
    facts = series.facts()
    found = {f.id for f in evaluate(load_rules([default_rules_dir()]), facts).findings}
    assert found & SM_LEVEL == named
    if load == "pcie_htod":
        pcie = facts["gpu.pcie.mean_mib_s"]
        assert isinstance(pcie, float) and pcie > 50_000  # the copies' traffic, in the evidence


def test_bf16_with_a_script_without_amp_is_no_tensor_finding(fake: ModuleType) -> None:
    """tensor-cores-idle reads the tensor pipes, not the script alone: busy pipes, no finding."""
    _, readings = sampled(fake, h200_under("bf16_matmul"), 4)
    facts = MetricsSeries.from_samples([g for r in readings for g in r.gpus]).facts()
    assert facts["gpu.tensor_cores"] is True  # an H200, by name
    facts["script.amp"] = False
    found = {f.id for f in evaluate(load_rules([default_rules_dir()]), facts).findings}
    assert "tensor-cores-idle" not in found


def _without_gpm(fixture: dict[str, Any], answer: Any) -> dict[str, Any]:
    fixture = copy.deepcopy(fixture)
    for device in fixture["devices"]:
        if answer is None:
            device.pop("nvmlGpmQueryDeviceSupport", None)
        else:
            device["nvmlGpmQueryDeviceSupport"] = answer
    return fixture


A100 = json.loads((FIXTURES / "a100-2gpu.json").read_text())


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (None, "GPU 0, GPU 1: this GPU has no GPM (Hopper or newer has it)"),  # Not Supported
        ({"isSupportedDevice": 0}, "GPU 0, GPU 1: this GPU has no GPM (Hopper or newer has it)"),
        ({"error": "FUNCTION_NOT_FOUND"}, "the driver has no GPM (R520 or newer has it)"),
        ({"error": "NO_PERMISSION"}, "GPM refused to this user (Insufficient Permissions)"),
    ],
)
def test_without_gpm_it_is_said_once_never_each_round(
    fake: ModuleType, answer: Any, why: str
) -> None:
    sampler, readings = sampled(fake, _without_gpm(A100, answer), 3)
    assert sampler.activity_reason is not None and why in sampler.activity_reason
    assert sampler.activity_reason.startswith("no SM activity (NVML GPM): ")
    for reading in readings:
        assert not any("GPM" in p for p in reading.problems)
        assert all(g.sm_active_pct is None for g in reading.gpus)
    assert readings[0].gpus[0].pcie_rx_mib_s is not None  # the older PCIe counter instead
    assert "nvmlGpmSampleGet" not in fake.CALLS and fake.SAMPLES == []


def test_a_driver_refusing_the_metrics_turns_gpm_off_once(fake: ModuleType) -> None:
    fixture = h200_under("bf16_matmul")
    rounds = fixture["devices"][0]["nvmlGpmMetricsGet"]["seq"]
    fixture["devices"][0]["nvmlGpmMetricsGet"] = {"seq": [rounds[0], {"error": "INVALID_ARGUMENT"}]}
    sampler, readings = sampled(fake, fixture, 4)
    assert readings[0].gpus[0].sm_active_pct == recorded("bf16_matmul", 0, 2)
    assert [r.gpus[0].sm_active_pct for r in readings[1:]] == [None, None, None]
    assert sampler.activity_reason is not None and "Invalid Argument" in sampler.activity_reason
    assert all(not r.problems for r in readings)
    assert all(s.freed for s in fake.SAMPLES)  # given back when turned off
    fake.CALLS.clear()
    sampler.sample(9.0)
    assert "nvmlGpmSampleGet" not in fake.CALLS


def test_a_gpu_lost_while_sampling_gpm(fake: ModuleType) -> None:
    fixture = h200_under("idle")
    fixture["devices"][0]["nvmlGpmSampleGet"] = {"seq": [None, None, {"error": "GPU_IS_LOST"}]}
    _, readings = sampled(fake, fixture, 3)
    assert readings[0].gpus[0].sm_active_pct == 0.0
    assert readings[1].gpus[0].util_pct is None  # lost in that round: nothing of it counts
    assert any("GPM: GPU is lost" in p for p in readings[1].problems)
    assert any(p.endswith("no data: GPU is lost") for p in readings[2].problems)


def test_activity_can_be_left_out(fake: ModuleType) -> None:
    _, readings = sampled(fake, h200_under("bf16_matmul"), 2, activity=False)
    assert readings[1].gpus[0].sm_active_pct is None
    assert not any(c.startswith("nvmlGpm") for c in fake.CALLS)


def test_a_mig_instance_is_sampled_through_its_parent(fake: ModuleType) -> None:
    """No MIG GPU with GPM was lent: the H200's recorded bf16 rounds on an A100's MIG layout
    (the parent's GPM answer, the instances' GPU instance ids), to check the calls."""
    fixture = copy.deepcopy(json.loads((FIXTURES / "a100-mig.json").read_text()))
    parent = fixture["devices"][0]
    parent["nvmlGpmQueryDeviceSupport"] = {"isSupportedDevice": 1}
    used, _, empty = parent["mig"]
    used["nvmlDeviceGetGpuInstanceId"] = 1
    used["nvmlGpmMetricsGet"] = {
        "seq": [r["metrics"] for r in CAPTURE["loads"]["bf16_matmul"]["rounds"]]
    }
    empty["nvmlDeviceGetGpuInstanceId"] = 2
    empty["nvmlGpmMetricsGet"] = {"seq": [r["metrics"] for r in CAPTURE["loads"]["idle"]["rounds"]]}
    sampler, readings = sampled(fake, fixture, 2)
    whole, busy, idle = readings[1].gpus
    assert whole.sm_active_pct is None  # the MIG parent is read through its instances
    assert busy.tensor_active_pct == recorded("bf16_matmul", 1, 5)
    assert idle.sm_active_pct == recorded("idle", 1, 2)
    assert "nvmlGpmSampleGet" not in fake.CALLS
    assert fake.CALLS.count("nvmlGpmMigSampleGet") == 2 * 3  # open + 2 rounds, 2 instances
    assert sampler.activity_reason is None


def test_the_request_fits_the_real_nvml_structures() -> None:
    """metrics_request and read_metrics on the real nvidia-ml-py ctypes types (no GPU needed
    to build them): the ids asked, the version, and what a filled answer reads as."""
    import pynvml as real

    first, second = real.c_nvmlGpmSample_t(), real.c_nvmlGpmSample_t()
    request = gpm.metrics_request(real, first, second)
    assert isinstance(request, real.c_nvmlGpmMetricsGet_t)
    assert request.version == real.NVML_GPM_METRICS_GET_VERSION
    assert request.numMetrics == len(gpm.METRICS)
    asked = [request.metrics[i].metricId for i in range(request.numMetrics)]
    assert asked == [
        real.NVML_GPM_METRIC_SM_UTIL,
        real.NVML_GPM_METRIC_SM_OCCUPANCY,
        real.NVML_GPM_METRIC_ANY_TENSOR_UTIL,
        real.NVML_GPM_METRIC_DRAM_BW_UTIL,
        real.NVML_GPM_METRIC_PCIE_TX_PER_SEC,
        real.NVML_GPM_METRIC_PCIE_RX_PER_SEC,
        real.NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC,
        real.NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC,
    ]
    assert set(asked) <= set(CAPTURE["metric_ids"])  # ids the H200's driver 580 answered
    # fill it as the driver does: one value refused, one not a number
    for i, (metric, _) in enumerate(gpm.METRICS):
        request.metrics[i].nvmlReturn = real.NVML_SUCCESS
        request.metrics[i].value = float(metric)
    request.metrics[1].nvmlReturn = real.NVML_ERROR_NOT_SUPPORTED
    request.metrics[2].value = float("nan")
    got = gpm.read_metrics(request)
    assert got["sm_active_pct"] == 2.0 and got["dram_active_pct"] == 10.0
    assert "sm_occupancy_pct" not in got and "tensor_active_pct" not in got
    assert ctypes.sizeof(request) > 0


def test_the_note_names_the_sm_level_rules_of_the_pack() -> None:
    from tuneadvisor.workspace.gpu_source import SM_LEVEL_RULES

    assert set(SM_LEVEL_RULES.split(", ")) == SM_LEVEL
    assert {rule.id for rule in load_rules([default_rules_dir()])} >= SM_LEVEL


def test_the_summary_names_each_figure(fake: ModuleType) -> None:
    """watch's summary: utilization said as what it is, SM activity beside it."""
    from tuneadvisor.present.watch_summary import _gpu_lines

    _, readings = sampled(fake, h200_under("tiny_graph"), 4)
    series = MetricsSeries.from_samples([g for r in readings for g in r.gpus])
    (line,) = _gpu_lines(series, ())
    assert "util (time any kernel ran) mean 100 %" in line
    assert "SM activity mean 0.3 %" in line and "tensor pipes mean 0.0 %" in line
