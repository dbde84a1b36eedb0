#!/usr/bin/env bash
# CLI test of `crossfree report|diff|gate`: exit codes, one-line errors for
# bad input, valid JSON, the gate's baseline round trip.
# Usage: cli_test.sh CROSSFREE MAKE_TRACES WORKDIR
set -uo pipefail
crossfree=$1
make_traces=$2
source "$(dirname "$0")/../../lib/checks.sh"
enter_workdir "$3" "$make_traces"

expect 0 "$crossfree" report before.trc
has out "cross-thread"
has out "worker-N -> reactor-N"
lines err 0
expect 0 "$crossfree" report --format json before.trc
json out "d['schema_version']" 1
json out "d['summary']['cross_thread_frees']" 1600
json out "d['summary']['unknown_frees']" 1
json out "d['summary']['double_frees']" 1
json out "d['summary']['live_at_exit']" 1
json out "d['pairs_total']" 3
expect 0 "$crossfree" report --format json --by thread --top 0 before.trc
json out "d['pairs_total']" 6
json out "len(d['pairs'])" 6
expect 0 "$crossfree" report -o report.json --format json before.trc after.trc
json report.json "len(d['traces'])" 2
json report.json "d['summary']['cross_thread_frees']" 7600
# Awk: no text line wider than 100 columns.
expect 0 "$crossfree" report after.trc
awk 'length > 100 { exit 1 }' out || fail "report text wider than 100 columns"

# Bad input: one line on stderr naming the file, exit 2; truncation: warning, exit 0.
expect 0 "$crossfree" report truncated.trc
lines err 1
has err "truncated.trc: truncated at offset"
expect 2 "$crossfree" report corrupt.trc
lines err 1
has err "corrupt.trc"
has err "offset"
expect 2 "$crossfree" report not-a-trace.trc
lines err 1
has err "not-a-trace.trc"
expect 2 "$crossfree" report missing.trc
has err "missing.trc"
expect 2 "$crossfree" report before.trc --skip '('
has err "crossfree report: --skip '(': not a valid regular expression"
expect 2 "$crossfree" report before.trc --no-such-flag
has err "The following argument was not expected: --no-such-flag"
expect 2 "$crossfree" report
has err "crossfree report: no trace given (crossfree report TRACE...)"
expect 2 "$crossfree" report --format yaml before.trc
has err "--format: yaml not in {text,json,html,folded,pprof}"

expect 0 "$crossfree" diff before.trc after.trc
has out "Gone: per-call pairs AFTER no longer has"
expect 0 "$crossfree" diff --format json before.trc after.trc
json out "sorted(p['status'] for p in d['pairs'])" "['gone', 'grown', 'new', 'shrunk']"
expect 2 "$crossfree" diff before.trc corrupt.trc
lines err 1
has err "crossfree diff: corrupt.trc: corrupt chunk at offset"

# Gate.
expect 2 "$crossfree" gate --baseline base.txt before.trc
has err "create it with: crossfree gate --write-baseline --baseline base.txt before.trc"
expect 0 "$crossfree" gate --baseline base.txt --write-baseline before.trc
has base.txt "crossfree-baseline 4"
expect 0 "$crossfree" gate --baseline base.txt before.trc
has out "PASSED"
expect 1 "$crossfree" gate --baseline base.txt after.trc
has out "FAILED: 2 allocation groups over the baseline (1 new, 1 grown"
has out "crossfree gate --write-baseline --baseline base.txt after.trc"
expect 1 "$crossfree" gate --baseline base.txt --max-growth 10 after.trc
has out "FAILED: 1 allocation group over the baseline (1 new, 0 grown"
printf 'pattern: alloc: 0x[0-9a-f]+ <- 0x405100\nreason: log buffers move to the reactor by design\n' >supp.txt
expect 0 "$crossfree" gate --baseline base.txt --max-growth 10 --suppressions supp.txt after.trc
has out "1 suppressed"
printf 'pattern: Log::Flush\n' >bad-supp.txt
expect 2 "$crossfree" gate --baseline base.txt --suppressions bad-supp.txt after.trc
has err "bad-supp.txt:1: suppression 'Log::Flush' has no 'reason:' line"
# Accepting with the printed command makes the gate pass.
expect 0 "$crossfree" gate --write-baseline --baseline base.txt after.trc
expect 0 "$crossfree" gate --baseline base.txt after.trc
printf 'allow 1.0 x\n' >bad-base.txt
expect 2 "$crossfree" gate --baseline bad-base.txt after.trc
has err "bad-base.txt:1: not a crossfree baseline"

