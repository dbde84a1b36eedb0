#!/usr/bin/env bash
# End-to-end (issue 31, item 6): a trace whose process was killed says so
# in every output (a warning, the JSON trace entry, the text trace line) and
# calls its live blocks no leaks; under `record`, that it lost nothing.
# Usage: killed_trace_test.sh CROSSFREE TRACER_LIB TARGET WORKDIR
set -uo pipefail
lib=$2
target=$3
source "$(dirname "$0")/e2e_lib.sh"

mkfifo ready.fifo
LD_PRELOAD=$lib CROSSFREE_OUTPUT=$dir/run.trc CROSSFREE_FLUSH_MS=10 "$target" >ready.fifo &
pid=$!
read -r line <ready.fifo || fail "target did not start"
[ "$line" = ready ] || fail "target said '$line'"
# Killed once the trace on disk holds the target's 2000 allocations and
# 1000 frees (the thread's at its exit, main's when it calls pause).
written() {
  "$crossfree" report --format json run.trc 2>/dev/null | python3 -c '
import json, sys
s = json.load(sys.stdin)["summary"]
sys.exit(0 if s["allocations"] >= 2000 and s["frees"] >= 1000 else 1)' 2>/dev/null
}
# A deadline (20 s of wall time, however slow each look is on a busy
# machine), not a synchronisation: polls the file until it does.
deadline=$((SECONDS + 20))
until written; do
  ((SECONDS < deadline)) || { kill -9 "$pid"; fail "the target's events were not on disk within 20 s"; }
  sleep 0.05
done
kill -9 "$pid"
wait "$pid" 2>/dev/null

"$crossfree" report run.trc >report.txt 2>report.err || { cat report.err; fail "report"; }
cat report.txt report.err
grep -q "no clean end" report.err || fail "no warning"
grep -q "(.*no clean end" report.txt || fail "the trace line does not say so"
grep -q "not leaks" report.txt || fail "live blocks are not called 'not leaks'"
"$crossfree" report --format json run.trc >report.json 2>/dev/null || fail "report json"
python3 - report.json <<'PY' || fail "json"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["traces"][0].get("clean_end") is False, r["traces"][0]
assert any("no clean end" in w for w in r["warnings"]), r["warnings"]
PY
# Every other output says so too.
"$crossfree" report --format folded run.trc >report.folded 2>/dev/null || fail "report folded"
grep -q '^\[no clean end: frees lost\];' report.folded || fail "folded lines lack the no-clean-end root"
"$crossfree" report --format html -o report.html run.trc 2>/dev/null || fail "report html"
grep -q '"clean_end":false' report.html || fail "the HTML page's model lacks clean_end"
grep -q 'no clean end: the frees in its last buffers were lost' report.html || fail "the HTML page does not say so"
"$crossfree" report --format pprof -o report.pb.gz run.trc 2>/dev/null || fail "report pprof"
zcat report.pb.gz | grep -aq 'no clean end' || fail "the pprof profile has no comment saying so"

# Under record nothing is lost that way: record takes the buffers the
# killed process's threads had open and appends an end-taken record (trace
# format 6.9), so the trace holds exactly what the target made (2000
# blocks of 64 bytes, 1000 freed on the other thread) and the outputs say
# it was killed with its events all taken, not that frees were lost.
export CROSSFREE_TRACER_LIB=$lib
mkfifo rec.fifo
timeout -k 5 60 "$crossfree" record -o rec.trc -- "$target" >rec.fifo 2>rec.err &
rec=$!
read -r line <rec.fifo || fail "the target under record did not start"
[ "$line" = ready ] || fail "the target under record said '$line'"
# timeout's child is record, record's is the target.
kill -9 "$(pgrep -P "$(pgrep -P "$rec" | head -1)" | head -1)"
wait "$rec"
rc=$?
[ "$rc" = 137 ] || { cat rec.err; fail "record exited $rc, not 137"; }
check_all_taken() {  # TRACE END: the target's blocks all in TRACE, whose JSON end is END
  "$crossfree" report --format json "$1" >taken.json 2>taken.err || fail "report $1"
  "$crossfree" dump "$1" >taken.dump 2>/dev/null || fail "dump $1"
  python3 - taken.json taken.dump "$2" <<'PY' || fail "$1: not every block of the target, or not end $2"
import json, re, sys
r = json.load(open(sys.argv[1]))
t = r["traces"][0]
assert t.get("clean_end") is False and t.get("end") == sys.argv[3], t
dump = open(sys.argv[2]).read()
addrs = re.findall(r"alloc malloc .* addr (0x[0-9a-f]+) size 64 ", dump)
freed = set(re.findall(r"free  free .* addr (0x[0-9a-f]+) ", dump))
assert len(addrs) == 2000, len(addrs)
assert len(freed & set(addrs)) == 1000, len(freed & set(addrs))
PY
}
check_all_taken rec.trc taken_after_exit
grep -q "incomplete" rec.err && { cat rec.err; fail "record calls the taken trace incomplete"; }
# Without the hand-off the process writes its own trace and its last
# buffers go with it: record's summary says that trace is incomplete.
mkfifo bare.fifo
CROSSFREE_CHANNEL_KB=0 timeout -k 5 60 "$crossfree" record -o bare.trc -- "$target" \
  >bare.fifo 2>bare.err &
