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
# The gate passes on a baseline written from the same run, exactly: every
# pair of the run is allowed, none new, none gone, none failed, with the
# 20,000 objects as the operations.
"$crossfree" gate --write-baseline --operations 20000 --baseline base.txt run-producer-consumer.trc \
  >wb.out || fail "gate --write-baseline"
allowed=$(grep -c '^allow ' base.txt)
((allowed > 0)) || fail "the baseline allows no pair"
grep -qx "crossfree gate: wrote base.txt ($allowed pairs allowed, rates per operation; 0 suppressed)" wb.out ||
  fail "gate --write-baseline said: $(cat wb.out)"
"$crossfree" gate --operations 20000 --baseline base.txt --format json run-producer-consumer.trc \
  >self.json 2>self.err
rc=$?
[[ $rc == 0 ]] || fail "gate on its own baseline exited $rc, expected 0"
[[ ! -s self.err ]] || fail "gate on its own baseline warned: $(cat self.err)"
python3 - "$allowed" <<'PY' || fail "gate on its own baseline: not an exact pass"
import json, sys
g = json.load(open("self.json"))
pairs = int(sys.argv[1])
assert g["passed"] is True, g["passed"]
assert g["offenses"] == [] and g["new_within_noise"] == [] and g["gone"] == [], "offenses/new/gone"
assert g["suppressed"] == [] and g["warnings"] == [], "suppressed/warnings"
assert g["allowed_groups"] == g["groups"] >= 1, (g["allowed_groups"], g["groups"])
print(f"gate on its own baseline: passed, {pairs} pairs in {g['groups']} groups")
PY
echo "end-to-end checks passed"
