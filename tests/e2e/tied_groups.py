#!/usr/bin/env python3
"""Counts the events whose order the tie rule may not recover.

Reads `crossfree dump TRACE` on stdin. A tied group is an address's
allocations and frees that share one timestamp. The tie rule
(docs/design.md "Ties") orders such a group to fit the address's life
(allocation, free, allocation...), with each thread's own events in
stream order. That order is forced, so the pairing is exact, when the
group's events come from one thread, or when it holds at most one
allocation and at most one free. Any other group (several allocations or
several frees on several threads inside one tick) may have more than one
fitting order, and each event in it may then be paired differently.

Prints one line: `ambiguous_events=N groups=G`, N the number of events in
groups that are not forced. A resolution whose trace has N = 0 must give
the counts of 1 ns exactly; otherwise the counts may drift, each
unforced event moving at most one pair.
"""
import collections
import re
import sys

EVENT = re.compile(r"^  (alloc|free)\s+\S+\s+tid (\d+) ts (\d+) addr (0x[0-9a-f]+) ")


def main():
    groups = collections.defaultdict(list)
    for line in sys.stdin:
        m = EVENT.match(line)
        if m:
            op, tid, ts, addr = m.groups()
            groups[(addr, ts)].append((op, tid))
    ambiguous = 0
    count = 0
    for events in groups.values():
        if len(events) < 3:
            continue  # at most one allocation and one free, or one thread's
        if len({tid for _, tid in events}) < 2:
            continue
        allocs = sum(1 for op, _ in events if op == "alloc")
        if allocs <= 1 and len(events) - allocs <= 1:
            continue
        ambiguous += len(events)
        count += 1
    print(f"ambiguous_events={ambiguous} groups={count}")


if __name__ == "__main__":
    main()
