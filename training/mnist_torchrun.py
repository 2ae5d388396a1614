"""MNIST DDP under ``torchrun``, with snapshots that let an elastic restart resume.

torchrun sets RANK, LOCAL_RANK and WORLD_SIZE and restarts every worker when one fails
(``--max-restarts``). Rank 0 writes a snapshot (model, optimizer, scheduler, epochs done,
steps done) every ``--save-every`` epochs, atomically; at start every rank loads the snapshot if
there is one and carries on from the next epoch, as in PyTorch's "fault-tolerant DDP with
torchrun" tutorial.

    torchrun --standalone --nproc-per-node 2 --max-restarts 3 training/mnist_torchrun.py \\
        --snapshot-path snapshot.pt --save-every 1

On Slurm, one torchrun per node under srun, with a c10d rendezvous on the first node (see
slurm/mnist_torchrun.sbatch). ``--kill-rank R --kill-at-epoch E`` makes rank R kill itself
(SIGKILL) at the start of epoch E on the first attempt, to see the restart work.

Model, knobs, data and progress lines are those of ``mnist_single.py``; the progress adds
``resume`` (``epoch``, ``steps``, ``restart``) and ``snapshot`` events.
"""

from __future__ import annotations

import argparse
import builtins
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import torch
import torch.distributed as dist
import torch.nn.functional as F
import torch.optim as optim
from mnist_single import Net, mnist_datasets, parse_args, test
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.optim.lr_scheduler import StepLR
from torch.utils.data.distributed import DistributedSampler
from trainkit import (
    Progress,
    World,
    announce_test_mode,
    emit,
    finish_distributed,
    init_distributed,
    loader_kwargs,
    pick_device,
    positive_int,
    settings_record,
    stand_in_step,
    start_trace,
    world_from_env,
)

_F = TypeVar("_F", bound=Callable[..., Any])


def _no_profile(func: _F) -> _F:
    return func


profile: Callable[[_F], _F] = getattr(builtins, "profile", _no_profile)


class Trainer:
    def __init__(
        self,
        args: argparse.Namespace,
        model: torch.nn.Module,
        device: torch.device,
        train_loader: torch.utils.data.DataLoader[Any],
        optimizer: optim.Optimizer,
        scheduler: StepLR,
        world: World,
    ) -> None:
        self.args = args
        self.device = device
        self.world = world
        self.net = model.to(device)
        self.train_loader = train_loader
        self.optimizer = optimizer
        self.scheduler = scheduler
        self.epochs_run = 0
        self.steps_run = 0
        self.snapshot_path = Path(args.snapshot_path)
        if self.snapshot_path.exists():
            self._load_snapshot()
        self.model = DDP(self.net, device_ids=[device.index] if device.type == "cuda" else None)

    def _load_snapshot(self) -> None:
        snapshot = torch.load(self.snapshot_path, map_location=self.device, weights_only=True)
        self.net.load_state_dict(snapshot["MODEL_STATE"])
        self.optimizer.load_state_dict(snapshot["OPTIMIZER_STATE"])
        self.scheduler.load_state_dict(snapshot["SCHEDULER_STATE"])
        self.epochs_run = int(snapshot["EPOCHS_RUN"])
        self.steps_run = int(snapshot["STEPS_RUN"])
        if self.world.is_main:
            print(f"Resuming training from snapshot at epoch {self.epochs_run}")
            emit(
                "resume",
                epoch=self.epochs_run,
                steps=self.steps_run,
                restart=int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")),
                snapshot=str(self.snapshot_path),
            )

    def _save_snapshot(self, epoch: int, steps: int) -> None:
        snapshot = {
            "MODEL_STATE": self.net.state_dict(),
            "OPTIMIZER_STATE": self.optimizer.state_dict(),
            "SCHEDULER_STATE": self.scheduler.state_dict(),
            "EPOCHS_RUN": epoch,
            "STEPS_RUN": steps,
        }
        part = self.snapshot_path.with_name(self.snapshot_path.name + ".part")
        torch.save(snapshot, part)
        os.replace(part, self.snapshot_path)  # a rank killed mid-write leaves the old one
        emit("snapshot", epoch=epoch, steps=steps, path=str(self.snapshot_path))

    def _maybe_die(self, epoch: int) -> None:
        args = self.args
        first_attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0"
        if first_attempt and args.kill_at_epoch == epoch and args.kill_rank == self.world.rank:
            emit("killed", rank=self.world.rank, epoch=epoch)
            os.kill(os.getpid(), signal.SIGKILL)

    @profile
    def train(self, epoch: int, progress: Progress) -> None:
        args, device = self.args, self.device
        self.model.train()
        sampler = self.train_loader.sampler
        if isinstance(sampler, DistributedSampler):
            sampler.set_epoch(epoch)
        for batch_idx, (data, target) in enumerate(self.train_loader):
            self._maybe_die(epoch)
            data, target = data.to(device, non_blocking=True), target.to(device, non_blocking=True)
            if args.device_time_ms is not None:  # the test mode: a sleep for the device's work
                loss = stand_in_step(args.device_time_ms, len(data))
            else:
                self.optimizer.zero_grad()
                with torch.autocast(device_type=device.type, enabled=args.amp):
                    output = self.model(data)
                    loss = F.nll_loss(output, target)
                loss.backward()
                self.optimizer.step()
            progress.step(len(data))
            if batch_idx % args.log_interval == 0 or progress.done:
                loss_value = loss.item()
                if self.world.is_main:
                    print(f"Train Epoch: {epoch} batch {batch_idx}\tLoss: {loss_value:.6f}")
                progress.report(epoch, loss_value)
            if progress.done:
                break

    def fit(self, test_loader: torch.utils.data.DataLoader[Any]) -> tuple[Progress, float]:
        args, world = self.args, self.world
        trace = start_trace(args.torch_profile, world.rank)
        progress = Progress(args.max_steps, world.world_size, world.is_main, trace)
        progress.steps = self.steps_run
        train_total = 0.0
        for epoch in range(self.epochs_run + 1, args.epochs + 1):
            if progress.done:
                break
            start, steps_before, samples_before = (
                time.perf_counter(),
                progress.steps,
                progress.samples,
            )
            progress.restart_clock()
            self.train(epoch, progress)
            train_time = time.perf_counter() - start
            train_total += train_time
            self.scheduler.step()
            if epoch % args.save_every == 0 or progress.done or epoch == args.epochs:
                if world.is_main:
                    self._save_snapshot(epoch, progress.steps)
                dist.barrier()  # no rank goes on (or dies) before the snapshot is on disk
            if world.is_main:
                test_loss, accuracy, seen = test(
                    self.net, self.device, test_loader, args.max_eval_batches
                )
                emit(
                    "epoch",
                    epoch=epoch,
                    steps=progress.steps - steps_before,
                    train_time_s=round(train_time, 3),
                    samples_per_s=round((progress.samples - samples_before) / train_time, 2),
                    test_loss=round(test_loss, 6),
                    accuracy=round(accuracy, 6),
                    test_samples=seen,
                )
        progress.close()
        return progress, train_total


