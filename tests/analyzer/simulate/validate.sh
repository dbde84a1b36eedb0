#!/usr/bin/env bash
# Validation of `crossfree simulate` against the real gperftools 2.10: runs
# crossfree-workload under LD_PRELOAD of libtcmalloc.so.4 with the counting
# preload (libcrossfree-tccount.so), recording a trace of the same run, then
# compares predicted and measured central free-list calls per role.
# Usage: tests/analyzer/simulate/validate.sh BUILD_DIR [WORKLOAD ARGS...]
# A long check, not a ctest test.
set -euo pipefail
build=$(cd "${1:?usage: validate.sh BUILD_DIR [WORKLOAD ARGS...]}" && pwd)
shift
here=$(cd "$(dirname "$0")" && pwd)
tcmalloc=/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4
out=$(mktemp -d)
trap '[[ -n ${KEEP:-} ]] || rm -rf "$out"' EXIT
echo "work dir: $out"
CROSSFREE_TCCOUNT_OUTPUT=$out/real.%p.json \
LD_PRELOAD=$build/lib/libcrossfree-tccount.so:$tcmalloc \
  "$build/bin/crossfree" record -o "$out/run.trace" -- "$build/bin/crossfree-workload" "$@" \
  >"$out/workload.log" 2>&1
# The launcher writes its own counts too; the workload's are the ones that
# name its threads, i.e. the file not written by the recorder's pid.
real=$(grep -L '"name": "crossfree"' "$out"/real.*.json | head -1)
model=()
if [[ -n ${TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES:-} ]]; then
  model+=(--max-total-thread-cache-bytes "$TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES")
fi
if [[ -n ${TCMALLOC_TRANSFER_NUM_OBJ:-} ]]; then
  model+=(--transfer-num-objects "$TCMALLOC_TRANSFER_NUM_OBJ")
fi
"$build/bin/crossfree" simulate "${model[@]}" --format json \
  "$out/run.trace" >"$out/sim.json"
echo "workload: $* (model options: ${model[*]:-defaults})"
python3 "$here/compare_counts.py" "$out/sim.json" "$real"
