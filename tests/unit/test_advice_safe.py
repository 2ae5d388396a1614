"""Issue 12, items 1-8: advice computed from the run that was measured (re-applying the same
evidence changes nothing), coupled, and never harmful (memory, invalid directives,
overwrites), with texts that agree with their numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import tutorial_seff
from tuneadvisor.advisor.measured_allocation import MeasuredAllocation, allocation_facts
from tuneadvisor.cli import main
from tuneadvisor.metrics.model import GpuSample, MetricsSeries
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.units import parse_memory

JOB = """\
#!/bin/bash
#SBATCH --cpus-per-task=1
#SBATCH --mem=8G
#SBATCH --gres=gpu:1

python train.py
"""

TRAIN = """\
from torch.utils.data import DataLoader

loader = DataLoader(dataset, batch_size=64, num_workers=1, pin_memory=True)
for data, target in loader:
    pass
"""


def seff(cores: int, state: str = "COMPLETED", used: str = "1.31 GB", req: str = "8.00 GB") -> str:
    return tutorial_seff(cores=cores, state=state, used=used, requested=req)


def case(tmp_path: Path, job: str = JOB, train: str = TRAIN, seff_text: str = seff(1)) -> Path:
    (tmp_path / "job.sbatch").write_text(job)
    (tmp_path / "train.py").write_text(train)
    (tmp_path / "seff.txt").write_text(seff_text)
    return tmp_path


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def report_json(capsys: pytest.CaptureFixture[str], folder: Path, *extra: str) -> dict:  # type: ignore[type-arg]
    code, out, err = cli(
        capsys, "report", "--format", "json", "--job", str(folder / "job.sbatch"),
        "--seff", str(folder / "seff.txt"), *extra,
    )  # fmt: skip
    assert code == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


# -- 1. from the run that was measured


def test_in_place_twice_with_one_seff_is_in_place_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's 1 -> 4 -> 8 -> 16 cores: the second apply of the same seff writes nothing
    and says the seff is of the 1-core run."""
    folder = case(tmp_path)
    job = str(folder / "job.sbatch")
    code, _, err = cli(
        capsys, "apply", "--job", job, "--seff", str(folder / "seff.txt"), "--in-place"
    )
    assert code == 0, err
    once = (folder / "job.sbatch").read_text()
    assert JobScript.parse(once).directives()["cpus-per-task"] == "4"
    code, out, err = cli(
        capsys, "apply", "--job", job, "--seff", str(folder / "seff.txt"), "--in-place"
    )
    assert code == 0, err
    assert (folder / "job.sbatch").read_text() == once
    assert "this seff is of a 1-core run; the job script now asks for 4 cores" in out
    assert not (folder / "job.sbatch.bak.1").exists()  # nothing changed, nothing backed up


def test_a_script_with_more_cores_than_advised_keeps_them_and_its_workers_follow() -> None:
    from tuneadvisor.advisor.findings import Finding, Severity, Suggestion
    from tuneadvisor.advisor.plan import make_plan

    finding = Finding(
        "under-requested-cores", "t", Severity.WARNING, "g", (),
        Suggestion(sbatch={"cpus-per-task": 4}, script={"num_workers": 3}), "", (), "",
    )  # fmt: skip
    plan = make_plan([finding], {"job.cpus_per_task": 8, "alloc.cpus_per_task": 1})
    assert "cpus-per-task" not in plan.sbatch
    assert plan.script["num_workers"].value == 7  # one core stays with the main process
    assert any("--cpus-per-task 8 kept" in note for note in plan.notes)


def test_measured_allocation_sources_in_order() -> None:
    facts = {"job.cpus_per_task": 4, "job.tasks_total": 2, "seff.cores": 2, "sacct.alloc_cpus": 6}
    alloc, notes = allocation_facts(facts)
    assert alloc["alloc.cpus_per_task"] == 3  # sacct before seff, per task of 2
    assert notes == [
        "this sacct record is of a 3-core run; the job script now asks for 4 cores: the "
        "advice is computed from the run that was measured"
    ]
    alloc, _ = allocation_facts(facts, [MeasuredAllocation("this recording", 5)])
    assert alloc["alloc.cpus_per_task"] == 5  # what the watched job was given comes first
    alloc, notes = allocation_facts({"job.cpus_per_task": 4, "job.mem_mib": 2048.0})
    assert alloc == {"alloc.cpus_per_task": 4, "alloc.mem_mib": 2048.0}
    assert notes == []  # nothing measured: the script is the allocation


