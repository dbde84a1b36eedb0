#!/usr/bin/env bash
# Every option of `crossfree simulate` has an observable effect or a
# documented refusal (--help says "Refused by simulate", the run exits 2
# with one line naming the option). The list of options is read from
# `simulate --help`: an option without a row below fails the test.
# The synthetic traces have no modules, so the two options about symbolized
# frames (--no-default-skips, --key-lines) run on a trace recorded from a
# real program (`crossfree record -- MAKE_TRACES`, which has line tables;
# hence the ctest label `preload`).
# Usage: simulate_options_test.sh CROSSFREE MAKE_TRACES WORKDIR
set -uo pipefail
crossfree=$1
make_traces=$2
source "$(dirname "$0")/../../lib/checks.sh"
enter_workdir "$3" "$make_traces"

declare -A checked=()
expect 0 "$crossfree" simulate after.trc
cp out default.out
# effect OPTION [VALUE]: exits 0 and prints something else than the defaults.
effect() {
  checked[$1]=1
  expect 0 "$crossfree" simulate after.trc "$@"
  cmp -s out default.out && fail "simulate $*: the output is the same as without it"
  lines err 0
}
# refused OPTION VALUE: exit 2, one line naming the option; --help says so.
refused() {
  checked[$1]=1
  expect 2 "$crossfree" simulate after.trc "$@"
  lines err 1
  has err "crossfree simulate: $1 does not apply to simulate:"
  [[ ! -s out ]] || fail "simulate $*: refused, yet printed a result"
  "$crossfree" simulate --help | grep -A1 -- "$1 " | grep -qF "Refused by simulate" ||
    fail "simulate --help does not say that $1 is refused"
}

checked[--help]=1
expect 0 "$crossfree" simulate --help
has out "Predict gperftools 2.10 central free-list transfers"
effect --max-total-thread-cache-bytes 65536
effect --transfer-num-objects 2
effect --cache-from-first-event
effect --top 1
effect --by thread
effect --site-depth 1
checked[--format]=1
expect 0 "$crossfree" simulate --format json after.trc
python3 -c "import json; d=json.load(open('out')); assert d['totals']['fetch_calls'] > 0" ||
  fail "simulate --format json: not JSON with totals.fetch_calls"
checked[--output]=1
expect 0 "$crossfree" simulate -o sim.txt after.trc
[[ ! -s out ]] || fail "simulate -o: printed to stdout"
cmp -s sim.txt default.out || fail "simulate -o: the file differs from stdout's result"
checked[--list-skips]=1
expect 0 "$crossfree" simulate --list-skips
has out "^std::"
"$crossfree" report --list-skips | cmp -s - out || fail "simulate --list-skips differs from report's"
# The allocator models (docs/guide/simulate.md): another model prints its
# own name, settings and validation; settings of one allocator given to
# another are refused with one line.
checked[--allocator]=1
expect 0 "$crossfree" simulate --allocator jemalloc after.trc
has out "crossfree simulate: jemalloc-5.3.0 (validated)"
has out "settings (defaults; the trace does not record the run's environment)"
cp out jemalloc.out
expect 0 "$crossfree" simulate --allocator mimalloc after.trc
has out "mimalloc-2.0.9 (partly validated)"
checked[--malloc-conf]=1
expect 0 "$crossfree" simulate --allocator jemalloc --malloc-conf tcache_nslots_small_max:20 after.trc
has out "tcache_nslots_small_max=20"
has out "settings (flags;"
cmp -s out jemalloc.out && fail "--malloc-conf: the output is the same as without it"
expect 2 "$crossfree" simulate --malloc-conf narenas:2 after.trc
lines err 1
has err "crossfree simulate: --malloc-conf does not apply to --allocator gperftools"
expect 2 "$crossfree" simulate --allocator jemalloc --malloc-conf narenas:x after.trc
lines err 1
has err "narenas:x is not a number"
checked[--glibc-tunables]=1
expect 0 "$crossfree" simulate --allocator glibc after.trc
cp out glibc.out
expect 0 "$crossfree" simulate --allocator glibc --glibc-tunables glibc.malloc.tcache_count=0 after.trc
has out "glibc.malloc.tcache_count=0"
cmp -s out glibc.out && fail "--glibc-tunables: the output is the same as without it"
checked[--cpus]=1
expect 0 "$crossfree" simulate --allocator jemalloc --cpus 64 after.trc
has out "narenas=256 (4 x CPUs)"
checked[--pairs]=1
expect 0 "$crossfree" simulate --pairs after.trc
has out "crossfree simulate: gperftools-2.10 (validated)"
has out "Top pairs by cost"
expect 2 "$crossfree" simulate --allocator glibc --pairs after.trc
has err "--pairs does not apply to --allocator glibc"
expect 0 "$crossfree" simulate --allocator jemalloc --cache-from-first-event after.trc
has out "tcache from=a thread's first traced event"
expect 2 "$crossfree" simulate --allocator mimalloc --cache-from-first-event after.trc
lines err 1
has err "--cache-from-first-event does not apply to --allocator mimalloc"
expect 0 "$crossfree" simulate --format html --allocator jemalloc after.trc
has out "<h1>crossfree simulate: jemalloc-5.3.0</h1>"
refused --jobs 2
refused --from 0.001
refused --to 1
refused --width 50
# No trace: one line, exit 2.
expect 2 "$crossfree" simulate
lines err 1
has err "crossfree simulate: no trace given"

