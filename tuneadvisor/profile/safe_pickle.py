"""Unpickling a line_profiler ``.lprof`` file without running anything it asks for.

A pickle is a program for a small stack machine and ``pickle.load`` runs it. ``REDUCE`` calls
whatever callable the file names (a ``__reduce__`` returning ``os.system`` runs any command),
and a nine-byte file, ``PROTO 4; NONE; LONG_BINPUT 0xFFFFFFFF; STOP``, makes the C unpickler
grow and zero its memo array to 2**33 slots (64 GiB) before it notices anything is wrong.

So the bytes are first decoded as ``pickletools.genops`` decodes them (``opcodes``: the same
opcodes and arguments, faster), executing nothing, while a shadow stack tracks only nesting
depth and string values. Anything a
line_profiler file never contains is refused there: code-running opcodes, imports other than
``LineStats``, memo slots that were never (or could not have been) written, oversized
integers and strings, deep nesting. Only then does a restricted unpickler run, whose
``find_class`` hands out an inert stand-in for ``LineStats`` and refuses everything else.
"""

from __future__ import annotations

import io
import pickle
import pickletools
import struct
from collections.abc import Callable, Iterator
from typing import IO, Any, NoReturn

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
_ADD_FROM_MARK = frozenset({"APPENDS", "SETITEMS", "ADDITEMS"})
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

    # One handler per opcode name (``_HANDLERS``, looked up once an opcode; a chain of set
    # tests was a tenth of reading a 50,000-line profile), each given the opcode's argument
    # and byte offset.

    def scalar(self, arg: Any, pos: int) -> None:
        self.stack.append(_SCALAR)

    def big_int(self, arg: Any, pos: int) -> None:
        self.check_int(arg, pos)
        self.stack.append(_SCALAR)

    def text(self, arg: Any, pos: int) -> None:
        self.check_len(arg, pos)
        self.stack.append(_Item(text=arg if isinstance(arg, str) else None))

    def empty(self, arg: Any, pos: int) -> None:
        self.stack.append(_EMPTY)

    def from_mark(self, arg: Any, pos: int) -> None:
        self.push(self.container(self.pop_mark(pos), pos))

    def tuple1(self, arg: Any, pos: int) -> None:
        self.push(self.container(self.pop(1, pos), pos))

    def tuple2(self, arg: Any, pos: int) -> None:
        self.push(self.container(self.pop(2, pos), pos))

    def tuple3(self, arg: Any, pos: int) -> None:
        self.push(self.container(self.pop(3, pos), pos))

    def add_from_mark(self, arg: Any, pos: int) -> None:
        self.add_to_top(self.pop_mark(pos), pos)

    def add_one(self, arg: Any, pos: int) -> None:  # APPEND, BUILD
        self.add_to_top(self.pop(1, pos), pos)

    def add_two(self, arg: Any, pos: int) -> None:  # SETITEM
        self.add_to_top(self.pop(2, pos), pos)

    def memoize(self, arg: Any, pos: int) -> None:
        self.put(len(self.memo), pos)

    def mark(self, arg: Any, pos: int) -> None:
        if len(self.marks) >= self.limits.max_marks:
            raise PickleRejected(f"refused: MARKs nested more than {self.limits.max_marks} deep")
        self.marks.append(len(self.stack))

    def pop_one(self, arg: Any, pos: int) -> None:
        # Like the unpickler: POP with nothing above the last MARK drops the MARK.
        if self.marks and len(self.stack) == self.marks[-1]:
            self.marks.pop()
        else:
            self.pop(1, pos)

    def pop_to_mark(self, arg: Any, pos: int) -> None:
        self.pop_mark(pos)

    def dup(self, arg: Any, pos: int) -> None:
        top = self.pop(1, pos)[0]
        self.push(top)
        self.push(top)

    def newobj(self, arg: Any, pos: int) -> None:
        self.pop(2, pos)
        self.push(_EMPTY)

    def proto(self, arg: Any, pos: int) -> None:
        if arg > pickle.HIGHEST_PROTOCOL:
            raise PickleRejected(f"pickle protocol {arg} is newer than this Python reads")

    def frame(self, arg: Any, pos: int) -> None:
        if arg > self.size - pos:
            raise PickleRejected(f"truncated pickle: a frame at byte {pos} runs past the end")

    def stop(self, arg: Any, pos: int) -> None:
        if len(self.stack) != 1 or self.marks:
            raise PickleRejected(f"corrupt pickle: stack not balanced at STOP (byte {pos})")

    def global_(self, arg: Any, pos: int) -> None:
        self.import_(str(arg), pos)

    def stack_global(self, arg: Any, pos: int) -> None:
        module, qualname = self.pop(2, pos)
        if module.text is None or qualname.text is None:
            raise PickleRejected(f"refused: STACK_GLOBAL at byte {pos} without names")
        self.import_(f"{module.text} {qualname.text}", pos)

    def import_(self, target: str, pos: int) -> None:
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
        stack = self.stack
        cut = len(stack) - count
        if cut < (self.marks[-1] if self.marks else 0):
            raise PickleRejected(f"corrupt pickle: stack underflow at byte {pos}")
        items = stack[cut:]
        del stack[cut:]
        return items

    def pop_mark(self, pos: int) -> list[_Item]:
        if not self.marks:
            raise PickleRejected(f"corrupt pickle: no MARK for the opcode at byte {pos}")
        fence = self.marks.pop()
        items = self.stack[fence:]
        del self.stack[fence:]
        return items

    def container(self, items: list[_Item], pos: int) -> _Item:
        depth = 1  # 1 + the deepest item's (a loop: a generator cost more than the scan)
        for item in items:
            if item.depth >= depth:
                depth = item.depth + 1
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

    def put_arg(self, arg: Any, pos: int) -> None:  # PUT, BINPUT, LONG_BINPUT
        self.put(arg, pos)

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


