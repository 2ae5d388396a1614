#!/usr/bin/env python3
"""Make a synthetic, learnable CIFAR-100 in the real file format, offline and in seconds.

Writes what ``torchvision.datasets.CIFAR100(root=DIR, download=False)`` reads, under
``DIR/cifar-100-python/``: the pickled ``train``, ``test`` and ``meta`` files (dicts with
``data`` as N x 3072 uint8 rows, channel-major 32x32 RGB, ``fine_labels``, ``coarse_labels``,
``filenames``, ``batch_label``; ``meta`` with ``fine_label_names`` and ``coarse_label_names``).

torchvision checks the files against the MD5 sums of the real archive, which synthetic files
cannot match: the generator also writes ``SYNTHETIC.json`` with their own sums, and the
bundled training script (``training/cifar100_wrn.py``) reads synthetic data through
torchvision's class with those sums in place of the real ones, so the check still runs.

Each of the 100 classes is a combination of a shape (one of 20, the coarse label: discs,
rings, bars, crosses, checkers, ...) and a palette (one of 5 per shape); samples vary in
position, scale, rotation, background and noise. Deterministic for a seed. Needs numpy.

    python scripts/make_cifar100_data.py data                  # 50,000 + 10,000 images
    python scripts/make_cifar100_data.py /tmp/tiny --train 512 --test 128
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import sys
import time
from pathlib import Path
from typing import Any

FOLDER = "cifar-100-python"
SIDE = 32
FINE, COARSE = 100, 20
MARKER = "SYNTHETIC.json"


def _shape_mask(np: Any, shape: int, yy: Any, xx: Any) -> Any:
    """A soft mask in [0, 1] of one of 20 shapes on coordinates in [-1, 1]."""
    r = np.sqrt(xx**2 + yy**2)
    a = np.arctan2(yy, xx)
    masks = [
        r < 0.6,  # disc
        (r > 0.35) & (r < 0.65),  # ring
        np.abs(yy) < 0.2,  # horizontal bar
        np.abs(xx) < 0.2,  # vertical bar
        (np.abs(xx) < 0.18) | (np.abs(yy) < 0.18),  # cross
        (np.abs(xx) < 0.55) & (np.abs(yy) < 0.55),  # square
        np.abs(xx) + np.abs(yy) < 0.7,  # diamond
        (yy > -0.5) & (yy < 0.5 - np.abs(xx)),  # triangle
        (np.floor(xx * 3) + np.floor(yy * 3)) % 2 == 0,  # checker
        np.sin(xx * 9) > 0.3,  # vertical stripes
        np.sin(yy * 9) > 0.3,  # horizontal stripes
        np.sin((xx + yy) * 7) > 0.3,  # diagonal stripes
        np.cos(a * 5) * 0.25 + 0.45 > r,  # star
        (r < 0.7) & (np.abs(xx - yy) < 0.2),  # slash
        (r < 0.7) & (np.abs(xx + yy) < 0.2),  # backslash
        ((xx - 0.3) ** 2 + yy**2 < 0.12) | ((xx + 0.3) ** 2 + yy**2 < 0.12),  # two dots
        (np.abs(xx) < 0.6) & (np.abs(yy) < 0.6) & ~((np.abs(xx) < 0.3) & (np.abs(yy) < 0.3)),
        np.cos(r * 12) > 0.4,  # target
        (yy > 0) & (r < 0.65),  # half disc
        np.abs(np.sin(a * 2)) * 0.5 + 0.2 > r,  # clover
    ]
    return masks[shape].astype(np.float32)


def make_split(count: int, seed: int) -> tuple[Any, list[int], list[int]]:
    import numpy as np

    rng = np.random.default_rng(seed)
    fine = rng.integers(0, FINE, size=count)
    coarse = fine // 5
    palettes = np.random.default_rng(1234).uniform(0.1, 1.0, size=(FINE, 2, 3))
    data = np.empty((count, 3, SIDE, SIDE), dtype=np.uint8)
    grid = (np.arange(SIDE, dtype=np.float32) - (SIDE - 1) / 2) / (SIDE / 2)
    gy, gx = np.meshgrid(grid, grid, indexing="ij")
    for i in range(count):
        label = int(fine[i])
        angle = rng.uniform(-0.5, 0.5)
        scale = rng.uniform(0.8, 1.25)
        dx, dy = rng.uniform(-0.25, 0.25, size=2)
        c, s = np.cos(angle), np.sin(angle)
        xx = ((gx - dx) * c - (gy - dy) * s) * scale
        yy = ((gx - dx) * s + (gy - dy) * c) * scale
        mask = _shape_mask(np, label // 5, yy, xx)
        fg, bg = palettes[label]
        bg = np.clip(bg * rng.uniform(0.6, 1.0) + rng.uniform(-0.1, 0.1, 3), 0, 1)
        img = mask[None] * fg[:, None, None] + (1 - mask[None]) * bg[:, None, None]
        img += rng.normal(0, 0.06, size=img.shape)
        data[i] = np.clip(img * 255, 0, 255).astype(np.uint8)
    return data.reshape(count, -1), fine.tolist(), coarse.tolist()


def _write_pickle(path: Path, obj: dict[str, Any]) -> str:
    part = path.with_name(path.name + ".part")
    with open(part, "wb") as f:
        pickle.dump(obj, f, protocol=4)
    os.replace(part, path)
    return hashlib.md5(path.read_bytes()).hexdigest()


def write_dataset(root: Path, n_train: int, n_test: int, seed: int) -> dict[str, str]:
    folder = root / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    sums: dict[str, str] = {}
    for split, count, offset in (("train", n_train, 0), ("test", n_test, 1)):
        data, fine, coarse = make_split(count, seed * 2 + offset)
        sums[split] = _write_pickle(
            folder / split,
            {
                "filenames": [f"synthetic_{split}_{i:05d}.png" for i in range(count)],
                "batch_label": f"synthetic {split} batch",
                "fine_labels": fine,
                "coarse_labels": coarse,
                "data": data,
            },
        )
    sums["meta"] = _write_pickle(
        folder / "meta",
        {
            "fine_label_names": [f"shape{f // 5:02d}_palette{f % 5}" for f in range(FINE)],
            "coarse_label_names": [f"shape{c:02d}" for c in range(COARSE)],
        },
    )
    (folder / MARKER).write_text(
        json.dumps({"synthetic": True, "seed": seed, "train": n_train, "test": n_test,
                    "md5": sums}, indent=2) + "\n"
    )  # fmt: skip
    return sums


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path, help="data folder (cifar-100-python/ goes inside)")
    parser.add_argument("--train", type=int, default=50_000, help="training images")
    parser.add_argument("--test", type=int, default=10_000, help="test images")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    if args.train < 1 or args.test < 1:
        parser.error("--train and --test must be at least 1")
    try:
        import numpy  # noqa: F401
    except ImportError:
        print("make_cifar100_data: needs numpy (pip install numpy)", file=sys.stderr)
        return 2
    start = time.perf_counter()
    write_dataset(args.root, args.train, args.test, args.seed)
    if not args.quiet:
        print(
            f"wrote {args.train} + {args.test} synthetic CIFAR-100 images to "
            f"{args.root / FOLDER} in {time.perf_counter() - start:.1f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
