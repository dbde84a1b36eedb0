# Sourced by the third-party server tests (server_test.sh): starting and
# stopping servers with deadlines, and the checks every recorded run must
# pass. Every wait polls a condition (a port that accepts, a line in a
# file, a process gone) until a deadline that only guards against a hang;
# every process runs under `timeout -k 5 BOUND`, so a hang fails the test
# instead of holding CI. Defines:
#   servers_skip_if_asked       exit 77 (printed) when CROSSFREE_TEST_NO_SERVERS=1
#   fail MESSAGE...             prints FAIL and counts one failure
#   finish SUCCESS_LINE         exit 1 after any failure, else prints the line
#   free_port                   a TCP port of 127.0.0.1 free at the time of the call
#   wait_port PORT SECONDS      until 127.0.0.1:PORT accepts a connection
#   wait_grep FILE TEXT SECONDS until FILE contains TEXT (fixed string)
#   wait_file FILE SECONDS      until FILE exists and is not empty
#   wait_gone PID SECONDS       until PID has exited (not a child: /proc)
#   wait_no_thread PID PREFIX SECONDS   until PID has no thread whose name starts with PREFIX
#   bounded_wait PID SECONDS    waits for the child PID; its status, 124 after the deadline
#   check_record RC ERR BOUND   record ended within BOUND, exit 0, loses nothing
#   check_traces MODE TRACES... the counts add up (see below); writes summary.json
#   pairs_in MODULE_REGEX MIN   at least MIN cross-thread pairs have a frame in a module
#                               matching MODULE_REGEX in their allocation or free stack
# The caller sets CROSSFREE (the CLI) before calling the checks.

servers_skip_if_asked() {
  if [[ ${CROSSFREE_TEST_NO_SERVERS:-} == 1 ]]; then
    echo "SKIP: CROSSFREE_TEST_NO_SERVERS=1: the third-party server tests do not run"
    exit 77
  fi
}

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

finish() {
  if ((failures > 0)); then echo "$failures failure(s)"; exit 1; fi
  echo "$1"
}

# A port no one listens on, below the kernel's ephemeral range: a port the
# kernel handed out (bind to port 0) is free again once that socket closes,
# and may then become the source port of another test's client connection
# before the server binds it (the tests run two at a time). Chosen at
# random, so that two tests starting together rarely try the same one.
free_port() {
  python3 - <<'PY'
import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
for _ in range(200):
    port = random.randrange(10000, max(low, 10001))
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        s.close()
    print(port)
    break
else:
    raise SystemExit("no free port below the ephemeral range")
PY
}

# deadline SECONDS: the time (SECONDS of bash) after which a wait gives up.
_deadline() { echo $((SECONDS + $1)); }

# _wait_until SECONDS WHAT CMD...: runs CMD every 0.05 s (the poll interval,
# not a synchronisation) until it succeeds, or fails saying WHAT once
# SECONDS have passed. The one loop behind every wait_* below.
_wait_until() {
  local end what=$2; end=$(_deadline "$1")
  shift 2
  while ((SECONDS < end)); do
    "$@" && return 0
    sleep 0.05
  done
  fail "$what"
  return 1
}

