#!/usr/bin/env bash
# End-to-end (issue 31, item 6): a trace whose process was killed says so
# in every output (a warning, the JSON trace entry, the text trace line) and
# calls its live blocks no leaks.
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

# A clean run says nothing of the kind.
LD_PRELOAD=$lib CROSSFREE_OUTPUT=$dir/clean.trc "$crossfree" --version >/dev/null 2>&1
"$crossfree" report clean.trc >clean.txt 2>clean.err || { cat clean.err; fail "report clean"; }
if grep -q "no clean end" clean.txt clean.err; then fail "a clean trace called unclean"; fi
echo "killed trace passed"
