"""Unpickling a line_profiler ``.lprof`` file without running anything it asks for.

A pickle is a program for a small stack machine and ``pickle.load`` runs it. ``REDUCE`` calls
whatever callable the file names (a ``__reduce__`` returning ``os.system`` runs any command),
and a nine-byte file, ``PROTO 4; NONE; LONG_BINPUT 0xFFFFFFFF; STOP``, makes the C unpickler
grow and zero its memo array to 2**33 slots (64 GiB) before it notices anything is wrong.

So the bytes are first read with ``pickletools.genops``, which decodes opcodes but executes
nothing, while a shadow stack tracks only nesting depth and string values. Anything a
line_profiler file never contains is refused there: code-running opcodes, imports other than
``LineStats``, memo slots that were never (or could not have been) written, oversized
integers and strings, deep nesting. Only then does a restricted unpickler run, whose
``find_class`` hands out an inert stand-in for ``LineStats`` and refuses everything else.
"""

from __future__ import annotations

import io
import pickle
import pickletools
from collections.abc import Iterator
from typing import Any

from tuneadvisor.records import record

# (module, name) of the class each line_profiler version pickles, as found in real files
# (see tests/fixtures/lprof and scripts/make_lprof_fixtures.sh) and in each version's source.
LINESTATS_CLASSES: frozenset[tuple[str, str]] = frozenset(
    {
        ("line_profiler.line_profiler", "LineStats"),  # 5.x: the Python subclass
        ("line_profiler._line_profiler", "LineStats"),  # 3.x and 4.x: the Cython module's class
        # 2.x: the same class in a top-level Cython module (_line_profiler.pyx of 2.1.2); no
        # 2.x builds on Python 3.11, so tests/unit/test_lprof_load.py pickles that class itself.
        ("_line_profiler", "LineStats"),
    }
)


@record
class PickleLimits:
    """Bounds on untrusted input; real .lprof files are kilobytes to a few megabytes."""

    # The objects a pickle builds take ~10x its size in memory: 64 MiB is already ~1 GB.
    max_bytes: int = 64 * 1024 * 1024
    # File paths and function names; PATH_MAX is 4096.
    max_str_len: int = 64 * 1024
    # Times in timer units and hit counts are 64-bit counters in line_profiler's C code.
    max_int_bits: int = 128
    # LineStats -> state dict -> timings dict -> list -> tuple is 5 deep.
    max_depth: int = 32
    # A real file keeps at most 4 MARKs open.
    max_marks: int = 16


DEFAULT_LIMITS = PickleLimits()


class PickleRejected(Exception):
    """Why an untrusted pickle was refused: a short phrase, without the file's name."""


class StatsStandIn:
    """What the restricted unpickler builds instead of line_profiler's LineStats.

    It has no behaviour for a pickle to trigger: BUILD just leaves the raw state here for
    the caller to validate.
    """

    state: object = None
    builds: int = 0

    def __setstate__(self, state: object) -> None:
        self.state = state
        self.builds += 1


def load_linestats(data: bytes, limits: PickleLimits = DEFAULT_LIMITS) -> object:
    """The object a pickle holds, after scanning it; a genuine .lprof gives a StatsStandIn.

    Raises PickleRejected for anything refused, corrupt or truncated.
    """
    scan(data, limits)
    return _restricted_load(data)


# -- the opcode scan ----------------------------------------------------------------------

_ALLOWED_MODULE_NAMES = frozenset(f"{module} {name}" for module, name in LINESTATS_CLASSES)

_SCALARS = frozenset(
    {"NONE", "NEWTRUE", "NEWFALSE", "INT", "BININT", "BININT1", "BININT2", "FLOAT", "BINFLOAT"}
)
_BIG_INTS = frozenset({"LONG", "LONG1", "LONG4"})
_TEXTS = frozenset({"UNICODE", "SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8"})
_BYTES = frozenset(
    {"STRING", "BINSTRING", "SHORT_BINSTRING", "BINBYTES", "SHORT_BINBYTES", "BINBYTES8"}
)
_EMPTY_CONTAINERS = frozenset({"EMPTY_TUPLE", "EMPTY_LIST", "EMPTY_DICT", "EMPTY_SET"})
_FROM_MARK = frozenset({"TUPLE", "LIST", "DICT", "FROZENSET"})
_FIXED_TUPLES = {"TUPLE1": 1, "TUPLE2": 2, "TUPLE3": 3}
_ADD_FROM_MARK = frozenset({"APPENDS", "SETITEMS", "ADDITEMS"})
_ADD_FIXED = {"APPEND": 1, "SETITEM": 2, "BUILD": 1}
_PUTS = frozenset({"PUT", "BINPUT", "LONG_BINPUT"})
_GETS = frozenset({"GET", "BINGET", "LONG_BINGET"})
_WHY_FORBIDDEN = {
    "REDUCE": "calls a function",
    "INST": "calls a class",
    "OBJ": "calls a class",
    "NEWOBJ_EX": "calls a class with keyword arguments",
    "EXT1": "imports from the extension registry",
    "EXT2": "imports from the extension registry",
    "EXT4": "imports from the extension registry",
    "PERSID": "asks for an external object",
    "BINPERSID": "asks for an external object",
    "NEXT_BUFFER": "asks for an out-of-band buffer",
    "READONLY_BUFFER": "asks for an out-of-band buffer",
    "BYTEARRAY8": "builds a bytearray",
}


