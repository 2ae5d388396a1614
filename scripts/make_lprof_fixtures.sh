#!/usr/bin/env bash
# Records the real line_profiler fixtures in tests/fixtures/lprof/ (rerunnable).
#
# For each line_profiler version: a throwaway venv under $LPROF_VENVS (default /tmp), then
# `kernprof -l -o lp<version>.lprof train_toy.py` and `python -m line_profiler [flags]` text
# output for every flag combination people paste into tickets. kernprof records the script's
# path as given ("train_toy.py"), so every run names the same file; the tables are printed
# where it lies, so they carry its source (the -nosource ones are printed after removing it).
# Timings differ from run to run; the tests compare each text table with its own pickle only.
# line_profiler's rich output keeps ANSI colours even when redirected (it forces a colour
# system), which is what lands in Slurm logs.
set -euo pipefail
cd "$(dirname "$0")/.."

out=$PWD/tests/fixtures/lprof
venvs=${LPROF_VENVS:-/tmp}
rec=/tmp/tuneadvisor-lprof-rec  # recorded in the pickles: keep it fixed
versions=(${LPROF_VERSIONS:-4.1.3 4.2.0 5.1.0})
rich_version=15.0.0

rm -rf "$rec"
mkdir -p "$rec"
# Outside any pyproject.toml: line_profiler 5 reads its options from the nearest one.
cd "$rec"

for v in "${versions[@]}"; do
  venv=$venvs/lp-$v
  if [ ! -x "$venv/bin/kernprof" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "line_profiler==$v" "rich==$rich_version"
  fi
  cp "$out/train_toy.py" "$rec/train_toy.py"
  base=lp$v
  "$venv/bin/kernprof" -l -o "$base.lprof" train_toy.py 3 >/dev/null
  show() {  # show SUFFIX [FLAGS...]: one printed table
    local suffix=$1; shift
    env -u COLUMNS "$venv/bin/python" -m line_profiler "$@" "$base.lprof" \
      > "$out/$base$suffix.txt"
  }
  show ""
  show -r -r
  show -m -m
  show -t -t
  show -rmt -rmt
  show -u1e-3 -u 1e-3
  # Rich output (colours included) is wrapped to 80 columns when not on a terminal, as in a
  # Slurm log; a wide terminal keeps the rows whole.
  COLUMNS=200 "$venv/bin/python" -m line_profiler -r "$base.lprof" > "$out/$base-r-wide.txt"
  cp "$base.lprof" "$out/"
  if [ "${v%%.*}" -ge 5 ]; then
    # A second "rank" of the same code, for merging.
    "$venv/bin/kernprof" -l -o "$base-rank1.lprof" train_toy.py 2 >/dev/null
    cp "$base-rank1.lprof" "$out/"
  fi
  # Printed on a machine without the source: rows without contents.
  rm "$rec/train_toy.py"
  show -nosource
  show -m-nosource -m
done
ls -l "$out"
