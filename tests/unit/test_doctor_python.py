"""`doctor`'s training-interpreter lines: the probe runs in a real interpreter (this one),
with a stand-in ``torch`` package first on its PYTHONPATH (the boundary is `import torch`),
so each line is checked against what such a torch answers, without a GPU or a real torch.
What NVML says comes from the recorded H200 node (tests/fixtures/nvml/h200-1gpu.json) through
the pynvml stand-in, as `doctor` reads it."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.unit.test_doctor_gpu import H200, taken
from tests.unit.test_nvml import _fake_module
from tuneadvisor.metrics.nvml import NvmlInventory
from tuneadvisor.workspace.site_checks.model import Check
from tuneadvisor.workspace.site_checks.training_python import (
    InterpreterProbe,
    kernprof_check,
    python_checks,
)

NO_NVML = NvmlInventory(reason="NVML did not start: NVML Shared Library Not Found")
RECORDED_H200: dict[str, Any] = json.loads(H200.read_text())


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    module = _fake_module()
    monkeypatch.setitem(sys.modules, "pynvml", module)
    return module


def recorded_h200(
    fake: ModuleType, tmp_path: Path, cuda_driver: int | None = None
) -> NvmlInventory:
    """What doctor takes from NVML on the recorded H200 node, read through the pynvml stand-in
    (the call boundary); ``cuda_driver`` replaces the recorded nvmlSystemGetCudaDriverVersion
    (13000, NVML's encoding of CUDA 13.0)."""
    recording = dict(RECORDED_H200)
    if cuda_driver is not None:
        recording["nvmlSystemGetCudaDriverVersion"] = cuda_driver
    return taken(fake, recording, tmp_path)


def fake_torch(folder: Path, *, version: str = "2.11.0+cu130", cuda: str | None = "13.0",
               available: bool = True, names: tuple[str, ...] = ("NVIDIA H200",),
               warning: str | None = None, body: str | None = None) -> Path:  # fmt: skip
    """A ``torch`` with the attributes the probe reads, answering as told."""
    package = folder / "torch"
    package.mkdir(parents=True)
    if body is None:
        warn = f"    warnings.warn({warning!r})\n" if warning else ""
        body = (
            "import types, warnings\n"
            f"__version__ = {version!r}\n"
            f"version = types.SimpleNamespace(cuda={cuda!r})\n"
            "def _available():\n"
            f"{warn}"
            f"    return {available!r}\n"
            f"_names = {list(names)!r}\n"
            "cuda = types.SimpleNamespace(is_available=_available,\n"
            "    device_count=lambda: len(_names), get_device_name=lambda i: _names[i])\n"
        )
    (package / "__init__.py").write_text(body)
    return folder


def probe_lines(tmp_path: Path, inv: NvmlInventory = NO_NVML, visible_ok: bool = True,
                timeout_s: float = 60.0, **torch: object) -> dict[str, Check]:  # fmt: skip
    folder = fake_torch(tmp_path / "site", **torch)  # type: ignore[arg-type]
    env = {**os.environ, "PYTHONPATH": str(folder)}
    result = InterpreterProbe(sys.executable, timeout_s, env).result()
    return {c.id: c for c in python_checks(result, "--python", inv, visible_ok)}


def test_a_torch_that_sees_the_gpu(fake: ModuleType, tmp_path: Path) -> None:
    checks = probe_lines(tmp_path, recorded_h200(fake, tmp_path))
    assert checks["python.interpreter"].status == "ok"
    assert checks["python.interpreter"].value.startswith(f"{sys.executable} (--python): Python 3.")
    assert checks["python.torch"] == Check("python.torch", "ok", "torch 2.11.0+cu130")
    assert checks["python.cuda"] == Check(
        "python.cuda", "ok", "torch 2.11.0+cu130 (CUDA 13.0) sees 1 GPU(s): NVIDIA H200"
    )


def test_no_gpu_on_this_node_says_why(tmp_path: Path) -> None:
    check = probe_lines(tmp_path, available=False)["python.cuda"]
    assert check.status == "not-applicable"
    assert check.value == (
        "torch 2.11.0+cu130 (CUDA 13.0) sees no GPU: NVML did not start: "
        "NVML Shared Library Not Found"
    )


def test_a_cpu_only_torch_is_a_failure_anywhere(tmp_path: Path) -> None:
    check = probe_lines(tmp_path, version="2.11.0+cpu", cuda=None, available=False)["python.cuda"]
    assert check.status == "failed"
    assert check.value == "torch 2.11.0+cpu is a build without CUDA"
    assert check.fix is not None and "CUDA build of torch" in check.fix


@pytest.mark.parametrize(("encoded", "cuda"), [(12020, "12.2"), (11080, "11.8")])
def test_a_driver_older_than_torchs_cuda(
    fake: ModuleType, tmp_path: Path, encoded: int, cuda: str
) -> None:
    """The driver's CUDA version as doctor decodes it from NVML's integer (major*1000 +
    minor*10), compared with the one torch was built for."""
    inv = recorded_h200(fake, tmp_path, cuda_driver=encoded)
    check = probe_lines(tmp_path, inv, available=False)["python.cuda"]
    assert check.status == "failed"
    assert check.value == (
        f"torch 2.11.0+cu130 (CUDA 13.0) sees no GPU: the driver supports CUDA {cuda}, "
        "torch was built for 13.0"
    )
    major = cuda.split(".")[0]
    assert check.fix == f"install a torch built for CUDA {major}.x, or ask for a newer driver"


def test_the_recorded_driver_is_not_blamed_for_a_torch_of_its_own_cuda(
    fake: ModuleType, tmp_path: Path
) -> None:
    """The recorded driver supports CUDA 13.0 (13000): a cu130 torch that sees no GPU is not
    the driver's fault, nor a cu131 one (the same major version)."""
    inv = recorded_h200(fake, tmp_path)
    for version, built in (("2.11.0+cu130", "13.0"), ("2.12.0+cu131", "13.1")):
        lines = probe_lines(tmp_path / version, inv, version=version, cuda=built, available=False)
        check = lines["python.cuda"]
        assert check.status == "failed"
        assert check.value == f"torch {version} (CUDA {built}) sees no GPU although NVML does"


def test_cuda_visible_devices_hiding_every_gpu(fake: ModuleType, tmp_path: Path) -> None:
    inv = recorded_h200(fake, tmp_path)
    check = probe_lines(tmp_path, inv, visible_ok=False, available=False)
    assert check["python.cuda"].status == "failed"
    assert check["python.cuda"].fix == "see the gpu.visible line"


def test_torchs_own_warning_is_the_reason(fake: ModuleType, tmp_path: Path) -> None:
    said = (
        "CUDA initialization: CUDA unknown error - this may be due to an incorrectly set up "
        "environment"
    )
    inv = recorded_h200(fake, tmp_path)
    check = probe_lines(tmp_path, inv, available=False, warning=said)["python.cuda"]
    assert check.status == "failed"
    assert check.value.endswith(f"sees no GPU although NVML does: {said}")


def test_torch_not_installed(tmp_path: Path) -> None:
    body = "raise ModuleNotFoundError(\"No module named 'torch'\", name='torch')\n"
    checks = probe_lines(tmp_path, body=body)
    assert checks["python.torch"].status == "missing"
    assert checks["python.torch"].fix is not None
    assert "--python PY or export TUNEADVISOR_TORCH_PYTHON=PY" in checks["python.torch"].fix
    assert checks["python.cuda"].status == "not-applicable"


def test_a_broken_torch(tmp_path: Path) -> None:
    body = "raise ImportError('libcudnn.so.9: cannot open shared object file')\n"
    check = probe_lines(tmp_path, body=body)["python.torch"]
    assert check.status == "failed"
    assert (
        check.value
        == "import torch failed: ImportError: libcudnn.so.9: cannot open shared object file"
    )


def test_an_interpreter_that_hangs_is_killed_at_the_timeout(tmp_path: Path) -> None:
    start = time.monotonic()
    checks = probe_lines(tmp_path, body="import time\ntime.sleep(60)\n", timeout_s=1.0)
    assert time.monotonic() - start < 15
    interpreter = checks["python.interpreter"]
    assert interpreter.status == "failed"
    assert interpreter.value.endswith("did not answer within 1 s (killed)")
    assert interpreter.fix is not None and "--timeout" in interpreter.fix
    for name in ("python.torch", "python.cuda", "python.line_profiler"):
        assert checks[name].status == "not-applicable"


def test_an_interpreter_that_is_not_there(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-python")
    result = InterpreterProbe(missing, 5.0).result()
    check = python_checks(result, "$TUNEADVISOR_TORCH_PYTHON", NO_NVML, True)[0]
    assert check.status == "failed"
    assert (
        check.value
        == f"{missing} ($TUNEADVISOR_TORCH_PYTHON): cannot run it: No such file or directory"
    )


def test_an_interpreter_that_dies(tmp_path: Path) -> None:
    script = tmp_path / "python"
    script.write_text(
        "#!/bin/sh\necho 'error while loading shared libraries: libpython3.11.so' >&2\nexit 127\n"
    )
    script.chmod(0o755)
    check = python_checks(InterpreterProbe(str(script), 5.0).result(), "--python", NO_NVML, True)[0]
    assert check.status == "failed"
    assert check.value.endswith(
        "printed no answer: error while loading shared libraries: libpython3.11.so"
    )


def test_line_profiler_missing_in_the_training_interpreter(tmp_path: Path) -> None:
    folder = fake_torch(tmp_path / "site")
    (folder / "line_profiler.py").write_text(
        "raise ModuleNotFoundError('No module named line_profiler')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(folder)}
    result = InterpreterProbe(sys.executable, 60.0, env).result()
    check = {c.id: c for c in python_checks(result, "--python", NO_NVML, True)}[
        "python.line_profiler"
    ]
    assert check.status == "missing"
    assert (
        check.fix
        == f"`run --profile` starts {sys.executable} -m kernprof: pip install line_profiler there"
    )


def test_kernprof_on_path(tmp_path: Path) -> None:
    assert kernprof_check(str(tmp_path)).status == "missing"
    kernprof = tmp_path / "kernprof"
    kernprof.write_text("#!/bin/sh\n")
    kernprof.chmod(0o755)
    assert kernprof_check(str(tmp_path)) == Check("tools.kernprof", "ok", str(kernprof))


@pytest.mark.parametrize("line", ["", "not json", "[1, 2]"])
def test_an_answer_that_is_not_the_probes(tmp_path: Path, line: str) -> None:
    script = tmp_path / "python"
    script.write_text(f"#!/bin/sh\necho '{line}'\n")
    script.chmod(0o755)
    result = InterpreterProbe(str(script), 5.0).result()
    assert result.answer is None and result.problem is not None
    assert result.problem.startswith("printed no answer")
