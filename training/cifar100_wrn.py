"""CIFAR-100 on a wide ResNet (WRN-d-k, Zagoruyko and Komodakis), DDP with mixed precision.

One script for one process, ``srun`` (one task per GPU: SLURM_PROCID/SLURM_LOCALID/SLURM_NTASKS)
or ``torchrun`` (RANK/LOCAL_RANK/WORLD_SIZE). ``--batch-size`` is the GLOBAL batch: each of the
N ranks takes ``batch-size / N`` per step, so changing the number of GPUs keeps the
optimization the same. ``--amp`` runs the forward pass under ``torch.autocast``: float16 with a
GradScaler on CUDA, bfloat16 on CPUs. Training stops early once the test accuracy reaches
``--target-accuracy``. Every epoch reports images/s (``samples_per_s``) over all ranks.

    srun kernprof -l -o ${SLURM_JOBID}_${SLURM_PROCID}.lprof training/cifar100_wrn.py --amp

Data: ``--data-dir`` holds ``cifar-100-python/`` (the real archive unpacked, or synthetic data
from scripts/make_cifar100_data.py, read through torchvision's CIFAR100 class with the
synthetic files' own checksums). Knobs and progress lines are shared with the MNIST scripts
(trainkit.py).
"""

from __future__ import annotations

import argparse
import builtins
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from probekit import probe_and_report
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data.distributed import DistributedSampler
from torchvision import datasets, transforms
from trainkit import (
    DecodeLike,
    Progress,
    World,
    add_knobs,
    check_knobs,
    emit,
    finish_distributed,
    init_distributed,
    loader_kwargs,
    pick_device,
    positive_int,
    settings_record,
    stand_in_record,
    stand_in_step,
    start_trace,
    world_from_env,
)

_F = TypeVar("_F", bound=Callable[..., Any])


def _no_profile(func: _F) -> _F:
    return func


profile: Callable[[_F], _F] = getattr(builtins, "profile", _no_profile)

