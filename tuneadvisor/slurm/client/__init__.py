"""Run Slurm's own commands and read what they print.

Every command runs from an argument list (never a shell string), with the caller's
environment (``env``; tests give a PATH of small fake commands), and what it prints is read
with a file's bounds (``bounded_run``: 64 MiB of stdout at most, a deadline). What Slurm
says on failure reaches the user verbatim, after what tuneadvisor was doing, as one line
(``SlurmError`` is an ``InputError``: exit status 2). A command missing from PATH is one
clear line too.

Accounting lags a job's end by seconds (the record first has no partition, no requested
memory, or a state still RUNNING): ``poll_accounting`` reads ``sacct`` until the record is
complete, for at most ``bound_s``, and returns the last read either way.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from tuneadvisor.errors import InputError
from tuneadvisor.files import checked_text
from tuneadvisor.numbers import is_ascii_digits
from tuneadvisor.slurm.accounting.sacct.json_format import parse_sacct_json
from tuneadvisor.slurm.accounting.sacct.pipe_format import parse_sacct_pipe
from tuneadvisor.slurm.accounting.sacct.records import SacctError, SacctJob
from tuneadvisor.slurm.accounting.seff import SeffError, SeffReport, parse_seff
from tuneadvisor.slurm.client.bounded_run import OutputTooLarge, run_bounded
from tuneadvisor.slurm.client.listpids import ListpidsError, StepPid, parse_listpids
from tuneadvisor.slurm.client.placement import (
    JobArrayError,
    Placement,
    parse_hostnames,
    parse_placement,
    simple_names,
)
from tuneadvisor.slurm.client.scontrol import JobInfo, ScontrolError, parse_job
from tuneadvisor.slurm.client.sinfo import SINFO_FORMAT, PartitionShape, SinfoError, parse_sinfo
from tuneadvisor.slurm.client.squeue import QueuedJob, SqueueError, parse_squeue_json
from tuneadvisor.slurm.client.will_run import WillRun, WillRunError, parse_will_run

_Parsed = TypeVar("_Parsed")

_JOB_ID = re.compile(r"[0-9]+(?:_[0-9]+)?")
_SUBMITTED = re.compile(r"([0-9]+)(?:;\S+)?")
_FORGOTTEN = ("Invalid job id", "No steps running", "does not exist", "not found")
_NO_STEPS_HERE = ("There are no steps", "does not exist", "Invalid job id")
# TRESUsageIn*: the steps' gres/gpuutil and gres/gpumem where Slurm gathers them (23.02+).
SSTAT_COLUMNS = ("JobID", "NTasks", "AveCPU", "MaxRSS", "TRESUsageInAve", "TRESUsageInMax")
# AdminComment last: free text (jobstats' summary, or a site's words that may hold a '|').
RECENT_COLUMNS = ("JobID", "JobName", "User", "Partition", "State", "ExitCode", "ElapsedRaw",
                  "TimelimitRaw", "TotalCPU", "AllocCPUS", "ReqCPUS", "AllocTRES", "ReqMem",
                  "MaxRSS", "NTasks", "End", "TRESUsageInAve", "TRESUsageInMax",
                  "AdminComment")  # fmt: skip
POLL_INTERVAL_S = 0.25
ACCOUNTING_BOUND_S = 30.0


class SlurmError(InputError):
    """A Slurm command failed (or is missing): what tuneadvisor was doing, then Slurm's words."""

    def __init__(self, doing: str, message: str) -> None:
        self.doing = doing
        self.said = message  # Slurm's words (or why the command did not run)
        super().__init__(None, f"{doing}: {message}")


def check_job_id(text: str) -> str:
    """``123`` or an array task ``123_4``; anything else is refused before any command runs."""
    value = text.strip()
    if not _JOB_ID.fullmatch(value):
        raise InputError(None, f"--jobid {text!r}: not a Slurm job id (like 1234 or 1234_5)")
    return value


