#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The CI gate, dogfooded on the RPC core: trace a short rpc-bench run with
# `crossfree record` and check it with `crossfree gate --operations CALLS`
# against the baseline committed in tests/e2e/ (no suppressions: the
# start-up and shutdown pairs are told apart by their lifecycle).
#   gate_test.sh pass fixed  CROSSFREE RPC_BENCH WORKDIR   the fixed core must pass (exit 0)
#   gate_test.sh fail SWITCH CROSSFREE RPC_BENCH WORKDIR   legacy / --legacy_X must fail (exit 1)
#                                                          and name each of its pairs
# Known answers: the pairs of tests/e2e/expected-pairs.txt (per switch).
set -uo pipefail
expect=$1 pattern=$2 crossfree=$3 bench=$4 work=$5
here=$(cd "$(dirname "$0")" && pwd)
baseline=$here/rpc-bench-fixed.baseline
expected=$here/expected-pairs.txt

fail() { echo "FAIL: $*"; exit 1; }

case $pattern in
  fixed | legacy) flag=(--alloc_pattern "$pattern") ;;
  legacy_*) flag=("--$pattern") ;;
  *) fail "unknown pattern $pattern" ;;
esac

rm -rf "$work/$pattern" && mkdir -p "$work/$pattern" || fail "cannot create $work/$pattern"
trace=$work/$pattern/run.trc
# 1 server reactor, 1 caller, 1 worker: every per-call pair of the core,
# a few thousand calls in 0.5 s, well under a second of analysis.
"$crossfree" record -o "$trace" -- "$bench" --mode sync --client_threads 1 --server_reactors 1 \
  --worker_threads 1 --run_seconds 0.5 "${flag[@]}" >"$work/$pattern/bench.out" 2>"$work/$pattern/record.err" ||
  fail "crossfree record rpc-bench ${flag[*]} exited $? ($(tail -3 "$work/$pattern/record.err"))"

# Not vacuous: the run made calls and the tracer saw every thread of it
# (main, acceptor, reactor, worker, caller, client reactor). Allocations per
# call are not a fixed number: the fixed core keeps removing them.
calls=$(sed -n 's/^client latency_us: count=\([0-9]*\).*/\1/p' "$work/$pattern/bench.out")
[[ ${calls:-0} -ge 100 ]] || fail "rpc-bench made ${calls:-no} calls (need >= 100)"
summary=$("$crossfree" report --format json "$trace" | tr -d '\n' | sed 's/.*"summary": *{\([^}]*\)}.*/\1/')
allocs=$(sed -n 's/.*"allocations": *\([0-9]*\).*/\1/p' <<<"$summary")
threads=$(sed -n 's/.*"threads": *\([0-9]*\).*/\1/p' <<<"$summary")
[[ ${threads:-0} -ge 6 && ${allocs:-0} -ge 100 ]] ||
  fail "trace has ${threads:-no} threads and ${allocs:-no} allocations (tracer not loaded?)"

"$crossfree" gate --baseline "$baseline" --operations "$calls" "$trace" >"$work/$pattern/gate.out" 2>&1
rc=$?
echo "rpc-bench ${flag[*]}: $calls calls; trace: $threads threads, $allocs allocations; crossfree gate exit $rc"
cat "$work/$pattern/gate.out"

if [[ $expect == pass ]]; then
  [[ $rc -eq 0 ]] || fail "the fixed core must pass the gate (exit 0), got $rc"
  # Not vacuous: the run has cross-thread pairs (start-up and shutdown),
  # and they passed because they are bounded, not because none were seen.
  grep -Eq '^crossfree gate: PASSED: [1-9][0-9]* cross-thread pairs' "$work/$pattern/gate.out" ||
    fail "gate output lists no cross-thread pair"
  "$crossfree" report --top 0 --operations "$calls" "$trace" >"$work/$pattern/report.txt" ||
    fail "crossfree report failed"
  grep -q 'lifecycle: bounded' "$work/$pattern/report.txt" || fail "no bounded pair in the report"
  if grep -q 'lifecycle: per-call' "$work/$pattern/report.txt"; then
    grep -B2 'lifecycle: per-call' "$work/$pattern/report.txt"
    fail "the fixed core has a per-call cross-thread pair"
  fi
  echo "PASS: fixed core passes the gate with no suppressions"
  exit 0
fi

[[ $rc -eq 1 ]] || fail "pattern $pattern must fail the gate (exit 1), got $rc"
# Every historical pair of this switch (all switches for `legacy`) is named
# as NEW with its key.
found=0
while IFS=$'\t' read -r sw name roles site; do
  [[ -z $sw || $sw == \#* ]] && continue
  [[ $pattern == legacy || $pattern == "$sw" ]] || continue
  if grep -F "key: $roles | alloc: " "$work/$pattern/gate.out" |
    sed -e 's/^ *key: .* | alloc: //' -e 's/ | free: .*//' | grep -qE "$site"; then
    echo "named: $sw: $name ($roles)"
    found=$((found + 1))
  else
    fail "gate output does not name $sw: $name ($roles, alloc at $site)"
  fi
done <"$expected"
[[ $found -gt 0 ]] || fail "no expected pair listed for $pattern in $expected"
grep -q '^NEW ' "$work/$pattern/gate.out" || fail "no NEW pair printed"
echo "PASS: $pattern fails the gate naming its $found historical pair(s)"
