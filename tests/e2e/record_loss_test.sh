#!/usr/bin/env bash
# `crossfree record` never loses events silently, and a second signal ends
# it at once (issue 40):
#  1. a run whose tracer must drop chunks (a 1 MiB hand-off region, no
#     wait for a free buffer, zstd level 19 on the drain and no backlog
#     to hold chunks back in: record falls far behind 8 busy threads) exits 3, names the dropped events and
#     says the trace is incomplete; the trace says so too (its losses
#     record, with the same counts, in dump --summary, report and JSON);
#  3. at level 19 with the drain far behind, record ends within a bound
#     of its command's end (2 s of compression, then plain), losing
#     nothing;
#  4. a trace file that stops taking bytes (a write that never returns,
#     as on a hung mount; CROSSFREE_RECORD_TEST_STALL_WRITES): record's
#     watchdog ends it 3 s after the last byte, exit 3, saying so, and the
#     bytes on disk read as an incomplete trace;
#  2. a command that ignores SIGTERM: the first SIGTERM to record is passed
#     on and record waits; the second ends record at once with 143, long
#     before the command would have ended, and the trace on disk reads.
# Usage: record_loss_test.sh CROSSFREE WORKLOAD WORKDIR
source "$(dirname "$0")/e2e_lib.sh"
workload=$2

# 1. Dropped events: exit 3 and the count.
rc=0
CROSSFREE_CHANNEL_KB=1024 CROSSFREE_CHANNEL_WAIT_MS=0 CROSSFREE_RECORD_LEVEL=19 \
  CROSSFREE_RECORD_BACKLOG_MB=0 timeout -k 5 120 "$crossfree" record -o lost.trace -- \
  "$workload" --producers 4 --consumers 4 --objects 200000 >lost.out 2>lost.err || rc=$?
[[ $rc == 3 ]] || { cat lost.err; fail "record with dropped events exited $rc, not 3"; }
grep -Eq 'not written: [1-9][0-9]* events in [1-9][0-9]* chunks dropped by the tracer' lost.err ||
  { cat lost.err; fail "no count of dropped events"; }
grep -q 'the trace is incomplete: events the command recorded were lost' lost.err ||
  { cat lost.err; fail "no closing line on the loss"; }
# What was written still reads, and says itself that it is incomplete:
# record's losses record (trace format 6.9) carries the same counts as
# record's line, into dump --summary and the report (text and JSON).
"$crossfree" dump --summary lost.trace >dump.out 2>dump.err || { cat dump.err; fail "dump"; }
counts=$(grep -Eo 'not written: [0-9]+ events in [0-9]+ chunks' lost.err | head -1 |
         sed 's/^not written: //')
[[ -n $counts ]] || { cat lost.err; fail "no counts in record's line"; }
grep -q "^  complete: no: $counts dropped by the tracer" dump.out ||
  { cat dump.out; fail "dump --summary does not say the trace is incomplete ($counts)"; }
grep -q "lost.trace: the trace is incomplete: $counts dropped" dump.err ||
  { cat dump.err; fail "dump warns not on stderr"; }
"$crossfree" report lost.trace >report.out 2>report.err || { cat report.err; fail "report"; }
grep -q "incomplete: ${counts%% events*} events dropped, 0 chunks damaged" report.out ||
  { cat report.out; fail "report's trace line does not name the loss"; }
grep -q "warning: .*lost.trace: incomplete: $counts dropped" report.err ||
  { cat report.err; fail "report warns not on stderr"; }