# Symbolized frames: a real program's trace (make_traces: std:: containers
# under our own functions, with line tables).
mkdir -p recorded
"$crossfree" record -o real.trc -- "$make_traces" recorded >/dev/null 2>record.err ||
  { cat record.err; fail "crossfree record -- make_traces"; }
keys() {  # keys ARGS...: every site key of the JSON result, one a line
  "$crossfree" simulate --format json --top 0 "$@" real.trc 2>/dev/null |
    python3 -c "
import json, sys
d = json.load(sys.stdin)
def walk(x):
    if isinstance(x, dict):
        if isinstance(x.get('site'), dict): print(x['site'].get('key', ''))
        for v in x.values(): walk(v)
    elif isinstance(x, list):
        for v in x: walk(v)
walk(d)"
}
keys >keys-default
[[ -s keys-default ]] || fail "simulate of the recorded trace shows no site"
checked[--skip]=1
keys --skip '^crossfree::analyzer::testing::SyntheticTrace::' >keys-skip
grep -q '^crossfree::analyzer::testing::SyntheticTrace::' keys-default ||
  fail "no site of the recorded trace starts in SyntheticTrace (the --skip check needs one)"
grep -q '^crossfree::analyzer::testing::SyntheticTrace::' keys-skip &&
  fail "--skip: a site still starts with a skipped frame"
# The default skips drop std:: frames (simulate --list-skips: ^std::).
checked[--no-default-skips]=1
keys --no-default-skips >keys-raw
grep -q '^std::' keys-raw || fail "--no-default-skips: no site starts with a std:: frame"
grep -q '^std::' keys-default && fail "without --no-default-skips a site starts with a std:: frame"
checked[--key-lines]=1
keys --key-lines >keys-lines
grep -qE '^[^ ]+ \([a-z_]+\.(cc|h):[0-9]+\)' keys-lines || fail "--key-lines: no site key has a file:line"
grep -qE '\([a-z_]+\.(cc|h):[0-9]+\)' keys-default && fail "without --key-lines a site key has a file:line"

# Every option --help lists has a row above.
while read -r opt; do
  [[ -n ${checked[$opt]:-} ]] || fail "simulate $opt: no check of its effect or refusal"
done < <("$crossfree" simulate --help | grep -oE -- '^ +(-[a-z],)?--[a-z-]+' | sed -E 's/^ +(-[a-z],)?//')

finish "every simulate option has an effect or a refusal"