@dataclass
class SlurmClient:
    env: Mapping[str, str] | None = None  # default: this process's environment
    timeout_s: float = 120.0  # per command
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    _found: dict[str, str | None] = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------------ running commands

    def _environ(self) -> Mapping[str, str]:
        return os.environ if self.env is None else self.env

    def which(self, command: str) -> str | None:
        if command not in self._found:
            self._found[command] = shutil.which(command, path=self._environ().get("PATH"))
        return self._found[command]

    def _run(
        self, doing: str, command: str, args: Sequence[str]
    ) -> subprocess.CompletedProcess[str]:
        path = self.which(command)
        if path is None:
            raise SlurmError(
                doing,
                f"Slurm's {command} is not on PATH (run this on a login node of the cluster, "
                "or load the Slurm module first)",
            )
        try:
            done = run_bounded([path, *args], env=self._environ(), timeout_s=self.timeout_s)
        except subprocess.TimeoutExpired:
            raise SlurmError(
                doing, f"{command} did not answer within {self.timeout_s:g} s"
            ) from None
        except OutputTooLarge as exc:
            raise SlurmError(doing, f"{command} {exc}") from None
        except OSError as exc:
            raise SlurmError(doing, f"cannot run {path}: {exc.strerror or exc}") from None
        try:  # what a file of this output would pass too (numbers of thousands of digits)
            checked_text(done.stdout, None, f"{command}'s output")
        except InputError as exc:
            raise SlurmError(doing, exc.problem) from None
        return done

    def _output(self, doing: str, command: str, args: Sequence[str]) -> str:
        """stdout of a command that must succeed; its stderr is the error otherwise."""
        done = self._run(doing, command, args)
        if done.returncode != 0:
            raise SlurmError(doing, _said(done, command))
        return done.stdout

    # ------------------------------------------------------------------ jobs

    def submit(self, script: Path, *, chdir: str | None = None, options: Sequence[str] = ()) -> str:
        """``sbatch --parsable [--chdir DIR] [OPTIONS] SCRIPT`` -> the new job's id."""
        name = str(script) if script.is_absolute() else f"./{script}"  # never read as an option
        args = ["--parsable", *([f"--chdir={chdir}"] if chdir else []), *options, name]
        doing = f"submitting {script}"
        out = self._output(doing, "sbatch", args).strip()
        match = _SUBMITTED.fullmatch(out.splitlines()[-1].strip() if out else "")
        if match is None:
            raise SlurmError(doing, f"sbatch printed no job id: {out!r}")
        return match.group(1)

    def test_only(self, script: Path, *, chdir: str | None = None) -> str:
        """``sbatch --test-only``: when and where the scheduler would start ``script``
        ("starts 2026-12-06T06:38:27 on vm"; "" when sbatch did not say);
        a script sbatch refuses is a SlurmError with its words."""
        said = self.will_run(script, chdir=chdir)
        return f"starts {said.start.isoformat()} on {said.nodes}" if said is not None else ""

    def will_run(self, script: Path, *, chdir: str | None = None) -> WillRun | None:
        """``sbatch --test-only SCRIPT`` read: when the scheduler would start it (None where
        sbatch said nothing of it); a script sbatch refuses, or a start it gives in a form
        not read, is a SlurmError with its words. The time is asked for in ISO form
        (SLURM_TIME_FORMAT=standard), whatever the user's own setting."""
        name = str(script) if script.is_absolute() else f"./{script}"  # never read as an option
        args = ["--test-only", *([f"--chdir={chdir}"] if chdir else []), name]
        doing = f"asking when {script} would start"
        iso = replace(self, env={**self._environ(), "SLURM_TIME_FORMAT": "standard"})
        done = iso._run(doing, "sbatch", args)
        if done.returncode != 0:
            raise SlurmError(doing, _said(done, "sbatch"))
        try:
            return parse_will_run(done.stderr)
        except WillRunError as exc:
            raise SlurmError(doing, str(exc)) from None

    def cancel(self, job_id: str) -> None:
        """``scancel JOBID`` (an array: its tasks left)."""
        self._output(f"cancelling job {check_job_id(job_id)}", "scancel", [job_id])

    def array_tasks(self, job_id: str) -> tuple[tuple[int | None, str], ...]:
        """Each task of array ``job_id`` still in the queue: its task id (None where squeue
        printed none) and its state (``squeue -r -o %K|%T``); the tasks that ended are not
        listed."""
        doing = f"reading the tasks of array {check_job_id(job_id)}"
        done = self._run(doing, "squeue", ["-h", "-r", "-j", job_id, "-o", "%K|%T"])
        if done.returncode != 0:
            if "invalid job id" in done.stderr.lower():  # every task ended and was forgotten
                return ()
            raise SlurmError(doing, _said(done, "squeue"))
        tasks: list[tuple[int | None, str]] = []
        for line in done.stdout.splitlines():
            task, _, state = line.strip().partition("|")
            if line.strip():
                ok = is_ascii_digits(task) and len(task) <= 9
                tasks.append((int(task) if ok else None, state.strip()))
        return tuple(tasks)

    def cancel_tasks(self, job_id: str, tasks: Sequence[int]) -> None:
        """``scancel JOBID_[i,j,...]``: those tasks of an array, pending or running."""
        if not tasks:
            return
        listed = ",".join(str(int(t)) for t in sorted(set(tasks)))
        self._output(
            f"cancelling tasks {listed} of array {check_job_id(job_id)}",
            "scancel",
            [f"{job_id}_[{listed}]"],
        )

    def show_job(self, job_id: str) -> JobInfo | None:
        """``scontrol show job -o ID``; None once slurmctld has forgotten the job (MinJobAge)."""
        text = self._job_record(job_id)
        return None if text is None else self._parsed(job_id, parse_job, text)

    def placement(self, job_id: str) -> Placement | None:
        """The same record read for its node list; None when slurmctld does not know the job
        (never submitted, or ended more than MinJobAge ago)."""
        text = self._job_record(job_id)
        return None if text is None else self._parsed(job_id, parse_placement, text)

    def _job_record(self, job_id: str) -> str | None:
        done = self._run(_asking(job_id), "scontrol", ["show", "job", "-o", job_id])
        if done.returncode != 0:
            if any(word in done.stderr for word in _FORGOTTEN):
                return None
            raise SlurmError(_asking(job_id), _said(done, "scontrol"))
        return done.stdout

    @staticmethod
    def _parsed(job_id: str, parse: Callable[[str], _Parsed], text: str) -> _Parsed:
        try:
            return parse(text)
        except JobArrayError:
            raise  # a wrong id of the user's, not Slurm failing: the caller says so
        except ScontrolError as exc:
            raise SlurmError(_asking(job_id), f"unexpected scontrol output: {exc}") from None

    def hostnames(self, node_list: str) -> tuple[str, ...]:
        """A compressed host list expanded (``gpu[01-02]`` -> gpu01, gpu02) by Slurm."""
        names = simple_names(node_list)
        if names is not None:
            return names
        doing = f"expanding the node list {node_list}"
        return parse_hostnames(self._output(doing, "scontrol", ["show", "hostnames", node_list]))

    def job_pids(self, job_id: str) -> tuple[StepPid, ...]:
        """``scontrol listpids ID``: the job's processes on this node (from its slurmstepds,
        no slurmctld call); empty when the job has no step here."""
        doing = f"listing the processes of job {job_id} on this node"
        done = self._run(doing, "scontrol", ["listpids", job_id])
        if done.returncode != 0:
            if any(word in done.stderr for word in _NO_STEPS_HERE):
                return ()
            raise SlurmError(doing, _said(done, "scontrol"))
        try:
            return parse_listpids(done.stdout)
        except ListpidsError as exc:
            raise SlurmError(doing, f"unexpected scontrol output: {exc}") from None

    def overlap_step(
        self, job_id: str, nodes: int, command: Sequence[str], name: str
    ) -> subprocess.Popen[str]:
        """``srun --overlap --jobid ID --nodes=N --ntasks-per-node=1 --label COMMAND``: one
        task on each node of a running job, beside its steps (sharing their CPUs, memory and
        GPUs). Its stdout and stderr are pipes; every line starts with ``TASK: `` (--label,
        and a line longer than 1024 bytes arrives in labelled pieces). Its own session, so a
        Ctrl-C on the terminal does not reach srun: the caller ends it (``terminate``), then
        cancels what is left of the step by its NAME (``cancel_steps_named``)."""
        doing = f"starting a sampler on the nodes of job {job_id}"
        path = self.which("srun")
        if path is None:
            raise SlurmError(doing, "Slurm's srun is not on PATH")
        args = [
            path,
            "--overlap",
            f"--jobid={job_id}",
            f"--nodes={nodes}",
            f"--ntasks={nodes}",
            "--ntasks-per-node=1",
            "--label",
            "--mpi=none",  # no PMI set-up for a sampler
            "--quiet",
            f"--job-name={name}",
            *command,
        ]
        try:
            return subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                errors="replace",
                env=dict(self._environ()),
                start_new_session=True,
            )
        except OSError as exc:
            raise SlurmError(doing, f"cannot run {path}: {exc.strerror or exc}") from None

    def cancel_steps_named(self, job_id: str, name: str) -> tuple[str, ...]:
        """Cancel the job's steps called NAME that are still listed, and return their ids.
        An srun ended while it launched its tasks leaves them running in the job: the
        signal it forwards reaches no task yet, and a killed srun forwards none. (squeue's
        --name filters jobs, not steps, so the names are compared here.)"""
        doing = f"listing the steps of job {job_id}"
        listed = self._run(
            doing, "squeue", ["--noheader", "--steps", f"--jobs={job_id}", "--format=%i|%j"]
        )
        if listed.returncode != 0:
            if any(word in listed.stderr for word in _NO_STEPS_HERE):
                return ()  # the job ended: so did its steps
            raise SlurmError(doing, _said(listed, "squeue"))
        steps = tuple(
            step
            for step, _, step_name in (
                line.strip().partition("|") for line in listed.stdout.splitlines()
            )
            if step_name == name and step.startswith(f"{job_id}.")
        )
        for step in steps:
            done = self._run(f"cancelling step {step}", "scancel", [step])
            if done.returncode != 0 and not any(w in done.stderr for w in _NO_STEPS_HERE):
                raise SlurmError(f"cancelling step {step}", _said(done, "scancel"))
        return steps

    def batch_script(self, job_id: str) -> str | None:
        """The script the job ran: from slurmctld while it knows the job, else from
        accounting (when the site stores scripts: AccountingStoreFlags=job_script)."""
        done = self._run(
            f"reading the script of job {job_id}",
            "scontrol",
            ["write", "batch_script", job_id, "-"],
        )
        if done.returncode == 0 and done.stdout.strip():
            return done.stdout  # scontrol exits 0 even when it printed an error instead
        stored = self._run(f"reading the script of job {job_id}", "sacct", ["-B", "-j", job_id])
        return _stored_script(stored.stdout) if stored.returncode == 0 else None

    def queue(self, user: str | None = None) -> tuple[QueuedJob, ...]:
        """``squeue --json``, filtered here (22.05 ignores squeue's filters in JSON mode)."""
        doing = "reading the queue"
        try:
            jobs = parse_squeue_json(self._output(doing, "squeue", ["--json"]))
        except SqueueError as exc:
            raise SlurmError(doing, f"unexpected squeue output: {exc}") from None
        return tuple(j for j in jobs if user is None or j.user == user)

    def accounting(self, job_id: str) -> SacctJob | None:
        """One read of ``sacct -j ID --json``; None when accounting has no such job (yet)."""
        doing = f"reading the accounting of job {job_id}"
        jobs = self._sacct(doing, ["-j", job_id])
        job = next((j for j in jobs if j.job_id == job_id), None)
        if job is not None and job.state == "FAILED" and not job.exit_code and not job.exit_signal:
            # 22.05's JSON says exit code 0 for a script that exited 3; sacct -P does not.
            said = self._output(doing, "sacct", ["-j", job_id, "-X", "-n", "-P", "-o", "ExitCode"])
            code, _, signal = said.strip().partition(":")
            if is_ascii_digits(code) and is_ascii_digits(signal):
                job = replace(job, exit_code=int(code), exit_signal=int(signal))
        return job

    def recent_jobs(self, user: str, since: str = "now-7days") -> tuple[SacctJob, ...]:
        """``sacct -P -u USER -S SINCE``: the user's jobs, oldest first. Not --json: 22.05
        ignores -u there, and on a busy cluster that is everyone's jobs."""
        doing = f"reading the accounting of {user}'s jobs"
        args = ["-P", "-u", user, "-S", since, "-o", ",".join(RECENT_COLUMNS)]
        try:
            return parse_sacct_pipe(self._output(doing, "sacct", args))
        except SacctError as exc:
            raise SlurmError(doing, f"unexpected sacct output: {exc}") from None

    def _sacct(self, doing: str, args: Sequence[str]) -> tuple[SacctJob, ...]:
        try:
            return parse_sacct_json(self._output(doing, "sacct", ["--json", *args]))
        except SacctError as exc:
            raise SlurmError(doing, f"unexpected sacct output: {exc}") from None

    def poll_accounting(self, job_id: str, bound_s: float = ACCOUNTING_BOUND_S) -> SacctJob | None:
        """The record of a job that has ended, read until complete or for ``bound_s`` at
        most (accounting lags the end by seconds); the last read either way."""
        deadline = self.clock() + bound_s
        while True:
            job = self.accounting(job_id)
            if (job is not None and job.complete) or self.clock() >= deadline:
                return job
            self.sleep(POLL_INTERVAL_S)

    def wait_finished(self, job_id: str, bound_s: float) -> JobInfo | None:
        """Poll slurmctld until the job has left the queue and ended (or ``bound_s``)."""
        deadline = self.clock() + bound_s
        while True:
            shown = self.show_job(job_id)
            if shown is None or not shown.active or self.clock() >= deadline:
                return shown
            self.sleep(POLL_INTERVAL_S)

    def step_stats(self, job_id: str) -> SacctJob | None:
        """``sstat`` of a running job's steps (MaxRSS so far, and the GPU TRES where Slurm
        gathers them); None when no step runs."""
        doing = f"reading the running steps of job {job_id}"
        args = ["-j", job_id, "--allsteps", "-n", "-P", "-o", ",".join(SSTAT_COLUMNS)]
        done = self._run(doing, "sstat", args)
        if not done.stdout.strip():
            if done.returncode != 0 and not any(w in done.stderr for w in _FORGOTTEN):
                raise SlurmError(doing, _said(done, "sstat"))
            return None
        try:
            jobs = parse_sacct_pipe(done.stdout, columns=SSTAT_COLUMNS)
        except SacctError as exc:
            raise SlurmError(doing, f"unexpected sstat output: {exc}") from None
        return jobs[0] if jobs else None

    def seff(self, job_id: str) -> SeffReport | None:
        """seff's report; None when seff (a contrib, not always installed) is not on PATH."""
        if self.which("seff") is None:
            return None
        doing = f"reading seff {job_id}"
        try:
            return parse_seff(self._output(doing, "seff", [job_id]))
        except SeffError as exc:
            raise SlurmError(doing, f"unexpected seff output: {exc}") from None

    # ------------------------------------------------------------------ the cluster

    def version(self, command: str) -> str:
        """``COMMAND --version``: "slurm 23.02.7" (no daemon asked)."""
        return self._output(f"asking {command} its version", command, ["--version"]).strip()

    def ping(self) -> str:
        """``scontrol ping``: slurmctld's own words ("Slurmctld(primary) at head is UP");
        a SlurmError when it is down or cannot be reached."""
        said = self._output("asking whether slurmctld is up", "scontrol", ["ping"]).strip()
        if "DOWN" in said:
            raise SlurmError("asking whether slurmctld is up", said)
        return said

    def accounting_answers(self) -> int:
        """One small ``sacct`` query (your jobs of the last hour) that reaches slurmdbd: how
        many rows it listed; a SlurmError when accounting does not answer."""
        args = ["-X", "-n", "-P", "-o", "JobID", "-S", "now-1hours"]
        said = self._output("asking the accounting (slurmdbd)", "sacct", args)
        return len([line for line in said.splitlines() if line.strip()])

    def partitions(self) -> list[PartitionShape]:
        doing = "reading the partitions' node shapes"
        try:
            return parse_sinfo(self._output(doing, "sinfo", ["-h", "-o", SINFO_FORMAT]))
        except SinfoError as exc:
            raise SlurmError(doing, f"unexpected sinfo output: {exc}") from None


def _asking(job_id: str) -> str:
    return f"asking slurmctld about job {job_id}"


def _said(done: subprocess.CompletedProcess[str], command: str) -> str:
    """Slurm's own words: stderr (else stdout), verbatim; the exit status when it said nothing."""
    words = done.stderr.strip() or done.stdout.strip()
    return words or f"{command} exited with status {done.returncode}"


def _stored_script(text: str) -> str | None:
    """``sacct -B``: "Batch Script for ID", a line of dashes, the script (or NONE)."""
    lines = text.splitlines(keepends=True)
    for index, line in enumerate(lines[:3]):
        if line.startswith("-----"):
            script = "".join(lines[index + 1 :])
            return None if script.strip() in ("", "NONE") else script.rstrip("\n") + "\n"
    return None