# gate --format json: the same verdict for scripts.
expect 0 "$crossfree" gate --write-baseline --baseline before-base.txt before.trc
expect 1 "$crossfree" gate --format json --baseline before-base.txt after.trc
json out "d['schema_version']" 2
json out "d['passed']" False
json out "len(d['offenses']) > 0" True
expect 0 "$crossfree" gate --format json --baseline base.txt after.trc
json out "d['passed']" True

# diff with several traces per side (a run of several processes): the same
# trace twice on each side doubles both runs, so nothing changes.
expect 0 "$crossfree" diff --before before.trc --before before.trc --after after.trc --format json
json out "len(d['before']['traces'])" 2
json out "d['before']['cross_thread_frees']" 3200
expect 0 "$crossfree" diff --before before.trc --after after.trc --after after.trc
expect 2 "$crossfree" diff before.trc
has err "give the runs to compare"

# The default skip rules are listed, wrappers of common libraries among them.
expect 0 "$crossfree" report --list-skips
has out "gpr_"
has out "sqlite3"
has out "PyMem_"
expect 2 "$crossfree" report
has err "no trace given"

# Into a pipe or file, text lines are whole; --width fits them.
expect 0 "$crossfree" report --width 60 before.trc
# (stack lines are fitted; the fixed-column tables keep their layout)
awk '/allocated at|freed at/ && length > 60 { bad = 1 } END { exit bad }' out ||
  fail "report --width 60 has longer stack lines"
expect 0 "$crossfree" report before.trc
if grep -q '\.\.\.$' out; then fail "report into a pipe cut a line"; fi

# --from/--to: a window; a reversed one is refused.
expect 0 "$crossfree" report --format json --from 0 --to 1000 before.trc
json out "d['window']['allocated_before_window']" 0
json out "d['summary']['cross_thread_frees']" 1600
expect 0 "$crossfree" report --from 1000 before.trc
has out "allocated before"
expect 2 "$crossfree" report --from 2 --to 1 before.trc
has err "--to 1 is not after --from 2"

# Sampled traces: estimates with intervals in every format, exact totals,
# the gate's rules, and refusals (mixed periods, --from/--to, simulate).
expect 0 "$crossfree" report sampled.trc
has out "sampled events (estimated, sampled 1/100)"
has out "    cross-thread                 ~1,100   [549 .. 1,969]"
has out "95%: 479 .. 1,840 frees, 0.5 .. 1.8 per 1000 allocs"
lines err 0
expect 0 "$crossfree" report --format json sampled.trc
json out "d['sampling']['sample_period']" 100
json out "d['sampling']['exact_totals']" True
json out "d['summary']['allocations']" 1000000
json out "d['summary']['cross_thread_frees']" 1100
json out "d['summary']['estimate']['cross_thread_frees']['observed']" 11
json out "d['pairs'][0]['count']" 1000
json out "d['pairs'][0]['estimate']['count']['low']" 479
json out "d['pairs'][0]['estimate']['count']['high']" 1840
json out "d['pairs'][0]['estimate']['per_1000_allocs']['low']" 0.48
json out "d['traces'][0]['sample_period']" 100
expect 0 "$crossfree" report --format folded sampled.trc
grep -q '^\[estimated, sampled 1/100\];\[per-call\];producer-N;.* 1000$' out || fail "sampled folded lines lack the estimate root"
expect 0 "$crossfree" report --format html -o sampled.html sampled.trc
has sampled.html "(estimated, sampled 1/100)"
expect 0 "$crossfree" report --format pprof -o sampled.pb.gz sampled.trc
expect 2 "$crossfree" report sampled.trc before.trc
lines err 1
has err "cannot analyse sampled and unsampled traces together: sampled.trc is sampled 1/100, before.trc is not sampled"
expect 2 "$crossfree" report sampled.trc sampled10.trc
has err "traces sampled at different periods"
expect 2 "$crossfree" report --from 0.5 sampled.trc
has err "sampled.trc: --from/--to cannot cut a sampled trace"
expect 2 "$crossfree" simulate sampled.trc
lines err 1
has err "crossfree simulate: sampled.trc: sampled trace (1 allocation in 100 traced): the allocator models (simulate, report --allocator) need every event"
# diff: each side has its own period; a change counts when the intervals are apart.
expect 0 "$crossfree" diff --format json sampled.trc sampled-more.trc
json out "d['significance'].startswith('a change counts only')" True
json out "[(p['status'], p['significant']) for p in d['pairs'] if p['before']['count'] == 1000][0]" "('grown', True)"
expect 0 "$crossfree" diff sampled.trc sampled10.trc
has out "(sampled 1/10)"
# gate: the run's own baseline passes; a pair it does not allow fails once seen.
expect 0 "$crossfree" gate --write-baseline --baseline sampled-base.txt sampled.trc
has sampled-base.txt "# Written from a trace sampled 1/100"
expect 0 "$crossfree" gate --baseline sampled-base.txt sampled.trc
has out "PASSED"
has out "the trace is sampled 1/100"
# A pair of 1 sampled object (~0.1 per 1000 allocations) missing from the
# baseline is within noise; the one of 10 (~1.0, the effect size) fails.
grep -v 'F401100\|0x401100' sampled-base.txt >sampled-base-less.txt
expect 0 "$crossfree" gate --baseline sampled-base-less.txt sampled.trc
has out "(1 new pairs within noise)"
grep -v 'F401000\|0x401000' sampled-base.txt >sampled-base-less.txt
expect 1 "$crossfree" gate --baseline sampled-base-less.txt sampled.trc
has out "FAILED: 1 allocation group over the baseline (1 new, 0 grown"
# 60 sampled against the baseline of 10: the interval is above 1.5x.
expect 1 "$crossfree" gate --baseline sampled-base.txt sampled-more.trc
has out "FAILED: 1 allocation group over the baseline (0 new, 1 grown"
expect 1 "$crossfree" gate --format json --baseline sampled-base.txt sampled-more.trc
json out "d['sampling']['sample_period']" 100
json out "d['offenses'][0]['rate']['low'] > d['offenses'][0]['limit']" True

