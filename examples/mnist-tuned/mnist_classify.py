"""MNIST on one GPU (or the CPU): the pytorch/examples CNN that HPC profiling courses use.

The model, optimizer (Adadelta), schedule (StepLR) and the shape of ``train()`` and ``test()``
follow pytorch/examples ``mnist/main.py``; what is added are the input-pipeline knobs that
tuning is about, an input pipeline with a realistic per-sample cost, and machine-readable
progress. Profile it as the courses do:

    kernprof -l -o ${SLURM_JOBID}.lprof mnist_single.py --epochs 1
    python -m line_profiler -rmt ${SLURM_JOBID}.lprof

``@profile`` is kernprof's; without kernprof it is a no-op.

Progress goes to stdout, one JSON object per line after the prefix ``TUNEADVISOR ``:
``{"event": "start", ...settings}``, ``{"event": "step", "epoch", "step", "step_time_s",
"samples_per_s", "loss"}`` every ``--log-interval`` batches, ``{"event": "epoch", "epoch",
"steps", "train_time_s", "test_loss", "accuracy"}`` and ``{"event": "end", "steps",
"wall_time_s", "samples_per_s"}``. The classic human-readable lines are printed as well.

Data: ``--data-dir`` holds ``MNIST/raw/`` (scripts/download_mnist.sh on a login node, or
synthetic data from scripts/make_mnist_data.py). Compute nodes often have no internet, so
nothing is downloaded unless ``--download`` is given.
"""

from __future__ import annotations

import argparse
import builtins
import io
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from PIL import Image
from torch.optim.lr_scheduler import StepLR
from torchvision import datasets, transforms

_F = TypeVar("_F", bound=Callable[..., Any])


def _no_profile(func: _F) -> _F:
    """Stand-in for kernprof's decorator when the script runs without kernprof."""
    return func


# `kernprof -l` puts `profile` into builtins before running the script; plain python has none.
profile: Callable[[_F], _F] = getattr(builtins, "profile", _no_profile)

PROGRESS_PREFIX = "TUNEADVISOR "
MNIST_MEAN, MNIST_STD = 0.1307, 0.3081
# --input-cost levels: the side, in pixels, of the "full-size photo" each sample is decoded
# from (0: none), and whether the digit is augmented.
INPUT_COSTS: dict[str, tuple[int, bool]] = {
    "none": (0, False),  # the tutorial's ToTensor + Normalize: nearly free
    "low": (0, True),  # plus the usual MNIST augmentation (random affine): still cheap
    "medium": (384, True),  # plus a 384 px JPEG decode and an elastic warp: a few ms/sample
    "high": (768, True),  # a 768 px photo: ~8 ms/sample, one worker cannot feed a GPU
}


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


class DecodeLike:
    """Per-sample work of reading a real photo: JPEG-decode at ``size`` px, resize to 28x28.

    MNIST is stored decoded and tiny, so its loader costs nothing; real data sets are
    compressed photos decoded and resized per sample. To get that cost honestly (it scales with
    the CPU, not a sleep), the digit is upsampled to an RGB image of ``size`` px, JPEG-encoded,
    decoded and resized back to 28x28 grey. The digit survives; the CPU time is spent.
    """

    def __init__(self, size: int, quality: int = 90) -> None:
        self.size = size
        self.quality = quality

    def __call__(self, img: Image.Image) -> Image.Image:
        side = img.size[0]
        photo = img.convert("RGB").resize((self.size, self.size), Image.Resampling.BICUBIC)
        buf = io.BytesIO()
        photo.save(buf, format="JPEG", quality=self.quality)
        buf.seek(0)
        decoded = Image.open(buf).convert("L")  # Image.open is lazy: convert() decodes
        return decoded.resize((side, side), Image.Resampling.BILINEAR)


def parse_input_cost(value: str) -> tuple[str, int, bool]:
    """``none|low|medium|high``, or a decode size in pixels (augmented, like medium/high)."""
    if value in INPUT_COSTS:
        size, augment = INPUT_COSTS[value]
        return value, size, augment
    try:
        size = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected one of {', '.join(INPUT_COSTS)} or a decode size in pixels, got {value!r}"
        ) from None
    if size < 0 or size > 4096:
        raise argparse.ArgumentTypeError(f"decode size must be 0..4096 pixels, got {size}")
    return value, size, True


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


