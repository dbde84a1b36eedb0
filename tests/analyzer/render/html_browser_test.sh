#!/usr/bin/env bash
# The HTML report and diff in a real browser (Debian's chromium, headless):
# the page must work offline, log no console error, and show its key
# elements in the DOM; a screenshot is kept for people to look at. A page
# of 10,000 pairs must render too (its time is printed, never judged).
# Chromium is required (scripts/setup installs it): without it the test
# fails, unless CROSSFREE_TEST_NO_BROWSER=1 says this machine has none (then
# 77, skipped; CONTRIBUTING.md; .ci/run never sets it).
# Usage: html_browser_test.sh CROSSFREE MAKE_TRACES WORKDIR
set -uo pipefail
crossfree=$1
make_traces=$2
dir=$3
if ! browser=$(command -v chromium || command -v chromium-browser); then
  if [[ ${CROSSFREE_TEST_NO_BROWSER:-} == 1 ]]; then echo "CROSSFREE_TEST_NO_BROWSER=1: skipped"; exit 77; fi
  echo "FAIL: chromium not installed (scripts/setup installs it; CROSSFREE_TEST_NO_BROWSER=1 skips)"
  exit 1
fi
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
"$make_traces" . || exit 1
"$make_traces" --many-pairs many.trc 10000 || exit 1

# Headless, offline, in a profile of its own; the flags keep chromium from
# reaching for the network, which this machine does not have.
run_browser() {  # run_browser PAGE OUT_PREFIX
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$dir/profile" --enable-logging=stderr --v=0 \
    --virtual-time-budget=10000 --window-size="${WINDOW:-1400,2200}" "$@"
}
check_page() {  # check_page PAGE NAME SELECTOR...
  local page=$1 name=$2; shift 2
  run_browser --dump-dom "file://$dir/$page" >"$name.dom" 2>"$name.log" || fail "$name: chromium failed"
  run_browser --screenshot="$dir/$name.png" "file://$dir/$page" >/dev/null 2>"$name.shot.log" ||
    fail "$name: no screenshot"
  [[ -s $name.png ]] || fail "$name: empty screenshot"
  if grep -E 'CONSOLE|Uncaught' "$name.log" "$name.shot.log" | grep -qiE 'error|uncaught'; then
    grep -E 'CONSOLE|Uncaught' "$name.log" "$name.shot.log"
    fail "$name: console errors"
  fi
  grep -q 'data-error=' "$name.dom" && fail "$name: the page script failed: $(grep -o 'data-error="[^"]*"' "$name.dom")"
  grep -q 'data-ready="1"' "$name.dom" || fail "$name: the page script did not finish"
  for want in "$@"; do
    grep -qF -- "$want" "$name.dom" || fail "$name: DOM lacks $want"
  done
  echo "$name: rendered in $(grep -o 'data-render-ms="[0-9]*"' "$name.dom") ms, screenshot $dir/$name.png"
}

"$crossfree" report --format html -o report.html before.trc || fail "report --format html"
grep -qE 'src="https?:|href="https?:' report.html && fail "the report page loads from the network"
check_page report.html report 'id="summary"' '<td data-frees="1200"' 'class="pair"' \
  'id="asymmetry-chart"' 'class="timeline"' 'worker-N' 'reactor-N' '3 of 3 pairs'

"$crossfree" diff --format html -o diff.html before.trc after.trc || fail "diff --format html"
check_page diff.html diff 'id="summary-before"' 'id="summary-after"' 'class="diff-row"' \
  '<h3>gone: per-call pairs (' '<h3>new: per-call pairs ('
# The diff's panels hold their tables and stacks at common screen widths.
for width in 1280 1920 3840; do
  WINDOW=$width,1600 check_page diff.html diff-$width 'data-overflow="0"'
done

"$crossfree" report --format html --top 0 -o many.html many.trc || fail "report of 10,000 pairs"
check_page many.html many '200 of 10000 pairs' 'class="pair"'
echo "html pages work in chromium"
