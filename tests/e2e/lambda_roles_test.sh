#!/usr/bin/env bash
# End-to-end (issue 31, items 1-3): a lambda thread's role names what
# encloses the lambda and two lambdas stay two pairs; an entry function in
# ns::(anonymous namespace) is the role; the main thread of a program
# started through a symlink is "main".
# Usage: lambda_roles_test.sh CROSSFREE TARGET WORKDIR
set -uo pipefail
target=$2
source "$(dirname "$0")/e2e_lib.sh"

ln -s "$target" ./started-as-link
for cmd in "$target" ./started-as-link; do
  record_and_report "$cmd"
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
