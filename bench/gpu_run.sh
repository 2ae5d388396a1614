#!/usr/bin/env bash
# Everything that needs a real GPU, in one call (a lent GPU machine's minutes are few):
#   bash bench/gpu_run.sh OUT [WHEELS]
# OUT gets gpm-check.json (issue 25: tuneadvisor's own sampler reads GPM under known loads and
# the rules name each), acceptance.json (issue 16's acceptance run), the run --profile torch
# trace of mnist_single on CUDA and the report of it (issue 22), and one log of it all.
# WHEELS: a folder of this project's dependencies as wheels for the machine's Python (made with
# `pip download --python-version 3.12 --only-binary=:all: -c constraints.txt -d WHEELS textual
# rich line_profiler psutil nvidia-ml-py simpleeval plotext ijson platformdirs`), for a machine
# with torch but no package index.
set -u
out=${1:?usage: bench/gpu_run.sh OUT [WHEELS]}
wheels=${2:-}
mkdir -p "$out"
py=${TUNEADVISOR_TORCH_PYTHON:-python3}
for p in /opt/torch/.venv/bin/python python3; do
  if "$p" -c 'import torch' 2>/dev/null; then py=$p; break; fi
done
export TUNEADVISOR_TORCH_PYTHON=$py
if [ -n "$wheels" ]; then
  "$py" -m pip install -q --no-index --target /tmp/tuneadvisor-deps "$wheels"/*.whl
  export PYTHONPATH=/tmp/tuneadvisor-deps:$PWD
else
  export PYTHONPATH=$PWD
fi
log=$out/gpu-run.log
step() { echo "== $* ($(date -u +%T))" | tee -a "$log"; }
step "python $py"; "$py" -c 'import torch, pynvml; print(torch.__version__, torch.cuda.get_device_name(0))' >>"$log" 2>&1
step "GPM under known loads"
timeout 120 "$py" bench/gpm_device_check.py --out "$out" --seconds 5 >>"$log" 2>&1; echo "rc=$?" >>"$log"
step "acceptance"
timeout 300 "$py" bench/gpu_acceptance.py --out /tmp/acceptance >>"$log" 2>&1; echo "rc=$?" >>"$log"
cp /tmp/acceptance/acceptance.json "$out/" 2>/dev/null
step "run --profile torch on CUDA"
runs=/tmp/tuneadvisor-runs
timeout 180 "$py" -m tuneadvisor run mnist_single --synthetic 4096 --max-steps 12 --num-workers 2 \
  --cpus-per-task 4 --profile torch --no-progress --runs "$runs" >>"$log" 2>&1; echo "rc=$?" >>"$log"
run=$(ls -d "$runs"/*/ 2>/dev/null | head -1)
if [ -n "$run" ]; then
  cp "$run"/*.pt.trace.json.gz "$out/" 2>/dev/null
  step "report of its traces"
  timeout 60 "$py" -m tuneadvisor report "$run" >"$out/trace-report.txt" 2>>"$log"; echo "rc=$?" >>"$log"
  timeout 60 "$py" -m tuneadvisor report "$run" --format json >"$out/trace-report.json" 2>>"$log"
fi
step done
