#!/usr/bin/env python3
"""Make a synthetic, learnable MNIST in the real file format, offline and in seconds.

Compute nodes (and this project's CI) often cannot download MNIST. This writes the four
IDX files that ``torchvision.datasets.MNIST(root=DIR, download=False)`` reads, ungzipped,
under ``DIR/MNIST/raw/``:

    train-images-idx3-ubyte  train-labels-idx1-ubyte  t10k-images-idx3-ubyte  t10k-labels-idx1-ubyte

Digits are rendered from the machine's fonts (DejaVu when present) in a few stroke weights,
fitted to a 20x20 box and centred by centre of mass in 28x28 as MNIST is, then each sample
gets a random affine transform, a smooth elastic warp and a little noise. Output is
deterministic for a given seed and font set. Needs numpy and Pillow only (both come with
torchvision); the IDX writer itself is pure Python so tests can check it without numpy.

    python scripts/make_mnist_data.py data                      # 60,000 + 10,000 images
    python scripts/make_mnist_data.py /tmp/tiny --train 256 --test 64
"""

from __future__ import annotations

import argparse
import os
import shutil
import struct
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy is imported lazily so the IDX helpers work without it
    import numpy as np
    from numpy.typing import NDArray

# IDX magic numbers: two zero bytes, the element type (0x08 = unsigned byte), the rank.
IDX_UBYTE = 0x08
FILES = {
    ("train", "images"): "train-images-idx3-ubyte",
    ("train", "labels"): "train-labels-idx1-ubyte",
    ("test", "images"): "t10k-images-idx3-ubyte",
    ("test", "labels"): "t10k-labels-idx1-ubyte",
}

SYNTHETIC_MARKER = "SYNTHETIC.txt"

SIDE = 28  # MNIST image side
BOX = 20  # MNIST fits each digit into a 20x20 box before centring it in 28x28
SUPER = 2  # prototypes are kept at 2x so warping then sampling does not alias
STROKES = (0, 2, 5)  # extra stroke width in pixels at the 96 px render size
RENDER_PX = 96

# Preferred fonts, in order; any other outline font is used only when none of these exist,
# so that the same seed gives the same data on every machine with DejaVu.
PREFERRED_FONTS = (
    "DejaVuSans.ttf",
    "DejaVuSans-Bold.ttf",
    "DejaVuSans-Oblique.ttf",
    "DejaVuSans-ExtraLight.ttf",
    "DejaVuSansCondensed.ttf",
    "DejaVuSansCondensed-BoldOblique.ttf",
    "DejaVuSansMono.ttf",
    "DejaVuSansMono-BoldOblique.ttf",
    "DejaVuSerif.ttf",
    "DejaVuSerif-Italic.ttf",
    "DejaVuSerifCondensed-Bold.ttf",
)


# --------------------------------------------------------------------------- IDX format


def idx_header(dims: Sequence[int]) -> bytes:
    """Header of an unsigned-byte IDX file with the given dimensions (big-endian, as MNIST)."""
    return struct.pack(">BBBB", 0, 0, IDX_UBYTE, len(dims)) + struct.pack(f">{len(dims)}I", *dims)


def write_idx(path: Path, dims: Sequence[int], payload: bytes) -> None:
    """Write one IDX file atomically: header, then ``prod(dims)`` unsigned bytes."""
    expected = 1
    for d in dims:
        expected *= d
    if len(payload) != expected:
        raise ValueError(f"{path.name}: {len(payload)} bytes of data for dims {tuple(dims)}")
    tmp = path.with_name(path.name + ".part")
    with open(tmp, "wb") as fh:
        fh.write(idx_header(dims))
        fh.write(payload)
    os.replace(tmp, path)


def read_idx_header(path: Path) -> tuple[int, tuple[int, ...]]:
    """Return (element type code, dims) of an IDX file; raise ValueError if it is not one."""
    with open(path, "rb") as fh:
        head = fh.read(4)
        if len(head) != 4 or head[0] != 0 or head[1] != 0:
            raise ValueError(f"{path}: not an IDX file (bad magic {head!r})")
        rank = head[3]
        raw = fh.read(4 * rank)
        if len(raw) != 4 * rank:
            raise ValueError(f"{path}: truncated IDX header")
        return head[2], struct.unpack(f">{rank}I", raw)


# --------------------------------------------------------------------------- fonts


