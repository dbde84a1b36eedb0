#!/usr/bin/env bash
# `crossfree record` never loses events silently, and a second signal ends
# it at once (issue 40):
#  1. a run whose tracer must drop chunks (a 1 MiB hand-off region, no
#     wait for a free buffer, zstd level 19 on the drain: record falls
#     far behind 8 busy threads) exits 3, names the dropped events and
#     says the trace is incomplete;
#  2. a command that ignores SIGTERM: the first SIGTERM to record is passed
#     on and record waits; the second ends record at once with 143, long
#     before the command would have ended, and the trace on disk reads.
# Usage: record_loss_test.sh CROSSFREE WORKLOAD WORKDIR
source "$(dirname "$0")/e2e_lib.sh"
workload=$2

# 1. Dropped events: exit 3 and the count.
rc=0
CROSSFREE_CHANNEL_KB=1024 CROSSFREE_CHANNEL_WAIT_MS=0 CROSSFREE_RECORD_LEVEL=19 \
  timeout -k 5 120 "$crossfree" record -o lost.trace -- \
  "$workload" --producers 4 --consumers 4 --objects 200000 >lost.out 2>lost.err || rc=$?
[[ $rc == 3 ]] || { cat lost.err; fail "record with dropped events exited $rc, not 3"; }
grep -Eq 'not written: [1-9][0-9]* events in [1-9][0-9]* chunks dropped by the tracer' lost.err ||
  { cat lost.err; fail "no count of dropped events"; }
grep -q 'the trace is incomplete: events the command recorded were lost' lost.err ||
  { cat lost.err; fail "no closing line on the loss"; }
# What was written still reads.
"$crossfree" dump --summary lost.trace >dump.out 2>dump.err || { cat dump.err; fail "dump"; }

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
