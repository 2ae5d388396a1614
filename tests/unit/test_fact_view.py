"""The typed view of the facts (advisor/fact_view.py): every field is a registered fact of
the registry's type, a misspelt one stops the import, the view reads what the flat mapping
holds, and advise() builds it and the step-time model once."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tuneadvisor.advisor.sizing as sizing_module
from tuneadvisor.advisor import fact_view
from tuneadvisor.advisor.advice import advise
from tuneadvisor.advisor.evidence import Gathered
from tuneadvisor.advisor.fact_view import (
    SECTIONS,
    FactView,
    Job,
    Section,
    check,
    field_kind,
    first,
    positive,
    view,
)
from tuneadvisor.advisor.facts import FACTS, type_matches
from tuneadvisor.advisor.sizing import model_facts
from tuneadvisor.advisor.steptime import step_budget
from tuneadvisor.workspace.rule_files import default_rules_dir, load_rules

NAMES = sorted({name for section in SECTIONS for name in section.names().values()})


def test_every_field_is_a_registered_fact_of_its_type() -> None:
    seen = set()
    for section in SECTIONS:
        for field, name in section.names().items():
            assert name in FACTS, f"{section.__name__}.{field}"
            assert field_kind(section, field) == FACTS[name].type, f"{section.__name__}.{field}"
            assert name.startswith(section.PREFIX + ".")
            assert name not in seen  # one field per fact
            seen.add(name)
    # every section is in the view under its prefix
    assert [f.name for f in dataclasses.fields(FactView)] == [s.PREFIX for s in SECTIONS]


def test_a_misspelt_or_mistyped_field_is_refused() -> None:
    @dataclass(frozen=True)
    class Misspelt(Section):
        PREFIX = "usage"
        mem_peak_mb: float | None = None  # usage.mem_peak_mib

    @dataclass(frozen=True)
    class Mistyped(Section):
        PREFIX = "job"
        cpus_per_task: float | None = None  # an int fact

    with pytest.raises(TypeError, match=r"usage\.mem_peak_mb is not a registered fact"):
        check(Misspelt)
    with pytest.raises(TypeError, match=r"job\.cpus_per_task is int"):
        check(Mistyped)
    with pytest.raises(KeyError):
        fact_view.Usage.fact_name("mem_peak_mb")


# values of every kind, right and wrong, for the names the view reads
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=5),
)


@given(st.dictionaries(st.sampled_from(NAMES), VALUES))
@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)  # slow only under load
def test_the_view_agrees_with_the_raw_lookups(facts: dict[str, object]) -> None:
    """Each field is the fact's value where it has the registry's type (an int fact also
    from a whole float), None where it is absent or of another type; and a section's facts()
    are the well-typed facts it read."""
    typed = view(facts)
    for section in SECTIONS:
        part = getattr(typed, section.PREFIX)
        for field, name in section.names().items():
            raw, got = facts.get(name), getattr(part, field)
            kind = FACTS[name].type
            if raw is not None and type_matches(name, raw):
                assert got == raw and type(got) is type(raw)
            elif kind == "int" and isinstance(raw, float) and raw.is_integer():
                assert got == raw and type(got) is int
            else:
                assert got is None
        written = part.facts()
        assert set(written) <= set(facts)
        assert all(type_matches(name, value) for name, value in written.items())


@given(st.lists(st.one_of(st.none(), st.integers(-5, 5), st.floats(-5, 5)), max_size=4))
def test_the_helpers(values: list[Any]) -> None:
    given_ = [v for v in values if v is not None]
    assert first(*values) == (given_[0] if given_ else None)
    for v in values:
        assert positive(v) == (v if v is not None and v > 0 else None)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often advise() builds the budget and sizes the pipeline."""
    calls = {"step_budget": 0, "size": 0}

    def counting(name: str, real: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return real(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(sizing_module, "step_budget", counting("step_budget", step_budget))
    monkeypatch.setattr(sizing_module, "size", counting("size", sizing_module.size))
    return calls


def test_advise_builds_the_step_time_model_once(counted: dict[str, int]) -> None:
    """A trace of a loader-bound run with a capped node: the model's facts, the plan and the
    prediction (with its ceiling) all come from one budget and one sizing."""
    facts: dict[str, object] = {
        "trace.dataloader_share": 0.7,
        "trace.kernel_share": 0.25,
        "trace.step_s": 0.12,
        "trace.steps": 3,
        "alloc.workers": 1,
        "alloc.cpus_per_task": 2,
        "job.cpus_per_task": 2,
        "job.ranks_per_task": 1,
        "job.tasks_per_node": 1,
        "node.cores": 4,
    }
    advice = advise(Gathered(facts=facts), load_rules([default_rules_dir()]))
    assert advice.prediction is not None and advice.prediction.ceiling is not None
    assert counted == {"step_budget": 1, "size": 1}
    # the facts the rules read are the model's, as model_facts gives them alone
    assert {k: v for k, v in advice.facts.items() if k.startswith("model.")} == model_facts(facts)


def test_few_fact_names_are_written_as_strings() -> None:
    """The Python that uses facts reads the view (issue 29: at most 40 names as strings in
    advisor/, present/, relaunch/ and workspace/; bench/fact_names.py lists them)."""
    from bench.fact_names import found

    rows = found()
    assert len(rows) <= 40, "\n".join(f"{f}:{line}: {name}" for f, line, name in rows)


def test_a_section_behaves_as_a_frozen_dataclass_without_eq() -> None:
    """Sections are built without dataclasses (their generated code cost ~20 ms of every
    start, issue 29): fields by keyword, None where not given, read-only, equal only to
    themselves, shown and replaced as a dataclass's."""
    job = Job(cpus_per_task=4, partition="gpu")
    assert (job.cpus_per_task, job.partition, job.nodes) == (4, "gpu", None)
    assert job.FIELDS[:2] == ("cpus_per_task", "mem_mib")
    assert repr(job).startswith("Job(cpus_per_task=4, mem_mib=None,")
    assert job != Job(cpus_per_task=4, partition="gpu") and job == job
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.nodes = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del job.nodes
    with pytest.raises(TypeError, match="unexpected keyword argument 'cpus'"):
        Job(cpus=4)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Job(4)  # type: ignore[call-arg]
    moved = job.replace(nodes=2)
    assert (moved.nodes, moved.cpus_per_task, job.nodes) == (2, 4, None)
    for section in SECTIONS:  # every annotated name a field, in the order written
        assert tuple(section.__annotations__) == section.FIELDS


def test_a_section_field_defaults_to_none() -> None:
    with pytest.raises(TypeError, match="default to None"):

        class Defaulted(Section):
            PREFIX = "job"
            nodes: int | None = 1
