"""The fact registry holds producers and rules to one vocabulary.

Every fact a producer emits (profile, job script, training-script scan, seff, sacct, GPU and
host metrics, site file, and gather's usage.* merge) must be registered in
tuneadvisor/advisor/facts.py with a matching type, on every fixture we have; and every fact
a shipped rule reads must be produced by some producer, or the rule could never fire.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.conftest import REPO
from tuneadvisor.advisor.facts import FACTS, type_matches
from tuneadvisor.advisor.measured_allocation import allocation_facts
from tuneadvisor.advisor.site import NodeShape, parse_site
from tuneadvisor.advisor.sizing import model_facts
from tuneadvisor.advisor.slurm_release import release_facts
from tuneadvisor.metrics import gpm
from tuneadvisor.metrics.affinity import affinity_facts
from tuneadvisor.metrics.loader_waits import loader_facts
from tuneadvisor.metrics.model import GpuSample, HostSample, MetricsSeries
from tuneadvisor.metrics.nvidia_smi_csv import parse_nvidia_smi_csv
from tuneadvisor.metrics.snapshot import ROLE_LAUNCHER, ROLE_MAIN, ROLE_WORKER, ProcSample, Snapshot
from tuneadvisor.profile.analysis import analyze
from tuneadvisor.profile.facts import profile_facts
from tuneadvisor.profile.lprof import load_profiles
from tuneadvisor.profile.model import ProfileSet
from tuneadvisor.profile.source import SourceFinder
from tuneadvisor.profile.text_table import parse_table
from tuneadvisor.slurm.accounting.sacct import parse_sacct
from tuneadvisor.slurm.accounting.sacct.gpu import accounting_gpu
from tuneadvisor.slurm.accounting.seff import parse_seff
from tuneadvisor.slurm.client.version import version_facts
from tuneadvisor.slurm.joblog.scan import scan_logs
from tuneadvisor.slurm.jobscript.facts import job_facts
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.launch_line.choose import choose_launch
from tuneadvisor.slurm.launch_line.model import option_values
from tuneadvisor.slurm.launch_line.search import find_launches
from tuneadvisor.trainscript.parsed import parse_script
from tuneadvisor.trainscript.program_facts import program_facts
from tuneadvisor.trainscript.scan import scan_script
from tuneadvisor.workspace.gather import gather
from tuneadvisor.workspace.inputs import Inputs
from tuneadvisor.workspace.read_measured import read_metrics
from tuneadvisor.workspace.rule_files import default_rules_dir, load_rules

FIXTURES = REPO / "tests" / "fixtures"
NOHEADER_COLUMNS = "timestamp,index,utilization.gpu,memory.used,memory.total,power.draw"


def _files(*patterns: str) -> list[Path]:
    found: list[Path] = []
    for pattern in patterns:
        found += sorted(REPO.glob(pattern))
    assert found, patterns
    return found


# --------------------------------------------------------------------------- producers


def profile_outputs() -> Iterator[tuple[str, Mapping[str, object]]]:
    for path in _files(
        "tests/fixtures/lprof/*.lprof",
        "tests/fixtures/advice/*/*.lprof",
        "examples/*/*.lprof",
    ):
        finder = SourceFinder(profile_dirs=(path.parent,), cwd=path.parent)
        yield str(path), profile_facts(analyze(load_profiles([path]), finder))
    # per-rank profiles of real multi-node jobs, merged (the skew between ranks)
    for folder in sorted((FIXTURES / "multinode").iterdir()):
        if folder.is_dir():
            finder = SourceFinder(profile_dirs=(folder,), cwd=folder)
            ranks = sorted(folder.glob("*.lprof"))
            yield str(folder), profile_facts(analyze(load_profiles(ranks), finder))


def trace_outputs(tmp: Path) -> Iterator[tuple[str, Mapping[str, object]]]:
    """trace.*: the real traces one by one, and a GPU trace with [memory] events (none of
    the real ones was recorded with profile_memory=True)."""
    import json

    from tuneadvisor.profile.trace.facts import trace_facts
    from tuneadvisor.profile.trace.reader import read_trace_set

    real = FIXTURES / "realworld" / "traces"
    for path in sorted(real.iterdir()):
        if path.name != "MANIFEST.md":
            yield str(path), trace_facts(read_trace_set([str(path)]))
    gpu, host = {"pid": 0, "tid": 7}, {"pid": 1, "tid": 1}
    memory = {"Device Type": 1, "Device Id": 0, "Total Allocated": 7.0e9}
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "ts": 0, "dur": 50, **host},
        {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 5, **gpu, "args": {}},
        {"ph": "i", "name": "[memory]", "ts": 2, **host, "args": memory},
    ]
    device = {"name": "A100", "computeMajor": 8, "totalGlobalMem": 8.0e9}
    doc = {"deviceProperties": [device], "traceEvents": events}
    path = tmp / "memory.pt.trace.json"
    path.write_text(json.dumps(doc))
    yield str(path), trace_facts(read_trace_set([str(path)]))


def job_outputs() -> Iterator[tuple[str, Mapping[str, object]]]:
    for path in _files(
        "tests/fixtures/jobscripts/*.sh",
        "tests/fixtures/advice/*/job.sbatch",
        "examples/*/*.sbatch",
        "slurm/*.sbatch",
    ):
        job = JobScript.parse(path.read_bytes(), path)
        yield str(path), job_facts(job, choose_launch(find_launches(job, path)))
    # Values the fixtures above may not hold.
    extra = {
        "mem-per-cpu, gpus-per-task": "#SBATCH --mem-per-cpu=4G\n#SBATCH -c 2\n"
        "#SBATCH --ntasks=4\n#SBATCH --gpus-per-task=1\nsrun python t.py\n",
        "gpus over nodes": "#SBATCH --nodes=2\n#SBATCH --gpus=8\n#SBATCH --partition=gpu\n"
        "#SBATCH --time=1-00:00:00\ntorchrun t.py\n",
        "invalid": "#SBATCH --cpus-per-task=72.\r\n#SBATCH --mem=8X\r\npython t.py\r\n",
        "launched with &": "#SBATCH --gres=gpu:1\nsrun python t.py &\n",
        "array past its list": "#SBATCH --array=0-9\nf=(a b)\n"
        "python t.py ${f[$SLURM_ARRAY_TASK_ID]}\n",
        "srun given its cores": "#SBATCH -c 4\n#SBATCH --ntasks=2\nsrun -c 4 python t.py\n",
    }
    for name, text in extra.items():
        job = JobScript.parse("#!/bin/bash\n" + text)
        yield name, job_facts(job, choose_launch(find_launches(job)))


def scan_outputs() -> Iterator[tuple[str, Mapping[str, object]]]:
    for path in _files(
        "tests/fixtures/scan_scripts/*.py",
        "tests/fixtures/training_code/*.py",
        "tests/fixtures/advice/*/*.py",
        "tests/fixtures/jobscripts/*.py",
        "training/*.py",
        "examples/*/*.py",
    ):
        text = path.read_text()
        yield str(path), scan_script(text).facts()
        launch = {"--num-workers": "${SLURM_CPUS_PER_TASK}", "--batch-size": "128"}
        yield f"{path} (launched with options)", scan_script(text, launch).facts()
        literal = option_values(["--num-workers", "7", "--world-size", "4", "--epochs", "1"])
        yield f"{path} (literal options)", scan_script(text, literal).facts()


def _seff_sections(text: str) -> Iterator[str]:
    """seff reports inside the recorded transcripts (after a `$ seff` line)."""
    for match in re.finditer(r"^\$ seff .*\n((?:(?!\$ ).*\n?)*)", text, re.M):
        yield match.group(1)


def _pipe_tables(text: str) -> Iterator[str]:
    """`sacct -P` tables inside the transcripts: a JobID| header and the rows after it."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if line.startswith("JobID|"):
            table = [line]
            for row in lines[index + 1 :]:
                if "|" not in row:
                    break
                table.append(row)
            yield "\n".join(table) + "\n"


