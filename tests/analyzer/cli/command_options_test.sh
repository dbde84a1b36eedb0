#!/usr/bin/env bash
# Every option of `crossfree report`, `diff`, `gate`, `dump` and `record`
# has an observable effect (the output or the exit status differs from the
# same run without it, in the documented way) or a documented refusal.
# (`simulate` has its own script, simulate_options_test.sh.) The options are
# read from each command's --help: an option without a row below fails the
# test, so a new option needs a check here.
# The synthetic traces (MAKE_TRACES) have no symbols, so the options about
# symbolized frames (--skip, --no-default-skips, --key-lines) run on a trace
# recorded from ROLES_PROGRAM (e2e_lambda_roles: cross-thread frees through
# std::deque under our own functions, with line tables); record's options
# run MAKE_TRACES under the tracer. Hence the ctest label `preload`.
# No check times anything: a child record waits for is released through a
# FIFO, whose open orders the events.
# Usage: command_options_test.sh CROSSFREE MAKE_TRACES ROLES_PROGRAM WORKDIR
set -uo pipefail
crossfree=$1
make_traces=$2
roles_program=$3
source "$(dirname "$0")/../../lib/checks.sh"
enter_workdir "$4" "$make_traces"

# run NAME ARGS...: runs crossfree ARGS, stdout to NAME.out, stderr to
# NAME.err, the exit status to NAME.rc.
run() {
  local name=$1; shift
  "$crossfree" "$@" >"$name.out" 2>"$name.err"
  echo $? >"$name.rc"
}
rc() { cat "$1.rc"; }
# has and lacks take a regular expression here.
has() { grep -qE -- "$2" "$1" || fail "$1 lacks /$2/"; }
lacks() { grep -qE -- "$2" "$1" && fail "$1 has /$2/"; }
declare -A checked=()
# differs CMD OPTION... -- ARGS...: `crossfree CMD ARGS... OPTION...` prints
# something else or exits otherwise than `crossfree CMD ARGS...`. (The
# options go last: --skip takes every value up to the next option.)
differs() {
  local cmd=$1; shift
  local opts=()
  while [[ $1 != -- ]]; do opts+=("$1"); shift; done
  shift
  checked["$cmd ${opts[0]}"]=1
  run without "$cmd" "$@"
  run with "$cmd" "$@" "${opts[@]}"
  if cmp -s without.out with.out && [[ $(rc without) == $(rc with) ]]; then
    fail "$cmd ${opts[*]} $*: same output and exit status ($(rc with)) as without ${opts[0]}"
  fi
  [[ $(rc with) == 2 ]] && { fail "$cmd ${opts[*]} $*: exit 2"; sed 's/^/  stderr: /' with.err; }
}
# same_at_any_jobs CMD ARGS...: --jobs is documented as the number of
# pairing workers, which changes no result: -j 1 and --jobs 2 print the
# same and exit alike.
same_at_any_jobs() {
  local cmd=$1; shift
  checked["$cmd --jobs"]=1
  run without "$cmd" "$@" -j 1
  run with "$cmd" "$@" --jobs 2
  cmp -s without.out with.out || fail "$cmd $* --jobs 2: the result differs from -j 1's"
  [[ $(rc without) == $(rc with) ]] || fail "$cmd $* --jobs 2: the exit status differs from -j 1's"
}

# A symbolized trace with cross-thread pairs, and a second run of it.
"$crossfree" record -o roles.trc -- "$roles_program" >/dev/null 2>roles.err ||
  { cat roles.err; fail "crossfree record -- $roles_program"; }
"$crossfree" record -o roles2.trc -- "$roles_program" >/dev/null 2>roles2.err ||
  { cat roles2.err; fail "crossfree record -- $roles_program (2)"; }
# The same program recorded with nothing in it (recording off: the signal
# never comes): diff against it lists every pair of roles.trc as new.
"$crossfree" record -o empty.trc --toggle-signal USR2 -- "$roles_program" >/dev/null 2>empty.err ||
  { cat empty.err; fail "crossfree record --toggle-signal USR2 -- $roles_program"; }

