"""`python -m tuneadvisor doctor` as a user runs it: here (no GPU: every GPU line says why;
this machine's Slurm may or may not answer), with the NVML stand-in for the GPU paths, with a
Slurm that hangs, and with bad arguments. docs/commands.md lists exactly the ids it prints."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tuneadvisor.present.site_checks import checks_json, render_checks
from tuneadvisor.workspace.site_checks.model import STATUSES, Check

REPO = Path(__file__).resolve().parents[2]
FAKE_NVML = REPO / "tests" / "fixtures" / "nvml" / "fake"
H200 = REPO / "tests" / "fixtures" / "nvml" / "h200-1gpu.json"
GPU_LINES = ("nvml.driver", "gpu.devices", "gpu.visible", "gpu.mig", "gpu.processes",
             "gpu.process_util", "gpu.activity", "python.cuda")  # fmt: skip


def doctor(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "tuneadvisor", "doctor", *args],
        capture_output=True,
        text=True,
        env=environ,
        timeout=300,
        check=False,
    )


def as_json(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in report["checks"]}


def documented_ids() -> list[str]:
    readme = (REPO / "docs" / "commands.md").read_text(encoding="utf-8")
    return re.findall(r"^\| `([a-z_]+\.[a-z_]+)` \|", readme, re.MULTILINE)


def test_here_without_a_gpu() -> None:
    env = {"CUDA_VISIBLE_DEVICES": "0"}
    report = as_json(doctor("--format", "json", "--timeout", "60", env=env))
    assert set(report) == {"host", "tuneadvisor", "python", "checks"}
    checks = by_id(report)
    assert [c["id"] for c in report["checks"]] == documented_ids()
    for check in report["checks"]:
        assert set(check) == {"id", "status", "value", "fix"}
        assert check["status"] in STATUSES and check["value"]
        assert (check["fix"] is None) == (check["status"] in ("ok", "not-applicable"))
    # No GPU here: the library line says why; every GPU line is not ok and says why too.
    library = checks["nvml.library"]
    assert library["status"] in ("missing", "failed")
    reason = library["value"].partition("; ")[2].removeprefix("NVML did not start: ")
    reason = reason.removesuffix(" (no NVIDIA driver on this node)")
    assert reason
    for name in GPU_LINES:
        assert checks[name]["status"] != "ok", name
        assert reason in checks[name]["value"] or "no GPU" in checks[name]["value"], name
    assert checks["gpu.visible"]["value"].startswith("CUDA_VISIBLE_DEVICES '0'")
    # Slurm: what the line says matches what is on PATH.
    for command in ("scontrol", "sacct", "seff"):
        line = checks[f"slurm.{command}"]
        found = shutil.which(command)
        if found is None:
            assert line["status"] == "missing" and line["value"] == f"{command} is not on PATH"
        else:
            assert line["status"] in ("ok", "failed") and found in line["value"]
    interpreter = checks["python.interpreter"]
    assert interpreter["status"] == "ok"
    assert interpreter["value"].startswith(f"{sys.executable} (tuneadvisor's own)")


def test_the_text_is_one_aligned_line_per_check() -> None:
    done = doctor("--timeout", "60")
    assert done.returncode == 0 and done.stderr == ""
    lines = done.stdout.splitlines()
    assert lines[0].startswith("tuneadvisor doctor: host ")
    rows = [line for line in lines if line.split(" ", 1)[0] in STATUSES]
    assert [row.split()[1] for row in rows] == documented_ids()
    columns = {row.index(row.split()[1]) for row in rows}
    assert len(columns) == 1, "the ids start in one column"
    value_column = columns.pop() + max(map(len, documented_ids())) + 2
    fixes = [line for line in lines if line.lstrip().startswith("-> ")]
    assert fixes and all(line.index("-> ") == value_column for line in fixes)
    assert re.fullmatch(r"(\d+ [a-z-]+)(, \d+ [a-z-]+)*", lines[-1])


def fake_torch(folder: Path) -> Path:
    package = folder / "torch"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        "import types\n__version__ = '2.11.0+cu130'\nversion = types.SimpleNamespace(cuda='13.0')\n"
        "cuda = types.SimpleNamespace(is_available=lambda: True, device_count=lambda: 1,\n"
        "    get_device_name=lambda i: 'NVIDIA H200')\n"
    )
    return folder


def test_with_the_nvml_stand_in_on_a_recorded_h200(tmp_path: Path) -> None:
    recorded = json.loads(H200.read_text())
    site = fake_torch(tmp_path / "site")
    env = {
        "PYTHONPATH": os.pathsep.join((str(FAKE_NVML), str(site), str(REPO))),
        "TUNEADVISOR_FAKE_NVML": str(H200),
        "CUDA_VISIBLE_DEVICES": recorded["devices"][0]["uuid"][:12],
        "SLURM_JOB_ID": "4711",
    }
    checks = by_id(as_json(doctor("--format", "json", env=env)))
    for name in ("nvml.library", "nvml.driver", "gpu.devices", "gpu.visible", "gpu.processes",
                 "python.torch", "python.cuda"):  # fmt: skip
        assert checks[name]["status"] == "ok", checks[name]
    # What doctor derives from the recorded answers: the CUDA version from NVML's 13000, the
    # short UUID, the device CUDA_VISIBLE_DEVICES' UUID prefix names, the processes counted.
    assert recorded["nvmlSystemGetCudaDriverVersion"] == 13000
    assert checks["nvml.driver"]["value"] == "580.159.04 (supports CUDA 13.0)"
    assert checks["gpu.devices"]["value"] == "1 GPU: NVIDIA H200 (0 GPU-fbeb7f21)"
    assert checks["gpu.visible"]["value"] == (
        "CUDA_VISIBLE_DEVICES=GPU-fbeb7f21 -> GPU 0 GPU-fbeb7f21"
    )
    assert len(recorded["devices"][0]["nvmlDeviceGetComputeRunningProcesses"]) == 1
    assert ", 1 process(es) now" in checks["gpu.processes"]["value"]
    # the stand-in torch's answer, as the line shows it
    assert (
        checks["python.cuda"]["value"]
        == "torch 2.11.0+cu130 (CUDA 13.0) sees 1 GPU(s): NVIDIA H200"
    )
    # SLURM_JOB_ID set, and this test's cgroup is no job's: the line says to run it inside
    cgroup = checks["slurm.cgroup"]
    assert cgroup["status"] == "failed"
    assert "srun --jobid 4711 --overlap" in cgroup["fix"]


def test_the_recorder_writes_the_recorded_fixture_back(tmp_path: Path) -> None:
    """record_fixture.py, run against the stand-in answering from the H200 recording, gives
    that recording back: the recorder and the stand-in read the same format."""
    out = tmp_path / "recorded.json"
    env = {**os.environ, "PYTHONPATH": str(FAKE_NVML), "TUNEADVISOR_FAKE_NVML": str(H200)}
    recorder = FAKE_NVML.parent / "record_fixture.py"
    subprocess.run([sys.executable, str(recorder), str(out)], env=env, check=True, timeout=60)
    again, recorded = json.loads(out.read_text()), json.loads(H200.read_text())
    assert {**again, "_source": None} == {**recorded, "_source": None}


def test_a_hanging_slurm_does_not_hang_doctor(tmp_path: Path) -> None:
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    for command in ("scontrol", "sacct"):
        script = fake_bin / command
        script.write_text("#!/bin/sh\nexec /bin/sleep 60\n")
        script.chmod(0o755)
    start = time.monotonic()
    env = {"PATH": f"{fake_bin}{os.pathsep}{os.environ.get('PATH', '')}"}
    checks = by_id(as_json(doctor("--format", "json", "--timeout", "1", env=env)))
    assert time.monotonic() - start < 60
    assert checks["slurm.scontrol"]["value"].endswith("scontrol did not answer within 1 s")
    assert checks["slurm.sacct"]["value"].endswith("sacct did not answer within 1 s")


def test_bad_arguments_exit_2_with_one_line() -> None:
    done = doctor("--timeout", "0")
    assert done.returncode == 2
    assert done.stderr == "tuneadvisor: doctor: --timeout must be more than 0 (got 0)\n"
    done = doctor("--format", "yaml")
    assert done.returncode == 2 and "invalid choice: 'yaml'" in done.stderr


def test_rendering() -> None:
    checks = [
        Check("nvml.library", "ok", "nvidia-ml-py 13.610.43"),
        Check("slurm.seff", "missing", "seff is not on PATH", "optional"),
    ]
    text = render_checks(checks, {"host": "gpu07"})
    assert text == (
        "tuneadvisor doctor: host gpu07\n"
        "\n"
        "ok              nvml.library  nvidia-ml-py 13.610.43\n"
        "missing         slurm.seff    seff is not on PATH\n"
        "                              -> optional\n"
        "\n"
        "1 ok, 1 missing\n"
    )
    assert checks_json(checks, {"host": "gpu07"})["checks"][1] == {
        "id": "slurm.seff", "status": "missing", "value": "seff is not on PATH", "fix": "optional"
    }  # fmt: skip


def test_a_terminal_gets_values_and_fixes_wrapped_under_their_column() -> None:
    value = "/usr/bin/scontrol: scontrol: fatal: Could not establish a configuration source"
    fix = "slurmctld does not answer from here: try a login node; if it fails there too, tell"
    checks = [Check("slurm.scontrol", "failed", value, fix)]
    lines = render_checks(checks, {"host": "login1"}, width=80).splitlines()[2:-2]
    column = len("not-applicable  slurm.scontrol  ")
    assert all(len(line) <= 80 for line in lines), lines
    assert lines[0].startswith("failed          slurm.scontrol  /usr/bin/scontrol:")
    assert all(line[:column].strip() == "" for line in lines[1:])  # under the value column
    fix_at = next(i for i, line in enumerate(lines) if "-> " in line)
    assert " ".join(line.strip() for line in lines[:fix_at]).endswith(value)  # words whole
    assert " ".join(line.strip() for line in lines[fix_at:]) == "-> " + fix
