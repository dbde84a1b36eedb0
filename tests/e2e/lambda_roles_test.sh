#!/usr/bin/env bash
# End-to-end (issue 31, items 1-3): a lambda thread's role names what
# encloses the lambda and two lambdas stay two pairs; an entry function in
# ns::(anonymous namespace) is the role; the main thread of a program
# started through a symlink is "main".
# Usage: lambda_roles_test.sh CROSSFREE TARGET WORKDIR
set -uo pipefail
crossfree=$1
target=$2
dir=$3
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 1
fail() { echo "FAIL: $*"; exit 1; }

ln -s "$target" ./started-as-link
for cmd in "$target" ./started-as-link; do
  rm -f run.trc*
  "$crossfree" record -o run.trc -- "$cmd" >record.out 2>record.err ||
    { cat record.out record.err; fail "record $cmd"; }
  "$crossfree" report --format json run.trc >report.json 2>report.err || { cat report.err; fail "report"; }
  python3 - report.json <<'PY' || fail "roles for $cmd"
import json, sys
r = json.load(open(sys.argv[1]))
big = [p for p in r["pairs"] if p["count"] >= 900]
for p in big:
    print(p["alloc_role"], "->", p["free_role"], p["count"])
roles = sorted((p["alloc_role"], p["free_role"], p["count"]) for p in big)
want = [("ProducerLoop()::lambda", "PlatformWorkerThread", 1500),
        ("RefillLoop()::lambda", "PlatformWorkerThread", 1500),
        ("main", "PlatformWorkerThread", 1000)]
assert roles == sorted(want), roles
PY
done
echo "lambda roles passed"