def emit(event: str, **fields: Any) -> None:
    """One progress record on stdout, flushed so a watcher sees it at once."""
    print(PROGRESS_PREFIX + json.dumps({"event": event, **fields}), flush=True)


class Progress:
    """Counts optimizer steps across epochs and reports throughput since the last report."""

    def __init__(self, max_steps: int | None) -> None:
        self.max_steps = max_steps
        self.steps = 0
        self.samples = 0
        self._last_steps = 0
        self._last_samples = 0
        self._last_time = time.perf_counter()

    @property
    def done(self) -> bool:
        return self.max_steps is not None and self.steps >= self.max_steps

    def step(self, samples: int) -> None:
        self.steps += 1
        self.samples += samples

    def restart_clock(self) -> None:
        """Measure from now: time spent testing is not a training step."""
        self._last_time = time.perf_counter()
        self._last_steps, self._last_samples = self.steps, self.samples

    def report(self, epoch: int, loss: float) -> None:
        now = time.perf_counter()
        steps = max(1, self.steps - self._last_steps)
        elapsed = now - self._last_time
        emit(
            "step",
            epoch=epoch,
            step=self.steps,
            step_time_s=round(elapsed / steps, 6),
            samples_per_s=round((self.samples - self._last_samples) / elapsed, 2)
            if elapsed > 0
            else None,
            loss=round(loss, 6),
        )
        self._last_steps, self._last_samples, self._last_time = self.steps, self.samples, now


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


def default_num_workers() -> int:
    """Follow the job's cores (SLURM_CPUS_PER_TASK), else 1 as pytorch/examples does on CUDA."""
    try:
        return max(0, int(os.environ.get("SLURM_CPUS_PER_TASK", "1")))
    except ValueError:
        return 1


def positive_int(value: str) -> int:
    n = int(value)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="PyTorch MNIST Example (tuneadvisor bundle)")
    parser.add_argument("--batch-size", type=positive_int, default=64, metavar="N",
                        help="input batch size for training (default: 64)")
    parser.add_argument("--test-batch-size", type=positive_int, default=1000, metavar="N",
                        help="input batch size for testing (default: 1000)")
    parser.add_argument("--epochs", type=positive_int, default=14, metavar="N",
                        help="number of epochs to train (default: 14)")
    parser.add_argument("--lr", type=float, default=1.0, metavar="LR",
                        help="learning rate (default: 1.0)")
    parser.add_argument("--gamma", type=float, default=0.7, metavar="M",
                        help="learning rate step gamma (default: 0.7)")
    parser.add_argument("--max-steps", type=positive_int, default=None, metavar="N",
                        help="stop after N optimizer steps in all (default: run every epoch)")
    parser.add_argument("--max-eval-batches", type=positive_int, default=None, metavar="N",
                        help="evaluate on at most N test batches (default: the whole test set)")
    parser.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto",
                        help="auto: cuda if available, else cpu")
    parser.add_argument("--amp", action="store_true",
                        help="mixed precision: float16 with loss scaling on CUDA, bfloat16 on CPU")
    parser.add_argument("--num-workers", type=int, default=default_num_workers(), metavar="N",
                        help="DataLoader worker processes (default: $SLURM_CPUS_PER_TASK, else 1)")
    parser.add_argument("--pin-memory", action=argparse.BooleanOptionalAction, default=None,
                        help="page-locked host batches for faster copies (default: on with CUDA)")
    parser.add_argument("--persistent-workers", action=argparse.BooleanOptionalAction,
                        default=False, help="keep workers alive between epochs (default: off)")
    parser.add_argument("--prefetch-factor", type=positive_int, default=None, metavar="N",
                        help="batches each worker loads ahead (default: PyTorch's, 2)")
    parser.add_argument("--input-cost", type=parse_input_cost, default=parse_input_cost("none"),
                        metavar="LEVEL",
                        help="per-sample input work: none (the tutorial), low (augmentation), "
                             "medium or high (JPEG decode of a 384/768 px photo, augmentation), "
                             "or a decode size in pixels (default: none)")
    parser.add_argument("--data-dir", default="data", metavar="DIR",
                        help="folder holding MNIST/raw/ (default: ./data)")
    parser.add_argument("--download", action="store_true",
                        help="download MNIST if missing (needs internet: login nodes only)")
    parser.add_argument("--seed", type=int, default=1, metavar="S", help="random seed (default: 1)")
    parser.add_argument("--log-interval", type=positive_int, default=10, metavar="N",
                        help="how many batches to wait before logging training status")
    parser.add_argument("--save-model", action="store_true", default=False,
                        help="save the trained model to mnist_cnn.pt")
    args = parser.parse_args(argv)
    if args.num_workers < 0:
        parser.error("--num-workers must be 0 or more")
    return args


