"""The Slurm client against a PATH of small fake commands: error paths, argument lists,
the accounting poll and its bound, and the commands that read a job from Slurm
(`report --jobid`, `jobs`, `apply --submit`) on recorded 22.05 output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import BUSY_CORE_SEFF
from tuneadvisor.cli import main
from tuneadvisor.errors import InputError
from tuneadvisor.slurm.client import POLL_INTERVAL_S, SlurmClient, SlurmError, check_job_id

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "slurm-22.05"
STATES = FIXTURES / "14-sacct-states.json"
RECENT = FIXTURES / "16-sacct-recent.txt"
OOM_SCRIPT = (
    "#!/bin/bash\n#SBATCH --mem=100M\n#SBATCH --time=2\npython3 -c 'x = bytearray(3 << 27)'\n"
)


class FakeSlurm:
    """A folder of executable scripts standing in for Slurm's commands; PATH holds only it,
    so the real Slurm of the machine is never reached (the scripts call /bin tools by path)."""

    def __init__(self, folder: Path) -> None:
        self.bin = folder / "bin"
        self.bin.mkdir()
        self.folder = folder

    def add(self, name: str, body: str) -> None:
        path = self.bin / name
        path.write_text("#!/bin/sh\n" + body)
        path.chmod(0o755)

    def env(self) -> dict[str, str]:
        return {"PATH": str(self.bin), "LC_ALL": "C"}

    def client(self, **kwargs: object) -> SlurmClient:
        return SlurmClient(env=self.env(), **kwargs)  # type: ignore[arg-type]

    def records_args(self, name: str, output: str) -> Path:
        """The command writes each argument on its own line to a file and prints output."""
        log = self.folder / f"{name}.args"
        self.add(name, f'for a in "$@"; do printf "%s\\n" "$a" >> {log}; done\necho "{output}"\n')
        return log


@pytest.fixture
def fake(tmp_path: Path) -> FakeSlurm:
    return FakeSlurm(tmp_path)


def test_no_slurm_on_path_is_one_clear_line(fake: FakeSlurm) -> None:
    with pytest.raises(SlurmError) as caught:
        fake.client().submit(Path("job.sbatch"))
    message = caught.value.one_line()
    assert message.startswith("submitting job.sbatch: Slurm's sbatch is not on PATH")
    assert "\n" not in message


def test_slurm_says_why_verbatim(fake: FakeSlurm) -> None:
    said = "sbatch: error: Batch job submission failed: More processors requested than permitted"
    fake.add("sbatch", f'echo "{said}" >&2\nexit 1\n')
    with pytest.raises(SlurmError) as caught:
        fake.client().submit(Path("job.sbatch"))
    assert caught.value.one_line() == f"submitting job.sbatch: {said}"


def test_silent_failure_gives_the_exit_status(fake: FakeSlurm) -> None:
    fake.add("sacct", "exit 7\n")
    with pytest.raises(
        SlurmError, match="reading the accounting of job 5: sacct exited with status 7"
    ):
        fake.client().accounting("5")


def test_arguments_go_as_a_list_never_through_a_shell(fake: FakeSlurm) -> None:
    log = fake.records_args("sbatch", "42;ci")
    script = fake.folder / "my job; touch pwned $(id).sbatch"
    assert fake.client().submit(script, chdir="/a dir", options=["--hold"]) == "42"
    assert log.read_text().splitlines() == ["--parsable", "--chdir=/a dir", "--hold", str(script)]
    assert not (fake.folder / "pwned").exists()


def test_array_tasks_and_cancelling_some(fake: FakeSlurm) -> None:
    """squeue -r prints one line per task (22.05: "%K|%T"); scancel takes JOBID_[i,j]."""
    log = fake.records_args("squeue", "8|RUNNING\n9|PENDING\nN/A|PENDING")
    assert fake.client().array_tasks("77") == ((8, "RUNNING"), (9, "PENDING"), (None, "PENDING"))
    assert log.read_text().splitlines() == ["-h", "-r", "-j", "77", "-o", "%K|%T"]
    cancelled = fake.records_args("scancel", "")
    fake.client().cancel_tasks("77", [11, 9, 9])
    fake.client().cancel_tasks("77", [])  # nothing to cancel: scancel not run
    assert cancelled.read_text().splitlines() == ["77_[9,11]"]
    with pytest.raises(InputError, match="not a Slurm job id"):
        fake.client().cancel_tasks("77; rm -rf /", [1])


def test_sbatch_without_a_job_id(fake: FakeSlurm) -> None:
    fake.add("sbatch", 'echo "sbatch: warning: something"\n')
    with pytest.raises(SlurmError, match="printed no job id"):
        fake.client().submit(Path("j.sbatch"))


@pytest.mark.parametrize("good", ["12", "12_3", " 7 "])
def test_job_ids_accepted(good: str) -> None:
    assert check_job_id(good) == good.strip()


@pytest.mark.parametrize("bad", ["", "12; rm -rf ~", "-h", "12.batch", "$(id)", "1 2"])
def test_job_ids_refused_before_anything_runs(bad: str) -> None:
    with pytest.raises(InputError, match="not a Slurm job id"):
        check_job_id(bad)


def test_a_command_that_hangs_is_bounded(fake: FakeSlurm) -> None:
    fake.add("sacct", "exec /bin/sleep 30\n")
    with pytest.raises(SlurmError, match=r"sacct did not answer within 0\.2 s"):
        fake.client(timeout_s=0.2).accounting("5")


def _lagging_states(path: Path) -> None:
    """The recorded jobs as accounting first shows them: no partition, no end yet."""
    document = json.loads(STATES.read_text())
    for job in document["jobs"]:
        job["partition"] = ""
        job["time"]["end"] = 0
    path.write_text(json.dumps(document))


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def __call__(self) -> float:
        return self.now


def _sacct_after(fake: FakeSlurm, lagging_reads: int) -> None:
    """sacct --json shows the lagging record `lagging_reads` times, then the complete one."""
    lagging = fake.folder / "lagging.json"
    _lagging_states(lagging)
    count = fake.folder / "reads"
    fake.add(
        "sacct",
        f"echo x >> {count}\nn=$(/usr/bin/wc -l < {count})\n"
        f'if [ "$n" -le {lagging_reads} ]; then /bin/cat {lagging}; else /bin/cat {STATES}; fi\n',
    )


def test_accounting_is_polled_until_complete(fake: FakeSlurm) -> None:
    _sacct_after(fake, lagging_reads=3)
    clock = Clock()
    job = fake.client(sleep=clock.sleep, clock=clock).poll_accounting("4")
    assert job is not None and job.complete
    assert job.partition == "debug"
    assert clock.sleeps == [POLL_INTERVAL_S] * 3


def test_accounting_poll_is_bounded(fake: FakeSlurm) -> None:
    _sacct_after(fake, lagging_reads=10_000)
    clock = Clock()
    job = fake.client(sleep=clock.sleep, clock=clock).poll_accounting("4", bound_s=2.0)
    assert job is not None and not job.complete
    assert job.missing == ("partition empty", "end time unknown")
    assert sum(clock.sleeps) == pytest.approx(2.0)


def test_exit_code_of_a_failed_job_from_the_pipe_output(fake: FakeSlurm) -> None:
    # 14-sacct-states.json: job 9 exited 3, but 22.05's JSON says 0 (sacct -P says 3:0)
    fake.add("sacct", f'case "$*" in *--json*) /bin/cat {STATES} ;; *) echo "3:0" ;; esac\n')
    job = fake.client().accounting("9")
    assert job is not None and (job.state, job.exit_code, job.exit_signal) == ("FAILED", 3, 0)


def test_unknown_job_in_accounting(fake: FakeSlurm) -> None:
    fake.add("sacct", f"/bin/cat {STATES}\n")
    assert fake.client().accounting("99") is None


def test_forgotten_job_is_none(fake: FakeSlurm) -> None:
    fake.add("scontrol", 'echo "slurm_load_jobs error: Invalid job id specified" >&2\nexit 1\n')
    assert fake.client().show_job("99") is None


def test_controller_down_is_an_error(fake: FakeSlurm) -> None:
    said = "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"
    fake.add("scontrol", f'echo "{said}" >&2\nexit 1\n')
    with pytest.raises(SlurmError, match=r"asking slurmctld about job 5: slurm_load_jobs error"):
        fake.client().show_job("5")


def test_script_from_accounting_when_slurmctld_forgot(fake: FakeSlurm) -> None:
    # scontrol exits 0 with its error on stderr (recorded in 13-batch-script.txt)
    fake.add("scontrol", 'echo "job script retrieval failed: Invalid job id specified" >&2\n')
    stored = fake.folder / "stored.txt"
    stored.write_text("Batch Script for 4\n" + "-" * 80 + "\n" + OOM_SCRIPT + "\n")
    fake.add("sacct", f"/bin/cat {stored}\n")
    assert fake.client().batch_script("4") == OOM_SCRIPT


def test_seff_is_optional(fake: FakeSlurm) -> None:
    assert fake.client().seff("4") is None


def test_sstat_of_a_job_without_running_steps(fake: FakeSlurm) -> None:
    fake.add("sstat", 'echo "sstat: error: No steps running for job 4" >&2\n')
    assert fake.client().step_stats("4") is None


def test_sstat_of_a_running_job(fake: FakeSlurm) -> None:
    """The two sstat lines of 17-gpu-tres-admincomment.txt (22.05.8: no GPU TRES)."""
    recorded = (FIXTURES / "17-gpu-tres-admincomment.txt").read_text().splitlines()
    lines = [line for line in recorded if line.startswith(("17.batch|1|", "17.0|1|"))]
    assert len(lines) == 2
    (fake.folder / "sstat.txt").write_text("\n".join(lines) + "\n")
    fake.add("sstat", f"/bin/cat {fake.folder}/sstat.txt\n")
    steps = fake.client().step_stats("17")
    assert steps is not None and steps.mem_peak_mib == pytest.approx(95328 / 1024)
    assert [s.gpu_util_max_pct for s in steps.steps] == [None, None]


# ------------------------------------------------------------------ the commands, on fake Slurm

SINFO = (FIXTURES / "12-sinfo.txt").read_text().split("\n", 1)[1]


@pytest.fixture
def cluster(fake: FakeSlurm, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeSlurm:
    """Recorded jobs 2, 3, 4, 9, 10 (14-sacct-states.json), forgotten by slurmctld, their
    script kept in accounting; root's recent jobs (16-sacct-recent.txt); the partitions."""
    fake.add(
        "sacct",
        f'case "$*" in *-B*) /bin/cat {tmp_path}/stored.txt ;; *--json*) /bin/cat {STATES} ;;\n'
        f'  *" -u "*) /usr/bin/tail -n +2 {RECENT} ;; *ExitCode) echo 3:0 ;; esac\n',
    )
    (tmp_path / "stored.txt").write_text("Batch Script\n" + "-" * 80 + "\n" + OOM_SCRIPT)
    fake.add("scontrol", 'echo "slurm_load_jobs error: Invalid job id specified" >&2\nexit 1\n')
    fake.add("sinfo", f"echo '{SINFO.strip()}'\n")
    fake.add("squeue", "/bin/cat " + str(FIXTURES / "03-squeue.json") + "\n")
    for name, value in fake.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    return fake