def find_fonts() -> list[Path]:
    """Outline fonts to render digits with: DejaVu if present, else whatever fc-list knows."""
    found: list[Path] = []
    if shutil.which("fc-list"):
        try:
            out = subprocess.run(
                ["fc-list", ":", "file"], capture_output=True, text=True, timeout=20, check=False
            ).stdout
            found = [Path(line.split(":")[0].strip()) for line in out.splitlines() if line.strip()]
        except (OSError, subprocess.SubprocessError):
            found = []
    for root in ("/usr/share/fonts", "/usr/local/share/fonts", "/Library/Fonts"):
        if not found and Path(root).is_dir():
            found = sorted(Path(root).rglob("*.ttf"))
    by_name = {p.name: p for p in found if p.suffix.lower() in (".ttf", ".otf")}
    preferred = [by_name[n] for n in PREFERRED_FONTS if n in by_name]
    if preferred:
        return preferred
    # Symbol and math fonts have no useful digits; skip the obvious ones.
    skip = ("math", "symbol", "emoji")
    others = [p for n, p in sorted(by_name.items()) if not any(k in n.lower() for k in skip)]
    return others[:12]


# --------------------------------------------------------------------------- rendering


def _fit_and_centre(glyph: NDArray[Any], side: int, box: int) -> NDArray[np.float32]:
    """MNIST's normalisation: fit into box x box keeping aspect, centre of mass at the middle."""
    import numpy as np
    from PIL import Image

    ys, xs = np.nonzero(glyph > 8)
    crop = glyph[ys.min() : ys.max() + 1, xs.min() : xs.max() + 1]
    h, w = crop.shape
    scale = box / max(h, w)
    nh, nw = max(1, round(h * scale)), max(1, round(w * scale))
    small = np.asarray(
        Image.fromarray(crop).resize((nw, nh), Image.Resampling.LANCZOS), dtype=np.float32
    )
    small = np.clip(small, 0, 255)
    out = np.zeros((side, side), np.float32)
    total = small.sum()
    cy = float((small.sum(axis=1) * np.arange(nh)).sum() / total)
    cx = float((small.sum(axis=0) * np.arange(nw)).sum() / total)
    top = round(side / 2 - cy - 0.5)
    left = round(side / 2 - cx - 0.5)
    top = min(max(top, 0), side - nh)
    left = min(max(left, 0), side - nw)
    out[top : top + nh, left : left + nw] = small
    return out


