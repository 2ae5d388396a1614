"""MNIST with DistributedDataParallel, one process per task, launched by ``srun``.

The rank comes from ``SLURM_PROCID``, the local rank (which GPU) from ``SLURM_LOCALID`` and the
world size from the job (``SLURM_NTASKS``); the rendezvous is the job's first node
(``MASTER_ADDR``/``MASTER_PORT`` override it). NCCL on GPUs, gloo on CPUs. Each rank reads its
own share of the data through a ``DistributedSampler`` whose ``set_epoch`` reshuffles every
epoch; ``--batch-size`` is per rank, as in the single-GPU script. Rank 0 evaluates and prints
progress for the whole job (samples counted over all ranks). Under torchrun it runs too
(RANK/LOCAL_RANK/WORLD_SIZE win over the Slurm variables).

    #SBATCH --ntasks-per-node=2 --gres=gpu:2 --cpus-per-task=4
    srun kernprof -l -o ${SLURM_JOBID}_${SLURM_PROCID}.lprof training/mnist_ddp.py --epochs 1

Model, knobs, data and progress lines are those of ``mnist_single.py``.
"""

from __future__ import annotations

import argparse
import builtins
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

import torch
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
    settings_record,
    stand_in_step,
    start_trace,
    world_from_env,
)

_F = TypeVar("_F", bound=Callable[..., Any])


def _no_profile(func: _F) -> _F:
    return func


profile: Callable[[_F], _F] = getattr(builtins, "profile", _no_profile)


@profile
def train(
    args: argparse.Namespace,
    model: torch.nn.Module,
    device: torch.device,
    train_loader: torch.utils.data.DataLoader[Any],
    optimizer: optim.Optimizer,
    epoch: int,
    scaler: torch.amp.GradScaler | None,
    progress: Progress,
    world: World,
) -> None:
    model.train()
    sampler = train_loader.sampler
    if isinstance(sampler, DistributedSampler):
        sampler.set_epoch(epoch)  # a new shuffle each epoch, the same on every rank
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device, non_blocking=True), target.to(device, non_blocking=True)
        if args.device_time_ms is not None:  # the test mode: a sleep for the device's work
            loss = stand_in_step(args.device_time_ms, len(data))
        else:
            optimizer.zero_grad()
            with torch.autocast(device_type=device.type, enabled=args.amp):
                output = model(data)
                loss = F.nll_loss(output, target)
            if scaler is not None:  # float16 on CUDA needs loss scaling; bfloat16 does not
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            else:
                loss.backward()  # DDP all-reduces the gradients here
                optimizer.step()
        progress.step(len(data))
        if batch_idx % args.log_interval == 0 or progress.done:
            loss_value = loss.item()
            if world.is_main:
                print(
                    f"Train Epoch: {epoch} [{batch_idx * len(data) * world.world_size}/"
                    f"{len(sampler) * world.world_size} "  # type: ignore[arg-type]
                    f"({100.0 * batch_idx / len(train_loader):.0f}%)]\tLoss: {loss_value:.6f}"
                )
            progress.report(epoch, loss_value)
        if progress.done:
            break


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv, probe=False)
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

    net = Net().to(device)
    # one task (srun --ntasks=1, the scaling baseline) has no process group: the model itself
    model: torch.nn.Module = (
        DDP(net, device_ids=[device.index] if device.type == "cuda" else None)
        if world.distributed
        else net
    )
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    scaler = torch.amp.GradScaler("cuda") if args.amp and device.type == "cuda" else None

    if world.is_main:
        emit(
            "start",
            script="mnist_ddp",
            device=str(device),
            launcher=world.launcher,
            world_size=world.world_size,
            backend="nccl" if device.type == "cuda" else "gloo",
            epochs=args.epochs,
            train_samples=len(dataset1),
            test_samples=len(dataset2),
            **settings_record(args, common),
        )
    trace = start_trace(args.torch_profile, world.rank)
    progress = Progress(args.max_steps, world.world_size, world.is_main, trace)
    train_total = 0.0
    for epoch in range(1, args.epochs + 1):
        epoch_start, steps_before, samples_before = (
            time.perf_counter(),
            progress.steps,
            progress.samples,
        )
        progress.restart_clock()
        train(args, model, device, train_loader, optimizer, epoch, scaler, progress, world)
        train_time = time.perf_counter() - epoch_start
        train_total += train_time
        if world.is_main:  # the others go on and wait for rank 0 at the next all-reduce
            test_loss, accuracy, seen = test(net, device, test_loader, args.max_eval_batches)
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
        scheduler.step()
        if progress.done:
            break
    progress.close()

    finish_distributed(world)
    if world.is_main:
        emit(
            "end",
            steps=progress.steps,
            samples=progress.samples,
            wall_time_s=round(time.perf_counter() - wall_start, 3),
            train_time_s=round(train_total, 3),
            samples_per_s=round(progress.samples / train_total, 2) if train_total > 0 else None,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
