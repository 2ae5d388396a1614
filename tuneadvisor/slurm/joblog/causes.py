"""The messages that say why a training job died, as their programs print them: one
``Cause`` per kind, its patterns and the numbers each one carries.

The messages are PyTorch's, the C library's, Python's and Slurm's own words (tested with
lines copied from public issue threads: tests/fixtures/realworld/joblogs/)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

Details = dict[str, object]

# [0-9], not \d: a Unicode digit that \d takes is refused by float() (issue 34)
_SIZE = r"([0-9]{1,9}(?:\.[0-9]{1,6})?) ?(bytes|[KMGT]iB)"
_TO_MIB = {"bytes": 1 / 2**20, "KiB": 1 / 1024, "MiB": 1.0, "GiB": 1024.0, "TiB": 1024.0**2}


def _mib(match: re.Match[str] | None, group: int = 1) -> float | None:
    if match is None:
        return None
    return round(float(match[group]) * _TO_MIB[match[group + 1]], 2)


def _cuda_oom(text: str) -> Details:
    """Both forms: ``(GPU 0; 39.59 GiB total capacity; 35.1 GiB already allocated; 1.5 GiB
    free; 36.0 GiB reserved in total by PyTorch)`` (up to 2.0) and ``GPU 0 has a total
    capacity of 79.15 GiB of which 5.25 MiB is free. ... 420.21 MiB is reserved by PyTorch but
    unallocated`` (2.1 on; "capacty" in some releases)."""
    found: Details = {}
    numbers = {
        "tried_mib": re.search(rf"Tried to allocate {_SIZE}", text),
        "gpu_total_mib": re.search(rf"{_SIZE} total capacity", text)
        or re.search(rf"total capac[a-z]{{0,8}} of {_SIZE}", text),
        "free_mib": re.search(rf"of which {_SIZE} is free", text)
        or re.search(rf"; {_SIZE} free", text),
        "reserved_unused_mib": re.search(rf"{_SIZE} is reserved by PyTorch but unallocated", text),
    }
    for name, match in numbers.items():
        value = _mib(match)
        if value is not None:
            found[name] = value
    gpu = re.search(r"\(GPU ([0-9]{1,4});|GPU ([0-9]{1,4}) has a total", text)
    if gpu is not None:
        found["gpu"] = int(gpu[1] or gpu[2])
    allocated = re.search(rf"{_SIZE} already allocated", text)
    reserved = re.search(rf"{_SIZE} reserved in total by PyTorch", text)
    if "reserved_unused_mib" not in found and allocated and reserved:
        unused = (_mib(reserved) or 0.0) - (_mib(allocated) or 0.0)
        found["reserved_unused_mib"] = round(max(0.0, unused), 2)
    return found


def _nccl_timeout(text: str) -> Details:
    found: Details = {}
    rank = re.search(r"\[Rank ([0-9]{1,7})\]", text)
    if rank is not None:
        found["rank"] = int(rank[1])
    op = re.search(r"OpType=([A-Za-z0-9_]{1,40})", text)
    if op is not None:
        found["op"] = op[1]
    seq = re.search(r"SeqNum=([0-9]{1,15})", text)
    if seq is not None:
        found["seq"] = int(seq[1])
    timeout = re.search(r"Timeout\(ms\)=([0-9]{1,12})", text)
    if timeout is not None:
        found["timeout_s"] = int(timeout[1]) / 1000
    return found


def _arguments(text: str) -> Details:
    match = re.search(r"error: unrecognized arguments: (.{1,200})", text)
    return {"args": match[1].strip()} if match else {}


def _module(text: str) -> Details:
    match = re.search(r"No module named '?([A-Za-z0-9_.]{1,200})", text)
    return {"name": match[1]} if match else {}


def _capability(text: str) -> Details:
    found: Details = {}
    match = re.search(r"CUDA capability (sm_[0-9]{1,4}) is not compatible", text)
    if match is not None:
        found["capability"] = match[1]
    supports = re.search(r"supports CUDA capabilities (sm_[0-9][sm_0-9 ]{0,240})", text)
    if supports is not None:
        found["supported"] = supports[1].strip()
    return found


# Each bounded and anchored on a literal: no nested or unbounded repeats.
_PORT = (re.compile(r":([0-9]{1,5}) \(errno: ?98"), re.compile(r"\bport: ([0-9]{1,5}),"))
_MISSING_FILE = r"(?:line [0-9]{1,7}|execve\(\)): ([^:\n]{1,256}): No such file or directory"
_CANNOT_OPEN = r"can't open file '([^'\n]{1,256})': \[Errno 2\] No such file or directory"
_NOT_FOUND = r": ([^:\n]{1,200}): command not found"
# Environment Modules' (Tcl) and Lmod's words for a module that is not there
_NO_MODULEFILE = r"Unable to locate a modulefile for '([^'\n]{1,200})'"
_LMOD_UNKNOWN = r"The following module\(s\) are unknown: \"([^\"\n]{1,200})\""


def _port(text: str) -> Details:
    """c10d's "failed to bind to [::]:29500 (errno: 98 - ...)", 2.4's "port: 12341, ..."."""
    match = next((m for p in _PORT if (m := p.search(text))), None)
    return {"port": int(match[1])} if match else {}


def _missing_file(text: str) -> Details:
    match = re.search(_MISSING_FILE, text) or re.search(_CANNOT_OPEN, text)
    return {"path": match[1].strip()} if match else {}


def _modulefile(text: str) -> Details:
    match = re.search(_NO_MODULEFILE, text) or re.search(_LMOD_UNKNOWN, text)
    return {"name": match[1]} if match else {}


def _command(text: str) -> Details:
    match = re.search(_NOT_FOUND, text)
    return {"name": match[1].strip()} if match else {}


def _none(text: str) -> Details:
    return {}


@dataclass(frozen=True)
class Cause:
    kind: str  # the facts' name under log.
    patterns: tuple[re.Pattern[str], ...]
    details: Callable[[str], Details] = _none
    # lines that only add numbers to a sighting found on another line
    detail_patterns: tuple[re.Pattern[str], ...] = ()


def _any(*patterns: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p) for p in patterns)


CAUSES: tuple[Cause, ...] = (
    Cause(
        "cuda_oom",
        _any(r"CUDA out of memory", r"CUDA error: out of memory"),
        _cuda_oom,
    ),
    Cause(
        "host_oom",
        _any(
            r"\boom[-_]kill event",  # slurmstepd, any release
            r"tasks? [0-9][0-9,-]{0,200}: Out Of Memory",  # srun: "task 0", "tasks 1-3"
            r"Out of memory: Kill(?:ed)? process",  # the kernel's own line
            r"^\s{0,200}Killed\s{0,200}$",  # the shell, a SIGKILL of the foreground program
            r": line [0-9]{1,12}: {1,20}[0-9]{1,12} Killed\b",  # bash in a batch script
        ),
    ),
    Cause(
        "nccl_timeout",
        _any(r"Watchdog caught collective operation timeout"),
        _nccl_timeout,
    ),
    Cause(
        "shm",
        _any(
            r"DataLoader worker \(pid\(?s?\)? ?[0-9, ]{0,256}\)? is killed by signal: Bus error",
            r"bus error encountered in worker",
            r"insufficient shared memory",
            r"unable to write to file </torch_",
            # both on one piece, in either order: two lookaheads from its start, each one
            # pass over the piece (``A.*B|B.*A`` retried ``.*`` at every A: quadratic)
            r"^(?=.{0,4096}?No space left)(?=.{0,4096}?(?:/dev/shm|torch_))",
            r"^\s{0,200}Bus error\b",
        ),
    ),
    Cause("time_limit", _any(r"CANCELLED AT [^ ]{1,40} DUE TO TIME LIMIT", r"DUE TO TIME LIMIT")),
    Cause("bad_arguments", _any(r"error: unrecognized arguments: "), _arguments),
    Cause(
        "missing_module",
        _any(r"ModuleNotFoundError: No module named ", r"ImportError: No module named "),
        _module,
    ),
    Cause(
        "no_kernel_image",
        _any(
            r"no kernel image is available for execution on the device",
            r"CUDA capability sm_[0-9]{1,4} is not compatible with the current PyTorch",
        ),
        _capability,
        _any(r"The current PyTorch install supports CUDA capabilities "),
    ),
    # a fixed MASTER_PORT another process on the node holds (another job, a stale run)
    Cause("port_in_use", _any(r"Address already in use", r"EADDRINUSE"), _port),
    # bash's and Python's: a file the job names is not where it says (an environment's
    # activate script, the training script, a program srun was asked to start)
    Cause("missing_file", _any(_MISSING_FILE, _CANNOT_OPEN), _missing_file),
    Cause("command_not_found", _any(_NOT_FOUND), _command),
    # `module load` of a module the node does not have: the environment never set up
    Cause("module_unavailable", _any(_NO_MODULEFILE, _LMOD_UNKNOWN), _modulefile),
)

# One search over every chunk first: a chunk where none of these occurs holds no cause.
KEYWORDS = re.compile(
    rb"out of memory|Out Of Memory|Out of memory|oom[-_]kill|Killed|Watchdog caught|Bus error"
    rb"|bus error|shared memory|torch_|No space left|TIME LIMIT|unrecognized arguments"
    rb"|No module named|no kernel image|CUDA capabilit"
    rb"|Address already in use|EADDRINUSE|No such file or directory|command not found"
    rb"|Unable to locate a modulefile|module\(s\) are unknown"
)

BY_KIND: Mapping[str, Cause] = {cause.kind: cause for cause in CAUSES}