# ---- report
cmd='report'
checked["$cmd --help"]=1
run h "$cmd" --help; [[ $(rc h) == 0 ]] || fail "$cmd --help exited $(rc h)"
differs "$cmd" --top 1 -- before.trc
differs "$cmd" --operations 100 -- before.trc
has with.out "per (1000 )?op"
differs "$cmd" --by thread -- before.trc
differs "$cmd" --site-depth 1 -- before.trc
differs "$cmd" --from 0.001 -- before.trc
differs "$cmd" --to 0.001 -- before.trc
differs "$cmd" --width 50 -- before.trc
same_at_any_jobs "$cmd" before.trc
differs "$cmd" --format json -- before.trc
python3 -c "import json; json.load(open('with.out'))" || fail "$cmd --format json: not JSON"
checked["$cmd --output"]=1
run o "$cmd" -o o.txt before.trc
run plain "$cmd" before.trc
[[ ! -s o.out ]] || fail "$cmd -o: printed to stdout"
cmp -s o.txt plain.out || fail "$cmd -o: the file differs from stdout's result"
checked["$cmd --list-skips"]=1
run ls "$cmd" --list-skips
has ls.out '^\^std::'
differs "$cmd" --skip 'MakeItem' -- --top 0 roles.trc
has without.out 'allocated at  \(anonymous namespace\)::MakeItem'
lacks with.out 'allocated at  \(anonymous namespace\)::MakeItem'
differs "$cmd" --no-default-skips -- --top 0 roles.trc
has with.out 'allocated at  std::'
lacks without.out 'allocated at  std::'
differs "$cmd" --key-lines -- --top 0 roles.trc
has with.out '\([a-z_]+\.cc:[0-9]+\)'
lacks without.out '\([a-z_]+\.cc:[0-9]+\)'
# The allocator models (docs/guide/simulate.md): a cost line and lifetimes
# per pair; their settings only with the model they set; no window.
differs "$cmd" --allocator jemalloc -- roles.trc
has with.out 'cost under jemalloc-5.3.0: '
has with.out 'lifetime: min '
differs "$cmd" --lifetimes -- roles.trc
has with.out 'lifetime: min '
lacks with.out 'cost under'
differs "$cmd" --malloc-conf tcache_nslots_small_max:20 -- --allocator jemalloc roles.trc
has with.out 'tcache_nslots_small_max=20'
differs "$cmd" --glibc-tunables glibc.malloc.tcache_count=0 -- --allocator glibc roles.trc
has with.out 'glibc.malloc.tcache_count=0'
differs "$cmd" --cpus 64 -- --allocator jemalloc roles.trc
has with.out 'narenas=256'
run refused "$cmd" --malloc-conf narenas:1 roles.trc
[[ $(rc refused) == 2 ]] || fail "report --malloc-conf without --allocator jemalloc exited $(rc refused)"
has refused.err '^crossfree report: --malloc-conf needs --allocator jemalloc$'
run refused "$cmd" --allocator glibc --from 0.001 roles.trc
[[ $(rc refused) == 2 ]] || fail "report --allocator --from exited $(rc refused)"
has refused.err 'does not combine with --from/--to'

# ---- diff
cmd='diff'
checked["$cmd --help"]=1
differs "$cmd" --min-change 1000 -- before.trc after.trc
differs "$cmd" --format json -- before.trc after.trc
python3 -c "import json; json.load(open('with.out'))" || fail "diff --format json: not JSON"
differs "$cmd" --before-operations 100 --after-operations 200 -- before.trc after.trc
has with.out "per (1000 )?op"
checked["$cmd --after-operations"]=1
# One of the two alone: refused (rates per operation need both runs').
run alone diff --before-operations 100 before.trc after.trc
[[ $(rc alone) == 2 ]] || fail "diff --before-operations alone exited $(rc alone), expected 2"
has alone.err "after-operations"
differs "$cmd" --by thread -- before.trc after.trc
differs "$cmd" --site-depth 1 -- before.trc after.trc
differs "$cmd" --from 0.001 -- before.trc after.trc
differs "$cmd" --to 0.00001 -- before.trc after.trc
differs "$cmd" --width 50 -- before.trc after.trc
same_at_any_jobs "$cmd" before.trc after.trc
checked["$cmd --before"]=1
checked["$cmd --after"]=1
run pos diff before.trc after.trc
run opt diff --before before.trc --after after.trc
cmp -s pos.out opt.out || fail "diff --before X --after Y differs from diff X Y"
run two diff --before before.trc --before before.trc --after after.trc
cmp -s pos.out two.out && fail "diff --before given twice: same output as one trace"
checked["$cmd --output"]=1
run o diff -o o.txt before.trc after.trc
[[ ! -s o.out ]] || fail "diff -o: printed to stdout"
cmp -s o.txt pos.out || fail "diff -o: the file differs from stdout's result"
checked["$cmd --list-skips"]=1
run ls diff --list-skips
cmp -s ls.out <("$crossfree" report --list-skips) || fail "diff --list-skips differs from report's"
differs "$cmd" --skip 'MakeItem' -- empty.trc roles.trc
lacks with.out 'MakeItem'
differs "$cmd" --no-default-skips -- empty.trc roles.trc
# diff's text shows the groups' frames by function name either way; the
# keys, with file:line under --key-lines, are in the JSON.
differs "$cmd" --key-lines -- --format json empty.trc roles.trc
has with.out '\([a-z_]+\.cc:[0-9]+\)'
lacks without.out '\([a-z_]+\.cc:[0-9]+\)'

