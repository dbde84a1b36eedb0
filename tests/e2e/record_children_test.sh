#!/usr/bin/env bash
# End-to-end (issue 31, items 7 and 8): `crossfree record` waits for the
# processes its command left running, and its summary counts what is on
# disk; a thread whose pthread-key destructor runs after the tracer's is
# counted once.
# Usage: record_children_test.sh CROSSFREE KEY_TARGET WORKDIR
set -uo pipefail
key_target=$2
source "$(dirname "$0")/e2e_lib.sh"

# Item 7: a background process outlives the command, by construction: it
# reads a FIFO to its end, and the command's shell holds the FIFO's only
# write end (fd 3) until it exits. Only then does the background process
# allocate (ls) and end. It writes its pid first.
mkfifo gate
"$crossfree" record -o run.trc -- sh -c '
  exec 3<>gate 4<gate
  sh -c "echo \$\$ >bg.pid; exec 3>&-; cat <&4 >/dev/null; ls >/dev/null" &
  exec 4<&-
  echo started' \
  >record.out 2>record.err || { cat record.out record.err; fail "record"; }
cat record.err
grep -q "waited for 1 process the command left running" record.err ||
  fail "record does not say it waited for the background process"
# record returned after the background process ended (it reaps it: record
# is the subreaper of what its command leaves), so nothing is written
# after its summary.
bg=$(cat bg.pid)
[[ -n $bg && ! -e /proc/$bg ]] || fail "the background process $bg still runs after record returned"
files=$(ls run.trc* | wc -l)
summary=$(sed -n 's/.*process[es]*, \([0-9]*\) trace files\{0,1\}.*/\1/p' record.err)
[ "$summary" = "$files" ] || fail "the summary counts $summary files, $files on disk"
[ "$files" -ge 3 ] || fail "only $files files"

# A process still running after --wait-children: named, and record returns.
# It reads a FIFO whose only writer is this script's fd 5 (record gets the
# fd closed), so it runs until the script closes it: longer than the 0.5 s
# whatever the machine's speed.
mkfifo hold
exec 5<>hold
"$crossfree" record --wait-children 0.5 -o slow.trc -- \
  sh -c 'sh -c "echo \$\$ >slow.pid; exec cat hold >/dev/null" & echo started' \
  >slow.out 2>slow.err 5>&- || { cat slow.err; fail "record slow"; }
cat slow.err
grep -q "still running" slow.err || fail "a process still running is not named"
exec 5>&-  # ends it
slow=$(cat slow.pid)
# Gone, or a zombie of whoever adopted it after record.
running() { local st; st=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null); [[ -n $st && $st != Z ]]; }
# A deadline, not a synchronisation: the process ends once it reads EOF.
for ((i = 0; i < 200; i++)); do running "$slow" || break; sleep 0.05; done
running "$slow" && fail "the process left running ($slow) did not end at EOF"

# Item 8: key destructors after the tracer's.
"$crossfree" record -o key.trc -- "$key_target" >key.out 2>key.err || { cat key.err; fail "record key"; }
cat key.err
grep -q "on 5 threads in 1 process" key.err || fail "threads miscounted"
echo "record children passed"