# bash's /dev/tcp: a connect attempt, closed at once.
_accepts() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
_has_text() { grep -qF -- "$2" "$1" 2>/dev/null; }
_nonempty() { [[ -s $1 ]]; }
_gone() { [[ ! -d /proc/$1 ]]; }
_no_thread() { ! cat /proc/"$1"/task/*/comm 2>/dev/null | grep -q "^$2"; }

wait_port() {
  _wait_until "$2" "nothing accepted connections on 127.0.0.1:$1 within $2 s" _accepts "$1"
}
# Returns once SECONDS seconds have passed since the time FROM (date +%s.%N).
wait_for_time() {
  local left
  left=$(python3 -c 'import sys, time; print(max(0.0, float(sys.argv[1]) + float(sys.argv[2]) - time.time()))' "$1" "$2")
  sleep "$left"
}
wait_grep() { _wait_until "$3" "$1 did not say '$2' within $3 s" _has_text "$1" "$2"; }
wait_file() { _wait_until "$2" "$1 was not written within $2 s" _nonempty "$1"; }
wait_gone() { _wait_until "$2" "process $1 still runs after $2 s" _gone "$1"; }
wait_no_thread() {
  _wait_until "$3" "process $1 still has a thread named $2* after $3 s" _no_thread "$1" "$2"
}

bounded_wait() {
  local end; end=$(_deadline "$2")
  while ((SECONDS < end)) && kill -0 "$1" 2>/dev/null; do sleep 0.05; done
  if kill -0 "$1" 2>/dev/null; then
    kill -KILL "$1" 2>/dev/null
    wait "$1" 2>/dev/null
    return 124
  fi
  local rc=0
  wait "$1" || rc=$?
  return $rc
}

# record ended within its bound (timeout's 124, or 137 after its KILL, mean
# it did not), exited 0, and its hand-off line counts no lost event.
check_record() {
  local rc=$1 err=$2 bound=$3
  if [[ $rc == 124 || $rc == 137 ]]; then
    fail "crossfree record did not end within its bound of $bound s (exit $rc)"
  elif [[ $rc != 0 ]]; then
    fail "crossfree record exited $rc"
  fi
  if grep -q "hand-off:" "$err" && ! grep -q "; 0 events lost of those the command recorded" "$err"; then
    fail "crossfree record lost events: $(grep "hand-off:" "$err")"
  fi
  if ((failures > 0)); then sed 's/^/  record: /' "$err" | tail -20; fi
}

# The counts of the traces, from two readers: `dump --summary` per file and
# `report --format json` over the run. What must hold:
#   - every file is whole (report: not truncated);
#   - report's allocations and frees are the sums of dump's per file;
#   - allocations = cross-thread frees + same-thread frees + live at exit
#     (+ live at the attached window's end): every allocation was freed
#     exactly once or is still live;
#   - frees = cross-thread + same-thread + unknown + double + freed after
#     fork (of a parent's block) (+ allocated before the attached window);
#   - MODE sample: instead of the two sums (the report's pair counts are
#     estimates there), the report's allocations and frees are the sums of
#     the threads' counts records, and about 1 in the traces' sample
#     period (100 or more) of them was sampled, within 10x;
#   - MODE default, fp, sample (the tracer preloaded from the start): no
#     unknown and no double free (a free of a block whose allocation the
#     trace lost shows here), and no sample dropped;
#   - MODE attach: the events in the trace are the ones the tracer said it
#     wrote (record's "N events from T threads written").
# Prints one line of figures; the JSON is left in report.json.
check_traces() {
  local mode=$1; shift
  local t allocs=0 frees=0 events=0 a f e dropped=0 d ca cf counted_allocs=0 counted_frees=0
  for t in "$@"; do
    if ! timeout -k 5 120 "$CROSSFREE" dump --summary "$t" >dump.out 2>dump.err; then
      fail "dump --summary $t failed: $(cat dump.err)"; return
    fi
    # The trace itself must not say that record lost events (its losses
    # record, trace format 6.9).
    if grep -q "^  complete: no: .*dropped by the tracer\|chunks damaged" dump.out; then
      fail "dump --summary says $t lost events: $(grep '^  complete:' dump.out)"; return
    fi
    a=$(awk '$1 == "allocs:" {print $2}' dump.out)
    f=$(awk '$1 == "frees:" {print $2}' dump.out)
    e=$(awk '$1 == "events:" {print $2}' dump.out)
    d=$(sed -n 's/.* \([0-9]*\) samples dropped$/\1/p' dump.out | head -1)
    ca=$(sed -n 's/.*sampled or not): \([0-9]*\) allocs.*/\1/p' dump.out | head -1)
    cf=$(sed -n 's/.*sampled or not): [0-9]* allocs, \([0-9]*\) frees.*/\1/p' dump.out | head -1)
    counted_allocs=$((counted_allocs + ${ca:-0})); counted_frees=$((counted_frees + ${cf:-0}))
    allocs=$((allocs + a)); frees=$((frees + f)); events=$((events + e))
    dropped=$((dropped + ${d:-0}))
  done
  if ! timeout -k 5 120 "$CROSSFREE" report --format json --top 0 -o report.json "$@" \
       2>report.err; then
    fail "report failed: $(cat report.err)"; return
  fi
  # An attached window's objects from before it and still live at its end:
  # read from the text report's summary, and checked against the JSON's
  # window.allocated_before_window and window.live_at_window_end below.
  local before=0 window_end=0
  if [[ $mode == attach || $mode == delay ]]; then
    timeout -k 5 120 "$CROSSFREE" report --top 1 "$@" >report.txt 2>>report.err
    before=$(sed -n 's/^  before the window  *\([0-9,]*\).*/\1/p' report.txt | tr -d ,)
    window_end=$(sed -n 's/^  live at window end  *\([0-9,]*\).*/\1/p' report.txt | tr -d ,)
    [[ -n $before && -n $window_end ]] ||
      fail "the report of a windowed run names no objects before the window and live at its end"
  fi
  # MODE delay: every trace that holds events holds the window's opening
  # (--delay's, no later one: the window stays open to the end).
  if [[ $mode == delay ]]; then
    for t in "$@"; do
      timeout -k 5 120 "$CROSSFREE" dump --summary "$t" >dump.out 2>dump.err
      if [[ $(awk '$1 == "events:" {print $2}' dump.out) != 0 ]] &&
         ! grep -q "^  window records: 1$" dump.out; then
        fail "$t holds events but not exactly one window record: $(grep 'window records' dump.out)"
      fi
    done
  fi
  local got
  got=$(python3 - "$allocs" "$frees" "$mode" "${before:-0}" "${window_end:-0}" \
          "$counted_allocs" "$counted_frees" <<'EOF'
import json, sys
d = json.load(open("report.json"))
s = d["summary"]
allocs, frees, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
before, window_end = int(sys.argv[4]), int(sys.argv[5])
counted_allocs, counted_frees = int(sys.argv[6]), int(sys.argv[7])
problems = []
if mode == "sample":
    # The report's summary is of every call (the threads' counts records)
    # and its pair counts are estimates; the sampled events are dump's.
    if s["allocations"] != counted_allocs or s["frees"] != counted_frees:
        problems.append(f"report counts {s['allocations']} allocations and {s['frees']} frees, "
                        f"the counts records {counted_allocs} and {counted_frees}")
    period = max(t.get("sample_period", 1) for t in d["traces"])
    if period < 100 or not 0 < allocs < counted_allocs * 10 / period or frees > counted_frees:
        problems.append(f"{allocs} allocations and {frees} frees sampled of {counted_allocs} "
                        f"and {counted_frees} (period {period})")
    allocs, frees = s["allocations"], s["frees"]
for t in d["traces"]:
    if t["truncated"]:
        problems.append(f"{t['path']} is truncated")
if s["allocations"] != allocs or s["frees"] != frees:
    problems.append(f"report counts {s['allocations']} allocations and {s['frees']} frees, "
                    f"dump {allocs} and {frees}")
paired = s["cross_thread_frees"] + s["same_thread_frees"]
if mode == "sample":
    paired = None  # estimates: the sums below do not apply
if paired is not None and s["allocations"] != paired + s["live_at_exit"] + window_end:
    problems.append(f"allocations {s['allocations']} != cross {s['cross_thread_frees']} + same "
                    f"{s['same_thread_frees']} + live at exit {s['live_at_exit']} + live at "
                    f"window end {window_end}")
after_fork = s.get("freed_after_fork", 0)
if paired is not None and s["frees"] != paired + s["unknown_frees"] + s["double_frees"] + after_fork + before:
    problems.append(f"frees {s['frees']} != cross + same {paired} + unknown {s['unknown_frees']} "
                    f"+ double {s['double_frees']} + after fork {after_fork} + before the "
                    f"window {before}")
if paired is not None and after_fork != s.get("freed_after_fork_matched", 0):
    problems.append(f"{after_fork} frees after fork, {s.get('freed_after_fork_matched')} matched")
if mode == "attach":
    w = d.get("window", {})
    if (w.get("allocated_before_window"), w.get("live_at_window_end")) != (before, window_end):
        problems.append(f"JSON window {w.get('allocated_before_window')} before, "
                        f"{w.get('live_at_window_end')} live at end; text {before} and "
                        f"{window_end}")
if mode != "attach" and (s["unknown_frees"] or s["double_frees"]):
    problems.append(f"{s['unknown_frees']} unknown and {s['double_frees']} double frees")
print("; ".join(problems) if problems else "ok")
EOF
  )
  [[ $got == ok ]] || fail "counts: $got"
  if [[ $mode != attach && $dropped != 0 ]]; then fail "$dropped samples dropped"; fi
  if [[ $mode == attach ]]; then
    local written
    written=$(sed -n 's/.*[;:] \([0-9]*\) events from [0-9]* threads\{0,1\} written.*/\1/p' record.err | head -1)
    [[ $written == "$events" ]] ||
      fail "the tracer wrote ${written:-?} events, the trace holds $events"
  fi
  python3 - "$mode" "$events" <<'EOF'
import json, sys
s = json.load(open("report.json"))["summary"]
print(f"counts ({sys.argv[1]}): {int(sys.argv[2]):,} events, {s['allocations']:,} allocations, "
      f"{s['frees']:,} frees ({s['cross_thread_frees']:,} cross-thread, "
      f"{s['same_thread_frees']:,} same-thread, {s['unknown_frees']:,} unknown, "
      f"{s.get('freed_after_fork', 0):,} after fork), {s['live_at_exit']:,} live at exit")
EOF
  if [[ $mode == attach ]]; then
    echo "attached window: $before frees of objects from before it, $window_end live at its end"
  fi
}

pairs_in() {
  local got
  got=$(python3 - "$1" <<'EOF'
import json, re, sys
d = json.load(open("report.json"))
module = re.compile(sys.argv[1])
hits = []
for p in d["pairs"]:
    frames = p["alloc_site"]["frames"] + p["free_site"]["frames"]
    if any(module.search(f.get("module", "")) for f in frames):
        hits.append(p)
print(len(hits), sum(p["count"] for p in hits))
for p in hits[:3]:
    print(f"  {p['count']}: {p['key'][:200]}")
EOF
  )
  echo "pairs in ${1}: $got"
  local n=${got%% *}
  ((n >= $2)) || fail "$n cross-thread pairs with a frame in a module matching '$1', expected at least $2"
}
