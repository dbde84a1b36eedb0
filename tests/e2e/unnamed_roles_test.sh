#!/usr/bin/env bash
# End-to-end: threads without names get their entry function as role
# (std::thread(producer) -> "producer"), whichever way the program starts.
# Usage: unnamed_roles_test.sh CROSSFREE TARGET WORKDIR
set -uo pipefail
crossfree=$1
target=$2
dir=$3
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 1
fail() { echo "FAIL: $*"; exit 1; }

# Started through a symlink with another name, as /usr/bin/python3 is.
ln -s "$target" ./unnamed-link
for cmd in "$target" ./unnamed-link; do
  rm -f run.trc*
  "$crossfree" record -o run.trc -- "$cmd" >record.out 2>record.err ||
    { cat record.out record.err; fail "record $cmd"; }
  "$crossfree" report --format json run.trc >report.json 2>report.err || { cat report.err; fail "report"; }
  python3 - report.json <<'PY' || fail "roles for $cmd"
import json, sys
r = json.load(open(sys.argv[1]))
top = r["pairs"][0]
print("top pair:", top["alloc_role"], "->", top["free_role"], top["count"])
assert top["alloc_role"] == "producer", top["alloc_role"]
assert top["free_role"] == "consumer", top["free_role"]
assert top["count"] >= 3000, top["count"]
PY
done
echo "unnamed roles passed"
