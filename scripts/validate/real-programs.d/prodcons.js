// Real-program harness (scripts/validate/real-programs): node's allocations
// (V8's heap, libuv, the JIT) while strings and buffers are made and dropped.
let kept = [];
let sum = 0;
for (let i = 0; i < 20000; i++) {
  const b = Buffer.alloc(64 + (i % 500), i & 0xff);
  kept.push(b);
  if (kept.length > 100) sum += kept.shift()[0];
}
console.log("node prodcons:", sum);