def loader_kwargs(args: argparse.Namespace, device: torch.device) -> dict[str, Any]:
    """DataLoader settings shared by the train and test loaders."""
    kwargs: dict[str, Any] = {
        "num_workers": args.num_workers,
        "pin_memory": args.pin_memory,
    }
    if args.num_workers > 0:
        kwargs["persistent_workers"] = args.persistent_workers
        if args.prefetch_factor is not None:
            kwargs["prefetch_factor"] = args.prefetch_factor
    elif args.persistent_workers or args.prefetch_factor is not None:
        # DataLoader raises on these without workers; a tuning sweep should not die on it.
        print("note: --persistent-workers/--prefetch-factor need --num-workers > 0; ignored",
              file=sys.stderr)
    return kwargs


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    wall_start = time.perf_counter()

    if args.device == "cuda" and not torch.cuda.is_available():
        print("error: --device cuda but no CUDA device is available", file=sys.stderr)
        return 2
    use_cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    device = torch.device("cuda" if use_cuda else "cpu")
    if args.pin_memory is None:
        args.pin_memory = use_cuda  # pinning only helps host-to-GPU copies

    torch.manual_seed(args.seed)

    cost_name, decode_px, augment = args.input_cost
    try:
        dataset1 = datasets.MNIST(args.data_dir, train=True, download=args.download,
                                  transform=build_transforms(decode_px, augment, train=True))
        dataset2 = datasets.MNIST(args.data_dir, train=False, download=args.download,
                                  transform=build_transforms(decode_px, augment, train=False))
    except RuntimeError as exc:
        print(f"error: no MNIST under {os.path.abspath(args.data_dir)}/MNIST/raw ({exc}); "
              "run scripts/download_mnist.sh on a login node, or "
              "scripts/make_mnist_data.py for synthetic data", file=sys.stderr)
        return 2

    common = loader_kwargs(args, device)
    train_loader = torch.utils.data.DataLoader(
        dataset1, batch_size=args.batch_size, shuffle=True,
        generator=torch.Generator().manual_seed(args.seed), **common)
    test_loader = torch.utils.data.DataLoader(dataset2, batch_size=args.test_batch_size, **common)

    model = Net().to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    scaler = torch.amp.GradScaler("cuda") if args.amp and use_cuda else None

    emit("start", script="mnist_single", pid=os.getpid(), device=str(device),
         torch=torch.__version__, threads=torch.get_num_threads(),
         batch_size=args.batch_size, epochs=args.epochs, max_steps=args.max_steps,
         num_workers=args.num_workers, pin_memory=args.pin_memory,
         persistent_workers=common.get("persistent_workers", False),
         prefetch_factor=common.get("prefetch_factor"), amp=args.amp,
         input_cost=cost_name, decode_px=decode_px, augment=augment,
         train_samples=len(dataset1), test_samples=len(dataset2),
         slurm_job_id=os.environ.get("SLURM_JOB_ID") or os.environ.get("SLURM_JOBID"))
    print(f"Using Device: {device}\n")

    progress = Progress(args.max_steps)
    train_total = 0.0
    for epoch in range(1, args.epochs + 1):
        epoch_start, steps_before = time.perf_counter(), progress.steps
        progress.restart_clock()
        train(args, model, device, train_loader, optimizer, epoch, scaler, progress)
        train_time = time.perf_counter() - epoch_start
        train_total += train_time
        test_loss, accuracy, seen = test(model, device, test_loader, args.max_eval_batches)
        emit("epoch", epoch=epoch, steps=progress.steps - steps_before,
             train_time_s=round(train_time, 3), test_loss=round(test_loss, 6),
             accuracy=round(accuracy, 6), test_samples=seen)
        scheduler.step()
        if progress.done:
            break

    if args.save_model:
        torch.save(model.state_dict(), "mnist_cnn.pt")
    wall = time.perf_counter() - wall_start
    # Throughput over training time only: start-up and testing are not training steps.
    emit("end", steps=progress.steps, samples=progress.samples, wall_time_s=round(wall, 3),
         train_time_s=round(train_total, 3),
         samples_per_s=round(progress.samples / train_total, 2) if train_total > 0 else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
