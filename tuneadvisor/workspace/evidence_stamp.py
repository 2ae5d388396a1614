"""What the evidence given is, for the tuned script's `# tuneadvisor: tuned from` line: its
files named, and one digest of their contents. The same files give the same digest wherever
they lie, so applying them again to the script they tuned is recognised as the same evidence.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from tuneadvisor.advisor.evidence import EvidenceStamp
from tuneadvisor.workspace.inputs import Inputs

DIGEST_CHARS = 12  # of the sha256 in hex: enough to tell evidence apart, short in a comment
_SHOWN = 3  # file names shown per kind
_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]")  # a name in a comment line: no blank, no ( or #


def _name(path: str) -> str:
    return _UNSAFE.sub("_", Path(path).name)[:60] or "_"


def _names(kind: str, paths: tuple[str, ...]) -> str:
    names = ", ".join(_name(p) for p in paths[:_SHOWN])
    more = f" and {len(paths) - _SHOWN} more" if len(paths) > _SHOWN else ""
    return f"{kind}{'s' if len(paths) > 1 else ''} {names}{more}"


def _file_digest(path: str) -> bytes:
    with open(path, "rb") as file:
        return hashlib.file_digest(file, "sha256").digest()


def _trace_files(paths: tuple[str, ...]) -> tuple[str, ...]:
    """The trace files, folders listed (each file's bytes are the evidence)."""
    if not paths:
        return ()
    from tuneadvisor.errors import InputError
    from tuneadvisor.profile.trace.reader import trace_files

    try:
        return tuple(trace_files(paths))
    except InputError:
        raise OSError from None  # read once already; gone since: no stamp


def evidence_stamp(inputs: Inputs) -> EvidenceStamp | None:
    """The stamp of the measured evidence (profiles, seff, sacct, metrics, a probe, a saved
    scontrol record, a live job id);
    None without any (the job script alone is no evidence of a run) or when a file cannot be
    read again (it was read once already: a file that vanished since gets no stamp)."""
    kinds = (
        ("profile", inputs.profiles),
        ("seff", (inputs.seff,) if inputs.seff else ()),
        ("sacct", (inputs.sacct,) if inputs.sacct else ()),
        ("metrics", inputs.metrics),
        ("probe", (inputs.probe,) if inputs.probe else ()),
        ("scontrol", (inputs.scontrol,) if inputs.scontrol else ()),
        ("trace", _trace_files(inputs.traces)),
    )
    digest = hashlib.sha256()
    parts = []
    try:
        for kind, paths in kinds:
            for path in paths:
                digest.update(kind.encode() + b"\0" + _file_digest(path))
            if paths:
                parts.append(_names(kind, paths))
    except OSError:
        return None
    if inputs.jobid is not None:  # the job as sacct knows it: which job is part of the evidence
        digest.update(b"jobid\0" + inputs.jobid.encode())
        parts.append(f"job {_name(inputs.jobid)}")
    if not parts:
        return None
    return EvidenceStamp(" + ".join(parts), digest.hexdigest()[:DIGEST_CHARS])
