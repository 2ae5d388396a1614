"""MNIST on one GPU (or the CPU): the pytorch/examples CNN that HPC profiling courses use.

The model, optimizer (Adadelta), schedule (StepLR) and the shape of ``train()`` and ``test()``
follow pytorch/examples ``mnist/main.py``; what is added are the input-pipeline knobs that
tuning is about, an input pipeline with a realistic per-sample cost, and machine-readable
progress. Profile it as the courses do:

    kernprof -l -o ${SLURM_JOBID}.lprof mnist_single.py --epochs 1
    python -m line_profiler -rmt ${SLURM_JOBID}.lprof

``@profile`` is kernprof's; without kernprof it is a no-op. The knobs, the progress lines and
the costly input pipeline are shared with the other bundled scripts: ``trainkit.py`` beside
this file.

Progress goes to stdout, one JSON object per line after the prefix ``TUNEADVISOR ``:
``{"event": "start", ...settings}``, ``{"event": "step", "epoch", "step", "step_time_s",
"samples_per_s", "loss"}`` every ``--log-interval`` batches, ``{"event": "epoch", "epoch",
"steps", "train_time_s", "samples_per_s", "test_loss", "accuracy"}`` and ``{"event": "end",
"steps", "wall_time_s", "samples_per_s"}``. The classic human-readable lines are printed as well.

Data: ``--data-dir`` holds ``MNIST/raw/`` (scripts/download_mnist.sh on a login node, or
synthetic data from scripts/make_mnist_data.py). Compute nodes often have no internet, so
nothing is downloaded unless ``--download`` is given.
"""

from __future__ import annotations

import argparse
import builtins
import os
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from probekit import probe_and_report
from torch.optim.lr_scheduler import StepLR
from torchvision import datasets, transforms
from trainkit import (
    DecodeLike,
    Progress,
    add_knobs,
    announce_test_mode,
    check_knobs,
    emit,
    loader_kwargs,
    pick_device,
    positive_int,
    settings_record,
    stand_in_record,
    stand_in_step,
    start_trace,
)

_F = TypeVar("_F", bound=Callable[..., Any])


def _no_profile(func: _F) -> _F:
    """Stand-in for kernprof's decorator when the script runs without kernprof."""
    return func


# `kernprof -l` puts `profile` into builtins before running the script; plain python has none.
profile: Callable[[_F], _F] = getattr(builtins, "profile", _no_profile)

MNIST_MEAN, MNIST_STD = 0.1307, 0.3081


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


def build_transforms(decode_px: int, augment: bool, train: bool) -> transforms.Compose:
    steps: list[Callable[..., Any]] = []
    if decode_px:
        steps.append(DecodeLike(decode_px))  # evaluation data is decoded too
    if augment and train:
        steps.append(
            transforms.RandomAffine(degrees=10, translate=(0.1, 0.1), scale=(0.9, 1.1), shear=8)
        )
        if decode_px:  # elastic warps (Simard et al.) come with the heavier pipelines
            steps.append(transforms.ElasticTransform(alpha=34.0, sigma=4.0))
    steps += [transforms.ToTensor(), transforms.Normalize((MNIST_MEAN,), (MNIST_STD,))]
    return transforms.Compose(steps)


def train_step(
    args: argparse.Namespace,
    model: nn.Module,
    optimizer: optim.Optimizer,
    scaler: torch.amp.GradScaler | None,
    data: torch.Tensor,
    target: torch.Tensor,
) -> torch.Tensor:
    """One optimizer step on a batch already on the device, as ``train`` does it: the probe's
    step (``train`` keeps its own copy inline so that kernprof's lines stay in it)."""
    optimizer.zero_grad()
    with torch.autocast(device_type=data.device.type, enabled=args.amp):
        output = model(data)
        loss = F.nll_loss(output, target)
    if scaler is not None:  # float16 on CUDA needs loss scaling; bfloat16 does not
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    else:
        loss.backward()
        optimizer.step()
    return loss