"$crossfree" report --format json lost.trace >report.json 2>/dev/null || fail "report json"
events=${counts%% events*}
chunks=${counts#* events in }; chunks=${chunks%% chunks}
grep -q "\"losses\": {\"events_dropped\": $events, \"chunks_dropped\": $chunks, \"chunks_damaged\": 0}" \
  report.json || { grep -o '"traces".*' report.json | head -c 600; fail "JSON has no losses"; }
# The gate never passes an incomplete trace: exit 2 naming the loss, and
# with --accept-truncated the loss is stated and the trace gated.
rc=0
"$crossfree" gate --write-baseline --baseline lost.baseline lost.trace >gate.out 2>gate.err || rc=$?
[[ $rc == 2 ]] || { cat gate.err; fail "gate on an incomplete trace exited $rc, not 2"; }
grep -q "lost.trace: incomplete: $counts dropped by the tracer.*the gate does not pass on an incomplete trace" gate.err ||
  { cat gate.err; fail "gate does not name the loss"; }
rc=0
"$crossfree" gate --write-baseline --accept-truncated --baseline lost.baseline lost.trace \
  >gate.out 2>gate.err || rc=$?
[[ $rc == 0 ]] || { cat gate.err; fail "gate --accept-truncated exited $rc"; }
grep -q "warning: .*lost.trace: incomplete: $counts dropped.*(--accept-truncated)" gate.err ||
  { cat gate.err; fail "gate --accept-truncated does not state the loss"; }

# 3. record's end is bounded whatever the drain is doing: at zstd level 19
# the drain is far behind when the command ends, with much of the region
# sealed; record compresses for 2 s more, writes the rest plain and exits.
# The workload prints its counts once its threads are joined, at its very
# end: the time that line arrives is the command's end. record must be
# gone within 20 s of it (ten times the design's bound: only a drain that
# does not stop fails it), with nothing lost.
# record_timed NAME EXPECTED_EXIT BOUND_MS ENV...: records the workload's
# run (ARGS in $workload_args) into NAME.trace with ENV set, NAME.err
# its stderr; fails unless record exits EXPECTED_EXIT within BOUND_MS of
# the command's end (the workload's last line, printed once its threads
# are joined, marks it).
record_timed() {
  local name=$1 expected=$2 bound_ms=$3; shift 3
  rm -f ended
  local rc=0
  env "$@" timeout -k 5 180 "$crossfree" record -o "$name.trace" -- \
    "$workload" "${workload_args[@]}" 2>"$name.err" |
    { read -r _; date +%s%N >ended; cat >/dev/null; }
  rc=${PIPESTATUS[0]}
  local done_ns; done_ns=$(date +%s%N)
  [[ $rc == "$expected" ]] || { cat "$name.err"; fail "record ($name) exited $rc, not $expected"; }
  [[ -s ended ]] || fail "the command did not say when it ended"
  local after_ms=$(( (done_ns - $(cat ended)) / 1000000 ))
  echo "record_loss_test: record ended ${after_ms} ms after its command ($name)"
  (( after_ms < bound_ms )) ||
    { cat "$name.err"; fail "record ($name) ended ${after_ms} ms after its command"; }
}
workload_args=(--producers 4 --consumers 4 --objects 1000000)
record_timed bound 0 20000 CROSSFREE_RECORD_LEVEL=19
grep -q '0 events lost of those the command recorded' bound.err ||
  { cat bound.err; fail "events lost at level 19"; }

# 4. A write that never returns. From its 300,000th byte on, every write of
# record blocks for good; the drain stalls while the command runs (its
# threads then drop events) and again at the end. record must be gone
# within 10 s of the command's end (the watchdog's bound is 3 s without a
# byte written), exit 3 and name the stall; what is on disk reads.
workload_args=(--producers 2 --consumers 2 --objects 200000)
record_timed stall 3 10000 CROSSFREE_RECORD_TEST_STALL_WRITES=300000
grep -q "the trace file took no bytes for 3 s .*ending now: what record still held is lost" \
  stall.err || { cat stall.err; fail "record does not name the stall"; }
"$crossfree" dump --summary stall.trace >stall.dump 2>stall.dump.err ||
  { cat stall.dump.err; fail "dump of the stalled trace"; }
grep -q '^  complete: no: ' stall.dump || { cat stall.dump; fail "the stalled trace reads complete"; }

# 2. Two SIGTERMs. The command ignores SIGTERM and lives 60 s; it writes a
# line once its trap is set, and record's pid is $!.
rm -f ready
"$crossfree" record -o term.trace -- \
  sh -c 'trap "" TERM; echo ready > ready; exec sleep 60' >term.out 2>term.err &
record_pid=$!
for ((i = 0; i < 200; i++)); do [[ -s ready ]] && break; sleep 0.05; done  # a deadline, not a sync
[[ -s ready ]] || fail "the command did not start within 10 s"
kill -TERM "$record_pid"
# Two signals sent before the first is delivered arrive as one: wait
# (bounded) until record says it took the first.
for ((i = 0; i < 600; i++)); do
  grep -q 'signal passed to the command' term.err && break
  sleep 0.05
done
grep -q 'signal passed to the command' term.err || { cat term.err; fail "first SIGTERM not taken"; }
# The first is passed on and ignored: record must still be running.
kill -0 "$record_pid" 2>/dev/null || fail "record ended on the first SIGTERM"
# A repeat within 0.5 s of the first is the same request (timeout sends its
# signal to record and then to record's group): the second comes later.
sleep 0.6
kill -TERM "$record_pid"
# Bounded: record must be gone within 30 s, or it is killed and the test fails.
for ((i = 0; i < 600; i++)); do kill -0 "$record_pid" 2>/dev/null || break; sleep 0.05; done
if kill -0 "$record_pid" 2>/dev/null; then
  kill -KILL "$record_pid"
  fail "record still running 30 s after the second SIGTERM"
fi
rc=0
wait "$record_pid" || rc=$?
[[ $rc == 143 ]] || { cat term.err; fail "record exited $rc after two SIGTERMs, not 143"; }
grep -q 'second signal: ending now' term.err || { cat term.err; fail "no message"; }
# The command, left behind by design (record ended, not the command).
pkill -f "^sleep 60$" 2>/dev/null
echo "record_loss_test: ok"
