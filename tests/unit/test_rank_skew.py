"""Skew between the ranks of a merged profile: the slowest rank by DataLoader time and by
step time, against the other ranks' median, as facts for the rank-straggler rule."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from tests.conftest import TRAIN_SOURCE, tutorial_profile
from tuneadvisor.advisor.engine import evaluate_rule
from tuneadvisor.advisor.findings import Finding
from tuneadvisor.profile.analysis import ProfileAnalysis, analyze
from tuneadvisor.profile.facts import profile_facts
from tuneadvisor.profile.model import LineTiming, Profile, ProfileSet
from tuneadvisor.profile.skew import rank_skews, skew_text
from tuneadvisor.profile.source import SourceFinder
from tuneadvisor.workspace.rule_files import default_rules_dir, load_rules

STRAGGLER = next(r for r in load_rules([default_rules_dir()]) if r.id == "rank-straggler")


def _rank(folder: Path, rank: int, loader_scale: float = 1.0) -> Profile:
    """The tutorial's profile as one rank's file, its DataLoader line scaled."""
    profile = tutorial_profile(str(folder / "mnist_classify.py"), origin=f"9_{rank}.lprof")
    func = profile.functions[0]
    loader_line = next(
        n for n, t in enumerate(TRAIN_SOURCE.splitlines(), 1) if "for batch_idx" in t
    )
    lines = tuple(
        LineTiming(ln.lineno, ln.hits, ln.time_s * loader_scale) if ln.lineno == loader_line else ln
        for ln in func.lines
    )
    return replace(profile, functions=(replace(func, lines=lines),))


def _analysis(tmp_path: Path, *loader_scales: float) -> ProfileAnalysis:
    (tmp_path / "mnist_classify.py").write_text(TRAIN_SOURCE)
    parts = [_rank(tmp_path, r, s) for r, s in enumerate(loader_scales)]
    return analyze(ProfileSet.of(parts), SourceFinder(profile_dirs=(tmp_path,), cwd=tmp_path))


def _fires(facts: dict[str, object]) -> bool:
    return isinstance(evaluate_rule(STRAGGLER, facts), Finding)


def test_one_rank_loading_four_times_slower_is_a_straggler(tmp_path: Path) -> None:
    analysis = _analysis(tmp_path, 0.1, 0.1, 0.4, 0.1)
    loader = next(s for s in rank_skews(analysis.parts) if s.measure == "DataLoader")
    assert loader.slowest == "9_2.lprof"
    assert round(loader.ratio, 6) == 4.0  # 0.4 against the others' 0.1, whatever the unit
    assert "9_2.lprof" in skew_text(loader) and "4.0x" in skew_text(loader)
    facts = profile_facts(analysis)
    assert facts["profile.skew.rank"] == "9_2.lprof"
    assert facts["profile.skew.measure"] == "DataLoader"
    assert _fires(facts)


def test_balanced_ranks_are_no_finding(tmp_path: Path) -> None:
    facts = profile_facts(_analysis(tmp_path, 1.0, 1.05, 0.97))
    assert isinstance(facts["profile.skew.ratio"], float) and facts["profile.skew.ratio"] < 1.1
    assert not _fires(facts)


def test_one_file_has_no_skew(tmp_path: Path) -> None:
    analysis = _analysis(tmp_path, 1.0)
    assert rank_skews(analysis.parts) == ()
    assert "profile.skew.ratio" not in profile_facts(analysis)


MULTINODE = Path(__file__).resolve().parents[1] / "fixtures" / "multinode"


def _report(folder: Path) -> str:
    ranks = sorted(p.name for p in folder.glob("*.lprof"))
    done = subprocess.run(
        [sys.executable, "-m", "tuneadvisor", "report", *ranks],
        capture_output=True, text=True, check=True, cwd=folder,
    )  # fmt: skip
    return done.stdout


def test_real_straggler_job_names_its_slow_rank() -> None:
    """Job 6 of the multi-node cluster: rank 3 alone decodes JPEGs for every sample."""
    text = _report(MULTINODE / "straggler-2x2")
    assert "rank-straggler" in text
    assert "slowest DataLoader: 6_3.lprof" in text
    assert "slowest rank: 6_3.lprof" in text


def test_real_balanced_six_ranks_are_no_straggler() -> None:
    text = _report(MULTINODE / "ddp-3x2")
    assert "rank-straggler" not in text
    assert all(f"5_{rank}.lprof: " in text for rank in range(6))  # one line per rank
