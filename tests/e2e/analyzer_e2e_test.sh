#!/usr/bin/env bash
# End-to-end: record crossfree-workload with the tracer, report it as JSON,
# and check the cross-thread count against the workload's own exact count.
# Usage: e2e_test.sh CROSSFREE WORKLOAD WORKDIR
set -uo pipefail
workload=$2
source "$(dirname "$0")/e2e_lib.sh"
for mode in producer-consumer mixed churn; do
  "$crossfree" record -o run-$mode.trc -- "$workload" --mode $mode --objects 20000 --churn 1 \
    >record.out 2>record.err || { cat record.out record.err; fail "record ($mode) failed"; }
  expected=$(grep -o 'expected: .*' record.out) || fail "no expected line from the workload"
  want_cross=$(sed -n 's/.*cross_thread=\([0-9]*\).*/\1/p' <<<"$expected")
  want_allocs=$(sed -n 's/.*allocs=\([0-9]*\).*/\1/p' <<<"$expected")
  for jobs in 1 2; do
    "$crossfree" report --jobs $jobs --format json run-$mode.trc >report.json 2>report.err ||
      { cat report.err; fail "report ($mode) failed"; }
    got_cross=$(python3 -c "import json; print(json.load(open('report.json'))['summary']['cross_thread_frees'])")
    got_allocs=$(python3 -c "import json; print(json.load(open('report.json'))['summary']['allocations'])")
    [[ $got_cross == "$want_cross" ]] ||
      fail "$mode, --jobs $jobs: cross-thread frees $got_cross, workload says $want_cross"
    ((got_allocs >= want_allocs)) ||
      fail "$mode, --jobs $jobs: allocations $got_allocs < the workload's $want_allocs"
    echo "$mode --jobs $jobs: cross_thread=$got_cross (expected $want_cross), allocations=$got_allocs"
  done
done
# The gate passes on a baseline written from the same run.
"$crossfree" gate --write-baseline --baseline base.txt run-producer-consumer.trc >/dev/null ||
  fail "gate --write-baseline"
"$crossfree" gate --baseline base.txt run-producer-consumer.trc >/dev/null || fail "gate on its own baseline"
echo "end-to-end checks passed"
