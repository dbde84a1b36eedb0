# Sourced by the shell tests that run every check and report all failures at
# the end (rather than stopping at the first): the analyzer's CLI tests and
# the compressed-trace test. Defines:
#   enter_workdir DIR MAKE_TRACES
#                            empties DIR, makes it the current directory and
#                            writes analyzer_make_traces' traces there
#   fail MESSAGE...          prints FAIL and counts one failure
#   expect RC CMD...         runs CMD (stdout to ./out, stderr to ./err) and
#                            fails unless it exits RC
#   has FILE TEXT            fails unless FILE contains TEXT (fixed string)
#   lines FILE N             fails unless FILE has N lines
#   json FILE EXPR EXPECTED  fails unless Python's EXPR over the JSON in FILE
#                            (bound to d) prints EXPECTED
#   finish SUCCESS_LINE      exits 1 after any failure, else prints the line

enter_workdir() {
  rm -rf "$1" && mkdir -p "$1" && cd "$1" || exit 1
  "$2" . >make_traces.out || { echo "FAIL: $2 could not write the traces"; exit 1; }
}

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

expect() {
  local want=$1; shift
  "$@" >out 2>err
  local rc=$?
  if [[ $rc != "$want" ]]; then
    fail "'$*' exited $rc, expected $want"; sed 's/^/  stderr: /' err
  fi
}

has() { grep -qF -- "$2" "$1" || fail "$1 lacks '$2'"; }
lines() { [[ $(wc -l <"$1") == "$2" ]] || fail "$1 has $(wc -l <"$1") lines, expected $2"; }

json() {
  local got
  got=$(python3 -c "import json,sys; d=json.load(open('$1')); print($2)") || { fail "$1 is not valid JSON"; return; }
  [[ $got == "$3" ]] || fail "$1: $2 = $got, expected $3"
}

finish() {
  if ((failures > 0)); then echo "$failures failure(s)"; exit 1; fi
  echo "$1"
}