# ---- gate
cmd='gate'
checked["$cmd --help"]=1
run wb gate --write-baseline --baseline base.txt before.trc
[[ $(rc wb) == 0 ]] || fail "gate --write-baseline exited $(rc wb)"
has base.txt "^crossfree-baseline 4$"
has base.txt "^runs 1$"
has base.txt "^units 2.002 2.002$"
has wb.err '^crossfree gate: warning: no --operations: '
checked["$cmd --write-baseline"]=1
checked["$cmd --baseline"]=1
run nob gate after.trc
[[ $(rc nob) == 2 ]] || fail "gate without --baseline exited $(rc nob), expected 2"
run check gate --baseline base.txt after.trc
[[ $(rc check) == 1 ]] || fail "gate after.trc against before's baseline exited $(rc check), expected 1"
g=(--baseline base.txt after.trc)
differs "$cmd" --format json -- "${g[@]}"
python3 -c "import json; json.load(open('with.out'))" || fail "gate --format json: not JSON"
# Exact verdicts: after.trc has a grown group (685.5 per 1000 allocations
# against 399.6) and a new one (85.69).
checked["$cmd --max-growth"]=1
run mg gate "${g[@]}" --max-growth 10
[[ $(rc mg) == 1 ]] || fail "gate --max-growth 10 exited $(rc mg), expected 1"
has mg.out '^crossfree gate: FAILED: 1 allocation group over the baseline \(1 new, 0 grown, 0 bounded'
has mg.out 'beyond 10x the baseline'
checked["$cmd --min-effect"]=1
run me gate "${g[@]}" --min-effect 1000000
[[ $(rc me) == 0 ]] || fail "gate --min-effect 1000000 exited $(rc me), expected 0"
has me.out '^crossfree gate: PASSED: '
has me.out 'rise by at least 1e\+06 and'
run me0 gate "${g[@]}" --min-effect 0
[[ $(rc me0) == 1 ]] || fail "gate --min-effect 0 exited $(rc me0), expected 1"
has me0.out 'rise by at least 0 and beyond 1.5x'
has me0.out '\(1 new, 1 grown, 0 bounded'
run men gate "${g[@]}" --min-effect -1
[[ $(rc men) == 2 ]] || fail "gate --min-effect -1 exited $(rc men), expected 2"
# Without --operations: the warning on stderr says what is not judged.
has check.err '^crossfree gate: warning: no --operations: .*bounded \(one-off\) objects are not judged'
# The CI formats.
differs "$cmd" --format junit -- "${g[@]}"
has with.out '<testsuite name="crossfree gate" tests="3" failures="2"'
cp with.out cli.junit.xml
differs "$cmd" --format github -- "${g[@]}"
has with.out '^::error title=crossfree gate%3A NEW cross-thread allocation::NEW cross-thread allocation site 0x401000 <- 0x405100 <- 0x402200: '
has with.out '^::warning title=crossfree gate::no --operations'
differs "$cmd" --format sarif -- "${g[@]}"
has with.out '"version": "2.1.0"'
cp with.out cli.sarif
src=$(cd "$(dirname "$0")/../../.." && pwd)
python3 "$src/tests/analyzer/model/ci_formats_test.py" "$src/tests/data/sarif/sarif-schema-2.1.0.json" \
  cli.sarif >/dev/null || fail "gate --format sarif: not valid SARIF 2.1.0"
