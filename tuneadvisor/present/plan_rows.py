"""How the plan reads: each change once, where it goes, and the findings it comes from."""

from __future__ import annotations

from tuneadvisor.advisor.plan import Plan


def plan_rows(plan: Plan) -> list[tuple[str, str, str]]:
    """(where, change, because): ('job script', '#SBATCH --cpus-per-task=4', 'dataloader-bound'),
    ('training', 'num_workers = 3', ...), ('environment', 'export OMP_NUM_THREADS=4', ...)."""
    rows = [("job script", f"#SBATCH --{k}={c.value}", ", ".join(c.because))
            for k, c in plan.sbatch.items()]  # fmt: skip
    rows += [("training", f"{k} = {c.value}", ", ".join(c.because)) for k, c in plan.script.items()]
    rows += [("environment", f"export {k}={c.value}", ", ".join(c.because))
             for k, c in plan.env.items()]  # fmt: skip
    return rows