@profile
def train(
    args: argparse.Namespace,
    model: nn.Module,
    device: torch.device,
    train_loader: torch.utils.data.DataLoader[Any],
    optimizer: optim.Optimizer,
    epoch: int,
    scaler: torch.amp.GradScaler | None,
    progress: Progress,
) -> None:
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device, non_blocking=True), target.to(device, non_blocking=True)
        if args.device_time_ms is not None:  # the test mode: a sleep for the device's work
            loss = stand_in_step(args.device_time_ms, len(data))
        else:  # inline, not train_step(): kernprof's line shares are of this function
            optimizer.zero_grad()
            with torch.autocast(device_type=device.type, enabled=args.amp):
                output = model(data)
                loss = F.nll_loss(output, target)
            if scaler is not None:  # float16 on CUDA needs loss scaling; bfloat16 does not
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            else:
                loss.backward()
                optimizer.step()
        progress.step(len(data))
        if batch_idx % args.log_interval == 0 or progress.done:
            loss_value = loss.item()
            print(
                f"Train Epoch: {epoch} [{batch_idx * len(data)}/{len(train_loader.dataset)} "
                f"({100.0 * batch_idx / len(train_loader):.0f}%)]\tLoss: {loss_value:.6f}"
            )
            progress.report(epoch, loss_value)
        if progress.done:
            break


def test(
    model: nn.Module,
    device: torch.device,
    test_loader: torch.utils.data.DataLoader[Any],
    max_batches: int | None,
) -> tuple[float, float, int]:
    model.eval()
    test_loss = 0.0
    correct = 0
    seen = 0
    with torch.no_grad():
        for batch_idx, (data, target) in enumerate(test_loader):
            if max_batches is not None and batch_idx >= max_batches:
                break
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()  # sum up batch loss
            pred = output.argmax(dim=1, keepdim=True)  # index of the max log-probability
            correct += int(pred.eq(target.view_as(pred)).sum().item())
            seen += len(data)

    test_loss /= max(seen, 1)
    accuracy = correct / max(seen, 1)
    print(
        f"\nTest set: Average loss: {test_loss:.4f}, "
        f"Accuracy: {correct}/{seen} ({100.0 * accuracy:.0f}%)\n"
    )
    return test_loss, accuracy, seen


def parse_args(argv: list[str] | None = None, *, probe: bool = True) -> argparse.Namespace:
    """The flags; ``probe``: with the probe mode (the DDP scripts have none yet)."""
    parser = argparse.ArgumentParser(description="PyTorch MNIST Example (tuneadvisor bundle)")
    add_knobs(
        parser,
        batch_size=64,
        batch_help="input batch size for training",
        data_help="folder holding MNIST/raw/ (default: ./data)",
        probe=probe,
    )
    parser.add_argument(
        "--test-batch-size",
        type=positive_int,
        default=1000,
        metavar="N",
        help="input batch size for testing (default: 1000)",
    )
    parser.add_argument(
        "--epochs",
        type=positive_int,
        default=14,
        metavar="N",
        help="number of epochs to train (default: 14)",
    )
    parser.add_argument(
        "--lr", type=float, default=1.0, metavar="LR", help="learning rate (default: 1.0)"
    )
    parser.add_argument(
        "--gamma",
        type=float,
        default=0.7,
        metavar="M",
        help="learning rate step gamma (default: 0.7)",
    )
    parser.add_argument(
        "--download",
        action="store_true",
        help="download MNIST if missing (needs internet: login nodes only)",
    )
    parser.add_argument(
        "--save-model",
        action="store_true",
        default=False,
        help="save the trained model to mnist_cnn.pt",
    )
    args = parser.parse_args(argv)
    check_knobs(parser, args)
    return args


def mnist_datasets(args: argparse.Namespace) -> tuple[datasets.MNIST, datasets.MNIST] | None:
    """Train and test sets from ``--data-dir``; None (and a hint on stderr) when absent."""
    _, decode_px, augment = args.input_cost
    try:
        return (
            datasets.MNIST(
                args.data_dir,
                train=True,
                download=args.download,
                transform=build_transforms(decode_px, augment, train=True),
            ),
            datasets.MNIST(
                args.data_dir,
                train=False,
                download=args.download,
                transform=build_transforms(decode_px, augment, train=False),
            ),
        )
    except RuntimeError as exc:
        print(
            f"error: no MNIST under {os.path.abspath(args.data_dir)}/MNIST/raw ({exc}); "
            "run scripts/download_mnist.sh on a login node, or "
            "scripts/make_mnist_data.py for synthetic data",
            file=sys.stderr,
        )
        return None