differs "$cmd" --source-root /nonexistent/root -- --format sarif "${g[@]}"
has with.out '"uri": "file:///nonexistent/root/"'
# --operations: a baseline written per operation, checked without it and with it.
run wbo gate --write-baseline --operations 100 --baseline base-ops.txt before.trc
[[ $(rc wbo) == 0 ]] || fail "gate --write-baseline --operations exited $(rc wbo)"
differs "$cmd" --operations 100 -- --baseline base-ops.txt after.trc
checked["$cmd --bounded-effect"]=1
run be gate --operations 100 --baseline base-ops.txt after.trc --format json --bounded-effect 0.5
has be.out '"bounded_effect": 0.5\}'
checked["$cmd --timing-slack"]=1
run ts gate --operations 100 --baseline base-ops.txt after.trc --format json --timing-slack 2
has ts.out '"timing_slack": 2[,}]'
run ts1 gate --operations 100 --baseline base-ops.txt after.trc --timing-slack 0.5
[[ $(rc ts1) == 2 ]] || fail "gate --timing-slack 0.5 exited $(rc ts1), expected 2"
# --run: a baseline of several runs, each site's counts per run; the rates
# of a run given twice are its own.
checked["$cmd --run"]=1
run wbruns gate --write-baseline --operations 100 --baseline base-runs.txt --run before.trc --run before.trc
[[ $(rc wbruns) == 0 ]] || { fail "gate --write-baseline --run x2 exited $(rc wbruns)"; cat wbruns.err; }
has wbruns.out '^crossfree gate: wrote base-runs.txt from 2 runs \(3 pairs allowed, rates per operation; 0 suppressed\)$'
has base-runs.txt '^runs 2$'
has base-runs.txt '^units 200 200$'
[[ $(grep -cE '^site-runs 2 ([0-9]+):([0-9]+) \1:\2 ' base-runs.txt) == 3 ]] ||
  fail "base-runs.txt: not 3 site-runs lines with one count per run, alike"
diff <(grep '^allow' base-ops.txt) <(grep '^allow' base-runs.txt) ||
  fail "a run given twice: other rates than the run's own"
run wbruns3 gate --write-baseline --operations 100 --operations 300 --baseline base-runs3.txt --run before.trc --run before.trc
[[ $(rc wbruns3) == 0 ]] || fail "gate --write-baseline --operations twice --run x2 exited $(rc wbruns3)"
has base-runs3.txt '^units 400 400$'
has base-runs3.txt '--operations 100 --operations 300 --run before.trc --run before.trc$'
run runng gate --baseline base-ops.txt --operations 100 --run after.trc
[[ $(rc runng) == 2 ]] || fail "gate --run without --write-baseline exited $(rc runng), expected 2"
has runng.err '--run is for --write-baseline'
run runops gate --write-baseline --baseline base-x.txt --operations 1 --operations 2 --operations 3 --run before.trc --run before.trc
[[ $(rc runops) == 2 ]] || fail "gate --operations x3 with 2 runs exited $(rc runops), expected 2"
has runops.err '--operations given 3 times for 2 runs'
[[ -e base-x.txt ]] && fail "gate --operations x3 with 2 runs wrote a baseline"
printf 'pattern: .\nreason: every pair of the synthetic after.trc, for the test\n' >supp.txt
differs "$cmd" --suppressions supp.txt -- "${g[@]}"
run wbt gate --write-baseline --baseline base-t.txt before.trc
differs "$cmd" --accept-truncated -- --baseline base-t.txt truncated.trc
has without.err "truncated"
checked["$cmd --by"]=1
run wbr gate --write-baseline --by thread --baseline base-thread.txt before.trc
cmp -s base-thread.txt base.txt && fail "gate --write-baseline --by thread: same baseline as by role"
run wbd gate --write-baseline --site-depth 1 --baseline base-d1.txt before.trc
checked["$cmd --site-depth"]=1
cmp -s base-d1.txt base.txt && fail "gate --write-baseline --site-depth 1: same baseline as depth 3"
for w in from to; do
  checked["$cmd --$w"]=1
  run wb-$w gate --write-baseline --$w 0.001 --baseline base-$w.txt before.trc
  cmp -s base-$w.txt base.txt && fail "gate --write-baseline --$w 0.001: same baseline as the whole trace"