def accounting_outputs() -> Iterator[tuple[str, Mapping[str, object]]]:
    reports = 0
    for path in _files("tests/fixtures/slurm-22.05/*.txt"):
        text = path.read_text()
        for number, section in enumerate(_seff_sections(text)):
            reports += 1
            yield f"{path} seff #{number}", parse_seff(section).facts()
        for number, table in enumerate(_pipe_tables(text)):
            for job in parse_sacct(table):
                yield f"{path} sacct table #{number} job {job.job_id}", job.facts()
    assert reports >= 2
    for path in _files("tests/fixtures/slurm-22.05/*sacct*.json"):
        for job in parse_sacct(path.read_text()):
            yield f"{path.name} job {job.job_id}", job.facts()
    for path in _files("tests/fixtures/advice/*/seff.txt"):
        yield str(path), parse_seff(path.read_text()).facts()
    # GPU use in accounting: jobstats' real summaries, a 22.05 job's, Slurm's GPU TRES.
    tres = (
        "JobID|State|AllocTRES|NTasks|TRESUsageInMax\n1|COMPLETED|gres/gpu=1|1|\n"
        "1.batch|COMPLETED||1|gres/gpumem=38888M,gres/gpuutil=100\n"
    )
    tables = [
        (p.name, p.read_text())
        for p in _files("tests/fixtures/realworld/accounting/jobstats-sacct-P-*")
    ]
    for name, text in [*tables, ("gres/gpuutil", tres)]:
        for job in parse_sacct(text):
            found, _ = accounting_gpu(job)
            if found is not None:
                yield f"{name} job {job.job_id} ({found.source})", found.facts


