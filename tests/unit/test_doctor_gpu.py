"""`doctor`'s GPU lines at the pynvml call boundary: the stand-in ``pynvml``
(tests/fixtures/nvml/fake/pynvml.py) answers with recorded values and raises the REAL
nvidia-ml-py error classes (NoPermission, Not Supported, LibraryNotFound)."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.unit.test_nvml import FIXTURES, U0, U1, _fake_module
from tuneadvisor.metrics.nvml import NvmlInventory, inventory
from tuneadvisor.workspace.site_checks.gpu import gpu_checks, mig_profile, short_uuid
from tuneadvisor.workspace.site_checks.model import Check

H200 = FIXTURES / "h200-1gpu.json"
GPU_IDS = ("gpu.devices", "gpu.visible", "gpu.mig", "gpu.processes", "gpu.process_util",
           "gpu.activity")  # fmt: skip


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    module = _fake_module()
    monkeypatch.setitem(sys.modules, "pynvml", module)
    return module


def taken(fake: ModuleType, fixture: Path | Mapping[str, object], tmp_path: Path) -> NvmlInventory:
    if not isinstance(fixture, Path):
        path = tmp_path / "fixture.json"
        path.write_text(json.dumps(fixture))
        fixture = path
    fake.load(fixture)
    inv = inventory()
    assert fake._state["inits"] == 0, "every nvmlInit is shut down"
    return inv


def lines(inv: NvmlInventory, visible: str | None = None, root: bool = False) -> dict[str, Check]:
    return {c.id: c for c in gpu_checks(inv, visible, root=root)}


def test_the_recorded_h200(fake: ModuleType, tmp_path: Path) -> None:
    recorded = json.loads(H200.read_text())
    device = recorded["devices"][0]
    inv = taken(fake, H200, tmp_path)
    assert inv.driver == recorded["nvmlSystemGetDriverVersion"]
    assert inv.nvml_version == recorded["nvmlSystemGetNVMLVersion"]
    cuda = recorded["nvmlSystemGetCudaDriverVersion"]
    assert inv.cuda_driver == f"{cuda // 1000}.{cuda % 1000 // 10}"
    checks = lines(inv)
    assert checks["nvml.library"].status == "ok"
    assert checks["nvml.driver"].value.startswith(recorded["nvmlSystemGetDriverVersion"])
    assert checks["gpu.devices"].status == "ok"
    assert device["name"] in checks["gpu.devices"].value
    assert short_uuid(device["uuid"]) in checks["gpu.devices"].value
    assert checks["gpu.mig"].status == "ok" and checks["gpu.mig"].value == "MIG off on every GPU"
    running = len(device["nvmlDeviceGetComputeRunningProcesses"])
    assert checks["gpu.processes"].status == "ok"
    assert f", {running} process(es) now" in checks["gpu.processes"].value
    assert checks["gpu.process_util"].status == "ok"
    assert all(c.fix is None for c in checks.values())


def test_root_is_said_because_a_user_may_be_refused(fake: ModuleType, tmp_path: Path) -> None:
    inv = taken(fake, H200, tmp_path)
    assert lines(inv, root=True)["gpu.processes"].value.endswith(
        "(asked as root: a user may be refused)"
    )
    assert lines(inv, root=False)["gpu.processes"].value.endswith("now without root")


@pytest.mark.parametrize(
    ("visible", "status", "says"),
    [
        (None, "ok", "unset: CUDA may use all 2 GPU(s)"),
        ("1", "ok", "-> GPU 1 GPU-4404041a"),
        ("GPU-4404041a", "ok", "-> GPU 1 GPU-4404041a"),
        ("1,0", "ok", "-> GPU 1 GPU-4404041a, GPU 0 GPU-4cf8db2d"),
        ("0,7,1", "failed", "'7' names no device NVML lists (CUDA stops there and sees GPU 0"),
        ("7", "failed", "CUDA stops there and sees nothing"),
        ("", "failed", "empty, CUDA sees no GPU"),
    ],
)
def test_cuda_visible_devices_against_nvml(
    fake: ModuleType, tmp_path: Path, visible: str | None, status: str, says: str
) -> None:
    check = lines(taken(fake, FIXTURES / "a100-2gpu.json", tmp_path), visible)["gpu.visible"]
    assert check.status == status
    assert says in check.value
    assert (check.fix is None) == (status == "ok")


def test_the_per_process_lines_ask_only_the_visible_gpus(fake: ModuleType, tmp_path: Path) -> None:
    fixture = json.loads((FIXTURES / "a100-2gpu.json").read_text())
    fixture["devices"][0]["nvmlDeviceGetComputeRunningProcesses"] = {"error": "NO_PERMISSION"}
    inv = taken(fake, fixture, tmp_path)
    assert lines(inv, "1")["gpu.processes"].status == "ok"
    refused = lines(inv, "0")["gpu.processes"]
    assert refused.status == "failed"
    assert refused.value.endswith("GPU 0: Insufficient Permissions")
    assert refused.fix is not None and "admins" in refused.fix


def test_no_permission_for_process_queries(fake: ModuleType, tmp_path: Path) -> None:
    """A container without the permissions: the recorded V100 node answers NoPermission."""
    fixture = json.loads((FIXTURES / "v100-lost.json").read_text())
    for device in fixture["devices"]:
        device["nvmlDeviceGetProcessUtilization"] = {"error": "NO_PERMISSION"}
    checks = lines(taken(fake, fixture, tmp_path))
    assert checks["gpu.processes"].status == "failed"
    assert "GPU 0: Insufficient Permissions; GPU 1: Insufficient Permissions" in (
        checks["gpu.processes"].value
    )
    assert checks["gpu.process_util"].status == "failed"
    assert checks["gpu.process_util"].fix is not None
    # V100: MIG mode answers Not Supported
    assert checks["gpu.mig"] == Check("gpu.mig", "not-applicable", "these GPUs have no MIG mode")


def test_a_mig_gpu_and_its_instances(fake: ModuleType, tmp_path: Path) -> None:
    inv = taken(fake, FIXTURES / "a100-mig.json", tmp_path)
    instances = [d for d in inv.devices if d.mig_parent == U0]
    assert [d.processes for d in instances] == [1, 0]
    checks = lines(inv)
    assert checks["gpu.devices"].value.startswith("1 GPU: NVIDIA A100-SXM4-40GB")
    assert checks["gpu.mig"].status == "ok"
    assert checks["gpu.mig"].value == (
        "GPU 0: MIG on, 2 instance(s): MIG-1a2b3c4d 3g.20gb, MIG-9f8e7d6c 3g.20gb"
    )
    # per-process utilisation is not offered by MIG (the fixture's device has no answer)
    util = checks["gpu.process_util"]
    assert util.status == "not-applicable" and "Not Supported" in util.value
    assert util.value.endswith("(GPUs in MIG mode do not offer it)")
    visible = lines(inv, "MIG-9f8e7d6c")["gpu.visible"]
    assert visible.value.endswith("-> MIG-9f8e7d6c on GPU 0")
    assert lines(inv, "0")["gpu.visible"].value.endswith("-> GPU 0 GPU-4cf8db2d")


def test_mig_on_without_an_instance_fails(fake: ModuleType, tmp_path: Path) -> None:
    fixture = json.loads((FIXTURES / "a100-mig.json").read_text())
    fixture["devices"][0]["mig"] = [None, None]
    check = lines(taken(fake, fixture, tmp_path))["gpu.mig"]
    assert check.status == "failed"
    assert check.value == "GPU 0: MIG on, 0 instance(s)"
    assert check.fix is not None and "GPU 0 has no instance" in check.fix


def test_a_pending_mig_change_is_said(fake: ModuleType, tmp_path: Path) -> None:
    fixture = json.loads((FIXTURES / "a100-2gpu.json").read_text())
    fixture["devices"][1]["nvmlDeviceGetMigMode"] = [0, 1]
    check = lines(taken(fake, fixture, tmp_path))["gpu.mig"]
    assert check.value == "GPU 1: MIG on after the next GPU reset"


def test_process_utilization_with_nothing_sampled_yet_answers(
    fake: ModuleType, tmp_path: Path
) -> None:
    """No process ran in the window: NVML says Not Found, which is an answer."""
    fixture = json.loads((FIXTURES / "a100-2gpu.json").read_text())
    for device in fixture["devices"]:
        device["nvmlDeviceGetProcessUtilization"] = {"error": "NOT_FOUND"}
    assert lines(taken(fake, fixture, tmp_path))["gpu.process_util"].status == "ok"


def test_a_gpu_closed_to_this_process_is_said_not_failed(fake: ModuleType, tmp_path: Path) -> None:
    """In a job whose cgroup closes the other jobs' GPUs, NVML counts them and refuses them."""
    fixture = json.loads((FIXTURES / "a100-2gpu.json").read_text())
    fixture["devices"][1]["handle"] = {"error": "NO_PERMISSION"}
    check = lines(taken(fake, fixture, tmp_path))["gpu.devices"]
    assert check == Check(
        "gpu.devices",
        "ok",
        "1 GPU: NVIDIA A100-SXM4-40GB (0 GPU-4cf8db2d); GPU 1 closed to this process "
        "(Insufficient Permissions)",
    )
    assert lines(taken(fake, fixture, tmp_path))["gpu.processes"].status == "ok"  # GPU 0 only
    fixture["devices"][0]["handle"] = {"error": "NO_PERMISSION"}
    checks = lines(taken(fake, fixture, tmp_path))
    assert checks["gpu.processes"].value == "not checked: no GPU open to this process"
    none_open = checks["gpu.devices"]
    assert none_open.status == "failed"
    assert none_open.value == "0 GPUs; GPU 0, 1 closed to this process (Insufficient Permissions)"
    assert none_open.fix is not None and "--gres=gpu:1" in none_open.fix


