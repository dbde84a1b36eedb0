#!/usr/bin/env bash
# The layering docs/design.md states, checked on the sources: each stage of
# analyzer/ includes only its own headers, those of the stages before it
# (pairing, model, simulate, render, cli) and format/; record/ only itself,
# format/ and protocol/; format/ includes only
# itself; protocol/ (the tracer<->record protocol) only itself and format/;
# the tracer and the analyzer meet only in format/ and protocol/; no
# product code includes from tests/.
# Usage: layering_test.sh SOURCE_DIR
set -uo pipefail
cd "$1" || exit 1
failures=0

# allowed FOLDER PREFIX...: every project include of FOLDER's sources starts
# with one of the PREFIXes (system and generated headers are not checked).
allowed() {
  local folder=$1; shift
  local pattern
  pattern=$(printf '|%s' "$@")
  pattern="^#include \"(${pattern:1})"
  while IFS= read -r line; do
    local file=${line%%:*} include=${line#*:}
    if [[ ! $include =~ $pattern ]]; then
      echo "FAIL: $file: $include (allowed from $folder: $*)"
      failures=$((failures + 1))
    fi
  done < <(grep -rHE '^#include "(analyzer|format|protocol|tracer|rpc|bench|tests)/' "$folder" \
           --include='*.h' --include='*.cc' --include='*.c')
}

allowed format format/
allowed protocol protocol/ format/
allowed tracer tracer/ format/ protocol/
allowed analyzer/pairing analyzer/pairing/ format/
allowed analyzer/model analyzer/pairing/ analyzer/model/ format/
allowed analyzer/simulate analyzer/pairing/ analyzer/model/ analyzer/simulate/ format/
allowed analyzer/render analyzer/pairing/ analyzer/model/ analyzer/simulate/ analyzer/render/ format/
# The recording host stands beside the analysis stages: it writes traces
# and speaks to the tracer, and analyses nothing.
allowed analyzer/record analyzer/record/ format/ protocol/
allowed analyzer/cli analyzer/ format/ protocol/
# rpc-bench (rpc/rpc_bench.cc) prints the benchmarks' shared RESULT line.
allowed rpc rpc/ bench/bench_result.h
# Benchmarks may use the code they measure, never the tests' helpers.
allowed bench analyzer/ format/ tracer/ rpc/ bench/

# A rule that matched no file would pass without checking anything.
for folder in format protocol tracer analyzer/pairing analyzer/model analyzer/simulate analyzer/render \
              analyzer/record analyzer/cli rpc bench; do
  [[ -n $(grep -rlE '^#include "' "$folder" --include='*.cc' --include='*.h' | head -1) ]] ||
    { echo "FAIL: $folder has no sources with includes"; failures=$((failures + 1)); }
done

if ((failures > 0)); then echo "$failures include(s) break the layering"; exit 1; fi
echo "every include follows the layering"
