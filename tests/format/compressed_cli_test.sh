#!/usr/bin/env bash
# The analyzer on compressed traces (docs/trace-format.md 5.1): the traces of
# analyzer_make_traces (known pairs) rewritten with compressed chunks give
# the same `report` (text and JSON), `simulate` and `dump` events as the
# plain ones, and `dump --summary` shows the compression.
# Usage: compressed_cli_test.sh CROSSFREE MAKE_TRACES TRACE_COMPRESS WORKDIR
set -uo pipefail
crossfree=$1
make_traces=$2
compress=$3
source "$(dirname "$0")/../lib/checks.sh"
enter_workdir "$4" "$make_traces"

same() {  # same NAME CMD...: CMD on the plain and on the compressed trace agree
  local name=$1; shift
  "$crossfree" "$@" "$name.trc" 2>&1 | sed "s/$name\.trc/TRACE/g" >plain.out
  "$crossfree" "$@" "$name.z.trc" 2>&1 | sed "s/$name\.z\.trc/TRACE/g" >packed.out
  if ! cmp -s plain.out packed.out; then
    fail "crossfree $* differs on $name compressed"; diff plain.out packed.out | head -5
  fi
}

for name in before after; do
  "$compress" "$name.trc" "$name.z.trc" >/dev/null || fail "cannot compress $name.trc"
  plain_size=$(stat -c %s "$name.trc")
  packed_size=$(stat -c %s "$name.z.trc")
  ((packed_size * 4 < plain_size)) || fail "$name: compressed $packed_size bytes, plain $plain_size"
  same "$name" report
  same "$name" report --format json
  same "$name" simulate
  "$crossfree" dump "$name.trc" | grep -E '^  (alloc|free) ' >plain.events
  "$crossfree" dump "$name.z.trc" | grep -E '^  (alloc|free) ' >packed.events
  cmp -s plain.events packed.events || fail "$name: dump shows other events compressed"
  [[ -s plain.events ]] || fail "$name: no events dumped"
  "$crossfree" dump --summary "$name.z.trc" >summary || fail "dump --summary $name.z.trc failed"
  grep -qE "^  compressed chunks: [1-9][0-9]* of [0-9]+: " summary ||
    fail "$name: no compression line in dump --summary"
  grep -qF "  plain, the file would be: $plain_size bytes" summary ||
    fail "$name: dump --summary does not give the plain size $plain_size"
done
# report on both traces at once, one compressed: same as both plain.
"$crossfree" diff before.trc after.trc 2>&1 | sed 's/\.z\.trc/.trc/g' >plain.out
"$crossfree" diff before.z.trc after.z.trc 2>&1 | sed 's/\.z\.trc/.trc/g' >packed.out
cmp -s plain.out packed.out || fail "diff differs on compressed traces"

finish "compressed traces read like plain ones"