# Recording windows: frees of older objects and objects live at the close.
expect 0 "$crossfree" report windowed.trc
has out "recording windows: 1.000 s .. 2.000 s"
has out "before the window                   1   freed in a recording window, allocated before it"
has out "live at window end                  1   96 B"
expect 0 "$crossfree" report --format json windowed.trc
json out "d['window']['allocated_before_window']" 1
json out "d['window']['live_at_window_end']" 1
json out "d['summary']['unknown_frees']" 0
json out "d['summary']['live_at_exit']" 0

# Progress: on a terminal (script(1) gives the command one), a trace over
# 100 MB shows how far reading and decoding are; into a pipe, nothing.
"$make_traces" --producer-consumer big.trc 30000000 >/dev/null || fail "make big.trc"
script -qec "$crossfree report --top 1 big.trc >/dev/null" typescript >/dev/null 2>&1 ||
  fail "report on a terminal"
tr '\r' '\n' <typescript | grep -aq "crossfree report: .* of 130 MB read, .* decoded" ||
  fail "no progress line on a terminal"
expect 0 "$crossfree" report --top 1 big.trc
lines err 0
rm -f big.trc typescript

# Folded stacks: one line per cross-thread pair, counts adding up to the
# report's total, the allocating side, "-> ", then the freeing side.
expect 0 "$crossfree" report --format folded before.trc
lines out 3
[[ $(awk '{ n += $NF } END { print n }' out) == 1600 ]] || fail "folded counts do not add up to 1600"
grep -q '^\[per-call\];worker-N;.*;-> reactor-N;.* [0-9]*$' out || fail "folded lines lack '[lifecycle];alloc;-> free count'"

# Damaged traces: every byte flip or cut is either analyzed (exit 0) or
# refused with one line (exit 2); nothing crashes.
python3 - <<'PY'
import random
data = open("after.trc", "rb").read()
rng = random.Random(1865)
for i in range(24):
    b = bytearray(data)
    for _ in range(1 + i % 3):
        pos = rng.randrange(len(b))
        b[pos] ^= 1 << rng.randrange(8)
    open(f"flip{i}.trc", "wb").write(b)
    open(f"cut{i}.trc", "wb").write(data[:rng.randrange(len(data))])
PY
for f in flip*.trc cut*.trc; do
  "$crossfree" report --format json "$f" >out 2>err
  rc=$?
  if [[ $rc != 0 && $rc != 2 ]]; then fail "report $f exited $rc"; cat err; fi
  if [[ $rc == 2 ]] && [[ $(wc -l <err) != 1 ]]; then fail "report $f: $(wc -l <err) error lines"; fi
  if [[ $rc == 2 ]] && ! grep -qF "$f" err; then fail "report $f: error does not name the file"; fi
  if [[ $rc == 0 ]]; then python3 -c "import json; json.load(open('out'))" || fail "$f: bad JSON"; fi
done

finish "all CLI checks passed"
