"""Which GPUs have tensor cores, from the name NVML, nvidia-smi or DCGM gives.

A recording or a log keeps the GPU's name, not its compute capability; tensor cores came with
compute capability 7.0 (Volta), so the name says it: V100, T4 and the RTX 20 series onwards,
every A/H/B/L data-centre part. None for a name this table does not know (an unknown GPU is no
evidence either way), False for the data-centre parts before Volta that clusters still run.
"""

from __future__ import annotations

import re

# Matched against the name without "NVIDIA " / "Tesla " and in upper case.
_WITH = re.compile(
    r"^(V100|T4|TITAN V|TITAN RTX|QUADRO RTX|QUADRO GV100|RTX|GEFORCE RTX|"
    r"A[0-9]+|H[0-9]+|B[0-9]+|GB[0-9]+|GH[0-9]+|L[0-9]+|DGX|PG[0-9]+)"
)
_WITHOUT = re.compile(r"^(K[0-9]+|M[0-9]+|P[0-9]+|GEFORCE GTX|GTX|QUADRO [KMP][0-9]+|TITAN X)")


def has_tensor_cores(name: str | None) -> bool | None:
    """True for a GPU with tensor cores, False for one known to have none, None: unknown."""
    if not name:
        return None
    bare = name.upper().replace("NVIDIA ", "").replace("TESLA ", "").strip()
    if _WITHOUT.match(bare):
        return False
    if _WITH.match(bare):
        return True
    return None
