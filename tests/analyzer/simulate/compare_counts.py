#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Compares `crossfree simulate --format json` (predicted) with the counts of
# libcrossfree-tccount.so (measured) per thread role: thread names with every
# run of digits folded to N, unnamed threads "main" (tid == pid) or
# "thread", as the analyzer's roles. Usage:
#   compare_counts.py SIMULATE.json TCCOUNT.json
import json
import re
import sys


def role(name, tid, pid):
    if not name:
        return "main" if tid == pid else "thread"
    return re.sub(r"[0-9]+", "N", name)


def ratio(pred, real):
    if real == 0:
        return "n/a" if pred else "="
    return "%+.1f%%" % (100.0 * (pred - real) / real)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: compare_counts.py SIMULATE.json TCCOUNT.json")
    sim = json.load(open(sys.argv[1]))
    real = json.load(open(sys.argv[2]))
    if sim.get("by") != "role":
        sys.exit("simulate output must be --by role")
    pid = real["pid"]
    # The tracer names every thread after its comm at start (the main
    # thread and unnamed threads inherit the program name), so the comm that
    # the counter saw folds into the same role.
    predicted = {g["name"]: g for g in sim["groups"]}
    measured = {}
    for t in real["threads"]:
        r = role(t["name"], t["tid"], pid)
        # A trace without a name record for the main thread calls it "main".
        if t["tid"] == pid and r not in predicted and "main" in predicted:
            r = "main"
        m = measured.setdefault(r, {"fetch_calls": 0, "fetched_objects": 0, "release_calls": 0,
                                    "released_objects": 0})
        for k in m:
            m[k] += t[k]
    keys = ["fetch_calls", "fetched_objects", "release_calls", "released_objects"]
    print("%-20s %-17s %12s %12s %9s" % ("role", "count", "predicted", "measured", "error"))
    totals = {k: [0, 0] for k in keys}
    for r in sorted(set(predicted) | set(measured)):
        for k in keys:
            p = predicted.get(r, {}).get(k, 0)
            m = measured.get(r, {}).get(k, 0)
            totals[k][0] += p
            totals[k][1] += m
            print("%-20s %-17s %12d %12d %9s" % (r, k, p, m, ratio(p, m)))
    for k in keys:
        p, m = totals[k]
        print("%-20s %-17s %12d %12d %9s" % ("TOTAL", k, p, m, ratio(p, m)))


if __name__ == "__main__":
    main()
