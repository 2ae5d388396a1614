"""`doctor`'s Slurm lines: the commands on a PATH of small fake ones (the machine's own Slurm
is never reached), the job from the environment, and the cgroup as /proc/self/cgroup says it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tuneadvisor.slurm.cgroup import CgroupPlace, parse_cgroup
from tuneadvisor.slurm.client import SlurmClient
from tuneadvisor.workspace.site_checks.cluster import slurm_checks
from tuneadvisor.workspace.site_checks.model import Check

# What slurmd's cgroup plugins write (Slurm 22.05 and 23.02), and a plain login shell.
V2_STEP = "0::/system.slice/slurmstepd.scope/job_4711/step_0/user/task_0\n"
V2_LOGIN = "0::/user.slice/user-1000.slice/session-3.scope\n"
V1_STEP = (
    "12:pids:/user.slice/user-1000.slice\n"
    "10:devices:/slurm/uid_1000/job_4711/step_batch/task_0\n"
    "4:memory:/slurm/uid_1000/job_4711/step_batch/task_0\n"
    "1:name=systemd:/user.slice/user-1000.slice/session-3.scope\n"
    "0::/\n"
)
V2_ADOPTED = "0::/system.slice/slurmstepd.scope/job_4711/step_extern/user\n"
LOCAL_CONFIGLESS = (
    "{cmd}: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host\n"
    "{cmd}: error: fetch_config: DNS SRV lookup failed\n"
    "{cmd}: error: _establish_config_source: failed to fetch config\n"
    "{cmd}: fatal: Could not establish a configuration source\n"
)


class FakeSlurm:
    def __init__(self, folder: Path) -> None:
        self.bin = folder / "bin"
        self.bin.mkdir()

    def add(self, name: str, body: str) -> None:
        path = self.bin / name
        path.write_text("#!/bin/sh\n" + body)
        path.chmod(0o755)

    def client(self, timeout_s: float = 10.0) -> SlurmClient:
        return SlurmClient(env={"PATH": str(self.bin), "LC_ALL": "C"}, timeout_s=timeout_s)

    def healthy(self) -> None:
        self.add(
            "scontrol",
            'case "$1" in --version) echo "slurm 23.02.7";;\n'
            'ping) echo "Slurmctld(primary) at head01 is UP";;\nesac\n',
        )
        self.add("sacct", 'printf "4702\\n4711\\n"\n')


@pytest.fixture
def fake(tmp_path: Path) -> FakeSlurm:
    return FakeSlurm(tmp_path)


def checked(fake: FakeSlurm, env: dict[str, str] | None = None, cgroup: str | None = V2_LOGIN,
            timeout_s: float = 10.0) -> dict[str, Check]:  # fmt: skip
    return {c.id: c for c in slurm_checks(fake.client(timeout_s), env or {}, cgroup)}


def test_a_login_node_whose_slurm_answers(fake: FakeSlurm) -> None:
    fake.healthy()
    checks = checked(fake)
    assert checks["slurm.scontrol"] == Check(
        "slurm.scontrol",
        "ok",
        f"slurm 23.02.7 at {fake.bin}/scontrol; Slurmctld(primary) at head01 is UP",
    )
    assert (
        checks["slurm.sacct"].value == f"{fake.bin}/sacct answers (2 of your jobs in the last hour)"
    )
    assert checks["slurm.seff"].status == "missing"
    assert checks["slurm.seff"].fix is not None and "optional" in checks["slurm.seff"].fix
    assert checks["slurm.job"].status == "not-applicable"
    assert checks["slurm.cgroup"].status == "not-applicable"
    assert "cgroup v2: /user.slice/user-1000.slice/session-3.scope" in checks["slurm.cgroup"].value


def test_no_slurm_on_path(fake: FakeSlurm) -> None:
    checks = checked(fake)
    for name in ("slurm.scontrol", "slurm.sacct", "slurm.seff"):
        assert checks[name].status == "missing"
        assert checks[name].value.endswith("is not on PATH")
    assert (
        checks["slurm.scontrol"].fix is not None and "module load" in checks["slurm.scontrol"].fix
    )


def test_a_node_without_slurm_configuration_says_slurms_reason(fake: FakeSlurm) -> None:
    """What this machine's own Slurm prints (four lines): the fatal one is the line shown."""
    for cmd in ("scontrol", "sacct"):
        said = LOCAL_CONFIGLESS.format(cmd=cmd)
        fake.add(cmd, f"printf '{said}' >&2\nexit 1\n")
    checks = checked(fake)
    for cmd in ("scontrol", "sacct"):
        check = checks[f"slurm.{cmd}"]
        assert check.status == "failed"
        assert (
            check.value
            == f"{fake.bin}/{cmd}: {cmd}: fatal: Could not establish a configuration source"
        )
        # no configuration: slurmctld was never asked, so it is not said not to answer
        assert check.fix and "slurm.conf not found" in check.fix
        assert "does not answer" not in check.fix


