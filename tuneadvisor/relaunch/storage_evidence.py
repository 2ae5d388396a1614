"""Whether a run that left its cores idle waited on storage, from the storage evidence its
record holds (``resources.io``: relaunch/io_meter.py), for ``prediction-missed``'s reason.

Storage is named only where a figure shows it: the machine's I/O wait beside the idle
cores, storage reads per trained sample, or the data on a network file system. Where the
figures say storage was quiet, the reason says that, with them; where none was recorded, it
says storage is not named. The thresholds are assumptions, and the text says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from tuneadvisor.runrecord.io_use import IoUse

# The machine's I/O wait (in cores) at least this share of the cores the run left idle:
# the idle cores were waiting on storage (assumed).
IOWAIT_SHOWN = 0.25
# Bytes read from storage per trained sample, from the first step on, at least this: the
# samples came from storage, not from memory (assumed: a sample cached in memory reads none).
READ_PER_SAMPLE_SHOWN = 1024
# File systems whose reads (and opens) go over the network: latency a cache does not hide.
NETWORK_FS = frozenset(
    {
        "nfs", "nfs4", "lustre", "gpfs", "beegfs", "cifs", "smb3", "smbfs", "ceph",
        "fuse.ceph", "glusterfs", "fuse.glusterfs", "panfs", "wekafs", "orangefs", "pvfs2",
        "afs", "fuse.sshfs", "fuse.s3fs", "fuse.gcsfuse", "9p", "davfs", "fuse.juicefs",
    }
)  # fmt: skip
MEMORY_FS = frozenset({"tmpfs", "ramfs"})
# What a reason says when it names storage, and only then (tests look for it).
NAMED = "the loop waited on storage"
MIB = 1024 * 1024


@dataclass(frozen=True)
class Judged:
    """The evidence read against the thresholds: what shows storage, what shows it quiet,
    and what was not read."""

    shown: tuple[str, ...]
    quiet: tuple[str, ...]
    unread: tuple[str, ...]
    reads_quiet: bool = False  # the read figure was read and is under its threshold


def judge(io: IoUse, idle_cores: float, samples_per_s: float | None) -> Judged:
    shown: list[str] = []
    quiet: list[str] = []
    unread = [f"{name} ({why})" for name, why in io.not_read.items()]
    if io.iowait_cores is not None and io.iowait_pct is not None:
        said = (
            f"the machine's I/O wait {io.iowait_cores:.2f} cores ({io.iowait_pct:.0f} % of its "
            f"CPU time) against the {idle_cores:.2f} the run left idle"
        )
        if idle_cores > 0 and io.iowait_cores >= IOWAIT_SHOWN * idle_cores:
            shown.append(f"{said} (assumed: {100 * IOWAIT_SHOWN:.0f} % of them shows storage)")
        else:
            quiet.append(f"iowait {io.iowait_pct:.0f} % ({io.iowait_cores:.2f} cores)")
    reads_quiet = False
    rate = io.read_mib_s
    if rate is not None and samples_per_s:
        per_sample = rate * MIB / samples_per_s
        since = "from the first step on" if io.since_first_step else "start-up included"
        said = f"{rate:.1f} MiB/s read from storage {since}, {_size(per_sample)} a sample"
        if per_sample >= READ_PER_SAMPLE_SHOWN and not io.since_first_step:
            # start-up's reads (imports, a dataset read whole) not told apart: no evidence
            unread.append(f"storage reads apart from start-up ({said})")
        elif per_sample >= READ_PER_SAMPLE_SHOWN:
            shown.append(
                f"{said} (assumed: {_size(READ_PER_SAMPLE_SHOWN)} a sample or more comes from "
                "storage, not memory)"
            )
        else:
            quiet.append(said)
            reads_quiet = True
    elif rate is not None:
        unread.append("read bytes a sample (no samples/s measured)")
    fs = io.fs_type
    if fs is not None and fs.lower() in NETWORK_FS:
        shown.append(f"the data lives on {fs} ({io.fs_mount}), a network file system")
    return Judged(tuple(shown), tuple(quiet), tuple(unread), reads_quiet)


def idle_reason(io: IoUse | None, used: float, allowed: int, samples_per_s: float | None) -> str:
    """The reason for a run that left cores idle: storage named with its figures, storage
    quiet with its figures, or storage not named where nothing was recorded."""
    head = f"the run left cores idle: {used:.2f} of {allowed} in use"
    if io is None:
        return (
            f"{head}; the loop waited on something other than its CPUs (no I/O figures "
            "were recorded, so storage is not named)"
        )
    judged = judge(io, max(0.0, allowed - used), samples_per_s)
    if judged.shown:
        return f"{head}, and {NAMED}: {'; '.join(judged.shown)}{_unread(judged)}"
    if judged.quiet:
        quiet = (
            f"({_where(io, judged.reads_quiet)}: {', '.join(judged.quiet)}; assumed quiet "
            f"under {_size(READ_PER_SAMPLE_SHOWN)} a sample and I/O wait under "
            f"{100 * IOWAIT_SHOWN:.0f} % of the idle cores)"
        )
        if judged.unread:  # quiet where measured says nothing of the rest: no conclusion
            return (
                f"{head}; the loop waited on something other than its CPUs; storage is not "
                f"named: quiet where measured {quiet}{_unread(judged)}"
            )
        return (
            f"{head}; storage was quiet {quiet}: the loop waited on something other than "
            "its CPUs and storage"
        )
    return (
        f"{head}; the loop waited on something other than its CPUs (the I/O figures could "
        f"not be read, so storage is not named: {', '.join(judged.unread) or 'none recorded'})"
    )


def _where(io: IoUse, reads_quiet: bool) -> str:
    fs = io.fs_type
    if fs is not None and fs.lower() in MEMORY_FS:
        return f"the data is on {fs}, in memory"
    if fs is None:
        return "the data's file system not read"
    if reads_quiet:
        return f"the data on {fs} came from the page cache"
    return f"the data on {fs}"


def _unread(judged: Judged) -> str:
    return f" (not read: {', '.join(judged.unread)})" if judged.unread else ""


def _size(n: float) -> str:
    return f"{n:.0f} B" if n < 1024 else f"{n / 1024:.1f} KiB"
