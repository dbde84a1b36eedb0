# Real-program harness (scripts/validate/real-programs): CPython objects made on one
# thread and dropped on another, through queue.Queue.
import queue
import threading

q = queue.Queue()
N = 20000


def produce():
    for i in range(N):
        q.put(("item", i, "x" * (i % 200)))
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
