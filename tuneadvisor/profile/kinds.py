"""Line kinds from the training script's AST (STUB: signature fixed, body to be written)."""

from __future__ import annotations

from enum import StrEnum


class LineKind(StrEnum):
    DATALOADER = "dataloader"
    TRANSFER = "transfer"
    FORWARD = "forward"
    LOSS = "loss"
    BACKWARD = "backward"
    OPTIMIZER = "optimizer"
    SYNC = "sync"
    OTHER = "other"


def classify_source(text: str) -> dict[int, LineKind]:
    """Map every line number of ``text`` that belongs to a classified statement to its kind.

    Lines of a multi-line statement all get the statement's kind. Lines not returned are
    "other". Never raises on bad source: a file that does not parse classifies nothing.
    """
    return {}
