# Real-program harness (scripts/validate/real-programs): CPython objects made on one
# thread and dropped on another, through queue.Queue. The strings are over
# 512 bytes, so each comes from malloc, not from CPython's own small-object
# arenas: 20,000 cross-thread frees, enough that a run sampled 1 in 100
# still shows some (with 0-200 byte strings only ~100 crossed, and the
# sampled run often saw none).
import queue
import threading

q = queue.Queue()
N = 20000


def produce():
    for i in range(N):
        q.put(("item", i, "x" * (600 + i % 200)))
    q.put(None)


def consume(out):
    total = 0
    while True:
        item = q.get()
        if item is None:
            break
        total += item[1]
    out.append(total)


out = []
t = threading.Thread(target=consume, args=(out,))
t.start()
produce()
t.join()
print("python3 prodcons:", N, out[0])
