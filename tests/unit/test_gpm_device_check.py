"""What tuneadvisor's own sampler read on an H200 under known loads (bench/gpm_device_check.py,
recorded in tests/fixtures/nvml/gpm-check-h200.json): today's rule pack, over the facts the
device's series gave, still names each load as the device run did, and only from SM-level
figures (utilization read 100 % under all three)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tuneadvisor.advisor.engine import evaluate
from tuneadvisor.workspace.rule_files import default_rules_dir, load_rules

RECORDED = Path(__file__).parents[1] / "fixtures" / "nvml" / "gpm-check-h200.json"
SM_LEVEL = {"busy-but-underused", "tensor-cores-idle", "memory-bandwidth-bound"}
LOADS: dict[str, Any] = json.loads(RECORDED.read_text())


@pytest.mark.parametrize("load", sorted(LOADS))
def test_the_rules_name_each_load_the_device_sampled(load: str) -> None:
    run = LOADS[load]
    assert run["ok"] and not run["problems"] and run["activity_reason"] is None
    found = {f.id for f in evaluate(load_rules([default_rules_dir()]), run["facts"]).findings}
    assert found & SM_LEVEL == set(run["expected"])


def test_utilization_alone_could_not_tell_the_loads_apart() -> None:
    """The point of SM activity: NVML's utilization read 98-100 % for all three loads."""
    utils = {load: LOADS[load]["facts"]["gpu.util.mean"] for load in LOADS}
    assert min(utils.values()) >= 95.0
    sm = {load: LOADS[load]["facts"]["gpu.sm_active.mean"] for load in LOADS}
    assert sm["tiny_graph"] < 5.0 < 90.0 < sm["bf16_matmul"]


def test_without_the_sm_figures_no_sm_level_rule_judges() -> None:
    """Utilization alone never answers an SM-level question: strip the GPM facts and the
    SM-level rules are skipped, not fired or cleared."""
    rules = load_rules([default_rules_dir()])
    for run in LOADS.values():
        facts = {
            k: v
            for k, v in run["facts"].items()
            if not k.startswith(("gpu.sm_", "gpu.tensor_", "gpu.dram_", "gpu.activity"))
        }
        result = evaluate(rules, facts)
        assert not {f.id for f in result.findings} & SM_LEVEL
        assert {s.id for s in result.skipped} >= SM_LEVEL
