#!/usr/bin/env bash
# Issue 41: no function in product code (tracer/, analyzer/, format/,
# protocol/, rpc/, bench/; not tests/) is longer than LIMIT lines, counted
# from its head to its closing brace by function_lengths.py. First checks
# that the counter sees a function of LIMIT+1 lines in a file made here, and
# that it finds the product code's functions at all, so that it cannot pass
# by counting nothing.
# Usage: long_functions_test.sh SOURCE_DIR [LIMIT]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$1" || exit 1
limit=${2:-150}
count="python3 $here/function_lengths.py"

probe=$(mktemp --suffix=.cc)
trap 'rm -f "$probe"' EXIT
{ echo 'namespace n {'
  echo 'int Probe(int x) {'
  for ((i = 0; i < limit - 1; i++)); do echo '  x += 1;'; done
  echo '}'
  echo '}  // namespace n'; } >"$probe"
if [[ $($count --over "$limit" "$probe") != "$((limit + 1)) $probe:2 Probe" ]]; then
  echo "FAIL: the counter does not see a $((limit + 1))-line function"
  exit 1
fi

mapfile -t files < <(find tracer analyzer format protocol rpc bench -type f \
                       \( -name '*.cc' -o -name '*.h' -o -name '*.c' \) | sort)
all=$($count "${files[@]}") || { echo "FAIL: a file could not be scanned"; exit 1; }
functions=$(wc -l <<<"$all")
if ((functions < 1000)); then
  echo "FAIL: only $functions functions found in ${#files[@]} files"
  exit 1
fi
long=$($count --over "$limit" "${files[@]}")
if [[ -n $long ]]; then
  echo "FAIL: functions over $limit lines (lines, where, name):"
  echo "$long"
  exit 1
fi
echo "none of the $functions functions in ${#files[@]} product files is over $limit lines"