rec=$!
read -r line <bare.fifo || fail "the target under record (no hand-off) did not start"
kill -9 "$(pgrep -P "$(pgrep -P "$rec" | head -1)" | head -1)"
wait "$rec"
grep -q "incomplete: no clean end" bare.err || { cat bare.err; fail "record does not call the lost end incomplete"; }
grep -q "(1 incomplete)" bare.err || { cat bare.err; fail "record's total does not count it"; }
"$crossfree" report rec.trc >rec.txt 2>rec.rerr || fail "report rec.trc"
grep -q "killed, its events all taken" rec.txt || fail "the trace line does not say the events were taken"
grep -q "ended without its exit flush" rec.rerr || fail "no warning saying how it ended"
if grep -q "not leaks\|frees lost" rec.txt rec.rerr; then fail "a taken trace says frees were lost"; fi
"$crossfree" dump --summary rec.trc 2>/dev/null | grep -q "^  complete: yes (no clean end: the process ended" ||
  fail "dump --summary does not call the taken trace complete"
"$crossfree" report --format folded rec.trc 2>/dev/null | grep -q '^\[no clean end' &&
  fail "the folded lines of a taken trace say frees were lost"
# A process the command left running when record finished (--wait-children
# ran out): its trace holds its events up to then, and says so.
timeout -k 5 60 "$crossfree" record --wait-children 0.2 -o run2.trc -- sh -c \
  '"$0" >ready.txt & for i in $(seq 400); do grep -q ready ready.txt && exit 0; sleep 0.05; done; exit 1' \
  "$target" >/dev/null 2>run2.err
rc=$?
[ "$rc" = 0 ] || { cat run2.err; fail "record of the left-running target exited $rc"; }
left=$(sed -n 's/.*still running: \([0-9]*\).*/\1/p' run2.err | head -1)
[ -n "$left" ] || { cat run2.err; fail "record did not name the process still running"; }
kill -9 "$left"
# sh's fork child wrote run2.trc.<pid>; the target it exec'd, the next image.
check_all_taken "run2.trc.$left.1" taken_while_running
"$crossfree" report "run2.trc.$left.1" >run2.txt 2>/dev/null
grep -q "running at record's end" run2.txt || fail "the trace line does not say the process still ran"

# A clean run says nothing of the kind.
LD_PRELOAD=$lib CROSSFREE_OUTPUT=$dir/clean.trc "$crossfree" --version >/dev/null 2>&1
"$crossfree" report clean.trc >clean.txt 2>clean.err || { cat clean.err; fail "report clean"; }
if grep -q "no clean end" clean.txt clean.err; then fail "a clean trace called unclean"; fi

# The gate never passes on a trace that lost its last buffers (exit 2)
# unless told to gate on what was written; a trace record took whole after
# a kill is no such trace.
"$crossfree" gate --write-baseline --baseline base.txt rec.trc >/dev/null 2>&1 ||
  fail "gate --write-baseline"
rc=0
"$crossfree" gate --baseline base.txt run.trc >gate.out 2>gate.err || rc=$?
[ "$rc" = 2 ] || { cat gate.out gate.err; fail "gate on a trace that lost its last buffers exited $rc, not 2"; }
grep -q "incomplete: no clean end" gate.err || { cat gate.err; fail "gate does not say why"; }
rc=0
"$crossfree" gate --accept-truncated --baseline base.txt run.trc >gate2.out 2>gate2.err || rc=$?
[ "$rc" != 2 ] || { cat gate2.err; fail "gate --accept-truncated still refuses"; }
grep -q "warning: .*no clean end" gate2.err || { cat gate2.err; fail "gate --accept-truncated does not say what is missing"; }
rc=0
"$crossfree" gate --baseline base.txt rec.trc >gate3.out 2>gate3.err || rc=$?
[ "$rc" = 0 ] || { cat gate3.out gate3.err; fail "gate refuses the trace record took whole (exit $rc)"; }
echo "killed trace passed"
