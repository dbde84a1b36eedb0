#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, builds tests/install/consumer
# against it with find_package(crossfree CONFIG), runs it, records it with the
# installed `crossfree record` and checks the trace with `crossfree dump`.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR WORK_DIR
set -euo pipefail
build=$1 src=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >"$work/install.log"

for cmd in crossfree rpc-bench rpc-server rpc-client; do
  "$prefix/bin/$cmd" --version | grep -q "^$cmd [0-9]" || { echo "$cmd --version" >&2; exit 1; }
done
test -f "$prefix/lib/crossfree/libcrossfree-trace.so"
pc_include=$(PKG_CONFIG_PATH=$(dirname "$(find "$prefix" -name crossfree.pc)") \
  pkg-config --variable=includedir crossfree)
[[ $(realpath "$pc_include") == "$(realpath "$prefix/include")" ]] \
  || { echo "crossfree.pc: includedir $pc_include is not $prefix/include" >&2; exit 1; }

generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
cmake -S "$src/tests/install/consumer" -B "$work/consumer" "${generator[@]}" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$work/configure.log"
cmake --build "$work/consumer" -j2 >"$work/build.log"
"$work/consumer/greeter" | grep -qx "hello, consumer"

# The installed crossfree finds the installed tracer (no CROSSFREE_TRACER_LIB).
env -u CROSSFREE_TRACER_LIB "$prefix/bin/crossfree" record -o "$work/greeter.trace" -- \
  "$work/consumer/greeter" >"$work/record.log" 2>&1 || { cat "$work/record.log" >&2; exit 1; }
# dump exits 0 only for a whole, valid trace; the call allocated on several threads.
"$prefix/bin/crossfree" dump --summary "$work/greeter.trace" >"$work/dump.log"
grep -Eq "^  allocs: [1-9]" "$work/dump.log" && grep -Eq "^  threads: ([3-9]|[1-9][0-9])" "$work/dump.log" \
  || { cat "$work/dump.log" >&2; exit 1; }
# Headers under include/crossfree/, none in include/rpc/ (glibc's directory).
test -f "$prefix/include/crossfree/rpc/messenger.h"
[[ ! -e $prefix/include/rpc ]] || { echo "headers installed into include/rpc/" >&2; exit 1; }
echo "install test: ok ($prefix)"