def test_a_recording_header_is_the_allocation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The H200 case: a recording made with 4 cores, reported with the old 1-core script."""
    from tuneadvisor.metrics.recording import RecordingHeader

    folder = case(tmp_path)
    header = RecordingHeader(interval_s=1.0, job={"job.cpus_per_task": 4, "job.mem_mib": 8192})
    (folder / "rec.jsonl").write_text(json.dumps(header.to_json()) + "\n")
    doc = report_json(capsys, folder, "--metrics", str(folder / "rec.jsonl"))
    assert doc["advice"]["facts"]["alloc.cpus_per_task"] == 4
    assert doc["advice"]["plan"]["sbatch"]["cpus-per-task"]["value"] == 8
    assert any("this recording is of a 4-core run" in n for n in doc["advice"]["notes"])


# -- 2. one coupled value


def test_findings_show_the_plans_one_value_for_cores_and_workers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = case(tmp_path)
    site = folder / "site.toml"
    site.write_text('[partitions.p]\ncores = 2\nmem = "64G"\n')
    doc = report_json(capsys, folder, "--site", str(site))
    plan = doc["advice"]["plan"]
    assert plan["sbatch"]["cpus-per-task"] == {"value": 2, "because": ["under-requested-cores"]}
    for finding in doc["findings"]:
        for section in ("sbatch", "script"):
            for key, value in finding["suggest"][section].items():
                assert plan[section][key]["value"] == value, (finding["id"], key)


# -- 3. workers that follow SLURM_CPUS_PER_TASK


@pytest.mark.parametrize(
    ("expr", "said"),
    [
        ('int(os.environ["SLURM_CPUS_PER_TASK"]) - 1', "3 workers; one core stays with the main"),
        ('int(os.environ["SLURM_CPUS_PER_TASK"])', "4 workers; every core runs a worker"),
    ],
)
def test_workers_that_follow_the_cores_need_no_patch(
    expr: str, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train = "import os\n" + TRAIN.replace("num_workers=1", f"num_workers={expr}")
    folder = case(tmp_path, train=train)
    doc = report_json(capsys, folder)
    assert doc["advice"]["script_patch"] == ""
    [note] = [n for n in doc["advice"]["notes"] if "SLURM_CPUS_PER_TASK" in n]
    assert "no script change, --cpus-per-task=4 carries through to " + said in note


# -- 4. and 5. memory


def test_oom_with_no_recorded_peak_gets_twice_the_request_never_mem_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = JOB.replace("--mem=8G", "--mem=4G")
    folder = case(tmp_path, job=job, seff_text=seff(1, "OUT_OF_MEMORY", "0.00 MB", "4.00 GB"))
    doc = report_json(capsys, folder)
    assert doc["advice"]["plan"]["sbatch"]["mem"]["value"] == "8G"
    assert any("peak memory was not recorded" in n for n in doc["advice"]["notes"])


def test_a_zero_peak_never_cuts_memory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = case(tmp_path, seff_text=seff(4, used="0.00 MB", req="80.00 GB"))
    doc = report_json(capsys, folder)
    assert "over-requested-memory" not in {f["id"] for f in doc["findings"]}
    assert "mem" not in doc["advice"]["plan"]["sbatch"]


def test_oom_advice_never_lowers_what_the_script_asks_now(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = JOB.replace("--mem=8G", "--mem=32G")  # the user raised it since the 4 GB run
    folder = case(tmp_path, job=job, seff_text=seff(1, "OUT_OF_MEMORY", "3.90 GB", "4.00 GB"))
    doc = report_json(capsys, folder)
    assert "mem" not in doc["advice"]["plan"]["sbatch"]


def test_workers_added_grow_the_memory_floor_from_a_recordings_rss() -> None:
    from tuneadvisor.advisor.findings import Finding, Severity, Suggestion
    from tuneadvisor.advisor.plan import make_plan

    def finding(fid: str, **suggest: object) -> Finding:
        return Finding(fid, "t", Severity.INFO, "g", (), Suggestion(**suggest), "", (), "")  # type: ignore[arg-type]

    found = [
        finding("over-requested-memory", sbatch={"mem": "2G"}),
        finding("under-requested-cores", sbatch={"cpus-per-task": 8}, script={"num_workers": 7}),
    ]
    facts = {
        "usage.mem_peak_mib": 1500.0, "job.mem_mib": 16384.0, "job.cpus_per_task": 2,
        "alloc.workers": 1, "host.proc.rss.max_mib": 3000.0, "host.proc.count.max": 2,
    }  # fmt: skip
    plan = make_plan(found, facts)
    # 1500 MiB with 1 worker; 6 more at 1500 MiB per process: (1500 + 9000) x 1.2 -> 13G
    assert plan.sbatch["mem"].value == "13G"
    assert any("the recording's RSS per process" in n for n in plan.notes)
    # more than the script has: memory is left as it is
    plan = make_plan(found, {**facts, "job.mem_mib": 8192.0})
    assert "mem" not in plan.sbatch


# -- 6. invalid directives


def test_a_misspelled_directive_is_fixed_not_duplicated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = JOB.replace("--cpus-per-task=1", "--cpus-per-tsk=1\n#SBATCH --qux=3")
    folder = case(tmp_path, job=job)
    code, out, err = cli(
        capsys, "apply", "--job", str(folder / "job.sbatch"), "--seff", str(folder / "seff.txt")
    )
    assert code == 0, err
    tuned = JobScript.parse((folder / "job.tuned.sbatch").read_bytes())
    assert tuned.problems == ()
    assert [d.name for d in tuned.occurrences].count("cpus-per-task") == 1
    assert tuned.directives()["cpus-per-task"] == "4"
    assert "line 2: --cpus-per-tsk=1 is no sbatch option: written as --cpus-per-task=1" in out
    assert "line 3: --qux=3 removed: sbatch refuses it" in out


def test_a_site_plugin_option_is_kept_while_a_typo_beside_it_is_fixed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """NERSC's `--image=` (Shifter) and pyxis's `--container-image` are read by that site's
    sbatch: apply keeps them as they are, where a misspelled option next to them is fixed."""
    plugins = "--image=nersc/pytorch:23.07\n#SBATCH --container-image nvcr.io/nvidia/pytorch"
    job = JOB.replace("--cpus-per-task=1", f"--cpus-per-tsk=1\n#SBATCH {plugins}")
    folder = case(tmp_path, job=job)
    code, out, err = cli(
        capsys, "apply", "--job", str(folder / "job.sbatch"), "--seff", str(folder / "seff.txt")
    )
    assert code == 0, err
    text = (folder / "job.tuned.sbatch").read_text()
    assert "#SBATCH --image=nersc/pytorch:23.07\n" in text
    assert "#SBATCH --container-image nvcr.io/nvidia/pytorch\n" in text
    assert "--cpus-per-tsk" not in text and "removed" not in out


def test_an_invalid_value_the_plan_does_not_set_is_kept_not_defaulted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Removing `--nodes=x` would let sbatch's default (one node) apply where the script asked
    for something else: it stays, with a note, for the user to fix (issue 20)."""
    folder = case(tmp_path, job=JOB.replace("--gres=gpu:1", "--gres=gpu:1\n#SBATCH --nodes=x"))
    code, out, err = cli(
        capsys, "apply", "--job", str(folder / "job.sbatch"), "--seff", str(folder / "seff.txt")
    )
    assert code == 0, err
    tuned = JobScript.parse((folder / "job.tuned.sbatch").read_bytes())
    assert tuned.directives()["nodes"] == "x"
    assert [p.id for p in tuned.problems] == ["invalid-directive"]
    assert "line 5: --nodes x kept: sbatch refuses it" in out


