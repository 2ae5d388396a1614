"""The training-script scan: real-world scripts in, the advisor's `script.*` facts out.

Line numbers are found by searching the fixture text, never written down.
"""

from __future__ import annotations

import dataclasses
import sysconfig
import textwrap
import time
from collections.abc import Mapping
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import line_of
from tuneadvisor.advisor import facts as registry
from tuneadvisor.trainscript.fact_rows import FACT_ROWS
from tuneadvisor.trainscript.scan import ScriptScan, scan_script
from tuneadvisor.trainscript.scans.results import SOURCES

SCRIPTS = Path(__file__).resolve().parent.parent / "fixtures" / "scan_scripts"


def fixture(name: str) -> str:
    return (SCRIPTS / name).read_text(encoding="utf-8")


def scan(name: str, launch_args: Mapping[str, str] | None = None) -> tuple[str, dict[str, object]]:
    text = fixture(name)
    return text, scan_script(text, launch_args).facts()


def snippet(source: str, launch_args: Mapping[str, str] | None = None) -> ScriptScan:
    return scan_script(textwrap.dedent(source), launch_args)


# --------------------------------------------------------------------------- real scripts


def test_mnist_example_reads_workers_through_update_of_cuda_kwargs() -> None:
    text, facts = scan("mnist_main.py")
    assert facts["script.dataloaders"] == 2
    assert facts["script.dataloader.name"] == "train_loader"
    assert facts["script.dataloader.line"] == line_of(text, "train_loader = torch.utils")
    assert facts["script.num_workers"] == 1
    assert facts["script.num_workers.source"] == "literal"
    assert facts["script.num_workers.line"] == line_of(text, "cuda_kwargs = {'num_workers': 1")
    assert facts["script.num_workers.conditional"] is True  # only under `if use_cuda:`
    assert facts["script.pin_memory"] is True
    assert facts["script.pin_memory.line"] == line_of(text, "'pin_memory': True")
    assert facts["script.persistent_workers"] is False
    assert facts["script.persistent_workers.source"] == "default"
    assert facts["script.batch_size"] == 64
    assert facts["script.batch_size.option"] == "--batch-size"
    assert facts["script.ddp"] is False
    assert facts["script.amp"] is False


def test_mnist_example_logs_every_n_steps_and_evaluates_without_counting() -> None:
    text = fixture("mnist_main.py")
    result = scan_script(text)
    facts = result.facts()
    assert facts["script.sync_in_loop.count"] == 1
    assert facts["script.sync_in_loop.unguarded"] == 0
    (step_sync,) = result.step_syncs
    assert step_sync.kind == "item"
    assert step_sync.line == line_of(text, "100. * batch_idx / len(train_loader), loss.item()")
    assert step_sync.guard == "batch_idx % args.log_interval == 0"
    # The test loop syncs too, but it is not a training step.
    eval_lines = {s.line for s in result.syncs if s.per_step and not s.training}
    assert eval_lines == {line_of(text, "reduction='sum').item()"), line_of(text, "correct +=")}
    test_loader = result.dataloaders[1]
    assert test_loader.name == "test_loader"
    assert test_loader.params["batch_size"].value == 1000
    assert test_loader.params["batch_size"].option is not None
    assert test_loader.params["batch_size"].option.name == "--test-batch-size"


def test_tutorial_with_a_literal_worker_count_and_a_sync_every_step() -> None:
    text, facts = scan("cifar10_tutorial.py")
    assert facts["script.dataloader.name"] == "trainloader"
    assert facts["script.num_workers"] == 1
    assert facts["script.num_workers.source"] == "literal"
    assert facts["script.num_workers.line"] == line_of(text, "shuffle=True, num_workers=1")
    assert facts["script.num_workers.conditional"] is False
    assert facts["script.batch_size"] == 4  # through `batch_size = 4`
    assert facts["script.pin_memory"] is False
    assert facts["script.pin_memory.source"] == "default"
    assert facts["script.sync_in_loop.count"] == 1
    assert facts["script.sync_in_loop.unguarded"] == 1
    assert facts["script.sync_in_loop.line"] == line_of(text, "running_loss += loss.item()")


