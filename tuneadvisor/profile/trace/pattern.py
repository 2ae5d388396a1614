"""Iterations from the repeated sequence of top-level host ops, where a trace marks none.

A trace profiled without a schedule (``export_chrome_trace`` around a loop, no
``prof.step()``) has no ``ProfilerStep#N``; one without ``torch.optim`` (inference, a hand
written update) has no ``Optimizer.step#`` either. Its training loop still shows: the ops no
other op encloses, on the loop's thread, repeat one block per iteration (``aten::to``, the
forward's ops, ``aten::ones_like`` of ``backward()``, the update). The block is the period
over which the sequence repeats exactly for the longest stretch (else an op that recurs at
near-equal gaps bounds copies nearly alike); each copy of it is one iteration, from its first
op to the next copy's first op (the last: to its last op's end), where every copy holds a
DataLoader fetch or a backward pass (a forward's repeated layers hold neither).

Bounded (issue 34): one thread's ``MAX_HOST_OPS`` host ops are looked at, the first
``MAX_TOP_OPS`` top-level ones, and ``MAX_PERIODS`` candidate periods are checked whole
(each ``O(n)``); the rest are ranked on ``SAMPLES`` positions. Nothing found is no guess: the
trace is then read as one span, as before.
"""

from __future__ import annotations

import bisect
from array import array
from collections import Counter
from dataclasses import dataclass
from itertools import pairwise

from tuneadvisor.profile.trace import classify as c
from tuneadvisor.profile.trace.collect import CODE, Collected

MAX_HOST_OPS = 400_000  # of the chosen thread; past it no pattern is looked for
MAX_TOP_OPS = 100_000  # top-level ops in the sequence (a real iteration holds ~10-5,000)
MAX_PERIODS = 8  # candidate periods checked over the whole sequence
MAX_GAP_K = 4  # a name that occurs k times an iteration repeats at its (j, j + k) gap
SAMPLES = 512  # positions a candidate period is first ranked on
MAX_POOL = 256  # candidate periods ranked on the samples
MIN_COPIES = 2
MIN_BLOCK = 2  # ops in one iteration: one op repeated is no loop's body
MIN_COVERED = 0.5  # the copies hold at least this share of the thread's top-level ops
SAME_OPS = 0.9  # of one copy's ops, the share the next copy holds too (where not exact)

_OPS = frozenset({CODE[c.CPU_OP], CODE[c.DATALOADER], CODE[c.COMM_HOST]})
_DATALOADER = CODE[c.DATALOADER]


@dataclass(frozen=True)
class Pattern:
    """The copies found: each one iteration's host span, and what they were found from."""

    spans: tuple[tuple[float, float], ...]  # (start, end) µs of each copy
    block: int  # top-level ops in one copy (the usual count, where copies differ a little)
    exact: bool  # every copy the same ops in the same order
    covered: float  # the copies' share of the thread's top-level ops
    thread: str  # the thread's pid/tid, as the trace wrote them
    first_op: str  # the op each copy starts with
    cut: bool  # the thread held more top-level ops than MAX_TOP_OPS: the rest not looked at
    # what each copy holds that makes it an iteration; None: neither a DataLoader fetch nor
    # a backward pass in every copy, so the copies are not taken as iterations
    mark: str | None = "a backward pass"

    def note(self) -> str:
        cut = f" (its first {MAX_TOP_OPS:,} looked at)" if self.cut else ""
        same = "the same block" if self.exact else "a block"
        about = "" if self.exact else "about "
        found = (
            f"{same} of {about}{self.block} top-level ops repeated on thread "
            f"{self.thread}{cut}, each copy starting at {self.first_op!r}"
        )
        if self.mark is None:
            return (
                f"no ProfilerStep#N and no optimizer steps: {found}, {len(self.spans)} copies "
                f"holding {self.covered:.0%} of its top-level ops, but no copy fetches a batch "
                "or runs backward (a loop of forward passes and one forward's repeated layers "
                "look alike): not taken as iterations"
            )
        return (
            f"no ProfilerStep#N and no optimizer steps: {len(self.spans)} iterations inferred "
            f"from {found} and holding {self.mark}, together {self.covered:.0%} of its "
            "top-level ops; what lies outside them (set-up, a last partial iteration) is in "
            "no step"
        )


