"""Options on the job's launch line that the training script's parser does not define.

argparse exits with "unrecognized arguments" (or "ambiguous option") before the first step
when the command line holds such an option: the job fails as written, whatever else is tuned.
The matching is argparse's own: exact option strings, ``--opt=value``, unique prefixes of long
options (unless ``allow_abbrev=False``) and a short option with its value or more short flags
attached (``-b64``, ``-vq``).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

from tuneadvisor.trainscript.cli_parser import CliParser


@dataclass(frozen=True)
class UnknownOption:
    word: str  # as the launch line passes it (without ``=value``)
    close: tuple[str, ...]  # the parser's option strings that look like it
    ambiguous: bool = False  # a prefix of several long options

    @property
    def text(self) -> str:
        if self.ambiguous:
            return f"{self.word} (ambiguous: {', '.join(self.close)})"
        if self.close:
            return f"{self.word} (close: {', '.join(self.close)})"
        return f"{self.word} (nothing close)"


def unknown_options(words: Iterable[str], parser: CliParser) -> tuple[UnknownOption, ...]:
    """The launch line's options the parser refuses; none unless the parser is closed."""
    if not parser.closed:
        return ()
    found: list[UnknownOption] = []
    for word in words:
        if "$" in word or "`" in word or word in ("-", "--") or not word.startswith("-"):
            continue  # a shell expansion: what it holds is not known here
        refused = _refused(word, parser)
        if refused is not None and refused.word not in [f.word for f in found]:
            found.append(refused)
    return tuple(found)


def _refused(word: str, parser: CliParser) -> UnknownOption | None:
    flags = parser.flags | {"-h", "--help"}  # add_help is argparse's default
    if word in flags:
        return None
    if word.startswith("--"):
        starts = sorted(f for f in flags if f.startswith(word)) if parser.allow_abbrev else []
        if len(starts) == 1:
            return None
        if len(starts) > 1:
            return UnknownOption(word, tuple(starts), ambiguous=True)
    elif word[:2] in flags:  # -b64, -vq
        return None
    elif parser.allow_abbrev and any(f.startswith(word) for f in flags):
        return None  # a prefix of a single-dash option (-lr of -lr_decay): argparse may take it
    close = difflib.get_close_matches(word, sorted(flags - {"-h", "--help"}), n=3, cutoff=0.6)
    return UnknownOption(word, tuple(close))
