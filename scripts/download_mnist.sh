#!/usr/bin/env bash
# Download the real MNIST for training/mnist_single.py. Run it on a LOGIN node: compute nodes
# usually have no internet, which is why the training script never downloads by itself.
#
#   bash scripts/download_mnist.sh [DATA_DIR]        (default: ./data)
#
# Fetches the four .gz files from the mirrors torchvision.datasets.MNIST uses, checks
# torchvision's MD5 sums, and unpacks them into DATA_DIR/MNIST/raw/, where
# `torchvision.datasets.MNIST(root=DATA_DIR, download=False)` reads them. It replaces
# synthetic data from scripts/make_mnist_data.py if there is any.
# Same result with torchvision installed:
#   python -c "from torchvision import datasets as d; [d.MNIST('data', train=t, download=True) for t in (True, False)]"
set -euo pipefail

root=${1:-data}
raw="$root/MNIST/raw"
mirrors=(
  "https://ossci-datasets.s3.amazonaws.com/mnist/"
  "http://yann.lecun.com/exdb/mnist/"
)
# name and MD5 of the .gz, as in torchvision/datasets/mnist.py
files=(
  "train-images-idx3-ubyte.gz f68b3c2dcbeaaa9fbdd348bbdeb94873"
  "train-labels-idx1-ubyte.gz d53e105ee54ea40749a09fcbcd1e9432"
  "t10k-images-idx3-ubyte.gz 9fb629c4189551a2d022fa330f9573f3"
  "t10k-labels-idx1-ubyte.gz ec29112dd5afa0611ce80d1b7f02629c"
)

fetch() {  # fetch URL OUT
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL --retry 3 --connect-timeout 20 -o "$2" "$1"
  elif command -v wget >/dev/null 2>&1; then
    wget -q --tries=3 --timeout=20 -O "$2" "$1"
  else
    echo "download_mnist: needs curl or wget" >&2
    return 1
  fi
}

md5_of() {
  if command -v md5sum >/dev/null 2>&1; then md5sum "$1" | cut -d' ' -f1; else md5 -q "$1"; fi
}

mkdir -p "$raw"
for entry in "${files[@]}"; do
  read -r name sum <<<"$entry"
  if [ -f "$raw/$name" ] && [ "$(md5_of "$raw/$name")" = "$sum" ]; then
    echo "have $name"
  else
    ok=
    for mirror in "${mirrors[@]}"; do
      echo "fetching $mirror$name"
      if fetch "$mirror$name" "$raw/$name.part" && [ "$(md5_of "$raw/$name.part")" = "$sum" ]; then
        mv "$raw/$name.part" "$raw/$name"
        ok=1
        break
      fi
      echo "  failed or wrong checksum; trying the next mirror" >&2
      rm -f "$raw/$name.part"
    done
    if [ -z "$ok" ]; then
      echo "download_mnist: could not download $name from any mirror" >&2
      exit 1
    fi
  fi
  gunzip -c "$raw/$name" >"$raw/${name%.gz}.part"
  mv "$raw/${name%.gz}.part" "$raw/${name%.gz}"
done
rm -f "$raw/SYNTHETIC.txt"
echo "MNIST is in $raw"