# -- 7. overwriting


def test_output_over_an_existing_file_needs_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = case(tmp_path)
    out_file = folder / "mine.sbatch"
    out_file.write_text("#!/bin/bash\n# my own work\n")
    args = ("apply", "--job", str(folder / "job.sbatch"), "--seff", str(folder / "seff.txt"))
    code, _, err = cli(capsys, *args, "-o", str(out_file))
    assert code == 2 and err.count("\n") == 1
    assert f"{out_file}: exists: give --force" in err
    assert out_file.read_text() == "#!/bin/bash\n# my own work\n"
    code, _, err = cli(capsys, *args, "-o", str(out_file), "--force")
    assert code == 0, err
    assert "--cpus-per-task=4" in out_file.read_text()
    code, _, err = cli(capsys, *args, "-o", str(out_file))  # the same bytes again: no loss
    assert code == 0, err


# -- 8. texts agree with their numbers


def test_low_gpu_util_judges_the_busy_gpus_not_a_mean_with_an_idle_one() -> None:
    from tuneadvisor.advisor.engine import evaluate
    from tuneadvisor.workspace.rule_files import load_rules, rule_dirs

    samples = [
        GpuSample(t=float(t), index=i, uuid=f"GPU-{i}", util_pct=util)
        for t in range(20)
        for i, util in ((0, 90.0), (1, 0.0))
    ]
    facts = dict(MetricsSeries.from_samples(samples, ()).facts())
    assert facts["gpu.util.mean"] == pytest.approx(45.0)
    assert facts["gpu.util.busy_mean"] == pytest.approx(90.0)
    ids = evaluate(load_rules(rule_dirs(())), facts).ids()
    assert "some-gpus-idle" in ids and "low-gpu-util" not in ids


def test_the_loader_share_is_a_percent_and_not_called_most_below_half(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tuneadvisor.advisor.engine import evaluate
    from tuneadvisor.workspace.rule_files import load_rules, rule_dirs

    rules = [r for r in load_rules(rule_dirs(())) if r.id == "dataloader-bound"]
    [finding] = evaluate(rules, {"profile.loader_share": 0.3, "alloc.cpus_per_task": 1}).findings
    [share] = [e for e in finding.evidence if e.label.startswith("DataLoader share")]
    assert (share.value, share.unit) == (30.0, "%")
    assert "most" not in finding.rationale.lower().split("when the loop mostly")[0]


def test_memory_never_zero_never_over_the_node() -> None:
    from tuneadvisor.advisor.findings import Finding, Severity, Suggestion
    from tuneadvisor.advisor.plan import Change, make_plan

    def plan_for(mem: str, **facts: object) -> Change | None:
        found = Finding(
            "x", "t", Severity.INFO, "g", (), Suggestion(sbatch={"mem": mem}), "", (), ""
        )
        return make_plan([found], facts).sbatch.get("mem")

    assert plan_for("0") is None
    change = plan_for("900G", **{"node.mem_mib": 512000.0})
    assert change is not None and parse_memory(str(change.value)) == 512000
