#!/usr/bin/env bash
# docs/guide/ci-gate.md's table of promises and the figures it quotes are
# what the gate's code computes (gate_statistics promise-table, claims):
# each line of the program's output must be in the guide verbatim.
# Usage: gate_guide_tables_test.sh GATE_STATISTICS GUIDE
set -euo pipefail
bin=$1
guide=$2
failures=0
while IFS= read -r line; do
  if ! grep -qxF -- "$line" "$guide"; then
    echo "FAIL: $guide lacks the line: $line"
    failures=$((failures + 1))
  fi
done < <("$bin" promise-table; "$bin" claims)
((failures == 0)) && echo "ok: the guide's promises and figures are the code's"
exit $((failures > 0))