_Handler = Callable[[_Scan, Any, int], None]
# Each opcode name a line_profiler file may hold, and what it does to the shadow stack; the
# names of _WHY_FORBIDDEN, and any other, are refused.
_HANDLERS: dict[str, _Handler] = {
    **dict.fromkeys(_SCALARS, _Scan.scalar),
    **dict.fromkeys(_BIG_INTS, _Scan.big_int),
    **dict.fromkeys(_TEXTS | _BYTES, _Scan.text),
    **dict.fromkeys(_EMPTY_CONTAINERS, _Scan.empty),
    **dict.fromkeys(_FROM_MARK, _Scan.from_mark),
    "TUPLE1": _Scan.tuple1,
    "TUPLE2": _Scan.tuple2,
    "TUPLE3": _Scan.tuple3,
    **dict.fromkeys(_ADD_FROM_MARK, _Scan.add_from_mark),
    "APPEND": _Scan.add_one,
    "BUILD": _Scan.add_one,
    "SETITEM": _Scan.add_two,
    **dict.fromkeys(_PUTS, _Scan.put_arg),
    "MEMOIZE": _Scan.memoize,
    **dict.fromkeys(_GETS, _Scan.get),
    "MARK": _Scan.mark,
    "POP": _Scan.pop_one,
    "POP_MARK": _Scan.pop_to_mark,
    "DUP": _Scan.dup,
    "GLOBAL": _Scan.global_,
    "STACK_GLOBAL": _Scan.stack_global,
    "NEWOBJ": _Scan.newobj,
    "PROTO": _Scan.proto,
    "FRAME": _Scan.frame,
    "STOP": _Scan.stop,
}