def test_a_gpu_lost_at_start_fails(fake: ModuleType, tmp_path: Path) -> None:
    fixture = json.loads((FIXTURES / "a100-2gpu.json").read_text())
    fixture["devices"][1]["handle"] = {"error": "GPU_IS_LOST"}
    check = lines(taken(fake, fixture, tmp_path))["gpu.devices"]
    assert check.status == "failed"
    assert check.value.endswith("(0 GPU-4cf8db2d); cannot open GPU 1: GPU is lost")
    assert check.fix is not None and "admins" in check.fix


def test_nvml_started_but_no_gpu(fake: ModuleType, tmp_path: Path) -> None:
    fixture = {"nvmlSystemGetDriverVersion": "535.104.05", "devices": []}
    checks = lines(taken(fake, fixture, tmp_path))
    assert checks["nvml.library"].status == "ok" and checks["nvml.driver"].status == "ok"
    assert checks["gpu.devices"].status == "failed"
    assert checks["gpu.devices"].value == "NVML sees no GPU on this node"


@pytest.mark.parametrize(
    ("fixture", "status", "why"),
    [
        ("no-library.json", "missing", "NVML Shared Library Not Found"),
        ("no-driver.json", "missing", "Driver Not Loaded"),
    ],
)
def test_no_driver_every_gpu_line_says_why(
    fake: ModuleType, tmp_path: Path, fixture: str, status: str, why: str
) -> None:
    checks = lines(taken(fake, FIXTURES / fixture, tmp_path), "0")
    library = checks["nvml.library"]
    assert library.status == status and why in library.value
    assert library.fix is not None and "srun --gres=gpu:1" in library.fix
    for name in ("nvml.driver", *GPU_IDS):
        assert checks[name].status == "not-applicable", name
        assert f"no NVML ({why})" in checks[name].value, name
    assert checks["gpu.visible"].value.startswith("CUDA_VISIBLE_DEVICES '0'")