def test_ddp_under_srun_with_distributed_sampler_and_set_epoch() -> None:
    text, facts = scan("ddp_slurm.py")
    assert facts["script.ddp"] is True
    assert facts["script.ddp.init"] is True
    assert facts["script.ddp.backend"] == "nccl"
    assert facts["script.ddp.distributed_sampler"] is True
    assert facts["script.ddp.set_epoch"] is True
    assert facts["script.ddp.spawn"] is False
    assert facts["script.ddp.slurm_env"] is True
    assert facts["script.ddp.torchrun_env"] is False
    assert facts["script.sampler"] == "DistributedSampler"
    assert facts["script.world_size.source"] == "slurm_env"
    assert facts["script.world_size.env"] == "SLURM_NTASKS"
    assert "script.world_size.literal" not in facts
    assert facts["script.rank.env"] == "SLURM_PROCID"
    assert facts["script.local_rank.env"] == "SLURM_LOCALID"
    assert facts["script.num_workers.source"] == "slurm_env"
    assert facts["script.num_workers.env"] == "SLURM_CPUS_PER_TASK"
    assert facts["script.num_workers.line"] == line_of(text, 'num_workers=int(os.environ["SLURM')
    assert "script.num_workers" not in facts  # only the job knows the value
    assert facts["script.sync_in_loop.unguarded"] == 0
    assert facts["script.sync_in_loop.guarded"] == 1


def test_ddp_without_set_epoch() -> None:
    text = fixture("ddp_slurm.py").replace("train_sampler.set_epoch(epoch)", "pass")
    facts = scan_script(text).facts()
    assert facts["script.ddp.distributed_sampler"] is True
    assert facts["script.ddp.set_epoch"] is False


def test_ddp_spawn_without_sampler_and_a_hard_coded_world_size() -> None:
    text, facts = scan("ddp_spawn_no_sampler.py")
    assert facts["script.ddp"] is True
    assert facts["script.ddp.distributed_sampler"] is False
    assert facts["script.ddp.set_epoch"] is False
    assert facts["script.ddp.spawn"] is True
    assert facts["script.world_size.literal"] == 4
    assert facts["script.world_size.line"] == line_of(text, "world_size = 4")
    assert facts["script.nprocs.literal"] == 4
    assert facts["script.num_workers.source"] == "cpu_count"
    assert facts["script.num_workers.cpu_call"] == "os.cpu_count"
    assert "script.num_workers" not in facts  # the node's cores, not the allocation's


def test_ddp_spawn_script_prints_a_tensor_and_copies_to_numpy_every_step() -> None:
    text = fixture("ddp_spawn_no_sampler.py")
    result = scan_script(text)
    by_kind = {s.kind: s for s in result.step_syncs}
    assert set(by_kind) == {"print", "numpy"}  # .cpu().numpy() is one sync, not two
    assert by_kind["print"].line == line_of(text, 'print(f"rank {rank} loss {loss}")')
    assert by_kind["numpy"].line == line_of(text, ".cpu().numpy()")
    assert all(s.guard is None for s in by_kind.values())
    assert result.facts()["script.sync_in_loop.unguarded"] == 2


def test_torchrun_script() -> None:
    text, facts = scan("torchrun_ddp.py")
    assert facts["script.ddp"] is True
    assert facts["script.ddp.torchrun_env"] is True
    assert facts["script.ddp.slurm_env"] is False
    # `sampler = DistributedSampler(dataset) if distributed else None`
    assert facts["script.ddp.distributed_sampler"] is True
    assert facts["script.ddp.set_epoch"] is True
    assert facts["script.world_size.source"] == "env"
    assert facts["script.world_size.env"] == "WORLD_SIZE"
    assert facts["script.local_rank.env"] == "LOCAL_RANK"
    assert facts["script.num_workers.source"] == "cpu_count"
    assert facts["script.num_workers.cpu_call"] == "os.sched_getaffinity"
    assert facts["script.persistent_workers"] is True
    assert facts["script.prefetch_factor"] == 4
    assert facts["script.sync_in_loop.unguarded"] == 1
    assert facts["script.sync_in_loop.kinds"] == "synchronize"
    assert facts["script.sync_in_loop.line"] == line_of(text, "torch.cuda.synchronize()")
    assert facts["script.cudnn_benchmark"] is True
    assert facts["script.torch_threads.source"] == "env"