def test_slurmctld_down(fake: FakeSlurm) -> None:
    fake.healthy()
    fake.add(
        "scontrol",
        'case "$1" in --version) echo "slurm 23.02.7";;\n'
        'ping) echo "Slurmctld(primary) at head01 is DOWN"; exit 1;;\nesac\n',
    )
    check = checked(fake)["slurm.scontrol"]
    assert check.status == "failed"
    assert check.value.endswith("Slurmctld(primary) at head01 is DOWN")
    assert check.fix is not None and "slurmctld does not answer" in check.fix


def test_accounting_disabled(fake: FakeSlurm) -> None:
    fake.healthy()
    fake.add("sacct", 'echo "sacct: error: Slurm accounting storage is disabled" >&2\nexit 1\n')
    check = checked(fake)["slurm.sacct"]
    assert check.status == "failed"
    assert check.value.endswith("sacct: error: Slurm accounting storage is disabled")
    assert check.fix is not None and "slurmdbd" in check.fix


def test_a_hanging_slurm_is_a_failed_line_not_a_hung_doctor(fake: FakeSlurm) -> None:
    fake.healthy()
    fake.add("sacct", "exec /bin/sleep 30\n")
    start = time.monotonic()
    check = checked(fake, timeout_s=0.5)["slurm.sacct"]
    assert time.monotonic() - start < 10
    assert check.status == "failed"
    assert check.value.endswith("sacct did not answer within 0.5 s")


def test_in_a_job_step(fake: FakeSlurm) -> None:
    fake.healthy()
    env = {"SLURM_JOB_ID": "4711", "SLURM_STEP_ID": "0", "SLURMD_NODENAME": "gpu07",
           "SLURM_JOB_GPUS": "2,3"}  # fmt: skip
    checks = checked(fake, env, V2_STEP)
    assert checks["slurm.job"] == Check("slurm.job", "ok", "job 4711, step 0, on gpu07, GPUs 2,3")
    assert checks["slurm.cgroup"] == Check(
        "slurm.cgroup",
        "ok",
        "job 4711, step 0 (cgroup v2: /system.slice/slurmstepd.scope/job_4711/step_0/user/task_0)",
    )


def test_a_job_without_gpus_says_so(fake: FakeSlurm) -> None:
    check = checked(fake, {"SLURM_JOB_ID": "4711"}, V2_STEP)["slurm.job"]
    assert check.value == "job 4711, no GPU allocated (SLURM_JOB_GPUS unset)"


def test_an_salloc_shell_on_the_login_node_is_outside_the_job(fake: FakeSlurm) -> None:
    check = checked(fake, {"SLURM_JOB_ID": "4711"}, V2_LOGIN)["slurm.cgroup"]
    assert check.status == "failed"
    assert check.value.startswith("this shell is outside job 4711's cgroup")
    assert check.fix is not None
    assert "srun --jobid 4711 --overlap --pty python -m tuneadvisor doctor" in check.fix


def test_a_cgroup_of_another_job(fake: FakeSlurm) -> None:
    check = checked(fake, {"SLURM_JOB_ID": "5000"}, V2_STEP)["slurm.cgroup"]
    assert check.status == "failed"
    assert "the cgroup is job 4711's but SLURM_JOB_ID says 5000" in check.value


def test_an_ssh_shell_adopted_into_a_job(fake: FakeSlurm) -> None:
    checks = checked(fake, {}, V2_ADOPTED)
    assert checks["slurm.job"].status == "ok"
    assert checks["slurm.job"].value.startswith("job 4711 (from the cgroup; SLURM_JOB_ID is unset")
    assert checks["slurm.cgroup"].value.startswith("job 4711, step extern (cgroup v2:")


def test_no_cgroup_file(fake: FakeSlurm) -> None:
    assert checked(fake, {}, None)["slurm.cgroup"].status == "not-applicable"


@pytest.mark.parametrize(
    ("text", "place"),
    [
        (V2_STEP, CgroupPlace(2, V2_STEP.strip()[3:], "4711", "0")),
        (V1_STEP, CgroupPlace(1, "/slurm/uid_1000/job_4711/step_batch/task_0", "4711", "batch")),
        (V2_LOGIN, CgroupPlace(2, V2_LOGIN.strip()[3:], None, None)),
        ("4:memory:/process_api/d252\n0::/\n", CgroupPlace(1, "/process_api/d252", None, None)),
        ("", None),
        ("not a cgroup file", None),
    ],
)
def test_parse_cgroup(text: str, place: CgroupPlace | None) -> None:
    assert parse_cgroup(text) == place