CIFAR100_MEAN = (0.5071, 0.4865, 0.4409)
CIFAR100_STD = (0.2673, 0.2564, 0.2762)


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, dropout: float) -> None:
        super().__init__()
        self.bn1 = nn.BatchNorm2d(cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.dropout = dropout
        self.shortcut: nn.Module | None = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.Conv2d(cin, cout, 1, stride, 0, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        o = F.relu(self.bn1(x))
        y = self.conv1(o)
        y = F.relu(self.bn2(y))
        if self.dropout > 0:
            y = F.dropout(y, p=self.dropout, training=self.training)
        y = self.conv2(y)
        return y + (self.shortcut(o) if self.shortcut is not None else x)


class WideResNet(nn.Module):
    """WRN-depth-widen: depth = 6n + 4 (16, 22, 28, 40...; 10 for smoke tests)."""

    def __init__(self, depth: int, widen: int, classes: int = 100, dropout: float = 0.0) -> None:
        super().__init__()
        if (depth - 4) % 6 != 0:
            raise ValueError(f"depth must be 6n+4, got {depth}")
        n = (depth - 4) // 6
        widths = [16, 16 * widen, 32 * widen, 64 * widen]
        self.conv = nn.Conv2d(3, widths[0], 3, 1, 1, bias=False)
        layers: list[nn.Module] = []
        cin = widths[0]
        for stage, stride in zip(range(3), (1, 2, 2), strict=True):
            for i in range(n):
                layers.append(BasicBlock(cin, widths[stage + 1], stride if i == 0 else 1, dropout))
                cin = widths[stage + 1]
        self.blocks = nn.Sequential(*layers)
        self.bn = nn.BatchNorm2d(cin)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.blocks(self.conv(x))
        x = F.relu(self.bn(x))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


def cifar100(root: str, train: bool, transform: Any) -> datasets.CIFAR100:
    """torchvision's CIFAR100; synthetic data is checked against its own MD5 sums."""
    marker = os.path.join(root, "cifar-100-python", "SYNTHETIC.json")
    if not os.path.exists(marker):
        return datasets.CIFAR100(root, train=train, download=False, transform=transform)
    with open(marker) as f:
        md5 = json.load(f)["md5"]

    class SyntheticCIFAR100(datasets.CIFAR100):
        train_list: ClassVar[list[list[str]]] = [["train", md5["train"]]]
        test_list: ClassVar[list[list[str]]] = [["test", md5["test"]]]
        meta: ClassVar[dict[str, str]] = {
            "filename": "meta",
            "key": "fine_label_names",
            "md5": md5["meta"],
        }

    return SyntheticCIFAR100(root, train=train, download=False, transform=transform)


def build_transforms(decode_px: int, augment: bool, train: bool) -> transforms.Compose:
    steps: list[Callable[..., Any]] = []
    if decode_px:
        steps.append(DecodeLike(decode_px))
    if train:  # the standard CIFAR augmentation is part of every recipe
        steps += [transforms.RandomCrop(32, padding=4), transforms.RandomHorizontalFlip()]
        if augment:
            steps.append(transforms.ColorJitter(0.2, 0.2, 0.2))
    steps += [transforms.ToTensor(), transforms.Normalize(CIFAR100_MEAN, CIFAR100_STD)]
    return transforms.Compose(steps)


@profile
def train(
    args: argparse.Namespace,
    model: nn.Module,
    device: torch.device,
    loader: torch.utils.data.DataLoader[Any],
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    scaler: torch.amp.GradScaler | None,
    epoch: int,
    progress: Progress,
    world: World,
) -> None:
    model.train()
    sampler = loader.sampler
    if isinstance(sampler, DistributedSampler):
        sampler.set_epoch(epoch)
    amp_dtype = torch.float16 if device.type == "cuda" else torch.bfloat16
    for batch_idx, (images, target) in enumerate(loader):
        images = images.to(device, non_blocking=True)
        target = target.to(device, non_blocking=True)
        if args.device_time_ms is not None:  # the test mode: a sleep for the device's work
            loss = stand_in_step(args.device_time_ms, len(images))
        else:
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device_type=device.type, dtype=amp_dtype, enabled=args.amp):
                output = model(images)
                loss = F.cross_entropy(output, target, label_smoothing=0.1)
            if scaler is not None:
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            else:
                loss.backward()
                optimizer.step()
            scheduler.step()  # per step (OneCycle); the test mode steps no optimizer
        progress.step(len(images))
        if batch_idx % args.log_interval == 0 or progress.done:
            loss_value = loss.item()
            if world.is_main:
                print(
                    f"Train Epoch: {epoch} batch {batch_idx}/{len(loader)}\tLoss: {loss_value:.4f}"
                )
            progress.report(epoch, loss_value)
        if progress.done:
            break


def evaluate(
    model: nn.Module, device: torch.device, loader: torch.utils.data.DataLoader[Any],
    max_batches: int | None, amp: bool,
) -> tuple[float, float, int]:  # fmt: skip
    model.eval()
    loss_sum, correct, seen = 0.0, 0, 0
    amp_dtype = torch.float16 if device.type == "cuda" else torch.bfloat16
    with torch.no_grad(), torch.autocast(device_type=device.type, dtype=amp_dtype, enabled=amp):
        for batch_idx, (images, target) in enumerate(loader):
            if max_batches is not None and batch_idx >= max_batches:
                break
            images, target = images.to(device), target.to(device)
            output = model(images).float()
            loss_sum += F.cross_entropy(output, target, reduction="sum").item()
            correct += int((output.argmax(1) == target).sum().item())
            seen += len(images)
    return loss_sum / max(seen, 1), correct / max(seen, 1), seen


def probe(
    args: argparse.Namespace,
    train_set: torch.utils.data.Dataset[Any],
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    scaler: torch.amp.GradScaler | None,
    device: torch.device,
) -> int:
    """--probe OUT.json: the ceiling, the pipeline per worker count and the loop, timed (the
    learning-rate schedule is left alone: the probe's steps are not the run's)."""
    amp_dtype = torch.float16 if device.type == "cuda" else torch.bfloat16

    def loader_for(workers: int) -> torch.utils.data.DataLoader[Any]:
        kwargs = loader_kwargs(argparse.Namespace(**{**vars(args), "num_workers": workers}))
        return torch.utils.data.DataLoader(
            train_set, batch_size=args.batch_size, shuffle=True, drop_last=True, **kwargs
        )

    def step(images: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        if args.device_time_ms is not None:
            return stand_in_step(args.device_time_ms, len(images))
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=amp_dtype, enabled=args.amp):
            loss = F.cross_entropy(model(images), target, label_smoothing=0.1)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        return loss

    model.train()
    return probe_and_report(
        args, script="cifar100_wrn", loader_for=loader_for, step=step, device=device,
        test_mode=stand_in_record(args), emit=emit,
    )  # fmt: skip


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="CIFAR-100 wide ResNet, DDP + AMP")
    add_knobs(
        parser,
        batch_size=128,
        batch_help="GLOBAL batch size, split evenly across the ranks",
        data_help="folder holding cifar-100-python/ (default: ./data)",
        probe=True,
    )
    parser.add_argument("--epochs", type=positive_int, default=30, metavar="N")
    parser.add_argument("--lr", type=float, default=0.1, help="peak learning rate (SGD)")
    parser.add_argument("--weight-decay", type=float, default=5e-4)
    parser.add_argument("--depth", type=int, default=16, help="WRN depth, 6n+4 (default: 16)")
    parser.add_argument("--widen", type=positive_int, default=4, help="WRN width (default: 4)")
    parser.add_argument("--test-batch-size", type=positive_int, default=500, metavar="N")
    parser.add_argument(
        "--target-accuracy", type=float, default=None, metavar="ACC",
        help="stop once the test accuracy (0..1) reaches this",
    )  # fmt: skip
    args = parser.parse_args(argv)
    check_knobs(parser, args)
    if (args.depth - 4) % 6 != 0 or args.depth < 10:
        parser.error(f"--depth must be 6n+4 and at least 10, got {args.depth}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    wall_start = time.perf_counter()
    world = world_from_env()
    if args.batch_size % world.world_size != 0:
        print(f"error: --batch-size {args.batch_size} does not split across "
              f"{world.world_size} ranks", file=sys.stderr)  # fmt: skip
        return 2
    per_rank = args.batch_size // world.world_size
    device = pick_device(args, world.local_rank)
    if device is None:
        return 2
    torch.manual_seed(args.seed)
    _, decode_px, augment = args.input_cost
    try:
        train_set = cifar100(args.data_dir, True, build_transforms(decode_px, augment, True))
        test_set = cifar100(args.data_dir, False, build_transforms(decode_px, augment, False))
    except RuntimeError as exc:
        print(f"error: no CIFAR-100 under {os.path.abspath(args.data_dir)}/cifar-100-python "
              f"({exc}); make synthetic data with scripts/make_cifar100_data.py",
              file=sys.stderr)  # fmt: skip
        return 2
    init_distributed(world, device)
    common = loader_kwargs(args)
    sampler = DistributedSampler(
        train_set, num_replicas=world.world_size, rank=world.rank, shuffle=True, seed=args.seed,
        drop_last=True,
    )  # fmt: skip
    loader = torch.utils.data.DataLoader(
        train_set, batch_size=per_rank, sampler=sampler, drop_last=True, **common
    )
    test_loader = torch.utils.data.DataLoader(test_set, batch_size=args.test_batch_size, **common)
    net = WideResNet(args.depth, args.widen).to(device)
    if device.type == "cuda":
        net = net.to(memory_format=torch.channels_last)
    model: nn.Module = (
        DDP(net, device_ids=[device.index] if device.type == "cuda" else None)
        if world.distributed
        else net
    )
    optimizer = torch.optim.SGD(
        model.parameters(), lr=args.lr, momentum=0.9, nesterov=True,
        weight_decay=args.weight_decay,
    )  # fmt: skip
    steps_per_epoch = max(1, len(loader))
    total_steps = min(args.max_steps or 10**12, args.epochs * steps_per_epoch)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=args.lr, total_steps=max(2, total_steps), pct_start=0.15
    )
    scaler = torch.amp.GradScaler("cuda") if args.amp and device.type == "cuda" else None
    if args.probe is not None:
        if world.distributed:
            print("error: --probe times one process; run it without srun/torchrun",
                  file=sys.stderr)  # fmt: skip
            return 2
        return probe(args, train_set, model, optimizer, scaler, device)
    if world.is_main:
        emit(
            "start", script="cifar100_wrn", device=str(device), launcher=world.launcher,
            world_size=world.world_size, model=f"WRN-{args.depth}-{args.widen}",
            global_batch_size=args.batch_size, per_rank_batch_size=per_rank,
            epochs=args.epochs, train_samples=len(train_set), test_samples=len(test_set),
            **{**settings_record(args, common), "batch_size": per_rank},
        )  # fmt: skip
    trace = start_trace(args.torch_profile, world.rank)
    progress = Progress(args.max_steps, world.world_size, world.is_main, trace)
    train_total = 0.0
    for epoch in range(1, args.epochs + 1):
        start, steps_before, samples_before = time.perf_counter(), progress.steps, progress.samples
        progress.restart_clock()
        train(args, model, device, loader, optimizer, scheduler, scaler, epoch, progress, world)
        train_time = time.perf_counter() - start
        train_total += train_time
        stop = torch.zeros(1, device=device)
        if world.is_main:
            test_loss, accuracy, seen = evaluate(
                net, device, test_loader, args.max_eval_batches, args.amp
            )
            images_per_s = round((progress.samples - samples_before) / train_time, 2)
            emit(
                "epoch", epoch=epoch, steps=progress.steps - steps_before,
                train_time_s=round(train_time, 3), samples_per_s=images_per_s,
                images_per_s=images_per_s, test_loss=round(test_loss, 6),
                accuracy=round(accuracy, 6), test_samples=seen,
            )  # fmt: skip
            if args.target_accuracy is not None and accuracy >= args.target_accuracy:
                emit("early_stop", epoch=epoch, accuracy=accuracy, target=args.target_accuracy)
                stop.fill_(1)
        if world.distributed:
            dist.broadcast(stop, src=0)  # every rank stops together
        if progress.done or stop.item() > 0:
            break
    progress.close()
    finish_distributed(world)
    if world.is_main:
        emit(
            "end", steps=progress.steps, samples=progress.samples,
            wall_time_s=round(time.perf_counter() - wall_start, 3),
            train_time_s=round(train_total, 3),
            samples_per_s=round(progress.samples / train_total, 2) if train_total > 0 else None,
        )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
