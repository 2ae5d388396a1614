#!/usr/bin/env bash
# A virtualenv with HolisticTraceAnalysis 0.5.0 for bench/trace_bench.py (HTA's side of the
# comparison; it pulls pandas, plotly and jupyterlab, so it stays out of the project's venv).
#   bash bench/hta_venv.sh && bench/.hta-venv/bin/python bench/trace_bench.py
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=$here/.hta-venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q holistictraceanalysis==0.5.0 ijson==3.6.0 psutil
fi
echo "$venv/bin/python"
