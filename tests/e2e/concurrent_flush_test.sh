#!/usr/bin/env bash
# Several of the tracer's threads flushing other threads' chunks at once
# keep every chunk whole. Under `crossfree record` with its drain far
# behind (zstd level 19), 32 busy threads run short of the slots of a
# 4 MiB hand-off region, so a thread that needs one seals the others' open
# chunks, and several do so at once. Each
# flusher must write only the chunks it borrowed: one that wrote another
# flusher's too sealed a slot twice and let its owner write into a slot
# record had freed, and record then found chunks damaged in shared memory
# (3 runs in 10 before the fix). Every run here must keep all its
# events: exit 0, the same event count each time, none damaged or
# dropped (the tracer waits up to 30 s for a slot rather than drop).
# 12 runs (about 4 s each): at that rate of failure they find the fault
# 98.6 times in 100 (1 - 0.7^12).
# Usage: concurrent_flush_test.sh CROSSFREE WORKLOAD WORKDIR
source "$(dirname "$0")/e2e_lib.sh"
workload=$2
runs=${CROSSFREE_TEST_FLUSH_RUNS:-12}
expected=""
for ((i = 1; i <= runs; i++)); do
  rc=0
  CROSSFREE_RECORD_LEVEL=19 CROSSFREE_CHANNEL_KB=4096 CROSSFREE_CHANNEL_WAIT_MS=30000 \
    timeout -k 5 120 "$crossfree" record -o run.trc -- \
    "$workload" --mode mixed --churn 0 --fns all --nest 10 --producers 16 --consumers 16 \
    --sizes 24,48,64,120,256 --objects 200000 >run.out 2>run.err || rc=$?
  [[ $rc == 0 ]] || { cat run.err; fail "run $i: record exited $rc"; }
  ! grep -q 'damaged' run.err || { cat run.err; fail "run $i: chunks damaged in shared memory"; }
  events=$(sed -nE 's/.*hand-off: ([0-9]+) events in.*/\1/p' run.err)
  [[ -n $events ]] || { cat run.err; fail "run $i: no hand-off line"; }
  [[ -z $expected || $events == "$expected" ]] ||
    { cat run.err; fail "run $i: $events events, run 1 had $expected"; }
  expected=$events
  "$crossfree" dump --summary run.trc >dump.out 2>dump.err || { cat dump.err; fail "run $i: dump"; }
  grep -q '^  complete: yes' dump.out || { cat dump.out; fail "run $i: trace not complete"; }
done
echo "$runs runs, $expected events each, no chunk damaged"