@pytest.mark.parametrize(
    ("launch_args", "value", "passed_source"),
    [
        (None, None, None),
        ({}, None, None),
        ({"--num-workers": "${SLURM_CPUS_PER_TASK}"}, None, "slurm_env"),
        ({"--num-workers": "$((SLURM_CPUS_PER_TASK - 1))"}, None, "slurm_env"),
        ({"--num-workers": "8"}, 8, "literal"),
        ({"--num-w": "6"}, 6, "literal"),  # argparse takes unambiguous prefixes
        ({"--num-workers": "$(nproc)"}, None, "cpu_count"),
    ],
)
def test_num_workers_option_with_a_slurm_default_and_what_the_job_passes(
    launch_args: Mapping[str, str] | None, value: int | None, passed_source: str | None
) -> None:
    text, facts = scan("argparse_workers.py", launch_args)
    assert facts["script.num_workers.source"] == "argparse"
    assert facts["script.num_workers.option"] == "--num-workers"
    assert facts["script.num_workers.line"] == line_of(text, 'parser.add_argument("--num-workers"')
    assert facts["script.num_workers.default_source"] == "slurm_env"
    assert facts.get("script.num_workers") == value
    assert facts.get("script.num_workers.passed_source") == passed_source


def test_option_details_stay_in_the_dataclass() -> None:
    result = scan_script(fixture("argparse_workers.py"), {"-b": "512", "--pin-memory": ""})
    option = result.options["num_workers"]
    assert option.flags == ("--num-workers",)
    assert option.type_name == "int"
    assert option.default is not None
    assert option.default.env == "SLURM_CPUS_PER_TASK"
    assert option.default.env_default == 1
    facts = result.facts()
    assert facts["script.batch_size"] == 512  # -b, dest="bs"
    assert facts["script.batch_size.option"] == "--batch-size"
    assert facts["script.pin_memory"] is True  # store_true, passed
    assert facts["script.omp_num_threads"] == 1
    assert facts["script.sync_in_loop.guarded"] == 1  # via `pbar = tqdm(train_loader)`


def test_store_true_option_not_passed_is_false() -> None:
    _, facts = scan("argparse_workers.py", {})
    assert facts["script.pin_memory"] is False
    assert facts["script.pin_memory.option"] == "--pin-memory"


def test_deprecated_amp_spellings_with_their_lines() -> None:
    text = fixture("amp_deprecated.py")
    result = scan_script(text)
    facts = result.facts()
    assert facts["script.amp"] is True
    assert facts["script.amp.deprecated"] is True
    assert facts["script.amp.grad_scaler"] is True
    assert facts["script.amp.dtype"] == "fp16"
    expected = {
        line_of(text, "from torch.cuda.amp import"),
        line_of(text, "scaler = GradScaler()"),
        line_of(text, "with autocast():"),
        line_of(text, "torch.cuda.amp.autocast(dtype="),
    }
    assert {use.line for use in result.amp.deprecated} == expected
    assert facts["script.amp.deprecated.count"] == len(expected)
    assert facts["script.amp.deprecated.line"] == min(expected)
    assert facts["script.sync_in_loop.count"] == 0  # the .cpu() is in the validation loop


def test_current_amp_spellings() -> None:
    _, facts = scan("amp_modern.py")
    assert facts["script.amp"] is True
    assert facts["script.amp.deprecated"] is False
    assert facts["script.amp.dtype"] == "bf16"  # through `amp_dtype = torch.bfloat16 if ...`
    assert facts["script.amp.grad_scaler"] is True
    assert "script.amp.deprecated.line" not in facts


def test_syntax_error_gives_no_facts() -> None:
    text = fixture("syntax_error.py.txt")
    result = scan_script(text)
    assert result.parse_error is not None
    bad_line = line_of(text, 'print "epoch"')
    assert f"line {bad_line}:" in result.parse_error
    assert result.dataloaders == ()
    assert result.facts() == {}


# --------------------------------------------------------------------------- patterns


def test_old_mnist_conditional_kwargs() -> None:
    facts = snippet(
        """
        import torch
        kwargs = {'num_workers': 1, 'pin_memory': True} if use_cuda else {}
        train_loader = torch.utils.data.DataLoader(ds, batch_size=64, **kwargs)
        """
    ).facts()
    assert facts["script.num_workers"] == 1
    assert facts["script.num_workers.conditional"] is True
    assert facts["script.pin_memory"] is True