def render_prototypes(fonts: Sequence[Path]) -> tuple[NDArray[np.float32], NDArray[np.int64]]:
    """All digit x font x stroke renders at SUPER x MNIST resolution, with their labels."""
    import numpy as np
    from PIL import Image, ImageDraw, ImageFont

    faces: list[Any] = [ImageFont.truetype(str(f), RENDER_PX) for f in fonts]
    if not faces:  # no font files at all: Pillow's bundled font still gives ten digits
        faces = [ImageFont.load_default(size=RENDER_PX)]
    protos: list[NDArray[np.float32]] = []
    labels: list[int] = []
    canvas = RENDER_PX * 2
    for face in faces:
        for stroke in STROKES:
            for digit in range(10):
                img = Image.new("L", (canvas, canvas), 0)
                ImageDraw.Draw(img).text(
                    (canvas // 4, canvas // 8),
                    str(digit),
                    fill=255,
                    font=face,
                    stroke_width=stroke,
                    stroke_fill=255,
                )
                arr = np.asarray(img)
                if arr.max() == 0:
                    continue
                protos.append(_fit_and_centre(arr, SIDE * SUPER, BOX * SUPER))
                labels.append(digit)
    return np.stack(protos), np.asarray(labels, np.int64)


def _upsample_matrix(n_in: int, n_out: int) -> NDArray[np.float32]:
    """Linear interpolation matrix (n_out x n_in) from a coarse grid to a fine one."""
    import numpy as np

    pos = np.linspace(0, n_in - 1, n_out)
    lo = np.floor(pos).astype(int).clip(0, n_in - 2)
    frac = (pos - lo).astype(np.float32)
    m = np.zeros((n_out, n_in), np.float32)
    m[np.arange(n_out), lo] = 1 - frac
    m[np.arange(n_out), lo + 1] = frac
    return m


def synthesize(
    n: int,
    protos: NDArray[np.float32],
    proto_labels: NDArray[np.int64],
    rng: np.random.Generator,
    chunk: int = 4096,
) -> tuple[NDArray[np.uint8], NDArray[np.uint8]]:
    """n warped, noisy 28x28 digits with balanced random labels."""
    import numpy as np

    images = np.empty((n, SIDE, SIDE), np.uint8)
    labels = rng.integers(0, 10, size=n).astype(np.uint8)
    by_digit = [np.flatnonzero(proto_labels == d) for d in range(10)]
    big = SIDE * SUPER
    # Output pixel centres, in prototype coordinates relative to the image centre.
    grid = (np.arange(SIDE, dtype=np.float32) + 0.5) * SUPER - big / 2
    gy, gx = np.meshgrid(grid, grid, indexing="ij")
    coarse = 5
    up = _upsample_matrix(coarse, SIDE)
    flat = protos.reshape(len(protos), -1)
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        b = stop - start
        pick = np.empty(b, np.int64)
        for d in range(10):
            mask = labels[start:stop] == d
            pick[mask] = by_digit[d][rng.integers(0, len(by_digit[d]), int(mask.sum()))]
        # Random affine (inverse map from output to prototype): rotation, scale, shear, shift.
        theta = rng.uniform(-0.22, 0.22, b)
        scale = rng.uniform(0.85, 1.12, b)
        aspect = rng.uniform(0.9, 1.1, b)
        shear = rng.uniform(-0.25, 0.25, b)
        shift = rng.normal(0, 0.9 * SUPER, (b, 2))
        cos, sin = np.cos(theta), np.sin(theta)
        a00, a01 = cos / (scale * aspect), (sin + shear) / scale
        a10, a11 = -sin / scale, cos * aspect / scale
        sy = a10[:, None, None] * gx + a11[:, None, None] * gy + shift[:, 0, None, None]
        sx = a00[:, None, None] * gx + a01[:, None, None] * gy + shift[:, 1, None, None]
        # Smooth elastic warp: coarse random displacements, interpolated to every pixel.
        dy = up @ rng.normal(0, 1.6, (b, coarse, coarse)).astype(np.float32) @ up.T
        dx = up @ rng.normal(0, 1.6, (b, coarse, coarse)).astype(np.float32) @ up.T
        sy = sy + dy + big / 2 - 0.5
        sx = sx + dx + big / 2 - 0.5
        # Bilinear sampling with zero outside the prototype.
        y0 = np.floor(sy).astype(np.int64)
        x0 = np.floor(sx).astype(np.int64)
        fy = (sy - y0).astype(np.float32)
        fx = (sx - x0).astype(np.float32)
        out = np.zeros((b, SIDE, SIDE), np.float32)
        base = pick[:, None, None]
        for oy, ox, w in (
            (0, 0, (1 - fy) * (1 - fx)),
            (0, 1, (1 - fy) * fx),
            (1, 0, fy * (1 - fx)),
            (1, 1, fy * fx),
        ):
            yy, xx = y0 + oy, x0 + ox
            ok = (yy >= 0) & (yy < big) & (xx >= 0) & (xx < big)
            idx = np.where(ok, yy * big + xx, 0)
            vals = flat[np.broadcast_to(base, idx.shape), idx]
            out += np.where(ok, vals, 0) * w
        # Pen pressure and scanner noise; keep the background mostly exact zero as MNIST is.
        out *= rng.uniform(0.85, 1.25, (b, 1, 1))
        out += rng.normal(0, 6.0, out.shape) * (out > 20)
        out[out < 12] = 0
        images[start:stop] = np.clip(out, 0, 255).astype(np.uint8)
    return images, labels


def make(root: Path, n_train: int, n_test: int, seed: int) -> Path:
    """Write the four IDX files under ``root/MNIST/raw`` and return that folder."""
    import numpy as np

    raw = root / "MNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    protos, proto_labels = render_prototypes(find_fonts())
    # Independent streams: changing --train does not change the test set, and vice versa.
    train_seq, test_seq = np.random.SeedSequence(seed).spawn(2)
    for split, n, seq in (("train", n_train, train_seq), ("test", n_test, test_seq)):
        images, labels = synthesize(n, protos, proto_labels, np.random.default_rng(seq))
        write_idx(raw / FILES[(split, "images")], (n, SIDE, SIDE), images.tobytes())
        write_idx(raw / FILES[(split, "labels")], (n,), labels.tobytes())
    # torchvision ignores other files; this one tells people (and download_mnist.sh) what it is.
    (raw / SYNTHETIC_MARKER).write_text(
        f"Synthetic MNIST from scripts/make_mnist_data.py: {n_train} train, {n_test} test "
        f"images, seed {seed}. Not the real data set: run scripts/download_mnist.sh for that.\n"
    )
    return raw


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path, help="data root (files go to ROOT/MNIST/raw/)")
    parser.add_argument("--train", type=int, default=60_000, metavar="N", help="training images")
    parser.add_argument("--test", type=int, default=10_000, metavar="N", help="test images")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-q", "--quiet", action="store_true")
    args = parser.parse_args(argv)
    if args.train < 1 or args.test < 1:
        parser.error("--train and --test must be at least 1")
    try:
        import numpy  # noqa: F401
        import PIL  # noqa: F401
    except ImportError as exc:
        print(
            f"make_mnist_data: needs numpy and Pillow ({exc.name} is missing); "
            "they come with torchvision, or: pip install numpy pillow",
            file=sys.stderr,
        )
        return 2
    t0 = time.perf_counter()
    raw = make(args.root, args.train, args.test, args.seed)
    if not args.quiet:
        print(
            f"wrote {args.train} train + {args.test} test images to {raw} "
            f"in {time.perf_counter() - t0:.1f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
