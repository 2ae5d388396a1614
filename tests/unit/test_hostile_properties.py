"""Property tests (issue 13): every parser and the rule loader, fed mutations of the real
fixtures and structure-aware hostile inputs, raises only its own error types, within a
time bound (hypothesis's deadline) and a memory bound (tracemalloc's peak). Bounded in
examples so the test command stays fast; `bench/fuzz.py` is the long campaign."""

from __future__ import annotations

import contextlib
import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tuneadvisor.advisor.expressions import ExpressionError, compile_expression
from tuneadvisor.advisor.facts import FACTS, sample_value
from tuneadvisor.advisor.rules import RuleError, parse_rule
from tuneadvisor.advisor.site import parse_site
from tuneadvisor.errors import InputError
from tuneadvisor.files import checked_text, parse_json
from tuneadvisor.metrics.nvidia_smi_csv import NvidiaSmiCsvError, parse_nvidia_smi_csv
from tuneadvisor.metrics.recording import RecordingError, parse_recording
from tuneadvisor.profile.safe_pickle import PickleRejected, load_linestats
from tuneadvisor.profile.table_cells import TableError
from tuneadvisor.profile.text_table import parse_table
from tuneadvisor.relaunch.saved_report import parse_report
from tuneadvisor.relaunch.settings import Settings, settings_from_report
from tuneadvisor.slurm.accounting.sacct import parse_sacct
from tuneadvisor.slurm.accounting.sacct.json_format import parse_sacct_json
from tuneadvisor.slurm.accounting.sacct.records import SacctError
from tuneadvisor.slurm.accounting.seff import SeffError, parse_seff
from tuneadvisor.slurm.client.scontrol import ScontrolError, parse_job
from tuneadvisor.slurm.client.squeue import SqueueError, parse_squeue_json
from tuneadvisor.slurm.client.will_run import WillRunError, parse_will_run
from tuneadvisor.slurm.jobscript.model import JobScript

FIX = Path(__file__).resolve().parent.parent / "fixtures"
REPO = FIX.parent.parent
MEMORY_BOUND = 200 << 20  # bytes Python may allocate for one small input
HOSTILE = [
    "[" * 3000, "{" * 3000, '{"a":' * 1500, "9" * 5000, "NaN", "1e999", "\x00", "\r",
    "\ufeff", "$(touch /tmp/pwned)", "\n;touch x\n", "a." * 500 + "a = 1", "not " * 800,
    "'%2147483000s' % 1", "4000000 ** 4000000", '"' + "x" * 140_000 + '"', "\\", "'", '"',
]  # fmt: skip
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=3),
    max_leaves=8,
)  # fmt: skip


def _seed(*names: str) -> list[str]:
    texts = []
    for name in names:
        for path in sorted((FIX if not name.startswith("/") else REPO).glob(name.lstrip("/"))):
            lines = path.read_text(errors="replace").splitlines(keepends=True)
            texts.append("".join(x for x in lines if not x.startswith("$ ")))
    assert texts, names
    return texts


def mutated(seeds: list[str]) -> st.SearchStrategy[str]:
    """A seed cut, spliced with hostile pieces at line starts or anywhere."""

    @st.composite
    def build(draw: st.DrawFn) -> str:
        text = draw(st.sampled_from(seeds))
        for _ in range(draw(st.integers(0, 3))):
            at = draw(st.integers(0, len(text)))
            if draw(st.booleans()):
                at = text.rfind("\n", 0, at) + 1
            piece = draw(st.sampled_from(HOSTILE) | st.text(max_size=30))
            text = text[:at] + piece + text[at:]
        if draw(st.booleans()):
            text = text[: draw(st.integers(0, len(text)))]
        return text

    return build()


def json_mutated(seed: str) -> st.SearchStrategy[str]:
    """The seed document with one top-level or second-level value replaced."""
    doc = json.loads(seed)

    @st.composite
    def build(draw: st.DrawFn) -> str:
        copy = json.loads(json.dumps(doc))
        key = draw(st.sampled_from(sorted(copy)))
        value = draw(JSON_VALUES)
        if isinstance(copy[key], dict) and copy[key] and draw(st.booleans()):
            copy[key][draw(st.sampled_from(sorted(copy[key])))] = value
        else:
            copy[key] = value
        return json.dumps(copy)

    return build()