done
differs "$cmd" --width 30 -- "${g[@]}"
same_at_any_jobs "$cmd" "${g[@]}"
checked["$cmd --list-skips"]=1
run ls gate --list-skips
cmp -s ls.out <("$crossfree" report --list-skips) || fail "gate --list-skips differs from report's"
for o in "--skip MakeItem" --no-default-skips --key-lines; do
  checked["$cmd ${o%% *}"]=1
  # shellcheck disable=SC2086
  run wbs gate --write-baseline $o --baseline base-s.txt roles.trc
  run wbs0 gate --write-baseline --baseline base-s0.txt roles.trc
  cmp -s base-s.txt base-s0.txt && fail "gate --write-baseline $o: same baseline as without it"
done

# ---- dump
checked["dump --help"]=1
differs dump --summary -- before.trc
lacks with.out "^chunk"
[[ $(wc -l <with.out) -lt $(wc -l <without.out) ]] || fail "dump --summary: not shorter"

# ---- record (on MAKE_TRACES, which allocates; the header and summary by dump)
mkdir -p rec
# rec NAME OPTIONS...: records MAKE_TRACES with OPTIONS; dump --summary to NAME.sum
rec() {
  local name=$1; shift
  "$crossfree" record -o "$name.trc" "$@" -- "$make_traces" rec >/dev/null 2>"$name.rerr" ||
    { fail "record $*: exit $?"; sed 's/^/  stderr: /' "$name.rerr"; }
  "$crossfree" dump --summary "$name.trc" >"$name.sum" 2>&1 || fail "dump of record $*"
}
rec r0
has r0.sum "unwinder hybrid max-depth 32"
has r0.sum "events: [1-9]"
checked["record --help"]=1
checked["record --output"]=1
[[ -s r0.trc ]] || fail "record -o r0.trc: no file"
checked["record --unwind"]=1
rec ru --unwind fp
has ru.sum "unwinder frame-pointer"
checked["record --depth"]=1
rec rd --depth 4
has rd.sum "max-depth 4 "
checked["record --no-stacks"]=1
rec rn --no-stacks
has rn.sum "unwinder none max-depth 0"
has rn.sum "stacks: 0$"
checked["record --sample"]=1
rec rs --sample 100
has rs.sum "sampled: each allocation with probability 1/100"
# --time-resolution: times rounded to 1000 ns, a version 5 header
# (docs/trace-format.md 7.1); out of range and with -p refused, naming it.
checked["record --time-resolution"]=1
rec rtr --time-resolution 1000
has rtr.sum "format version 5,"
has rtr.sum "time resolution 1000 ns"
has r0.sum "time resolution 1 ns"
"$crossfree" record -o tr0.trc --time-resolution 0 -- true >/dev/null 2>tr0.err &&
  fail "record --time-resolution 0: accepted"
has tr0.err "--time-resolution: Value 0 not in range 1 to 1000000"
"$crossfree" record -p 1 --time-resolution 1000 >/dev/null 2>trp.err &&
  fail "record -p --time-resolution: accepted"
has trp.err "--time-resolution is not available with -p"
# --delay: a day after the start, that is after the command ended: nothing recorded.
checked["record --delay"]=1
rec rdl --delay 86400
has rdl.sum "flags windowed"
has rdl.sum "events: 0$"
# ... and record says why the trace is empty.
has rdl.rerr "1 trace recorded nothing: a process that ends before --delay, or makes no"
# --toggle-signal: recording starts off and the command never gets the signal.
checked["record --toggle-signal"]=1
rec rt --toggle-signal USR2
has rt.sum "flags windowed"
has rt.sum "events: 0$"
has rt.rerr "1 trace recorded nothing: with --toggle-signal, recording starts closed"
# A run that recorded something gets no such note.
if grep -q "recorded nothing" r0.rerr; then fail "record: an empty-window note on a full trace"; fi
# record's own descriptors never sit on a closed 0-2, which the command
# inherits: with stdout closed the command finds it closed, as untraced (it
# found the hand-off region there).
"$crossfree" record -o cl.trc -- sh -c 'if test -e /proc/self/fd/1; then exit 5; fi' >&- 2>cl.err
[[ $? == 0 ]] || { cat cl.err; fail "record with stdout closed: the command found a descriptor 1"; }
"$crossfree" record -o cl0.trc -- true <&- >&- 2>&- || fail "record with 0, 1 and 2 closed: exit $?"
# A wrapper that opens its own descriptors 3-9 before it execs the program
# leaves the program the hand-off (record passes it at a high number).
"$crossfree" record -o wr.trc -- sh -c \
  'exec 3>/dev/null 4>/dev/null 5>/dev/null 6>/dev/null 7>/dev/null 8>/dev/null 9>/dev/null; exec true' \
  2>wr.err || { cat wr.err; fail "record of a wrapper that execs: exit $?"; }