def torchrun_args(argv: list[str] | None) -> argparse.Namespace:
    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument("--snapshot-path", default="snapshot.pt", metavar="FILE")
    extra.add_argument("--save-every", type=positive_int, default=1, metavar="EPOCHS")
    extra.add_argument("--kill-rank", type=int, default=None, metavar="R")
    extra.add_argument("--kill-at-epoch", type=positive_int, default=None, metavar="E")
    if argv is None:
        argv = sys.argv[1:]
    if "-h" in argv or "--help" in argv:
        print(
            "torchrun options: --snapshot-path FILE (default: snapshot.pt), --save-every "
            "EPOCHS (default: 1), --kill-rank R --kill-at-epoch E (test an elastic restart)\n"
        )
    mine, rest = extra.parse_known_args(argv)
    args = parse_args(rest, probe=False)
    for key, value in vars(mine).items():
        setattr(args, key, value)
    return args


def main(argv: list[str] | None = None) -> int:
    args = torchrun_args(argv)
    announce_test_mode(args)
    wall_start = time.perf_counter()
    world = world_from_env()
    device = pick_device(args, world.local_rank)
    if device is None:
        return 2
    torch.manual_seed(args.seed)
    data = mnist_datasets(args)
    if data is None:
        return 2
    dataset1, dataset2 = data
    init_distributed(world, device)

    common = loader_kwargs(args)
    sampler = DistributedSampler(
        dataset1, num_replicas=world.world_size, rank=world.rank, shuffle=True, seed=args.seed
    )
    train_loader = torch.utils.data.DataLoader(
        dataset1, batch_size=args.batch_size, sampler=sampler, **common
    )
    test_loader = torch.utils.data.DataLoader(dataset2, batch_size=args.test_batch_size, **common)
    net = Net()
    optimizer = optim.Adadelta(net.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    if world.is_main:
        emit(
            "start",
            script="mnist_torchrun",
            device=str(device),
            launcher=world.launcher,
            world_size=world.world_size,
            restart=int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")),
            epochs=args.epochs,
            train_samples=len(dataset1),
            test_samples=len(dataset2),
            **settings_record(args, common),
        )
    trainer = Trainer(args, net, device, train_loader, optimizer, scheduler, world)
    progress, train_total = trainer.fit(test_loader)
    finish_distributed(world)
    if world.is_main:
        samples = progress.samples
        emit(
            "end",
            steps=progress.steps,
            samples=samples,
            wall_time_s=round(time.perf_counter() - wall_start, 3),
            train_time_s=round(train_total, 3),
            samples_per_s=round(samples / train_total, 2) if train_total > 0 else None,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