def metrics_outputs() -> Iterator[tuple[str, Mapping[str, object]]]:
    for path in _files("tests/fixtures/nvidia-smi/*.csv", "tests/fixtures/advice/*/*.csv"):
        series = parse_nvidia_smi_csv(path.read_text(), NOHEADER_COLUMNS)
        yield str(path), series.facts()
    # DCGM's outputs (dcgmi dmon, dcgm-exporter) as --metrics reads them
    for path in _files("tests/fixtures/realworld/dcgm/*.txt"):
        dcgm = read_metrics([str(path)])
        assert dcgm is not None
        yield str(path), dcgm.facts()
    # GPM as watch records it: the H200's recorded rounds per load (gpm-h200.json), and the
    # same figures on a GPU without tensor cores (a P100 by name)
    capture = json.loads((FIXTURES / "nvml" / "gpm-h200.json").read_text())
    for load, recorded in capture["loads"].items():
        util = float(recorded["utilization"]["gpu"])
        for name in ("NVIDIA H200", "Tesla P100-PCIE-16GB"):
            samples = [
                GpuSample(t=float(t), index=0, name=name, util_pct=util,
                          **gpm.read_metrics(_answer(r["metrics"])))  # type: ignore[arg-type]
                for t, r in enumerate(recorded["rounds"])
            ]  # fmt: skip
            yield f"GPM {load} on {name}", MetricsSeries.from_samples(samples).facts()
    # Host samples, as `watch` records them (psutil), with and without a process tree.
    host = [
        HostSample(
            t=float(t),
            cpu_pct_per_core=(90.0, 40.0 + t, 10.0, 0.0),
            mem_used_mib=2048.0 + t,
            mem_total_mib=16384.0,
            proc_cpu_pct=120.0 + t,
            proc_rss_mib=900.0,
            proc_count=4,
            main_cpu_pct=95.0,
            workers=3,
            proc_read_mib_s=12.5 * t,
        )
        for t in range(5)
    ]
    gpu = [GpuSample(t=float(t), index=0, util_pct=50.0, power_w=100.0) for t in range(5)]
    yield "host + gpu samples", MetricsSeries.from_samples(gpu, host).facts()
    yield "host only, no tree", MetricsSeries.from_samples((), [HostSample(t=0.0)]).facts()
    # The ranks' CPU affinity (watch reads it per process): one rank bound short.
    procs = (
        ProcSample(pid=1, role=ROLE_LAUNCHER, affinity="0-3"),
        ProcSample(pid=2, role=ROLE_MAIN, rank=0, affinity="0"),
        ProcSample(pid=3, role=ROLE_MAIN, rank=1, affinity="1-3"),
    )
    yield "ranks' CPU affinity", affinity_facts([Snapshot(t=0.0, procs=procs)])
    # The DataLoader workers' states (watch reads them per process).
    tree = (
        ProcSample(pid=2, role=ROLE_MAIN, state="sleeping", cpu_pct=3.0, affinity="0-1"),
        ProcSample(pid=4, role=ROLE_WORKER, state="running", cpu_pct=30.0, affinity="0-1"),
    )
    # with the host's per-core reading: what other processes used of the tree's CPUs
    host_round = HostSample(t=0.0, cpu_pct_per_core=(100.0, 100.0), proc_cpu_pct=33.0)
    yield "DataLoader workers' states", loader_facts([Snapshot(t=0.0, procs=tree, host=host_round)])


def release_outputs() -> Iterator[tuple[str, Mapping[str, object]]]:
    """What a Slurm release means for srun's cores (gather adds it beside a job with srun)."""
    for version in ("22.05.8", "23.11.1", None):
        facts = {} if version is None else version_facts(f"slurm {version}")
        yield f"release {version}", {**facts, **release_facts(facts)}


