"""The Slurm lines of `doctor`: the commands, the job this shell is in, and its cgroup."""

from __future__ import annotations

from collections.abc import Mapping

from tuneadvisor.slurm.cgroup import CgroupPlace, parse_cgroup
from tuneadvisor.slurm.client import SlurmClient, SlurmError
from tuneadvisor.workspace.site_checks.model import Check

LOAD_SLURM = "load the Slurm module (module load slurm) or run this on a login node"


def slurm_words(err: SlurmError) -> str:
    """The line of Slurm's message that says most: its last ``fatal:``/``error:`` line (a
    node without a Slurm configuration says four lines, the last is the reason)."""
    lines = [line.strip() for line in err.said.splitlines() if line.strip()]
    telling = [line for line in lines if "fatal:" in line or "error:" in line]
    return (telling or lines or [err.one_line()])[-1]


NO_CONFIG = (
    "this machine has no Slurm configuration (slurm.conf not found): run this on a login "
    "node, or point SLURM_CONF at the cluster's slurm.conf"
)


def no_config(err: SlurmError) -> bool:
    """Slurm could not read its configuration: nothing was asked of slurmctld at all."""
    said = err.said.lower()
    return any(w in said for w in ("slurm.conf", "configuration file", "configuration source"))


def slurm_checks(
    client: SlurmClient, env: Mapping[str, str], cgroup_text: str | None
) -> list[Check]:
    place = None if cgroup_text is None else parse_cgroup(cgroup_text)
    return [
        _scontrol(client),
        _sacct(client),
        _seff(client),
        _job(env, place),
        _cgroup(env, place),
    ]


def _scontrol(client: SlurmClient) -> Check:
    path = client.which("scontrol")
    if path is None:
        return Check("slurm.scontrol", "missing", "scontrol is not on PATH", LOAD_SLURM)
    try:
        version = client.version("scontrol")
        said = client.ping()
    except SlurmError as err:
        return Check(
            "slurm.scontrol",
            "failed",
            f"{path}: {slurm_words(err)}",
            NO_CONFIG
            if no_config(err)
            else "slurmctld does not answer from here: try a login node; if it fails there "
            "too, tell the site's admins",
        )
    return Check("slurm.scontrol", "ok", f"{version} at {path}; {said.splitlines()[0]}")


def _sacct(client: SlurmClient) -> Check:
    path = client.which("sacct")
    if path is None:
        return Check("slurm.sacct", "missing", "sacct is not on PATH", LOAD_SLURM)
    try:
        rows = client.accounting_answers()
    except SlurmError as err:
        return Check(
            "slurm.sacct",
            "failed",
            f"{path}: {slurm_words(err)}",
            NO_CONFIG
            if no_config(err)
            else "job accounting does not answer: `jobs` and reports of finished jobs need it "
            "(ask the admins whether slurmdbd is set up for this cluster)",
        )
    return Check("slurm.sacct", "ok", f"{path} answers ({rows} of your jobs in the last hour)")


def _seff(client: SlurmClient) -> Check:
    path = client.which("seff")
    if path is None:
        return Check(
            "slurm.seff",
            "missing",
            "seff is not on PATH",
            "optional (a contrib script of Slurm): tuneadvisor reads sacct without it",
        )
    return Check("slurm.seff", "ok", path)


def _job(env: Mapping[str, str], place: CgroupPlace | None) -> Check:
    job_id = env.get("SLURM_JOB_ID")
    if job_id is None:
        if place is not None and place.job_id is not None:
            return Check(
                "slurm.job",
                "ok",
                f"job {place.job_id} (from the cgroup; SLURM_JOB_ID is unset: a shell that "
                "ssh placed in the job)",
            )
        return Check("slurm.job", "not-applicable", "not in a Slurm job (SLURM_JOB_ID unset)")
    parts = [f"job {job_id}"]
    if "SLURM_STEP_ID" in env:
        parts.append(f"step {env['SLURM_STEP_ID']}")
    nodes = env.get("SLURMD_NODENAME") or env.get("SLURM_JOB_NODELIST")
    if nodes:
        parts.append(f"on {nodes}")
    gpus = env.get("SLURM_STEP_GPUS") or env.get("SLURM_JOB_GPUS")
    parts.append(f"GPUs {gpus}" if gpus else "no GPU allocated (SLURM_JOB_GPUS unset)")
    return Check("slurm.job", "ok", ", ".join(parts))


def _cgroup(env: Mapping[str, str], place: CgroupPlace | None) -> Check:
    job_id = env.get("SLURM_JOB_ID")
    if place is None:
        return Check("slurm.cgroup", "not-applicable", "no /proc/self/cgroup on this system")
    where = f"cgroup v{place.version}: {place.path}"
    inside = f"srun --jobid {job_id} --overlap --pty python -m tuneadvisor doctor" if job_id else ""
    if place.job_id is None:
        if job_id is None:
            return Check("slurm.cgroup", "not-applicable", f"in no job's cgroup ({where})")
        return Check(
            "slurm.cgroup",
            "failed",
            f"this shell is outside job {job_id}'s cgroup ({where})",
            f"a shell of salloc on the login node, or a plain ssh: run it inside the job: {inside}",
        )
    if job_id is not None and place.job_id != job_id:
        return Check(
            "slurm.cgroup",
            "failed",
            f"the cgroup is job {place.job_id}'s but SLURM_JOB_ID says {job_id} ({where})",
            f"a shell started from another job: run it inside the job: {inside}",
        )
    step = f", step {place.step}" if place.step else ""
    return Check("slurm.cgroup", "ok", f"job {place.job_id}{step} ({where})")
