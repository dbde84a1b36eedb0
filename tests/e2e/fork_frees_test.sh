#!/usr/bin/env bash
# End-to-end (issue 31, item 9): frees in a fork child of blocks its parent
# allocated are attributed to the parent's allocation when both traces are
# reported, and called "allocated by the parent before fork" when the
# child's is alone; never unknown frees. The target forks 7 children that
# free 1000, 900, ... 400 of its blocks: 7 fork pairs, all shown by
# --top 0 and the default --top 10, --top N cutting both the JSON and the
# text to N (the model kept 5 whatever --top said).
# Usage: fork_frees_test.sh CROSSFREE TARGET WORKDIR
set -uo pipefail
target=$2
source "$(dirname "$0")/e2e_lib.sh"

"$crossfree" record -o run.trc -- "$target" >record.out 2>record.err || { cat record.err; fail "record"; }
children=(run.trc.*)
[[ ${#children[@]} == 7 ]] || fail "${#children[@]} child traces, not 7"
child=${children[0]}

for top in 10 0 2; do
  "$crossfree" report --top $top --format json run.trc "${children[@]}" >both-$top.json 2>both.err ||
    { cat both.err; fail "report --top $top"; }
  "$crossfree" report --top $top run.trc "${children[@]}" >both-$top.txt 2>&1
  python3 - both-$top.json $top <<'PY' || { cat both-$top.txt; fail "all traces, --top $top"; }
import json, sys
r = json.load(open(sys.argv[1]))
top = int(sys.argv[2])
s = r["summary"]
print("--top", top, "freed after fork", s.get("freed_after_fork"), "matched",
      s.get("freed_after_fork_matched"), "unknown", s["unknown_frees"])
assert s.get("freed_after_fork", 0) >= 4900, s
assert s.get("freed_after_fork_matched", 0) >= 4900, s
assert s["unknown_frees"] < 50, s
counts = [p["count"] for p in r["fork_pairs"]]
want = [1000 - 100 * k for k in range(7)][: top or 7]
assert counts == want, (counts, want)
for p in r["fork_pairs"]:
    assert "ParentMake" in p["alloc_site"] and "ChildRelease" in p["free_site"], p
PY
done
grep -q "allocated by its parent before the fork (7 of 7)" both-0.txt || fail "text, --top 0"
grep -q "allocated by its parent before the fork (2 of 7)" both-2.txt || fail "text, --top 2"

"$crossfree" report "$child" >alone.txt 2>&1 || { cat alone.txt; fail "report child"; }
cat alone.txt
grep -q "freed after fork.*allocated by the parent before fork" alone.txt || fail "child alone"
echo "fork frees passed"
