"""The Slurm release a cluster runs, from ``srun --version`` ("slurm 22.05.8",
"slurm-wlm 22.05.8"): what it says, as the facts name it."""

from __future__ import annotations

import re

_VERSION = re.compile(r"\b([0-9]{2})\.([0-9]{2})(?:\.([0-9]+))?\b")


def parse_version(text: str) -> str | None:
    """ "slurm-wlm 22.05.8" -> "22.05.8"; None for output that names no release."""
    found = _VERSION.search(text)
    return found.group(0) if found else None


def version_facts(text: str) -> dict[str, object]:
    version = parse_version(text)
    return {} if version is None else {"slurm.version": version}