def test_merged_dicts_and_dict_calls() -> None:
    facts = snippet(
        """
        from torch.utils.data import DataLoader as DL
        base = dict(batch_size=32, num_workers=2)
        extra = {"pin_memory": True}
        loader = DL(ds, **{**base, **extra, "num_workers": 6})
        """
    ).facts()
    assert facts["script.num_workers"] == 6
    assert facts["script.batch_size"] == 32
    assert facts["script.pin_memory"] is True


def test_dict_item_assignment_and_pop() -> None:
    facts = snippet(
        """
        from torch.utils.data import DataLoader
        kw = {"num_workers": 2, "pin_memory": True}
        kw["num_workers"] = 5
        kw.pop("pin_memory")
        loader = DataLoader(ds, **kw)
        """
    ).facts()
    assert facts["script.num_workers"] == 5
    assert facts["script.pin_memory.source"] == "default"


def test_unreadable_kwargs_make_values_unknown_not_default() -> None:
    facts = snippet(
        """
        from torch.utils.data import DataLoader
        def make(ds, **kw):
            return DataLoader(ds, batch_size=8, **kw)
        """
    ).facts()
    assert facts["script.num_workers.source"] == "unknown"
    assert facts["script.num_workers.expr"] == "**kw"
    assert "script.num_workers" not in facts
    assert "script.pin_memory" not in facts
    assert facts["script.batch_size"] == 8


def test_positional_arguments() -> None:
    facts = snippet(
        """
        from torch.utils.data import DataLoader
        loader = DataLoader(ds, 16, True, None, None, 3, None, True)
        """
    ).facts()
    assert facts["script.batch_size"] == 16
    assert facts["script.num_workers"] == 3
    assert facts["script.pin_memory"] is True


def test_followed_assignments_keep_the_line_of_the_number() -> None:
    source = """
    from torch.utils.data import DataLoader
    WORKERS = 4
    def build(ds):
        workers = WORKERS
        return DataLoader(ds, num_workers=workers)
    """
    facts = snippet(source).facts()
    assert facts["script.num_workers"] == 4
    assert facts["script.num_workers.source"] == "literal"
    assert facts["script.num_workers.line"] == line_of(textwrap.dedent(source), "WORKERS = 4")


def test_values_derived_from_a_source_name_it() -> None:
    facts = snippet(
        """
        import os
        from torch.utils.data import DataLoader
        workers = int(os.getenv("SLURM_CPUS_PER_TASK", "4")) - 1
        capped = min(8, os.cpu_count())
        train_loader = DataLoader(ds, num_workers=workers, prefetch_factor=capped)
        """
    ).facts()
    assert facts["script.num_workers.source"] == "slurm_env"
    assert facts["script.num_workers.derived"] is True
    assert facts["script.num_workers.env_default"] == 4
    assert facts["script.prefetch_factor.source"] == "cpu_count"
    assert facts["script.num_workers.expr"] == 'int(os.getenv("SLURM_CPUS_PER_TASK", "4")) - 1'


def test_literal_arithmetic_is_computed() -> None:
    facts = snippet(
        """
        from torch.utils.data import DataLoader
        per_gpu = 4
        loader = DataLoader(ds, num_workers=per_gpu * 2 - 1, batch_size=max(32, 16))
        """
    ).facts()
    assert facts["script.num_workers"] == 7
    assert facts["script.num_workers.source"] == "literal"
    assert facts["script.batch_size"] == 32


def test_imagenet_style_workers_option_and_sampler_set_in_one_branch() -> None:
    result = snippet(
        """
        import argparse, torch
        parser = argparse.ArgumentParser()
        parser.add_argument('-j', '--workers', default=4, type=int, metavar='N')
        args = parser.parse_args()
        def main_worker(gpu, ngpus_per_node, args):
            if args.distributed:
                train_sampler = torch.utils.data.distributed.DistributedSampler(train_dataset)
            else:
                train_sampler = None
            train_loader = torch.utils.data.DataLoader(
                train_dataset, batch_size=256, shuffle=(train_sampler is None),
                num_workers=args.workers, pin_memory=True, sampler=train_sampler)
        """,
        {"-j": "16"},
    )
    facts = result.facts()
    assert facts["script.num_workers"] == 16
    assert facts["script.num_workers.option"] == "--workers"
    assert facts["script.num_workers.default"] == 4
    assert facts["script.num_workers.passed"] == "16"
    assert facts["script.sampler"] == "DistributedSampler"
    assert facts["script.ddp.distributed_sampler"] is True