def _report(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    assert main(["report", "--format", "json", *args]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def _finding(report: dict[str, object], finding_id: str) -> dict[str, object] | None:
    findings = report["findings"]
    assert isinstance(findings, list)
    return next((f for f in findings if f["id"] == finding_id), None)


@pytest.mark.parametrize(
    ("job_id", "finding", "absent"),
    [
        ("2", "job-timed-out", ("job-failed", "job-out-of-memory")),
        ("3", "job-out-of-memory", ("job-failed", "job-cancelled")),
        ("9", "job-failed", ("job-out-of-memory",)),
        ("10", "job-cancelled", ("job-failed", "job-out-of-memory")),
    ],
)
def test_report_jobid_gives_the_state_finding(
    cluster: FakeSlurm,
    capsys: pytest.CaptureFixture[str],
    job_id: str,
    finding: str,
    absent: tuple[str, ...],
) -> None:
    report = _report(capsys, "--jobid", job_id)
    assert _finding(report, finding) is not None
    for other in absent:
        assert _finding(report, other) is None


def test_out_of_memory_asks_for_more_within_the_node(
    cluster: FakeSlurm, capsys: pytest.CaptureFixture[str]
) -> None:
    found = _finding(_report(capsys, "--jobid", "3"), "job-out-of-memory")
    assert found is not None
    assert found["suggest"]["sbatch"] == {"mem": "1G"}  # type: ignore[index]


def test_completed_job_has_no_state_finding(
    cluster: FakeSlurm, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _report(capsys, "--jobid", "4")
    ids = {f["id"] for f in report["findings"]}  # type: ignore[attr-defined]
    assert not ids & {"job-timed-out", "job-out-of-memory", "job-failed", "job-cancelled"}


def test_report_jobid_uses_what_the_job_ran_with(
    cluster: FakeSlurm, capsys: pytest.CaptureFixture[str]
) -> None:
    """Job 6 of 11-scontrol-show-job.txt, held: sbatch's command line said -c 2,
    --mem-per-cpu=300M, -t 1-02:00:00, -p gpu; its script says otherwise."""
    shown = (FIXTURES / "11-scontrol-show-job.txt").read_text().splitlines()[3]
    assert shown.startswith("JobId=6 ")
    (cluster.folder / "shown.txt").write_text(shown + "\n")
    script = "#!/bin/bash\n#SBATCH -c 1\n#SBATCH --mem-per-cpu=100M\n#SBATCH -t 10\nsleep 1\n"
    (cluster.folder / "script.txt").write_text(script)
    cluster.add(
        "scontrol",
        f'case "$1" in show) /bin/cat {cluster.folder}/shown.txt ;;'
        f" write) /bin/cat {cluster.folder}/script.txt ;; esac\n",
    )
    report = _report(capsys, "--jobid", "6")
    facts = report["advice"]["facts"]  # type: ignore[index]
    assert facts["job.cpus_per_task"] == 2 and facts["job.partition"] == "gpu"
    assert facts["job.time_s"] == 26 * 3600 and facts["job.mem_per_cpu_mib"] == 300
    notes = report["advice"]["notes"]  # type: ignore[index]
    assert "job 6 is PENDING: its numbers are provisional" in notes
    assert any(
        n.startswith("the job ran with --cpus-per-task 2 where its script says 1") for n in notes
    )
    assert report["job"]["directives"]["cpus-per-task"] == "1"  # type: ignore[index]


def test_report_jobid_of_a_running_job_notes_sstat_gpu_use(
    cluster: FakeSlurm, capsys: pytest.CaptureFixture[str]
) -> None:
    """Job 6 of 11-scontrol-show-job.txt (one GPU) made RUNNING; sstat as Slurm 23.02+ with
    NVML prints it (CU Boulder's TRESUsageInMax string): notes, and no GPU facts."""
    shown = (FIXTURES / "11-scontrol-show-job.txt").read_text().splitlines()[3]
    running = shown.replace("JobState=PENDING Reason=JobHeldUser", "JobState=RUNNING Reason=None")
    (cluster.folder / "shown.txt").write_text(running + "\n")
    cluster.add("scontrol", f'case "$1" in show) /bin/cat {cluster.folder}/shown.txt ;; esac\n')
    tres = "cpu=00:56:24,gres/gpumem=38888M,gres/gpuutil=100,mem=10372780K"
    cluster.add("sstat", f"echo '6.batch|1|00:56:24|10372780K|{tres}|{tres}'\n")
    report = _report(capsys, "--jobid", "6")
    notes = report["advice"]["notes"]  # type: ignore[index]
    assert "peak memory so far: 10130 MiB (sstat)" in notes
    [gpu] = [n for n in notes if n.startswith("GPU so far: from Slurm TRES")]
    assert "1 GPU; utilization peak 100 % (per GPU, step batch)" in gpu
    assert "memory peak 38888 MiB" in gpu
    facts = report["advice"]["facts"]  # type: ignore[index]
    assert not any(name.startswith("gpu.") for name in facts)


def test_report_jobid_without_slurm(
    fake: FakeSlurm, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(fake.bin))
    assert main(["report", "--jobid", "3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "tuneadvisor: asking slurmctld about job 3: Slurm's scontrol is not on PATH"
    )
    assert err.count("\n") == 1


def test_report_unknown_job(cluster: FakeSlurm, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--jobid", "99"]) == 2
    assert "neither slurmctld nor accounting knows it" in capsys.readouterr().err


def test_jobs_lists_state_efficiency_and_top_finding(
    cluster: FakeSlurm, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["jobs", "--user", "root", "--format", "json"]) == 0
    rows = {row["job_id"]: row for row in json.loads(capsys.readouterr().out)}
    assert list(rows) == ["40", "36", "34", "29", "25"]  # newest first
    assert rows["36"]["state"] == "FAILED" and rows["36"]["top_finding"] == "job-out-of-memory"
    assert rows["36"]["mem_efficiency_pct"] == pytest.approx(321136 / 1024, abs=0.01)
    assert rows["34"]["top_finding"] == "job-timed-out"
    assert rows["29"]["top_finding"] == "job-failed"
    assert rows["40"]["top_finding"] == "job-cancelled"
    assert rows["25"]["state"] == "COMPLETED" and rows["25"]["top_finding"] is None
    assert rows["25"]["cpu_efficiency_pct"] == pytest.approx(50.0)  # seff: 5 s of 10 s
    assert main(["jobs", "--user", "root", "--limit", "2"]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0].split() == ["JOBID", "NAME", "STATE", "ELAPSED", "CPU", "MEM",
                                            "GPU", "TOP", "FINDING"]  # fmt: skip
    assert "job-cancelled" in text and "job-out-of-memory" in text
    assert "job-timed-out" not in text


def test_jobs_takes_the_state_of_active_jobs_from_the_queue(
    cluster: FakeSlurm, capsys: pytest.CaptureFixture[str]
) -> None:
    # accounting still says PENDING; squeue (03-squeue.json) has job 1 RUNNING
    pending = "JobID|JobName|User|State|ElapsedRaw\n1|t|root|PENDING|0\n"
    (cluster.folder / "pending.txt").write_text(pending)
    cluster.add("sacct", f"/bin/cat {cluster.folder}/pending.txt\n")
    assert main(["jobs", "--user", "root", "--format", "json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert (row["job_id"], row["state"]) == ("1", "RUNNING")


def _seff_tutorial(folder: Path) -> Path:
    """One core busy, 316 MB of 8 GB: more cores (capped by the node), less memory."""
    path = folder / "seff.txt"
    path.write_text(BUSY_CORE_SEFF.read_text())
    return path


def test_apply_submit_keeps_within_the_node_and_submits(
    cluster: FakeSlurm, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = cluster.records_args("sbatch", "77")
    job = tmp_path / "burn.sbatch"
    job.write_text("#!/bin/bash\n#SBATCH --cpus-per-task=1\n#SBATCH --mem=8G\npython3 burn.py\n")
    args = ["apply", "--job", str(job), "--seff", str(_seff_tutorial(tmp_path)), "--submit"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "submitted batch job 77" in out
    tuned = tmp_path / "burn.tuned.sbatch"
    assert log.read_text().splitlines() == ["--parsable", str(tuned)]
    text = tuned.read_text()
    assert "#SBATCH --cpus-per-task=2\n" in text  # 4 suggested, the recorded node has 2
    assert "#SBATCH --mem=1G\n" in text


def test_apply_jobid_writes_here_and_submits_where_the_job_ran(
    cluster: FakeSlurm, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = cluster.records_args("sbatch", "78")
    assert main(["apply", "--jobid", "3", "--submit"]) == 0
    tuned = tmp_path / "job-3.tuned.sbatch"
    assert "#SBATCH --mem=1G\n" in tuned.read_text()
    assert log.read_text().splitlines() == ["--parsable", f"--chdir={tmp_path}", f"./{tuned.name}"]
    assert "submitted batch job 78" in capsys.readouterr().out


def test_apply_submit_refused_by_slurm(
    cluster: FakeSlurm, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cluster.add("sbatch", 'echo "sbatch: error: invalid partition specified: gpu" >&2\nexit 1\n')
    assert main(["apply", "--jobid", "3", "--submit"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "tuneadvisor: submitting job-3.tuned.sbatch: "
        "sbatch: error: invalid partition specified: gpu"
    )


def test_apply_unchanged_is_not_submitted(
    cluster: FakeSlurm, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = cluster.records_args("sbatch", "79")
    job = tmp_path / "fine.sbatch"
    job.write_text("#!/bin/bash\n#SBATCH --mem=1G\necho hi\n")
    assert main(["apply", "--job", str(job), "--submit"]) == 0
    assert "not submitted" in capsys.readouterr().out
    assert not log.exists()
