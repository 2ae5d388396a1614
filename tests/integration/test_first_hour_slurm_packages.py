"""`scripts/slurm-multinode.sh` on a machine without Slurm's packages (issue 24, point 5): it
exited 1 and printed nothing, because `dpkg-query -W` exits 1 for a package it does not know
and, asked for all at once in an assignment under pipefail, ended the script before its
"installing" line. Each package is now asked on its own, as scripts/slurm-local.sh does.

"A machine without the packages" is the real dpkg-query reading an empty package database
(``DPKG_ADMINDIR``): nothing is uninstalled, and the running clusters are not touched (the
start is pointed at a SLURM_ROOT of its own, and apt-get is a stand-in that fails)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "slurm-multinode.sh"
ALL = ["munge", "slurmctld", "slurmd", "slurm-client", "iproute2", "util-linux",
       "slurmdbd", "mariadb-server", "libslurm-perl", "libslurmdb-perl"]  # fmt: skip

pytestmark = pytest.mark.skipif(
    shutil.which("dpkg-query") is None, reason="needs dpkg-query (Debian's package database)"
)


@pytest.fixture
def empty_dpkg(tmp_path: Path) -> Path:
    """A package database that knows nothing: a machine where nothing is installed yet."""
    admin = tmp_path / "dpkg"
    (admin / "info").mkdir(parents=True)
    (admin / "updates").mkdir()
    (admin / "status").write_text("")
    return admin


def _script(tmp_path: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("NODES", "WITH_DBD", "SLURM_ROOT")}
    return subprocess.run(
        ["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=60, check=False,
        env={**base, "SLURM_ROOT": str(tmp_path / "root"), **env},
    )  # fmt: skip


def test_packages_lists_every_missing_one(tmp_path: Path, empty_dpkg: Path) -> None:
    done = _script(tmp_path, "packages", env={"DPKG_ADMINDIR": str(empty_dpkg)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["missing:", *ALL]
    without_dbd = _script(
        tmp_path, "packages", env={"DPKG_ADMINDIR": str(empty_dpkg), "WITH_DBD": "0"}
    )
    assert without_dbd.stdout.split() == ["missing:", *ALL[:6]]


def test_packages_asks_each_on_its_own(tmp_path: Path, empty_dpkg: Path) -> None:
    """One package known and installed among unknown ones: only the unknown are missing."""
    (empty_dpkg / "status").write_text(
        "Package: munge\nStatus: install ok installed\nPriority: optional\nSection: admin\n"
        "Maintainer: x <x@example.org>\nArchitecture: amd64\nVersion: 0.5.15-2\n"
        "Description: stand-in\n\n"
    )
    done = _script(tmp_path, "packages", env={"DPKG_ADMINDIR": str(empty_dpkg)})
    assert done.stdout.split() == ["missing:", *ALL[1:]], done.stderr


@pytest.mark.skipif(
    not Path("/usr/sbin/policy-rc.d").exists(),
    reason="the start would write /usr/sbin/policy-rc.d here; only run where it exists",
)
def test_a_start_without_the_packages_says_what_it_installs(
    tmp_path: Path, empty_dpkg: Path
) -> None:
    """The start goes on to its "installing" line and to apt-get (a stand-in that fails,
    logging what it was asked), then stops with a line saying so: never silently."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    asked = tmp_path / "apt-get.args"
    stub = bin_dir / "apt-get"
    stub.write_text(f'#!/bin/sh\necho "$@" >> {asked}\nexit 100\n')
    stub.chmod(0o755)
    env = {"DPKG_ADMINDIR": str(empty_dpkg), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    done = _script(tmp_path, env=env)
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[0].endswith("installing: " + " ".join(ALL)), done.stdout
    assert "ERROR: apt-get failed, see" in lines[-1]
    calls = asked.read_text().splitlines()
    assert calls[0].split()[-len(ALL) :] == ALL and "install" in calls[0].split()