def test_argparse_details() -> None:
    facts = snippet(
        """
        import argparse
        from torch.utils.data import DataLoader
        p = argparse.ArgumentParser()
        p.add_argument('--loader-workers', dest='nw', type=int, default=2)
        p.add_argument('--pin', type=bool, default=False)
        p.set_defaults(nw=6)
        a = p.parse_args()
        loader = DataLoader(ds, num_workers=a.nw, pin_memory=a.pin)
        """,
        {"--pin": "False"},
    ).facts()
    assert facts["script.num_workers"] == 6  # set_defaults wins over default=
    assert facts["script.num_workers.option"] == "--loader-workers"
    assert facts["script.pin_memory"] is True  # type=bool: any non-empty string is True


def test_an_option_overwritten_in_the_script_is_a_literal() -> None:
    facts = snippet(
        """
        import argparse
        from torch.utils.data import DataLoader
        parser = argparse.ArgumentParser()
        parser.add_argument('--num_workers', type=int, default=2)
        args = parser.parse_args()
        args.num_workers = 12
        loader = DataLoader(ds, num_workers=args.num_workers)
        """
    ).facts()
    assert facts["script.num_workers"] == 12
    assert facts["script.num_workers.source"] == "literal"


def test_attributes_set_in_init_and_a_loader_returned_by_a_method() -> None:
    result = snippet(
        """
        from torch.utils.data import DataLoader
        class Trainer:
            def __init__(self):
                self.num_workers = 3
                self.kw = {"pin_memory": True}
                self.kw["persistent_workers"] = True
            def train_dataloader(self):
                return DataLoader(self.ds, num_workers=self.num_workers, **self.kw)
            def fit(self):
                for batch in self.train_dataloader():
                    loss = self.step(batch)
                    loss.backward()
                    print(loss.item())
        """
    )
    facts = result.facts()
    assert facts["script.num_workers"] == 3
    assert facts["script.pin_memory"] is True
    assert facts["script.persistent_workers"] is True
    assert facts["script.sync_in_loop.unguarded"] == 1


def test_the_iterated_loader_is_the_training_one() -> None:
    facts = snippet(
        """
        from torch.utils.data import DataLoader
        a = DataLoader(ds1, num_workers=1)
        b = DataLoader(ds2, num_workers=5)
        for x, y in b:
            model(x).sum().backward()
        """
    ).facts()
    assert facts["script.dataloader.name"] == "b"
    assert facts["script.num_workers"] == 5


def test_loaders_in_a_dict_and_a_phase_loop() -> None:
    # The transfer-learning tutorial: one DataLoader call for both phases.
    facts = snippet(
        """
        import torch
        dataloaders = {x: torch.utils.data.DataLoader(image_datasets[x], batch_size=4,
                                                      shuffle=True, num_workers=4)
                       for x in ['train', 'val']}
        for phase in ['train', 'val']:
            for inputs, labels in dataloaders[phase]:
                loss = criterion(model(inputs), labels)
                if phase == 'train':
                    loss.backward()
                running_loss += loss.item() * inputs.size(0)
        """
    ).facts()
    assert facts["script.num_workers"] == 4
    assert facts["script.sync_in_loop.unguarded"] == 1


def test_what_counts_as_printing_a_tensor() -> None:
    source = """
    from torch.utils.data import DataLoader
    loader = DataLoader(ds)
    for step, (x, y) in enumerate(loader):
        out = model(x)
        loss = crit(out, y)
        loss.backward()
        value = loss.item()
        print(step, x.shape, len(y))
        print(f"loss {value:.3f}")
        print("loss", loss)
        def later():
            print(loss.item())
    """
    result = snippet(source)
    kinds = [(s.kind, s.line) for s in result.step_syncs]
    text = textwrap.dedent(source)
    assert kinds == [
        ("item", line_of(text, "value = loss.item()")),
        ("print", line_of(text, '"loss", loss')),
    ]


