#!/usr/bin/env bash
# End-to-end (issue 31, items 7 and 8): `crossfree record` waits for the
# processes its command left running, and its summary counts what is on
# disk; a thread whose pthread-key destructor runs after the tracer's is
# counted once.
# Usage: record_children_test.sh CROSSFREE KEY_TARGET WORKDIR
set -uo pipefail
key_target=$2
source "$(dirname "$0")/e2e_lib.sh"

# Item 7: a background subshell outlives the command.
"$crossfree" record -o run.trc -- sh -c '(sleep 1; ls >/dev/null) & echo started' \
  >record.out 2>record.err || { cat record.out record.err; fail "record"; }
cat record.err
files_now=$(ls run.trc* | wc -l)
summary=$(sed -n 's/.*process[es]*, \([0-9]*\) trace files\{0,1\}.*/\1/p' record.err)
sleep 1.5
files_later=$(ls run.trc* | wc -l)
[ "$files_now" = "$files_later" ] || fail "record returned with $files_now files, $files_later later"
[ "$summary" = "$files_later" ] || fail "the summary counts $summary files, $files_later on disk"
[ "$files_later" -ge 3 ] || fail "only $files_later files"
grep -q "waited" record.err || fail "record does not say it waited for the background processes"

# A process still running after --wait-children: named, and record returns.
"$crossfree" record --wait-children 0.5 -o slow.trc -- sh -c '(sleep 3) & echo started' \
  >slow.out 2>slow.err || { cat slow.err; fail "record slow"; }
cat slow.err
grep -q "still running" slow.err || fail "a process still running is not named"

# Item 8: key destructors after the tracer's.
"$crossfree" record -o key.trc -- "$key_target" >key.out 2>key.err || { cat key.err; fail "record key"; }
cat key.err
grep -q "on 5 threads in 1 process" key.err || fail "threads miscounted"
echo "record children passed"