@record
class _Item:
    """One shadow-stack entry: how deep its containers nest, and its value if a string."""

    depth: int = 0
    text: str | None = None


# Shared entries: most opcodes push one of these, and building fresh ones is the scan's cost.
_SCALAR = _Item()
_EMPTY = _Item(depth=1)


class _Scan:
    """A shadow of the unpickler's stack that executes nothing."""

    def __init__(self, limits: PickleLimits, size: int) -> None:
        self.limits = limits
        self.size = size  # of the whole pickle, in bytes
        self.stack: list[_Item] = []
        self.marks: list[int] = []  # stack heights at each open MARK
        self.memo: dict[int, _Item] = {}
        self.ops = 0  # opcodes read so far

    def step(self, name: str, arg: Any, pos: int) -> None:
        self.ops += 1
        if name in _WHY_FORBIDDEN:
            raise PickleRejected(
                f"refused: pickle opcode {name} at byte {pos} {_WHY_FORBIDDEN[name]}"
            )
        if name in _SCALARS:
            self.push(_SCALAR)
        elif name in _BIG_INTS:
            self.check_int(arg, pos)
            self.push(_SCALAR)
        elif name in _TEXTS or name in _BYTES:
            self.check_len(arg, pos)
            self.push(_Item(text=arg if isinstance(arg, str) else None))
        else:
            self.structural(name, arg, pos)

    def structural(self, name: str, arg: Any, pos: int) -> None:
        if name in _EMPTY_CONTAINERS:
            self.push(_EMPTY)
        elif name in _FROM_MARK:
            self.push(self.container(self.pop_mark(pos), pos))
        elif name in _FIXED_TUPLES:
            self.push(self.container(self.pop(_FIXED_TUPLES[name], pos), pos))
        elif name in _ADD_FROM_MARK:
            self.add_to_top(self.pop_mark(pos), pos)
        elif name in _ADD_FIXED:
            self.add_to_top(self.pop(_ADD_FIXED[name], pos), pos)
        elif name in _PUTS or name == "MEMOIZE":
            self.put(len(self.memo) if name == "MEMOIZE" else arg, pos)
        elif name in _GETS:
            self.get(arg, pos)
        else:
            self.control(name, arg, pos)

    def control(self, name: str, arg: Any, pos: int) -> None:
        if name == "MARK":
            if len(self.marks) >= self.limits.max_marks:
                raise PickleRejected(
                    f"refused: MARKs nested more than {self.limits.max_marks} deep"
                )
            self.marks.append(len(self.stack))
        elif name == "POP":
            # Like the unpickler: POP with nothing above the last MARK drops the MARK.
            if self.marks and len(self.stack) == self.marks[-1]:
                self.marks.pop()
            else:
                self.pop(1, pos)
        elif name == "POP_MARK":
            self.pop_mark(pos)
        elif name == "DUP":
            top = self.pop(1, pos)[0]
            self.push(top)
            self.push(top)
        elif name in ("GLOBAL", "STACK_GLOBAL"):
            self.import_(name, arg, pos)
        elif name == "NEWOBJ":
            self.pop(2, pos)
            self.push(_EMPTY)
        elif name == "PROTO":
            if arg > pickle.HIGHEST_PROTOCOL:
                raise PickleRejected(f"pickle protocol {arg} is newer than this Python reads")
        elif name == "FRAME":
            if arg > self.size - pos:
                raise PickleRejected(f"truncated pickle: a frame at byte {pos} runs past the end")
        elif name == "STOP":
            if len(self.stack) != 1 or self.marks:
                raise PickleRejected(f"corrupt pickle: stack not balanced at STOP (byte {pos})")
        else:  # an opcode newer than this table: refuse rather than guess
            raise PickleRejected(f"refused: unexpected pickle opcode {name} at byte {pos}")

    def import_(self, name: str, arg: Any, pos: int) -> None:
        if name == "GLOBAL":
            target = str(arg)
        else:
            module, qualname = self.pop(2, pos)
            if module.text is None or qualname.text is None:
                raise PickleRejected(f"refused: STACK_GLOBAL at byte {pos} without names")
            target = f"{module.text} {qualname.text}"
        if target not in _ALLOWED_MODULE_NAMES:
            shown = ".".join(target.split(" ", 1))[:80]
            if target.endswith(" LineStats") and "line_profiler" in target:
                # Likely a line_profiler version whose layout is not known here: say so, rather
                # than that the file is not line_profiler's.
                known = ", ".join(sorted(".".join(c) for c in LINESTATS_CLASSES))
                raise PickleRejected(
                    f"refused: a LineStats pickled as {shown!r}, a line_profiler layout not "
                    f"known here (known: {known}); print it as a table with that version's "
                    "`python -m line_profiler FILE > FILE.txt` and give the .txt"
                )
            raise PickleRejected(
                f"refused: the pickle imports {shown!r}; an .lprof file only names "
                "line_profiler's LineStats"
            )
        self.push(_SCALAR)

    def push(self, item: _Item) -> None:
        self.stack.append(item)

    def pop(self, count: int, pos: int) -> list[_Item]:
        fence = self.marks[-1] if self.marks else 0
        if len(self.stack) - fence < count:
            raise PickleRejected(f"corrupt pickle: stack underflow at byte {pos}")
        items = self.stack[len(self.stack) - count :]
        del self.stack[len(self.stack) - count :]
        return items

    def pop_mark(self, pos: int) -> list[_Item]:
        if not self.marks:
            raise PickleRejected(f"corrupt pickle: no MARK for the opcode at byte {pos}")
        fence = self.marks.pop()
        items = self.stack[fence:]
        del self.stack[fence:]
        return items

    def container(self, items: list[_Item], pos: int) -> _Item:
        depth = 1 + max((item.depth for item in items), default=0)
        if depth == 1:
            return _EMPTY
        if depth > self.limits.max_depth:
            raise PickleRejected(
                f"refused: containers nested more than {self.limits.max_depth} deep (byte {pos})"
            )
        return _Item(depth=depth)

    def add_to_top(self, items: list[_Item], pos: int) -> None:
        top = self.pop(1, pos)[0]
        grown = self.container(items, pos)
        self.push(top if top.depth >= grown.depth else grown)

    def put(self, index: Any, pos: int) -> None:
        # pickle numbers memo slots 0, 1, 2, ... and every write is an opcode of its own, so
        # a slot number above the count of opcodes read so far is never genuine; the check
        # is what stops the memo bomb.
        if not isinstance(index, int) or not 0 <= index < self.ops:
            raise PickleRejected(
                f"refused: memo slot {index} at byte {pos} is out of range "
                f"(only {self.ops} opcodes so far)"
            )
        if not self.stack or (self.marks and len(self.stack) == self.marks[-1]):
            raise PickleRejected(f"corrupt pickle: nothing to memoize at byte {pos}")
        self.memo[index] = self.stack[-1]

    def get(self, index: Any, pos: int) -> None:
        if index not in self.memo:
            raise PickleRejected(
                f"corrupt pickle: memo slot {index} at byte {pos} was never written"
            )
        self.push(self.memo[index])

    def check_int(self, value: Any, pos: int) -> None:
        if isinstance(value, int) and value.bit_length() > self.limits.max_int_bits:
            raise PickleRejected(
                f"refused: integer of {value.bit_length()} bits at byte {pos} "
                f"(limit {self.limits.max_int_bits})"
            )

    def check_len(self, value: Any, pos: int) -> None:
        if len(value) > self.limits.max_str_len:
            raise PickleRejected(
                f"refused: string of {len(value)} characters at byte {pos} "
                f"(limit {self.limits.max_str_len})"
            )