@pytest.mark.parametrize(
    ("iterable", "is_loader"),
    [
        ("trainloader", True),
        ("val_loaders", True),
        ("dl_train", True),
        ("loader2", True),
        ("self.get_loader()", True),
        ("loader_kwargs", False),
        ("range(10)", False),
    ],
)
def test_which_loops_iterate_a_loader(iterable: str, is_loader: bool) -> None:
    result = snippet(f"for x in {iterable}:\n    x.backward()\n")
    assert bool(result.loops) is is_loader


# Names line kinds and the scan read the same way (both ask trainscript.names). Before they
# shared one table, `loader_training`, `loader_validation` were loaders to the scan only and
# `loader_src`, `loader_tgt`, `loader_unlabeled`, `dls_train` to line kinds only.
AGREED_LOADER_NAMES = [
    ("train_loader", True),
    ("TrainLoader", True),
    ("self.train_loader", True),
    ("loader_training", True),
    ("loader_validation", True),
    ("loader_src", True),
    ("loader_tgt", True),
    ("loader_unlabeled", True),
    ("dls_train", True),
    ("prefetchers2", True),
    ("loader_kwargs", False),
    ("loader_cfg", False),
    ("loading", False),
]


@pytest.mark.parametrize(("name", "is_loader"), AGREED_LOADER_NAMES)
def test_line_kinds_and_the_scan_agree_on_loader_names(name: str, is_loader: bool) -> None:
    from tuneadvisor.trainscript.kinds import LineKind, classify_source

    source = textwrap.dedent(f"""\
        def train(self, model):
            for x in {name}:
                loss = model(x)
                loss.backward()
                print(loss.item())
    """)
    scanned = scan_script(source)
    assert bool(scanned.loops) is is_loader
    assert (scanned.facts().get("script.loader_loops") == 1) is is_loader
    assert (scanned.facts().get("script.sync_in_loop.count") == 1) is is_loader
    kinds = classify_source(source)
    assert (kinds.get(line_of(source, "for x in")) is LineKind.DATALOADER) is is_loader


def test_no_loader_loop_means_no_sync_facts() -> None:
    facts = snippet(
        """
        from torch.utils.data import DataLoader
        loader = DataLoader(ds, num_workers=3)
        it = iter(loader)
        while True:
            print(model(next(it)).item())
        """
    ).facts()
    assert "script.sync_in_loop.count" not in facts
    assert "script.loader_loops" not in facts


def test_world_size_from_an_option() -> None:
    facts = snippet(
        """
        import argparse
        import torch.distributed as dist
        p = argparse.ArgumentParser()
        p.add_argument("--world-size", type=int, default=2)
        args = p.parse_args()
        dist.init_process_group("gloo", world_size=args.world_size, rank=0)
        """,
        {"--world-size": "8"},
    ).facts()
    assert facts["script.world_size"] == 8
    assert facts["script.world_size.source"] == "argparse"
    assert "script.world_size.literal" not in facts
    assert facts["script.ddp.init"] is True
    assert facts["script.ddp"] is False  # nothing is wrapped in DDP


def test_literal_world_size_in_init_process_group() -> None:
    facts = snippet(
        """
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel
        dist.init_process_group(backend="nccl", world_size=4, rank=rank)
        model = DistributedDataParallel(model)
        """
    ).facts()
    assert facts["script.world_size.literal"] == 4
    assert facts["script.ddp.backend"] == "nccl"


def test_omp_threads_set_in_the_script() -> None:
    facts = snippet(
        """
        import os
        import torch
        os.environ.setdefault("OMP_NUM_THREADS", "4")
        torch.set_num_threads(2)
        torch.backends.cudnn.benchmark = False
        """
    ).facts()
    assert facts["script.omp_num_threads"] == 4
    assert facts["script.torch_threads"] == 2
    assert facts["script.cudnn_benchmark"] is False


# --------------------------------------------------------------------------- contract


LAUNCHES: list[Mapping[str, str] | None] = [
    None,
    {"--num-workers": "${SLURM_CPUS_PER_TASK}", "--pin-memory": ""},
    {"--num-workers": "8", "-b": "64"},
]


