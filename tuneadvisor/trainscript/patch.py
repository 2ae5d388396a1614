"""A patch for a training script's DataLoader settings, written from the script's one scan.

The scan recorded where each setting is written (its ``Origin`` line and the variable it was
read through), where a keyword added to the DataLoader call goes (``ArgumentsEnd``) and where
a new import goes: every edit is placed on the text as it was read and applied at once, so
the script is not parsed again and no edit moves another's position.

The training script is never edited: the patch is a unified diff the user applies.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from tuneadvisor.trainscript.scans.results import ArgumentsEnd

# DataLoader settings the advisor changes.
LOADER_SETTINGS = ("num_workers", "pin_memory", "persistent_workers", "prefetch_factor")
_BOM = "\ufeff"


def python_value(setting: str, value: object, reserve_main_core: bool, ranks: int = 1) -> str:
    """How a setting's value reads in Python source. num_workers follows the allocation
    instead of a number (as the plan couples them)."""
    if setting == "num_workers":
        cores = 'int(os.environ.get("SLURM_CPUS_PER_TASK", "1"))'
        if ranks > 1:  # torchrun & co. start several ranks in one task: share its cores
            cores += ' // int(os.environ.get("LOCAL_WORLD_SIZE", "1"))'
        return f"max(1, {cores} - 1)" if reserve_main_core else cores
    return repr(value)


def _value_patterns(setting: str, names: tuple[str, ...]) -> list[re.Pattern[str]]:
    """Where a literal setting is written: ``num_workers=1``; ``{'num_workers': 1}`` (the
    kwargs dict of PyTorch's MNIST example); ``kwargs['num_workers'] = 1``; or the variable
    it was read through (``NUM_WORKERS = 8``)."""
    key = re.escape(setting)
    patterns = [
        re.compile(r"(\b" + key + r"\s*=\s*)([^,)\s]+)"),
        re.compile(r"""(['"]""" + key + r"""['"]\s*:\s*)([^,})\s]+)"""),
        re.compile(r"""(\[\s*['"]""" + key + r"""['"]\s*\]\s*=\s*)([^,)\s]+)"""),
    ]
    for name in names:
        patterns.append(re.compile(r"(\b" + re.escape(name) + r"\s*=\s*)([^,)\s]+)"))
    return patterns


@dataclass
class ScriptPatch:
    """Pending edits of one script's text, placed on the text as read."""

    text: str
    import_at: int  # where ``import os`` goes when a value reads the environment
    # 0-based line -> (start, end, new) in UTF-8 bytes of that line
    _spans: dict[int, list[tuple[int, int, bytes]]] = field(
        default_factory=dict, init=False, repr=False
    )
    # keywords added after a call's last argument, in the order they were asked for
    _keywords: dict[ArgumentsEnd, list[str]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self._bom = self.text.startswith(_BOM)  # the parse's columns do not count it
        self._lines = [
            line.encode("utf-8", "surrogatepass")
            for line in self.text.removeprefix(_BOM).splitlines(keepends=True)
        ]

    def set_literal(self, line: int, setting: str, new: str, names: tuple[str, ...]) -> bool:
        """Replace the literal value of ``setting`` written on ``line`` (or the next three:
        the call may span lines), or of the variable it was read through."""
        patterns = _value_patterns(setting, names)
        for index in range(max(line - 1, 0), min(line + 3, len(self._lines))):
            if line < 1:
                break
            text = self._lines[index].decode("utf-8", "surrogatepass")
            for pattern in patterns:
                match = pattern.search(text)
                if match:
                    start = len(text[: match.start(2)].encode("utf-8", "surrogatepass"))
                    end = start + len(match.group(2).encode("utf-8", "surrogatepass"))
                    return self._span(index, start, end, new.encode())
        return False

    def add_keyword(self, anchor: ArgumentsEnd | None, setting: str, new: str) -> bool:
        """Add ``setting=new`` after the call's last argument (the setting is left at its
        default there); False when the call takes no argument to add it after."""
        if anchor is None or not 0 < anchor.end_line <= len(self._lines):
            return False
        self._keywords.setdefault(anchor, []).append(f"{setting}={new}")
        return True

    def render(self) -> str:
        """The script with every edit; ``import os`` added when a new value reads the
        environment and the script has no such import."""
        lines = list(self._lines)
        inserts: dict[int, list[bytes]] = {}  # new lines before a 0-based index
        spans = {index: list(found) for index, found in self._spans.items()}
        for anchor, keywords in self._keywords.items():
            self._place_keywords(anchor, keywords, spans, inserts)
        for index, found in spans.items():
            raw = lines[index]
            for start, end, new in sorted(found, key=lambda span: span[:2], reverse=True):
                raw = raw[:start] + new + raw[end:]
            lines[index] = raw
        for index in sorted(inserts, reverse=True):
            lines[index:index] = inserts[index]
        out = b"".join(lines).decode("utf-8", "surrogatepass")
        original = self.text.removeprefix(_BOM)
        if out != original and "os.environ" in out and not _imports_os(original):
            # The import goes above every other edit: the index the scan gave still holds.
            lines.insert(min(self.import_at, len(lines)), b"import os\n")
            out = b"".join(lines).decode("utf-8", "surrogatepass")
        return (_BOM if self._bom else "") + out

    def _span(self, index: int, start: int, end: int, new: bytes) -> bool:
        taken = self._spans.setdefault(index, [])
        if any(start < e and s < end for s, e, _ in taken):  # overlaps an edit: not safe
            return False
        taken.append((start, end, new))
        return True

    def _place_keywords(
        self,
        anchor: ArgumentsEnd,
        keywords: list[str],
        spans: dict[int, list[tuple[int, int, bytes]]],
        inserts: dict[int, list[bytes]],
    ) -> None:
        index = anchor.end_line - 1
        raw = self._lines[index]
        cut = anchor.end_col
        if anchor.own_line:
            # One argument a line: each new one on a line of its own, with a comma after the
            # last argument unless it has one.
            if not raw[cut:].lstrip().startswith(b","):
                spans.setdefault(index, []).append((cut, cut, b","))
            indent = self._lines[anchor.line - 1][: anchor.col]
            inserts.setdefault(index + 1, []).extend(indent + f"{k},\n".encode() for k in keywords)
        else:
            added = "".join(f", {k}" for k in keywords).encode()
            spans.setdefault(index, []).append((cut, cut, added))


def _imports_os(text: str) -> bool:
    return re.search(r"^\s*import os\b", text, re.M) is not None


def unified_patch(before: str, after: str, name: str) -> str:
    """The patch from ``before`` to ``after`` for the file ``name`` ("" when they agree)."""
    if before == after:
        return ""
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{name}",
            tofile=f"b/{name}",
        )
    )
