#!/usr/bin/env bash
# `go tool pprof` reads crossfree's profile: -top lists the allocation
# sites with the cross-thread counts of the report, -tagfocus selects by role.
# Go is required (scripts/setup installs golang-go): without it the test
# fails, unless CROSSFREE_TEST_NO_GO=1 says this machine has none (then 77,
# skipped; CONTRIBUTING.md; .ci/run never sets it).
# Usage: go_pprof_test.sh CROSSFREE MAKE_TRACES WORKDIR
set -uo pipefail
crossfree=$1
make_traces=$2
dir=$3
if ! command -v go >/dev/null; then
  if [[ ${CROSSFREE_TEST_NO_GO:-} == 1 ]]; then echo "CROSSFREE_TEST_NO_GO=1: skipped"; exit 77; fi
  echo "FAIL: go not installed (scripts/setup installs golang-go; CROSSFREE_TEST_NO_GO=1 skips)"
  exit 1
fi
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 1
export HOME=$dir GOCACHE=$dir/gocache GOFLAGS=-mod=mod GOTOOLCHAIN=local
"$make_traces" . || exit 1
fail() { echo "FAIL: $*"; exit 1; }
"$crossfree" report --format pprof -o before.pb.gz before.trc || fail "report --format pprof"
go tool pprof -top -sample_index=cross_thread_frees before.pb.gz >top.txt 2>top.err ||
  { cat top.err; fail "go tool pprof -top"; }
cat top.txt
grep -q "1600 total" top.txt || fail "pprof does not see 1600 cross-thread frees"
go tool pprof -top -tagfocus=alloc_role=worker-N before.pb.gz >focus.txt 2>&1 ||
  { cat focus.txt; fail "go tool pprof -tagfocus"; }
grep -q "1600 total" focus.txt || { cat focus.txt; fail "tagfocus alloc_role=worker-N"; }
go tool pprof -raw before.pb.gz >raw.txt 2>&1 || fail "go tool pprof -raw"
grep -q "free_role" raw.txt || fail "no free_role label in the raw profile"
echo "go tool pprof reads the profile"
