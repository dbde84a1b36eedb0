# Sourced by the end-to-end scripts that take CROSSFREE as their first
# argument and WORKDIR as their last: sets $crossfree and $dir, empties
# WORKDIR and makes it the current directory, and defines fail() and
# record_and_report().

crossfree=$1
dir=${!#}
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 1

fail() { echo "FAIL: $*"; exit 1; }

# record_and_report COMMAND...: records COMMAND into run.trc (and run.trc.*
# for its children) and writes the JSON report of run.trc to report.json.
record_and_report() {
  rm -f run.trc*
  "$crossfree" record -o run.trc -- "$@" >record.out 2>record.err ||
    { cat record.out record.err; fail "record $*"; }
  "$crossfree" report --format json run.trc >report.json 2>report.err ||
    { cat report.err; fail "report"; }
}