def scan(data: bytes, limits: PickleLimits = DEFAULT_LIMITS) -> None:
    """Refuse (PickleRejected) a pickle that a line_profiler file could not be."""
    if len(data) > limits.max_bytes:
        raise PickleRejected(f"refused: larger than the {limits.max_bytes} byte limit")
    shadow = _Scan(limits, len(data))
    end = 0
    for opcode, arg, pos in _opcodes(data):
        shadow.step(opcode.name, arg, pos if pos is not None else -1)
        if opcode.name == "STOP":
            end = (pos if pos is not None else 0) + 1
    if end != len(data):
        raise PickleRejected(f"corrupt pickle: {len(data) - end} stray bytes after its end")


def _opcodes(data: bytes) -> Iterator[tuple[pickletools.OpcodeInfo, Any, int | None]]:
    """genops, with its decoding errors (any type: it parses untrusted bytes) made ours."""
    stream = io.BytesIO(data)
    ops = pickletools.genops(stream)
    while True:
        try:
            item = next(ops)
        except StopIteration:
            return
        except MemoryError:
            raise  # not the file's fault, and not to be mistaken for a rejection
        except Exception as exc:
            if stream.tell() >= len(data):
                raise PickleRejected("truncated pickle: the file ends inside it") from None
            raise PickleRejected(f"corrupt pickle: {exc}") from None
        yield item


# -- the restricted unpickler -------------------------------------------------------------


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in LINESTATS_CLASSES:
            return StatsStandIn
        raise pickle.UnpicklingError(f"refused to import {module}.{name}")

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("refused a persistent id")


def _restricted_load(data: bytes) -> object:
    unpickler = _RestrictedUnpickler(io.BytesIO(data))
    try:
        return unpickler.load()
    except MemoryError:
        raise  # the scan exists to make this impossible; hiding it would hide a bomb
    except Exception as exc:  # the unpickler parses untrusted bytes: any error is the file's
        raise PickleRejected(f"corrupt pickle: {type(exc).__name__}: {exc}") from None