def test_nvml_refusing_to_start_for_another_reason_is_a_failure(
    fake: ModuleType, tmp_path: Path
) -> None:
    fixture = {"nvmlInit": {"error": "LIB_RM_VERSION_MISMATCH"}, "devices": []}
    check = lines(taken(fake, fixture, tmp_path))["nvml.library"]
    assert check.status == "failed"
    assert "RM has detected an NVML/RM version mismatch" in check.value
    assert check.fix is not None and "admins" in check.fix


def test_without_nvidia_ml_py() -> None:
    def refuse(name: str) -> ModuleType:
        raise ModuleNotFoundError(f"No module named {name!r}")

    checks = lines(inventory(refuse))
    assert checks["nvml.library"].status == "missing"
    assert checks["nvml.library"].fix == "pip install nvidia-ml-py into tuneadvisor's environment"
    assert all(checks[name].status == "not-applicable" for name in GPU_IDS)


def test_short_names() -> None:
    assert short_uuid(U1) == "GPU-4404041a"
    assert short_uuid("MIG-GPU-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c/1/0") == "MIG-GPU-4cf8db2d"
    assert short_uuid(None) == "?"
    assert mig_profile("NVIDIA A100-SXM4-40GB MIG 3g.20gb") == "3g.20gb"


def test_process_utilization_not_offered_outside_mig(fake: ModuleType, tmp_path: Path) -> None:
    """The recorded A100 node has no answer for it: the stand-in says Not Supported."""
    util = lines(taken(fake, FIXTURES / "a100-2gpu.json", tmp_path))["gpu.process_util"]
    assert util.status == "not-applicable"
    assert util.value == (
        "per-process GPU utilisation not offered: GPU 0: Not Supported; GPU 1: Not Supported "
        "(this GPU or driver does not offer it)"
    )


