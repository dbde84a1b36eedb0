#!/usr/bin/env bash
# When record's drain falls behind (here: zstd level 19 and a 4 MiB hand-off
# region, so few slots and slow compression), record copies chunks out of
# their slots into its own memory and compresses them when it can, rather
# than writing them plain: the command still finds free slots, and the
# trace keeps every event and stays compressed. With a backlog too small
# for the run (1 MiB), the oldest held-back chunks are written plain, and
# nothing is lost either; with none (0), record writes plain as before.
# Last, a drain that gets no core for 2.5 s (as at nice 19 on a machine
# other work keeps busy; CROSSFREE_RECORD_TEST_PAUSE_DRAIN_MS) while the
# command's threads wait only 300 ms for a slot: record's rescue thread
# frees the slots, and nothing is lost (before it, 111 of 143 chunks were).
# Usage: record_backlog_test.sh CROSSFREE WORKLOAD WORKDIR
source "$(dirname "$0")/e2e_lib.sh"
workload=$2
extra_env=()
run() {  # run NAME BACKLOG_MB: records the workload; checks exit, losses, completeness
  local rc=0
  env "${extra_env[@]}" CROSSFREE_RECORD_LEVEL=19 CROSSFREE_CHANNEL_KB=4096 CROSSFREE_RECORD_BACKLOG_MB=$2 \
    timeout -k 5 120 "$crossfree" record -o "$1.trc" -- \
    "$workload" --producers 4 --consumers 4 --objects 150000 >"$1.out" 2>"$1.err" || rc=$?
  [[ $rc == 0 ]] || { cat "$1.err"; fail "$1: record exited $rc"; }
  grep -q '; 0 events lost of those the command recorded' "$1.err" ||
    { cat "$1.err"; fail "$1: events lost"; }
  "$crossfree" dump --summary "$1.trc" >"$1.dump" 2>&1 || { cat "$1.dump"; fail "$1: dump"; }
  grep -q '^  complete: yes' "$1.dump" || { cat "$1.dump"; fail "$1: trace not complete"; }
  events=$(sed -nE 's/.*hand-off: ([0-9]+) events in.*/\1/p' "$1.err")
  grep -q "^  events: $events\$" "$1.dump" || { cat "$1.dump"; fail "$1: dump has not $events events"; }
}
run held 256
grep -Eq '[ (][1-9][0-9]* chunks held back and compressed after' held.err ||
  { cat held.err; fail "held: no chunk held back"; }
held_events=$events
held_bytes=$(stat -c %s held.trc)
run small 1
grep -Eq '[1-9][0-9]* chunks written plain to keep up\)' small.err ||
  { cat small.err; fail "small: no chunk written plain past the backlog's 1 MiB"; }
[[ $events == "$held_events" ]] || fail "small: $events events, held: $held_events"
run none 0
! grep -q 'held back' none.err || { cat none.err; fail "none: chunks held back with no backlog"; }
[[ $events == "$held_events" ]] || fail "none: $events events, held: $held_events"
extra_env=(CROSSFREE_RECORD_TEST_PAUSE_DRAIN_MS=2500 CROSSFREE_CHANNEL_WAIT_MS=300)
run starved 256
grep -Eq '\([1-9][0-9]* chunks rescued from their slots' starved.err ||
  { cat starved.err; fail "starved: no chunk rescued"; }
[[ $events == "$held_events" ]] || fail "starved: $events events, held: $held_events"
# Held-back chunks are compressed: every chunk of the held run's file that
# is not compressed is one record says it wrote plain to keep up (on a
# loaded machine, the time after the command's end when it writes the rest
# plain to finish within its bound, record_channel.h), or one too small
# for compression to pay (a thread's last few events, the totals). Checked
# on the one file, not against the run without a backlog: two runs' mixes
# of plain and compressed chunks depend on the machine's load.
held_back=$(sed -nE 's/.*[ (]([0-9]+) chunks held back and compressed after.*/\1/p' held.err)
kept_up=$(sed -nE 's/.*[ (]([0-9]+) chunks written plain to keep up.*/\1/p' held.err)
"$crossfree" dump held.trc >held.chunks 2>&1 || { cat held.chunks; fail "held: dump"; }
plain_big=$(awk '/^chunk @/ && !/compressed/ { for (i = 1; i <= NF; ++i)
                   if ($i == "payload" && $(i + 1) > 4096) n++ } END { print n + 0 }' held.chunks)
(( plain_big <= ${kept_up:-0} )) ||
  fail "held: $plain_big chunks over 4 KiB are plain, record wrote ${kept_up:-0} plain to keep up"
none_bytes=$(stat -c %s none.trc)
echo "held back: $held_back chunks, ${kept_up:-0} written plain to keep up, $plain_big plain over 4 KiB; $held_bytes bytes against $none_bytes with no backlog; $held_events events in each run"
