#!/usr/bin/env bash
# End-to-end: threads without names get their entry function as role
# (std::thread(producer) -> "producer"), whichever way the program starts.
# Usage: unnamed_roles_test.sh CROSSFREE TARGET WORKDIR
set -uo pipefail
target=$2
source "$(dirname "$0")/e2e_lib.sh"

# Started through a symlink with another name, as /usr/bin/python3 is.
ln -s "$target" ./unnamed-link
for cmd in "$target" ./unnamed-link; do
  record_and_report "$cmd"
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