@pytest.mark.parametrize("name", sorted(p.name for p in SCRIPTS.iterdir()))
@pytest.mark.parametrize("launch_args", LAUNCHES)
def test_every_fact_is_declared_and_typed(name: str, launch_args: Mapping[str, str] | None) -> None:
    declared = {row[0]: row[1] for row in FACT_ROWS}
    facts = scan_script(fixture(name), launch_args).facts()
    for key, value in facts.items():
        assert key in declared, key
        expected = {"int": int, "bool": bool, "str": str, "float": float}[declared[key]]
        assert isinstance(value, expected), (key, value)
        assert expected is bool or not isinstance(value, bool), (key, value)
        if key.endswith(".source"):
            assert value in SOURCES


def test_declared_facts_agree_with_the_registry() -> None:
    for name, kind, _unit, _description in FACT_ROWS:
        spec = registry.FACTS.get(name)
        if spec is not None:
            assert spec.type == kind, name


def test_results_are_frozen() -> None:
    result = scan_script(fixture("mnist_main.py"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.parse_error = "x"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.dataloaders[0].params["num_workers"].value = 3  # type: ignore[misc]


# --------------------------------------------------------------------------- bad input

# Each dict spreads the previous one ten times: naive reading would take 10**20 steps.
PATHOLOGICAL_DICTS = (
    "d0 = {'num_workers': 1}\n"
    + "".join(f"d{i} = {{{', '.join(f'**d{i - 1}' for _ in range(10))}}}\n" for i in range(1, 21))
    + "DataLoader(x, num_workers=d20['num_workers'], **d20)\n"
)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "x = 1\x00",
        "x = " + "(" * 300 + "1" + ")" * 300,
        "def f(:\n",
        "\ufeffimport torch\n",
        "x = '\udcff'\n",
        "n = 10 ** 100000\nloader = DataLoader(d, num_workers=n * n)\n",
        "a = b\nb = a\nloader = DataLoader(d, num_workers=a)\n",
        "d = {}\nd.update(d)\nDataLoader(x, **d)\n",
        PATHOLOGICAL_DICTS,
    ],
    ids=[
        "empty",
        "null-byte",
        "deep-nesting",
        "syntax-error",
        "bom",
        "lone-surrogate",
        "huge-int",
        "cyclic-names",
        "self-update",
        "dict-bomb",
    ],
)
def test_never_raises(text: str) -> None:
    started = time.perf_counter()
    result = scan_script(text)
    assert isinstance(result.facts(), dict)
    assert time.perf_counter() - started < 5


def test_line_numbers_and_text_with_crlf_and_non_ascii() -> None:
    text = (
        "import torch\r\n# données\r\n"
        "x = 'é'; loader = torch.utils.data.DataLoader(données, num_workers=4)\r\n"
    )
    facts = scan_script(text).facts()
    assert facts["script.num_workers.line"] == 3
    assert facts["script.num_workers.expr"] == "4"


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_never_raises_on_any_text(text: str) -> None:
    scan_script(text).facts()


@pytest.mark.slow
def test_never_raises_on_the_standard_library() -> None:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for path in sorted(stdlib.glob("*.py")):
        scan_script(path.read_text(encoding="utf-8", errors="replace")).facts()


def test_loader_settings_built_by_a_helper_function_are_followed() -> None:
    """The bundled script builds its DataLoader settings in `loader_kwargs(args)`."""
    text = (
        "import argparse\n"
        "from torch.utils.data import DataLoader\n"
        "p = argparse.ArgumentParser()\n"
        "p.add_argument('--num-workers', type=int, default=1)\n"
        "def loader_kwargs(args):\n"
        "    kwargs = {'num_workers': args.num_workers}\n"
        "    if args.num_workers > 0:\n"
        "        kwargs['persistent_workers'] = True\n"
        "    return kwargs\n"
        "args = p.parse_args()\n"
        "train_loader = DataLoader(ds, batch_size=64, **loader_kwargs(args))\n"
    )
    facts = scan_script(text, {"--num-workers": "2"}).facts()
    assert facts["script.num_workers.source"] == "argparse"
    assert facts["script.num_workers.option"] == "--num-workers"
    assert facts["script.num_workers"] == 2


def test_a_helper_with_several_returns_stays_unknown() -> None:
    text = (
        "from torch.utils.data import DataLoader\n"
        "def kw(fast):\n"
        "    if fast:\n"
        "        return {'num_workers': 8}\n"
        "    return {'num_workers': 0}\n"
        "loader = DataLoader(ds, **kw(True))\n"
    )
    assert scan_script(text).facts()["script.num_workers.source"] == "unknown"
