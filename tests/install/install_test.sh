#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, checks that its headers are
# exactly the public set and closed under their includes, builds
# tests/install/consumer against it with find_package(crossfree CONFIG) (the
# consumer compiles every public header on its own), checks that the
# consumer saw no include directory but the prefix's and that hiding an
# installed header breaks its build, runs it, records it with the installed
# `crossfree record` and checks the trace with `crossfree dump`.
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

# Headers under include/crossfree/, none in include/rpc/ (glibc's directory).
inc=$prefix/include/crossfree
test -f "$inc/rpc/messenger.h"
[[ ! -e $prefix/include/rpc ]] || { echo "headers installed into include/rpc/" >&2; exit 1; }
# Exactly the public headers, nothing internal: what a program includes for
# the RPC core (a server, a client, generated services) and the trace reader,
# the few public types those name, the wire's .proto and its generated
# header, and the version. An internal header (the reactor, a connection,
# the test service, the trace writer, the tracer's protocol, ...) installed,
# or a public one missing, fails here; cmake/install.cmake says why the set
# is this one.
expected="crossfree_version.h
format/names.h
format/trace_format.h
format/trace_reader.h
rpc/in_place.h
rpc/inline_function.h
rpc/messenger.h
rpc/proxy.h
rpc/remote_method.h
rpc/response_callback.h
rpc/rpc_context.h
rpc/rpc_controller.h
rpc/rpc_header.pb.h
rpc/rpc_header.proto
rpc/service_if.h
rpc/service_pool_options.h
rpc/sockaddr.h
rpc/status.h"
installed=$(cd "$inc" && find . -type f | sed 's|^\./||' | LC_ALL=C sort)
if [[ $installed != "$expected" ]]; then
  echo "installed headers under include/crossfree/ differ from the public set (< installed, > expected):" >&2
  diff <(echo "$installed") <(echo "$expected") >&2 || true
  exit 1
fi
# Every project include of an installed header is installed too.
while IFS= read -r line; do
  header=${line%%:*} included=${line#*:\#include \"}
  included=${included%%\"*}
  [[ -f $inc/$included ]] ||
    { echo "installed ${header#"$inc/"} includes $included, which is not installed" >&2; exit 1; }
done < <(grep -rHE '^#include "(rpc|format)/' "$inc" --include='*.h')

generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
cmake -S "$src/tests/install/consumer" -B "$work/consumer" "${generator[@]}" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$work/configure.log"
found=$(sed -n 's/^crossfree_DIR:PATH=//p' "$work/consumer/CMakeCache.txt")
[[ $(realpath "$found") == "$(realpath "$prefix")"/* ]] ||
  { echo "the consumer found the package in $found, not in $prefix" >&2; exit 1; }
cmake --build "$work/consumer" -j2 >"$work/build.log"
"$work/consumer/greeter" | grep -qx "hello, consumer"
# The consumer's include directories: the prefix's, its own build tree's and
# the system's; never crossfree's source or build tree.
while IFS= read -r dir; do
  case $dir in
    "$prefix"/* | "$work/consumer" | "$work/consumer"/* | /usr/*) ;;
    *) echo "the consumer compiles with include directory $dir" >&2; exit 1 ;;
  esac
done < <(grep -oE '(-I|-isystem )[^ "]+' "$work/consumer/compile_commands.json" |
         sed -E 's/^(-I|-isystem )//' | sort -u)
# Without an installed header the consumer does not build: it found no copy
# elsewhere.
mv "$inc/format/trace_format.h" "$work/trace_format.h.hidden"
if cmake --build "$work/consumer" -j2 --target public_headers >"$work/build-hidden.log" 2>&1; then
  echo "the consumer built without the installed format/trace_format.h" >&2; exit 1
fi
grep -q "trace_format.h" "$work/build-hidden.log" || { cat "$work/build-hidden.log" >&2; exit 1; }
mv "$work/trace_format.h.hidden" "$inc/format/trace_format.h"

# The installed crossfree finds the installed tracer (no CROSSFREE_TRACER_LIB).
env -u CROSSFREE_TRACER_LIB "$prefix/bin/crossfree" record -o "$work/greeter.trace" -- \
  "$work/consumer/greeter" >"$work/record.log" 2>&1 || { cat "$work/record.log" >&2; exit 1; }
# dump exits 0 only for a whole, valid trace; the call allocated on several threads.
"$prefix/bin/crossfree" dump --summary "$work/greeter.trace" >"$work/dump.log"
grep -Eq "^  allocs: [1-9]" "$work/dump.log" && grep -Eq "^  threads: ([3-9]|[1-9][0-9])" "$work/dump.log" \
  || { cat "$work/dump.log" >&2; exit 1; }
echo "install test: ok ($prefix)"