def scan(data: bytes, limits: PickleLimits = DEFAULT_LIMITS) -> None:
    """Refuse (PickleRejected) a pickle that a line_profiler file could not be."""
    if len(data) > limits.max_bytes:
        raise PickleRejected(f"refused: larger than the {limits.max_bytes} byte limit")
    shadow = _Scan(limits, len(data))
    end = 0
    handlers = _HANDLERS
    for name, arg, pos in opcodes(data):
        shadow.ops += 1
        handler = handlers.get(name)
        if handler is None:
            _refuse(name, pos)
        handler(shadow, arg, pos)
        end = pos + 1  # the last is STOP's
    if end != len(data):
        raise PickleRejected(f"corrupt pickle: {len(data) - end} stray bytes after its end")


def _refuse(name: str, pos: int) -> NoReturn:
    if name in _WHY_FORBIDDEN:
        raise PickleRejected(f"refused: pickle opcode {name} at byte {pos} {_WHY_FORBIDDEN[name]}")
    # an opcode newer than the table of handlers: refuse rather than guess
    raise PickleRejected(f"refused: unexpected pickle opcode {name} at byte {pos}")


# Opcode byte -> (name, the struct of a fixed-size argument, else pickletools' reader of a
# variable one); None for a byte that is no opcode. Fixed-size arguments are what
# pickletools reads with one struct format each (read_uint1 .. read_float8).
_FIXED_FORMATS = {"uint1": "<B", "uint2": "<H", "int4": "<i", "uint4": "<I", "uint8": "<Q",
                  "float8": ">d"}  # fmt: skip
_Decoder = tuple[str, struct.Struct | None, Callable[[IO[bytes]], Any] | None]
_DECODERS: list[_Decoder | None] = [None] * 256
for _op in pickletools.opcodes:
    _arg = _op.arg
    _fixed = _arg.name in _FIXED_FORMATS if _arg is not None else False
    _DECODERS[ord(_op.code)] = (
        _op.name,
        struct.Struct(_FIXED_FORMATS[_arg.name]) if _arg is not None and _fixed else None,
        _arg.reader if _arg is not None and not _fixed else None,
    )
del _op, _arg, _fixed
_TRUNCATED = "truncated pickle: the file ends inside it"


def opcodes(data: bytes) -> Iterator[tuple[str, Any, int]]:
    """(name, argument, byte offset) of each opcode up to STOP, as ``pickletools.genops``
    decodes them (tests/unit/test_safe_pickle_decode.py holds it to that), executing
    nothing; any decoding error is a PickleRejected. genops costs a reader call and a stream
    read an opcode: here a fixed-size argument is one ``struct.unpack_from`` at an offset,
    and only the rare variable-size ones (strings, long integers, protocol 0's text) go
    through pickletools' own readers."""
    size = len(data)
    stream: io.BytesIO | None = None
    pos = 0
    while True:
        if pos >= size:  # genops: "pickle exhausted before seeing STOP"
            raise PickleRejected(_TRUNCATED)
        decoder = _DECODERS[data[pos]]
        if decoder is None:
            if pos + 1 >= size:
                raise PickleRejected(_TRUNCATED)
            raise PickleRejected(
                f"corrupt pickle: at position {pos}, opcode {data[pos : pos + 1]!r} unknown"
            )
        name, fixed, reader = decoder
        start = pos + 1
        if fixed is not None:
            end = start + fixed.size
            if end > size:
                raise PickleRejected(_TRUNCATED)
            arg = fixed.unpack_from(data, start)[0]
        elif reader is not None:
            if stream is None:
                stream = io.BytesIO(data)
            stream.seek(start)
            try:
                arg = reader(stream)
            except MemoryError:
                raise  # not the file's fault, and not to be mistaken for a rejection
            except Exception as exc:  # any type: the readers parse untrusted bytes
                if stream.tell() >= size:
                    raise PickleRejected(_TRUNCATED) from None
                raise PickleRejected(f"corrupt pickle: {exc}") from None
            end = stream.tell()
        else:
            arg, end = None, start
        yield name, arg, pos
        if name == "STOP":
            return
        pos = end


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