has wr.err "also for 1 exec'd image"
# A reader of record's stderr that went away does not end record (SIGPIPE):
# the command's status, and the trace. (When the reader is still there at
# the end, this passes without testing anything; it never fails falsely.)
( "$crossfree" record -o sp.trc -- sh -c 'sleep 0.2' 2>&1; echo $? >sp.rc ) | true
[[ $(cat sp.rc) == 0 ]] || fail "record with a closed stderr pipe: exit $(cat sp.rc)"
"$crossfree" dump --summary sp.trc >/dev/null 2>&1 || fail "record with a closed stderr pipe: no trace"
# --duration reaches the tracer as its documented variable (docs/guide/tracer.md).
checked["record --duration"]=1
"$crossfree" record -o env.trc --duration 2 -- printenv CROSSFREE_DURATION_MS >dur.out 2>/dev/null
has dur.out "^2000$"
checked["record --preload"]=1
"$crossfree" record -o env.trc --preload /nonexistent/libextra.so -- printenv LD_PRELOAD \
  >pre.out 2>/dev/null
has pre.out "libcrossfree-trace\.so.*/nonexistent/libextra\.so"
# --wait-children: the command leaves a child blocked on a FIFO. With 0 s,
# record names it still running; by default it waits until the test opens
# the FIFO (which lets the child end) and says so. With -p refused: an
# attached process is no child of record's.
checked["record --wait-children"]=1
rm -f fifo && mkfifo fifo
# release: opens the FIFO for writing, which returns once the child opened
# it for reading; the 60 s bound only guards against a child that never
# started (a hang), it is no verdict on time.
release() { timeout 60 sh -c 'echo go >fifo' || fail "record $1: the child never opened the FIFO"; }
"$crossfree" record -o wc0.trc --wait-children 0 -- sh -c '(read x <fifo) &' >/dev/null 2>wc0.err
release "--wait-children 0"
has wc0.err "waited 0 s \(--wait-children\) for the processes the command left running; still running: [0-9]+ \(sh\)"
# One that ended (a child the command left a zombie: it made sure it had
# exited, without reaping it) and one still running, in one line: no
# "waited for 1 process the command left running" beside "still running".
"$crossfree" record -o wc1.trc --wait-children 0 -- python3 -c '
import os
ended = os.fork()
if ended == 0:
    os._exit(0)
if os.fork() == 0:
    open("fifo").read()
    os._exit(0)
os.waitid(os.P_PID, ended, os.WEXITED | os.WNOWAIT)' >/dev/null 2>wc1.err
release "--wait-children 0, one ended"
has wc1.err "waited 0 s \(--wait-children\) for the processes the command left running; 1 ended, still running: [0-9]+ \(python3\)"
lacks wc1.err "waited for 1 process"
"$crossfree" record -p 1 --wait-children 5 >/dev/null 2>wcp.err &&
  fail "record -p --wait-children: accepted"
has wcp.err "-p attaches to a running process: give no command, --delay, --toggle-signal, --preload or --wait-children with it"
"$crossfree" record -o wc.trc -- sh -c '(read x <fifo) &' >/dev/null 2>wc.err &
record_pid=$!
release "(default --wait-children)"
wait $record_pid || fail "record of a command leaving a child: exit $?"
has wc.err "waited for 1 process the command left running"
lacks wc.err "still running"

# --pid attaches to a running process (its effect: tests/tracer/attach_test.cc);
# with a command it is refused, and a pid that does not exist is named.
checked["record --pid"]=1
"$crossfree" record -p 1 -- true >/dev/null 2>pid.err && fail "record -p with a command: accepted"
has pid.err "-p attaches to a running process: give no command"
"$crossfree" record -p 2147483647 --duration 1 >/dev/null 2>pid2.err &&
  fail "record -p of no process: accepted"
has pid2.err "-p 2147483647: no such process"

# Every option each --help lists has a row above.
for cmd in report diff gate dump record; do
  while read -r opt; do
    [[ -n ${checked["$cmd $opt"]:-} ]] || fail "$cmd $opt: no check of its effect or refusal"
  done < <("$crossfree" "$cmd" --help | grep -oE -- '^ +(-[a-z],)?--[a-z-]+' | sed -E 's/^ +(-[a-z],)?//')
done

finish "every option of report, diff, gate, dump and record has an effect or a refusal"