def site_outputs() -> Iterator[tuple[str, Mapping[str, object]]]:
    site = parse_site(
        '[partitions.gpu]\ncores = 64\nmem = "500G"\ngpus = 8\nmax_cores_per_gpu = 8\n',
        "site.toml",
    )
    node = site.node_for(None)
    assert node is not None
    yield "site.toml", node.facts()
    yield "no gpus", NodeShape(cores=8, gpus=0).facts()


# sacct -P of a job the cgroup OOM killer ended (Slurm says OUT_OF_MEMORY).
OOM_TABLE = """\
JobID|Elapsed|TotalCPU|MaxRSS|ReqMem|AllocCPUS|State|ExitCode
31|00:02:10|00:02:01||8G|1|OUT_OF_MEMORY|0:125
31.batch|00:02:10|00:02:01|8388608K||1|OUT_OF_MEMORY|0:125
"""


def accounting_files() -> Iterator[tuple[str, str, str]]:
    """(name, option, text) of every accounting input in the fixtures."""
    for path in _files("tests/fixtures/slurm-22.05/*.txt"):
        text = path.read_text()
        for number, section in enumerate(_seff_sections(text)):
            yield f"{path.name} seff #{number}", "seff", section
        for number, table in enumerate(_pipe_tables(text)):
            yield f"{path.name} sacct #{number}", "sacct", table
    for path in _files("tests/fixtures/slurm-22.05/*sacct*.json"):
        yield path.name, "sacct", path.read_text()
    yield "OUT_OF_MEMORY", "sacct", OOM_TABLE
    for path in _files("tests/fixtures/advice/*/seff.txt"):
        yield str(path), "seff", path.read_text()


def gather_outputs(tmp: Path) -> Iterator[tuple[str, Mapping[str, object]]]:
    """gather's own facts (usage.*, node.*) with each accounting input, beside a job."""
    tutorial = FIXTURES / "advice" / "tutorial"
    site = tmp / "site.toml"
    site.write_text("[partitions.gpu]\ncores = 64\ngpus = 4\nmax_cores_per_gpu = 16\n")
    metrics = (str(FIXTURES / "nvidia-smi" / "a100-2gpu-one-idle.csv"),)
    for number, (name, option, text) in enumerate(accounting_files()):
        path = tmp / f"accounting-{number}.txt"
        path.write_text(text)
        ids = [job.job_id for job in parse_sacct(text)] if option == "sacct" else [None]
        for job_id in ids:
            evidence = Inputs(
                job=str(tutorial / "job.sbatch"),
                seff=str(path) if option == "seff" else None,
                sacct=str(path) if option == "sacct" else None,
                jobid=job_id if len(ids) > 1 else None,
                site=str(site),
                metrics=metrics,
            )
            yield f"gather ({name}, job {job_id})", gather(evidence, None, env={}).facts
    # A DataLoader built in a module the training script imports.
    helper = Inputs(job=str(FIXTURES / "helper_loader" / "job.sbatch"))
    yield "gather (helper_loader)", gather(helper, None, env={}).facts
    # A profile of another program, a launch option the parser refuses, GPUs left idle.
    other = Inputs(job=str(FIXTURES / "other_program" / "job.sbatch"))
    table = REPO / "examples" / "mnist" / "24752610.txt"
    profile = parse_table(table.read_text(encoding="utf-8"), str(table))
    mnist = analyze(ProfileSet.of([profile]), SourceFinder(profile_dirs=(table.parent,)))
    yield "gather (other_program)", gather(other, mnist, env={}).facts
    same = Inputs(job=str(REPO / "examples" / "mnist" / "mnist.sbatch"))
    profiled = gather(same, mnist, env={}).facts
    yield "gather (the profiled program)", profiled
    # the step-time model's sizing, derived by advise() from the gathered facts
    yield "model_facts (the profiled program)", model_facts(profiled)
    # a real watch recording of workers that mostly sleep: the model's storage-bound case
    recorded = read_metrics([str(FIXTURES / "watch" / "storage-a100.jsonl")])
    assert recorded is not None
    storage: dict[str, object] = dict(recorded.facts())
    storage.update(allocation_facts(storage)[0])
    yield "model_facts (storage-a100 recording)", model_facts(storage)
    ddp = parse_script("import torch\nm = torch.nn.DataParallel(torch.nn.Linear(2, 2).cuda())\n")
    yield "program_facts (DataParallel)", program_facts([ddp], None)