def probe(
    args: argparse.Namespace,
    dataset: datasets.MNIST,
    model: nn.Module,
    optimizer: optim.Optimizer,
    scaler: torch.amp.GradScaler | None,
    device: torch.device,
) -> int:
    """--probe OUT.json: the ceiling, the pipeline per worker count and the loop, timed."""

    def loader_for(workers: int) -> torch.utils.data.DataLoader[Any]:
        kwargs = loader_kwargs(argparse.Namespace(**{**vars(args), "num_workers": workers}))
        return torch.utils.data.DataLoader(
            dataset, batch_size=args.batch_size, shuffle=True, **kwargs
        )

    def step(data: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        if args.device_time_ms is not None:
            return stand_in_step(args.device_time_ms, len(data))
        return train_step(args, model, optimizer, scaler, data, target)

    announce_test_mode(args)
    model.train()
    return probe_and_report(
        args, script="mnist_single", loader_for=loader_for, step=step, device=device,
        test_mode=stand_in_record(args), emit=emit,
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    wall_start = time.perf_counter()

    device = pick_device(args)
    if device is None:
        return 2
    torch.manual_seed(args.seed)

    data = mnist_datasets(args)
    if data is None:
        return 2
    dataset1, dataset2 = data

    common = loader_kwargs(args)
    train_loader = torch.utils.data.DataLoader(
        dataset1,
        batch_size=args.batch_size,
        shuffle=True,
        generator=torch.Generator().manual_seed(args.seed),
        **common,
    )
    test_loader = torch.utils.data.DataLoader(dataset2, batch_size=args.test_batch_size, **common)

    model = Net().to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    scaler = torch.amp.GradScaler("cuda") if args.amp and device.type == "cuda" else None

    if args.probe is not None:
        return probe(args, dataset1, model, optimizer, scaler, device)
    emit(
        "start",
        script="mnist_single",
        device=str(device),
        world_size=1,
        epochs=args.epochs,
        train_samples=len(dataset1),
        test_samples=len(dataset2),
        **settings_record(args, common),
    )
    print(f"Using Device: {device}\n")
    announce_test_mode(args)

    progress = Progress(args.max_steps, trace=start_trace(args.torch_profile, 0))
    train_total = 0.0
    for epoch in range(1, args.epochs + 1):
        epoch_start, steps_before, samples_before = (
            time.perf_counter(),
            progress.steps,
            progress.samples,
        )
        progress.restart_clock()
        train(args, model, device, train_loader, optimizer, epoch, scaler, progress)
        train_time = time.perf_counter() - epoch_start
        train_total += train_time
        if args.device_time_ms is None:
            test_loss, accuracy, seen = test(model, device, test_loader, args.max_eval_batches)
            tested: dict[str, Any] = {
                "test_loss": round(test_loss, 6), "accuracy": round(accuracy, 6),
            }  # fmt: skip
        else:  # the test mode trained nothing: nothing to evaluate
            tested, seen = {"test_loss": None, "accuracy": None}, 0
        emit(
            "epoch",
            epoch=epoch,
            steps=progress.steps - steps_before,
            train_time_s=round(train_time, 3),
            samples_per_s=round((progress.samples - samples_before) / train_time, 2),
            **tested,
            test_samples=seen,
        )
        if args.device_time_ms is None:  # the test mode stepped no optimizer
            scheduler.step()
        if progress.done:
            break
    progress.close()

    if args.save_model:
        torch.save(model.state_dict(), "mnist_cnn.pt")
    wall = time.perf_counter() - wall_start
    # Throughput over training time only: start-up and testing are not training steps.
    emit(
        "end",
        steps=progress.steps,
        samples=progress.samples,
        wall_time_s=round(wall, 3),
        train_time_s=round(train_total, 3),
        samples_per_s=round(progress.samples / train_total, 2) if train_total > 0 else None,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