def _with_gpm(path: Path, answer: object) -> dict[str, object]:
    fixture: dict[str, Any] = json.loads(path.read_text())
    for device in fixture["devices"]:
        device["nvmlGpmQueryDeviceSupport"] = answer
    return fixture


def test_gpm_on_the_recorded_h200(fake: ModuleType, tmp_path: Path) -> None:
    """The H200 answered nvmlGpmQueryDeviceSupport with isSupportedDevice 1 (gpm-h200.json)."""
    support = json.loads((FIXTURES / "gpm-h200.json").read_text())["gpm_support"]
    check = lines(taken(fake, _with_gpm(H200, support), tmp_path))["gpu.activity"]
    assert check.status == "ok" and check.fix is None
    assert check.value.startswith("SM activity readable on 1 device(s) (NVML GPM)")
    assert all(s.freed for s in fake.SAMPLES)  # doctor's look gives its GPM samples back


def test_gpm_missing_says_where_and_what_instead(fake: ModuleType, tmp_path: Path) -> None:
    a100 = lines(taken(fake, FIXTURES / "a100-2gpu.json", tmp_path))["gpu.activity"]
    assert a100.status == "not-applicable"  # an A100 has no GPM: nothing to fix
    assert "GPU 0: this GPU has no GPM (Hopper or newer has it)" in a100.value
    assert "dcgmi dmon -e 203,1002,1003,1004,1005" in a100.value
    old = _with_gpm(H200, {"error": "FUNCTION_NOT_FOUND"})
    driver = lines(taken(fake, old, tmp_path))["gpu.activity"]
    assert driver.status == "failed" and "driver has no GPM" in driver.value
    assert driver.fix is not None and "R520" in driver.fix


def test_gpm_of_a_mig_gpu_is_its_instances(fake: ModuleType, tmp_path: Path) -> None:
    check = lines(taken(fake, FIXTURES / "a100-mig.json", tmp_path))["gpu.activity"]
    # the parent is not asked; the instances are, through it (an A100: no GPM)
    assert check.status == "not-applicable"
    assert "MIG-1a2b3c4d: this GPU has no GPM" in check.value