def _entry(parse: Callable[[str], object]) -> Callable[[str], object]:
    """The parser behind the bounds its text passes on the way in."""
    return lambda text: parse(checked_text(text, "input", "input"))


def _rule(text: str) -> object:
    return parse_rule(Path("job-failed.toml"), text)


def _report(text: str) -> object:
    doc = parse_json(text, "r.json", "report")
    if not isinstance(doc, dict):
        raise InputError("r.json", "not a report")
    return settings_from_report(Settings(), parse_report(doc, "r.json"))


SAMPLES = {name: sample_value(name) for name in FACTS}


def _expression(text: str) -> object:
    expr = compile_expression(text, frozenset(FACTS))
    try:
        return expr.evaluate(SAMPLES, {})
    except (ArithmeticError, ValueError, TypeError):  # the engine's "no value"
        return None


CASES: dict[str, tuple[Callable[[], st.SearchStrategy[str]], Callable[[str], object], tuple[type[BaseException], ...]]] = {  # noqa: E501
    "job script": (lambda: mutated(_seed("jobscripts/*.sh")), _entry(JobScript.parse), ()),
    "seff": (lambda: mutated(_seed("realworld/accounting/*seff*")), _entry(parse_seff),
             (SeffError,)),
    "sacct -P": (lambda: mutated(_seed("slurm-22.05/16*")), _entry(parse_sacct), (SacctError,)),
    "sacct --json": (lambda: mutated(_seed("slurm-22.05/05-sacct.json"))
                     | json_mutated(_seed("slurm-22.05/05-sacct.json")[0]),
                     _entry(parse_sacct_json), (SacctError,)),
    "squeue --json": (lambda: json_mutated(_seed("slurm-22.05/03-squeue.json")[0]),
                      _entry(parse_squeue_json), (SqueueError,)),
    "scontrol": (lambda: mutated(_seed("slurm-22.05/11*")), _entry(parse_job),
                 (ScontrolError,)),
    "sbatch --test-only": (lambda: mutated(_seed("slurm-local/test-only/*.txt")),
                           _entry(parse_will_run), (WillRunError,)),
    "recording": (lambda: mutated(_seed("watch/*.jsonl")), _entry(parse_recording),
                  (RecordingError,)),
    "nvidia-smi CSV": (lambda: mutated(_seed("nvidia-smi/*.csv")),
                       _entry(parse_nvidia_smi_csv), (NvidiaSmiCsvError,)),
    "line_profiler text": (lambda: mutated(_seed("lprof/lp4.1.3-r.txt")),
                           _entry(lambda t: parse_table(t, "t.txt")), (TableError,)),
    "rule file": (lambda: mutated(_seed("/tuneadvisor/rules/job-failed.toml")),
                  _entry(_rule), (RuleError,)),
    "site file": (lambda: mutated(['[partitions.gpu]\ncpus = 32\nmem = "256G"\ngpus = 4\n']),
                  _entry(lambda t: parse_site(t, "site.toml")), ()),
    "rule expression": (lambda: mutated(["job.cpus_per_task * 2 >= 4",
                                         "max(4, round(profile.loader_share * 100, 1))"]),
                        _expression, (ExpressionError,)),
    "report": (lambda: json_mutated(_seed("/tests/golden/example-report.json")[0]), _report,
               ()),
}  # fmt: skip


@pytest.mark.parametrize("name", CASES)
def test_only_the_parsers_own_errors_escape_within_bounds(name: str) -> None:
    strategy, parse, own_types = CASES[name]
    own: tuple[type[BaseException], ...] = (InputError, *own_types)

    @settings(
        max_examples=40, deadline=2000, database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )  # fmt: skip
    @given(strategy())
    def check(text: str) -> None:
        tracemalloc.start()
        try:
            parse(text)
        except own:
            pass
        finally:
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
        assert peak < MEMORY_BOUND

    check()


@settings(max_examples=40, deadline=2000, database=None)
@given(st.binary(max_size=400))
def test_the_lprof_reader_rejects_any_bytes_with_its_own_error(data: bytes) -> None:
    seed = (FIX / "lprof" / "lp4.1.3.lprof").read_bytes()
    for blob in (data, seed[: len(data)] + data, data + seed[len(data) :]):
        with contextlib.suppress(PickleRejected):
            load_linestats(blob)