def joblog_outputs() -> Iterator[tuple[str, Mapping[str, object]]]:
    joblogs = "tests/fixtures/realworld/joblogs/"
    for path in _files(f"{joblogs}*.log", f"{joblogs}*.err", f"{joblogs}*.out"):
        yield f"job log {path.name}", scan_logs([path]).facts()


def _answer(metrics: list[dict[str, float]]) -> SimpleNamespace:
    """nvmlGpmMetricsGet's answer as the sampler reads it, from the recorded list."""
    rows = [SimpleNamespace(**m) for m in metrics]
    return SimpleNamespace(numMetrics=len(rows), metrics=rows)


def probe_outputs() -> Iterator[tuple[str, Mapping[str, object]]]:
    """A probe file (training/probekit.py's form), read as probe.* facts."""
    from tests.unit.test_probe_reader import probe_record
    from tuneadvisor.runrecord.probe import parse_probe

    yield "probe (2 workers feed)", parse_probe(probe_record(), "p.json").facts()


def all_outputs(tmp: Path) -> list[tuple[str, Mapping[str, object]]]:
    producers = (
        joblog_outputs(),
        profile_outputs(),
        job_outputs(),
        scan_outputs(),
        accounting_outputs(),
        metrics_outputs(),
        site_outputs(),
        release_outputs(),
        gather_outputs(tmp),
        trace_outputs(tmp),
        probe_outputs(),
    )
    return [output for producer in producers for output in producer]


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, Mapping[str, object]]]:
    return all_outputs(tmp_path_factory.mktemp("registry"))


# --------------------------------------------------------------------------- the checks


def test_every_emitted_fact_is_registered_with_its_type(
    outputs: list[tuple[str, Mapping[str, object]]],
) -> None:
    problems = []
    for where, facts in outputs:
        for name, value in facts.items():
            if name not in FACTS:
                problems.append(f"{where}: {name} is not registered")
            elif not type_matches(name, value):
                problems.append(f"{where}: {name} = {value!r} is not {FACTS[name].type}")
    assert not problems, "\n".join(sorted(set(problems)))


def test_producers_emit_absent_facts_never_none(
    outputs: list[tuple[str, Mapping[str, object]]],
) -> None:
    nones = [
        f"{where}: {name}" for where, facts in outputs for name, v in facts.items() if v is None
    ]
    assert not nones, nones


def _read_by_rules() -> dict[str, set[str]]:
    """fact -> rules that read it (in when, evidence or a suggestion)."""
    readers: dict[str, set[str]] = {}
    for rule in load_rules([default_rules_dir()]):
        expressions = [rule.when, *rule.evidence.values()]
        expressions += [e for table in rule.suggest.values() for e in table.values()]
        for expression in expressions:
            for fact in expression.facts:
                readers.setdefault(fact, set()).add(rule.id)
    return readers


def test_every_fact_a_shipped_rule_reads_is_produced(
    outputs: list[tuple[str, Mapping[str, object]]],
) -> None:
    produced = {name for _, facts in outputs for name in facts}
    readers = _read_by_rules()
    assert readers  # the pack is not empty
    missing = {fact: sorted(rules) for fact, rules in readers.items() if fact not in produced}
    assert not missing, missing


def test_every_rule_condition_fact_is_produced_with_a_value_that_can_fire(
    outputs: list[tuple[str, Mapping[str, object]]],
) -> None:
    """Booleans the rules test are seen both true and false across the fixtures, so no rule
    is stuck on a producer that always says the same."""
    readers = _read_by_rules()
    seen: dict[str, set[object]] = {}
    for _, facts in outputs:
        for name, value in facts.items():
            seen.setdefault(name, set()).add(value)
    for fact in readers:
        if FACTS[fact].type == "bool":
            assert seen[fact] == {True, False}, (fact, seen[fact])


def test_registry_types_and_names_are_well_formed() -> None:
    for name, spec in FACTS.items():
        assert spec.name == name
        assert spec.type in {"int", "float", "bool", "str"}, name
        assert re.fullmatch(r"[a-z][a-z0-9_]*(\.[a-z0-9_]+)+", name), name
        assert spec.description, name


def test_type_matches() -> None:
    assert type_matches("job.cpus_per_task", 4)
    assert not type_matches("job.cpus_per_task", 4.0)
    assert not type_matches("job.cpus_per_task", True)
    assert type_matches("job.mem_mib", 8192)  # an int is a float
    assert not type_matches("job.mem_mib", "8G")
    assert type_matches("job.dos_line_breaks", False)
    assert not type_matches("job.dos_line_breaks", 0)
    assert type_matches("job.partition", "gpu")
    assert not type_matches("job.partition", 1)