def find(col: Collected) -> Pattern | None:
    """The repeated block of the loop's thread, or None when no block repeats enough. Its
    copies are iterations only where ``mark`` says what makes them so."""
    thread = _loop_thread(col)
    if thread is None:
        return None
    tops = _top_level(col, thread)
    if tops is None:
        return None
    cut = len(tops) > MAX_TOP_OPS
    del tops[MAX_TOP_OPS:]
    seq = array("i", (col.names[i] for i in tops))
    where: dict[int, list[int]] = {}
    for pos, name in enumerate(seq):
        where.setdefault(name, []).append(pos)
    exact = True
    copies = _exact(col, tops, seq, where)
    if copies is None:
        exact = False
        copies = _anchored(col, tops, seq, where)
    if copies is None:
        return None
    spans = []
    for k, (lo, hi) in enumerate(copies):
        if k + 1 < len(copies) and copies[k + 1][0] == hi:
            end = col.starts[tops[hi]]  # to the next iteration's first op: its Python too
        else:
            end = max(col.ends[tops[j]] for j in range(lo, hi))
        spans.append((col.starts[tops[lo]], max(col.starts[tops[lo]], end)))
    mark = _iteration_mark(col, spans)
    sizes = sorted(hi - lo for lo, hi in copies)
    pid, tid = next(key for key, v in col.tid_ids.items() if v == thread)
    return Pattern(
        spans=tuple(spans),
        block=sizes[len(sizes) // 2],
        exact=exact,
        covered=sum(sizes) / len(seq),
        thread=f"{pid}/{tid}"[:40],
        first_op=col.name(seq[copies[0][0]])[:80],
        cut=cut,
        mark=mark,
    )


def _iteration_mark(col: Collected, spans: list[tuple[float, float]]) -> str | None:
    """What makes each copy a training iteration and not a layer: a DataLoader fetch or a
    backward pass (autograd's ops, on any thread) in every one. A model's forward repeats
    its blocks too (ResNet's stages: the real torch 1.13 traces of one forward in
    tests/fixtures/realworld/traces), with neither."""
    starts = [s for s, _ in spans]
    found = {"a DataLoader fetch": [False] * len(spans), "a backward pass": [False] * len(spans)}
    marks: dict[int, str | None] = {}
    for i, kind in enumerate(col.kinds):
        if kind not in _OPS:
            continue
        name_id = col.names[i]
        mark = marks.get(name_id, "")
        if mark == "":
            mark = marks[name_id] = _mark_of(kind, col.name(name_id))
        if mark is None:
            continue
        k = bisect.bisect_right(starts, col.starts[i]) - 1
        if k >= 0 and col.starts[i] < spans[k][1]:
            found[mark][k] = True
    return next((mark for mark, seen in found.items() if all(seen)), None)


def _mark_of(kind: int, name: str) -> str | None:
    if kind == _DATALOADER and c.is_dataloader_call(name):
        return "a DataLoader fetch"
    if name.startswith("autograd::engine::evaluate_function") or "Backward" in name:
        return "a backward pass"
    return None


def _exact(
    col: Collected, tops: list[int], seq: array[int], where: dict[int, list[int]]
) -> list[tuple[int, int]] | None:
    """Copies of one block, op for op: the period over which the sequence repeats itself
    for the most ops (the shortest such: the iteration, not two of them)."""
    best: tuple[int, int, int, int] | None = None  # (covered ops, -period, start, length)
    for p in _candidates(seq, where):
        start, length = _longest_run(seq, p)
        copies = length // p
        if copies >= MIN_COPIES and (best is None or (copies * p, -p) > best[:2]):
            best = (copies * p, -p, start, length)
    if best is None or best[0] < MIN_COVERED * len(seq):
        return None
    p = -best[1]
    start, copies = _phase(col, tops, seq, best[2], best[3], p)
    if copies < MIN_COPIES:
        return None
    return [(start + k * p, start + (k + 1) * p) for k in range(copies)]


def _anchored(
    col: Collected, tops: list[int], seq: array[int], where: dict[int, list[int]]
) -> list[tuple[int, int]] | None:
    """Copies that differ by a few ops (a real loop's iterations seldom match op for op):
    bounded by an op that recurs at near-equal gaps (within a tenth), once an iteration,
    where each copy holds nine tenths of the next one's ops. The one that bounds the most
    ops wins; then a DataLoader fetch, then the earliest."""
    n = len(seq)
    found: list[tuple[tuple[int, bool, int], list[tuple[int, int]]]] = []
    for name, pos in where.items():
        if len(pos) < MIN_COPIES or len(pos) > n // MIN_BLOCK:
            continue
        gaps = sorted(b - a for a, b in pairwise(pos))
        mid = gaps[len(gaps) // 2]
        slack = max(1, mid // 10)
        if mid < MIN_BLOCK or gaps[0] < mid - slack or gaps[-1] > mid + slack:
            continue
        copies = list(pairwise(pos))
        if n - pos[-1] >= mid - slack:  # the last copy: as long as the others, no longer
            copies.append((pos[-1], min(n, pos[-1] + mid + slack)))
        covered = copies[-1][1] - copies[0][0]
        if len(copies) < MIN_COPIES or covered < MIN_COVERED * n:
            continue
        loader = col.kinds[tops[pos[0]]] == _DATALOADER and c.is_dataloader_call(col.name(name))
        found.append(((covered, loader, -pos[0]), copies))
    found.sort(key=lambda f: f[0], reverse=True)
    for _, copies in found[:MAX_PERIODS]:  # each checked in O(n)
        if all(_alike(seq, a, b) for a, b in pairwise(copies)):
            return copies
    return None


def _alike(seq: array[int], a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether two copies hold nearly the same ops (as multisets: nine tenths shared)."""
    left, right = Counter(seq[a[0] : a[1]]), Counter(seq[b[0] : b[1]])
    shared = sum((left & right).values())
    return shared >= SAME_OPS * max(a[1] - a[0], b[1] - b[0])


def _loop_thread(col: Collected) -> int | None:
    """The training loop's thread: the main thread (its tid is its pid, as Linux numbers
    it) where the trace shows one, else the thread whose host ops span the longest time."""
    span: dict[int, list[float]] = {}
    for i, kind in enumerate(col.kinds):
        if kind in _OPS:
            row = span.get(col.tids[i])
            if row is None:
                span[col.tids[i]] = [col.starts[i], col.ends[i], 1]
            else:
                row[0] = min(row[0], col.starts[i])
                row[1] = max(row[1], col.ends[i])
                row[2] += 1
    if not span:
        return None
    keys = {v: k for k, v in col.tid_ids.items()}
    main = [t for t in span if t in keys and str(keys[t][0]) == str(keys[t][1])]
    pool = main or list(span)
    return max(pool, key=lambda t: (span[t][1] - span[t][0], span[t][2], -t))


def _top_level(col: Collected, thread: int) -> list[int] | None:
    """The thread's host ops no other op of it encloses, in time order."""
    ops = [i for i in range(len(col.kinds)) if col.tids[i] == thread and col.kinds[i] in _OPS]
    if len(ops) > MAX_HOST_OPS or len(ops) < MIN_COPIES * MIN_BLOCK:
        return None
    ops.sort(key=col.starts.__getitem__)  # a float key: a (start, -end) tuple each is 3x
    kept: list[int] = []
    end = float("-inf")
    for i in ops:
        if col.starts[i] >= end:
            kept.append(i)
            end = col.ends[i]
        elif col.starts[i] == col.starts[kept[-1]] and col.ends[i] > end:
            kept[-1] = i  # an op and its first child start together: the op is the top one
            end = col.ends[i]
    return kept


def _candidates(seq: array[int], where: dict[int, list[int]]) -> list[int]:
    """Periods worth checking, best first. A name that occurs once an iteration recurs at
    the period (k times: at its (j, j + k) gap), so each name's most usual gap and the
    gaps most names share are candidates; they are ranked by how often the sequence matches
    itself that far on, at evenly spread positions."""
    n = len(seq)
    votes: Counter[int] = Counter()  # names whose most usual gap this is
    gaps: Counter[int] = Counter()  # (j, j + k) gaps of every name, k up to MAX_GAP_K
    for pos_list in where.values():
        own: Counter[int] = Counter()
        for k in range(1, min(MAX_GAP_K, len(pos_list) - 1) + 1):
            for a, b in zip(pos_list, pos_list[k:], strict=False):
                if MIN_BLOCK <= b - a <= n // MIN_COPIES:
                    gaps[b - a] += 1
                    if k == 1:
                        own[b - a] += 1
        if own:
            votes[own.most_common(1)[0][0]] += 1
    pool = {p for p, _ in votes.most_common(MAX_POOL)} | {p for p, _ in gaps.most_common(64)}
    ranked = []
    for p in pool:
        tried = range(0, n - p, max(1, (n - p) // SAMPLES))
        hits = sum(seq[i] == seq[i + p] for i in tried)
        ranked.append((-hits / len(tried), p))
    ranked.sort()
    return [p for _, p in ranked[:MAX_PERIODS]]


def _longest_run(seq: array[int], p: int) -> tuple[int, int]:
    """The start and length of the longest stretch that repeats itself ``p`` ops on."""
    best_start, best_len = 0, 0
    run_start = 0
    n = len(seq)
    for i in range(n - p + 1):
        if i == n - p or seq[i] != seq[i + p]:
            if i - run_start > best_len:
                best_start, best_len = run_start, i - run_start
            run_start = i + 1
    return best_start, best_len + p if best_len else 0


def _phase(
    col: Collected, tops: list[int], seq: array[int], start: int, length: int, p: int
) -> tuple[int, int]:
    """Where each copy begins, and how many whole copies the stretch holds: at the block's
    DataLoader fetch when it has one (a loop over a DataLoader begins each iteration with
    it) and no copy is lost by it, else where the repeats begin."""
    for r in range(p):
        i = tops[start + r]
        if col.kinds[i] == _DATALOADER and c.is_dataloader_call(col.name(seq[start + r])):
            if (length - r) // p == length // p:
                return start + r, length // p
            break
    return start, length // p
