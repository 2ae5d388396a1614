#!/usr/bin/env bash
# Sets up everything tuneadvisor and its tests need, from a clean clone: idempotent.
#   .venv/ with the package (editable), its dev tools and the `train` extra (torch and
#   torchvision, for the bundled training scripts' tests) at the versions in constraints.txt,
#   tmux for the test that drives the real binary.
# torch is about 5.5 GB and takes minutes to install from nothing; TUNEADVISOR_NO_TRAIN=1 leaves
# it out (the training tests then skip).
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v tmux >/dev/null 2>&1 || need_apt+=(tmux)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "setup: installing ${need_apt[*]} with apt-get"
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    echo "setup: not root, cannot install ${need_apt[*]}; tests that need them will skip" >&2
  fi
fi

# pip here warns about every configured local index folder that is missing: show pip's
# output only when it fails.
quietly() { local out; if ! out=$("$@" 2>&1); then printf '%s\n' "$out" >&2; return 1; fi; }

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
quietly .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
# A stamp skips the install when nothing it depends on changed.
extras=dev,train
[ "${TUNEADVISOR_NO_TRAIN:-}" = 1 ] && extras=dev
stamp=.venv/.tuneadvisor-installed
want=$( (cat pyproject.toml constraints.txt; echo "$extras") | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  quietly .venv/bin/python -m pip install -q --disable-pip-version-check -c constraints.txt -e ".[$extras]"
  echo "$want" > "$stamp"
fi
