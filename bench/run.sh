#!/usr/bin/env bash
# Rerun every benchmark and rewrite bench/RESULTS.md (about 1-2 minutes).
#   bash bench/run.sh             # the recorded run
#   bash bench/run.sh --quick     # fewer repeats, to check the harness
#   bash bench/run.sh --timer python   # without hyperfine even if it is installed
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if [[ ! -x .venv/bin/python ]]; then
    echo "bench/run.sh: .venv/bin/python not found; run scripts/setup.sh first" >&2
    exit 2
fi
exec .venv/bin/python bench/run_bench.py "$@"
