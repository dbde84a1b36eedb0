#!/usr/bin/env bash
# End-to-end (issue 31, item 9): frees in a fork child of blocks its parent
# allocated are attributed to the parent's allocation when both traces are
# reported, and called "allocated by the parent before fork" when the
# child's is alone; never unknown frees.
# Usage: fork_frees_test.sh CROSSFREE TARGET WORKDIR
set -uo pipefail
target=$2
source "$(dirname "$0")/e2e_lib.sh"

"$crossfree" record -o run.trc -- "$target" >record.out 2>record.err || { cat record.err; fail "record"; }
child=$(ls run.trc.* | head -1)
[ -n "$child" ] || fail "no child trace"

"$crossfree" report --format json run.trc "$child" >both.json 2>both.err || { cat both.err; fail "report both"; }
"$crossfree" report run.trc "$child" >both.txt 2>&1
python3 - both.json <<'PY' || { cat both.txt; fail "both traces"; }
import json, sys
r = json.load(open(sys.argv[1]))
s = r["summary"]
print("freed after fork", s.get("freed_after_fork"), "matched", s.get("freed_after_fork_matched"),
      "unknown", s["unknown_frees"])
assert s.get("freed_after_fork", 0) >= 1000, s
assert s.get("freed_after_fork_matched", 0) >= 1000, s
assert s["unknown_frees"] < 50, s
top = r["fork_pairs"][0]
assert top["count"] == 1000, top
assert "ParentMake" in top["alloc_site"] and "ChildRelease" in top["free_site"], top
PY

"$crossfree" report "$child" >alone.txt 2>&1 || { cat alone.txt; fail "report child"; }
cat alone.txt
grep -q "freed after fork.*allocated by the parent before fork" alone.txt || fail "child alone"
echo "fork frees passed"
