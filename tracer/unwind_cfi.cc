// SPDX-License-Identifier: Apache-2.0
// Tracer: cached-CFI unwinder for the hybrid mode (see unwind_cfi.h).
#include "tracer/unwind_cfi.h"


#include "tracer/code_ranges.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <libelf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "tracer/own_allocation.h"
#include "tracer/unwind_libunwind.h"

namespace crossfree::tracer {
namespace {

// DWARF register numbers on x86-64.
constexpr int kDwarfRbp = 6;
constexpr int kDwarfRsp = 7;
constexpr int kDwarfRa = 16;

// A rule packed into 64 bits so that a cache slot is published with one
// store. Layout: kind (8 bits) | cfa via rbp (1) | rbp saved (1) |
// cfa offset (int16 at 16) | rbp offset from CFA (int16 at 32).
enum RuleKind : uint64_t {
  kRuleEmpty = 0,     // slot value not written yet
  kRuleSimple = 1,    // CFA = reg + off; ra at CFA-8; rbp same or at CFA+off
  kRuleOutermost = 2, // return address undefined: end of the stack
  kRuleNoInfo = 3,    // no module or no CFI for pc: fall back to fp
  kRuleComplex = 4,   // anything else: hand over to libunwind
};

struct Rule {
  RuleKind kind;
  bool cfa_rbp;
  bool rbp_saved;
  int32_t cfa_offset;
  int32_t rbp_offset;
};

uint64_t Pack(const Rule& r) {
  return static_cast<uint64_t>(r.kind) | (r.cfa_rbp ? 1ull << 8 : 0) |
         (r.rbp_saved ? 1ull << 9 : 0) |
         (static_cast<uint64_t>(static_cast<uint16_t>(r.cfa_offset)) << 16) |
         (static_cast<uint64_t>(static_cast<uint16_t>(r.rbp_offset)) << 32);
}

Rule Unpack(uint64_t v) {
  Rule r;
  r.kind = static_cast<RuleKind>(v & 0xff);
  r.cfa_rbp = (v >> 8) & 1;
  r.rbp_saved = (v >> 9) & 1;
  r.cfa_offset = static_cast<int16_t>((v >> 16) & 0xffff);
  r.rbp_offset = static_cast<int16_t>((v >> 32) & 0xffff);
  return r;
}

// ---- Process-wide rule cache: open addressing, insert-only. -------------

constexpr uint64_t kCacheSlots = 1u << 18;  // 4 MiB, reserved lazily

struct CacheSlot {
  std::atomic<uint64_t> pc;    // 0 = empty
  std::atomic<uint64_t> rule;  // kRuleEmpty until published
};

CacheSlot* g_cache = nullptr;
std::atomic<uint64_t> g_rules{0};
std::atomic<uint64_t> g_fallbacks{0};

inline uint64_t HashPc(uint64_t pc) {
  pc ^= pc >> 31;
  pc *= 0x9e3779b97f4a7c15ull;
  return pc ^ (pc >> 29);
}

constexpr int kMaxProbes = 32;

// Which of a thread's memos a walk starting at return address pc with
// stack pointer sp uses: of the two in its set (a hash of both; sp is
// shifted so that its low bits, which step by the 16 bytes of a frame, do
// not cancel the pc's), the one whose walk started there too, else the one
// of the two used less recently. Direct-mapped, collisions between the hot
// starting points of one thread moved with the stacks' random placement:
// 893 to 963 tracer instructions per event between runs of one binary.
inline MemoSteps* PickMemo(WalkMemo& w, uint64_t pc, uint64_t sp) {
  const auto set = static_cast<int>(((pc ^ (sp << 17)) * 0x9e3779b97f4a7c15ull) >>
                                    (64 - (kMemoSiteBits - 1)));
  MemoSteps* const pair = &w.by_site[2 * set];
  int way = 1 - w.recent_way[set];
  for (int i = 0; i < 2; ++i) {
    const MemoSteps& m = pair[i];
    if (m.count > 0 && m.step[m.count - 1].pc == pc && m.step[m.count - 1].sp == sp) {
      way = i;
      break;
    }
  }
  w.recent_way[set] = static_cast<uint8_t>(way);
  return &pair[way];
}

// The front cache (WalkMemo::front, unwind_cfi.h). Multiplicative: the hot
// return addresses of one loop lie a few bytes to a few hundred apart, and
// pc ^ (pc >> 6) into 64 slots put two of the deep workload's on one slot
// (a front miss on every event, callgrind; none with this and 128 slots).
inline int FrontIndex(uint64_t pc) {
  return static_cast<int>((pc * 0x9e3779b97f4a7c15ull) >> (64 - kFrontBits));
}

// Returns the cached rule for pc, or kRuleEmpty.
inline uint64_t CacheFind(uint64_t pc) {
  uint64_t h = HashPc(pc);
  for (int i = 0; i < kMaxProbes; ++i) {
    CacheSlot& slot = g_cache[(h + i) & (kCacheSlots - 1)];
    uint64_t key = slot.pc.load(std::memory_order_acquire);
    if (key == pc) return slot.rule.load(std::memory_order_acquire);
    if (key == 0) return kRuleEmpty;
  }
  return kRuleEmpty;
}

void CacheInsert(uint64_t pc, uint64_t rule) {
  uint64_t h = HashPc(pc);
  for (int i = 0; i < kMaxProbes; ++i) {
    CacheSlot& slot = g_cache[(h + i) & (kCacheSlots - 1)];
    uint64_t key = slot.pc.load(std::memory_order_acquire);
    if (key == 0 && slot.pc.compare_exchange_strong(key, pc, std::memory_order_acq_rel)) {
      key = pc;
    }
    if (key == pc) {
      slot.rule.store(rule, std::memory_order_release);
      return;
    }
  }
  // Neighbourhood full: the rule is simply recomputed next time.
}

// ---- Modules and their CFI, only touched under the fill lock. -----------

struct Module {
  uintptr_t start;  // lowest and highest mapped address of PT_LOAD segments
  uintptr_t end;
  uintptr_t bias;   // link-time address = runtime address - bias
  Dwarf_CFI* cfi;   // null: module has no usable CFI
  Elf* elf = nullptr;  // ReleaseCfiFiles ends it (its mapping of the file)
};
constexpr int kMaxModules = 1024;
Module g_modules[kMaxModules];
int g_module_count = 0;

// Try-lock guarding g_modules and libdw. Holds the owning pid so that a
// child forked while the parent held it can take it over.
std::atomic<int> g_fill_lock_pid{0};

bool TryLockFill() {
  int expected = 0;
  int pid = getpid();
  if (g_fill_lock_pid.compare_exchange_strong(expected, pid, std::memory_order_acquire)) {
    return true;
  }
  // Held by another thread of this process: do not wait. Held by another
  // pid: we are a child forked while the parent held it; take it over.
  return expected != pid &&
         g_fill_lock_pid.compare_exchange_strong(expected, pid, std::memory_order_acquire);
}

void UnlockFill() { g_fill_lock_pid.store(0, std::memory_order_release); }

struct FindModuleArg {
  uintptr_t pc;
  Module found;
  char path[4096];
  bool ok;
};

int FindModuleCallback(dl_phdr_info* info, size_t, void* data) {
  auto* arg = static_cast<FindModuleArg*>(data);
  uintptr_t lo = UINTPTR_MAX;
  uintptr_t hi = 0;
  bool contains = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    uintptr_t s = info->dlpi_addr + ph.p_vaddr;
    uintptr_t e = s + ph.p_memsz;
    if (s < lo) lo = s;
    if (e > hi) hi = e;
    if (arg->pc >= s && arg->pc < e) contains = true;
  }
  if (!contains) return 0;
  arg->found = {lo, hi, info->dlpi_addr, nullptr};
  const char* name = info->dlpi_name;
  if (name == nullptr || name[0] == '\0') name = "/proc/self/exe";
  std::strncpy(arg->path, name, sizeof(arg->path) - 1);
  arg->path[sizeof(arg->path) - 1] = '\0';
  arg->ok = true;
  return 1;
}

// Finds or registers the module holding pc. Under the fill lock.
const Module* ModuleFor(uintptr_t pc) {
  for (int i = 0; i < g_module_count; ++i) {
    if (pc >= g_modules[i].start && pc < g_modules[i].end) return &g_modules[i];
  }
  if (g_module_count == kMaxModules) return nullptr;
  FindModuleArg arg{};
  arg.pc = pc;
  dl_iterate_phdr(FindModuleCallback, &arg);
  if (!arg.ok) return nullptr;
  Module m = arg.found;
  // The vDSO and other modules without a file keep cfi == null.
  int fd = arg.path[0] == '/' ? open(arg.path, O_RDONLY | O_CLOEXEC) : -1;
  if (fd >= 0) {
    // The Elf and its CFI live for the rest of the process, the descriptor
    // does not: ELF_C_FDREAD makes libelf hold the whole file (mapped, or
    // read if mapping failed) and stop using it, so no descriptor of the
    // tracer's stays open for the program to close or reuse.
    Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
    if (elf != nullptr && elf_cntl(elf, ELF_C_FDREAD) == 0) {
      m.cfi = dwarf_getcfi_elf(elf);
      m.elf = elf;
    } else if (elf != nullptr) {
      elf_end(elf);
    }
    close(fd);
  }
  g_modules[g_module_count] = m;
  return &g_modules[g_module_count++];
}

// Computes the rule at return address pc from CFI. Under the fill lock.
// libelf's and libdw's blocks (the module's Elf and CFI, their caches, the
// frame) come from the tracer's arena, not the program's allocator
// (OwnAllocationScope, real_alloc.h).
Rule ComputeRule(uintptr_t pc) {
  OwnAllocationScope own(nullptr, 0);
  Rule rule{kRuleNoInfo, false, false, 0, 0};
  const Module* m = ModuleFor(pc);
  if (m == nullptr || m->cfi == nullptr) return rule;
  Dwarf_Frame* frame = nullptr;
  // pc is a return address: the call instruction is the byte before it.
  if (dwarf_cfi_addrframe(m->cfi, pc - 1 - m->bias, &frame) != 0 || frame == nullptr) {
    return rule;
  }
  rule.kind = kRuleComplex;
  Dwarf_Addr start = 0;
  Dwarf_Addr end = 0;
  bool signal_frame = false;
  int ra_reg = dwarf_frame_info(frame, &start, &end, &signal_frame);
  Dwarf_Op* ops = nullptr;
  size_t nops = 0;
  Dwarf_Op ops_mem[3];
  if (ra_reg == kDwarfRa && !signal_frame && dwarf_frame_cfa(frame, &ops, &nops) == 0 &&
      nops == 1 && ops[0].atom == DW_OP_bregx &&
      (ops[0].number == kDwarfRsp || ops[0].number == kDwarfRbp)) {
    rule.cfa_rbp = ops[0].number == kDwarfRbp;
    int64_t cfa_offset = static_cast<int64_t>(ops[0].number2);
    // Return address: undefined ends the stack; otherwise it must be the
    // usual "saved at CFA-8".
    if (dwarf_frame_register(frame, kDwarfRa, ops_mem, &ops, &nops) == 0) {
      if (nops == 0) {  // undefined (libdw may say "same value"): _start, clone
        rule.kind = kRuleOutermost;
      } else if (nops == 2 && ops[0].atom == DW_OP_call_frame_cfa &&
                 ops[1].atom == DW_OP_plus_uconst &&
                 static_cast<int64_t>(ops[1].number) == -8 && cfa_offset > 0 &&
                 cfa_offset < 32768) {
        rule.cfa_offset = static_cast<int32_t>(cfa_offset);
        if (dwarf_frame_register(frame, kDwarfRbp, ops_mem, &ops, &nops) == 0) {
          if (nops == 0) {
            // Same value, or unspecified (which libdw reports as undefined
            // for x86-64): rbp is callee-saved, so code that does not save
            // it leaves it unchanged.
            rule.kind = kRuleSimple;
          } else if (nops == 2 && ops[0].atom == DW_OP_call_frame_cfa &&
                     ops[1].atom == DW_OP_plus_uconst) {
            int64_t off = static_cast<int64_t>(ops[1].number);
            if (off < 0 && off > -32768) {
              rule.kind = kRuleSimple;
              rule.rbp_saved = true;
              rule.rbp_offset = static_cast<int32_t>(off);
            }
          }
        }
      }
    }
  }
  free(frame);
  return rule;
}

}  // namespace

bool ReleaseCfiFiles() {
  if (!TryLockFill()) return false;
  for (int i = 0; i < g_module_count; ++i) {
    Module& m = g_modules[i];
    if (m.cfi != nullptr) dwarf_cfi_end(m.cfi);
    if (m.elf != nullptr) elf_end(m.elf);
    m = Module{0, 0, 0, nullptr, nullptr};
  }
  g_module_count = 0;
  UnlockFill();
  return true;
}

bool InitCfiUnwinder() {
  if (g_cache != nullptr) return true;
  elf_version(EV_CURRENT);
  void* p = mmap(nullptr, kCacheSlots * sizeof(CacheSlot), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return false;
  g_cache = static_cast<CacheSlot*>(p);
  return true;
}

namespace {

// ---- The walk memo (unwind_cfi.h): replay of the unchanged outer frames. --
constinit bool g_memo_enabled = true;

// True if the word at addr lies in bounds and still holds value.
inline bool SameWord(uintptr_t addr, uintptr_t value, const StackBounds& b) {
  return addr >= b.low && addr <= b.high - 8 && (addr & 7) == 0 &&
         *reinterpret_cast<const uintptr_t*>(addr) == value;
}

// Replays memo steps k, k - 1, ..., 1 (outward) while each one's recorded
// reads still hold their values, appending their return addresses to out
// (at most room). Returns the index of the last step proven: the state the
// walk is in afterwards. A function of its own so that the loop keeps
// everything in registers: out never aliases the steps or the stack words
// read (it is the recorder's buffer, below the walked frames).
inline int ReplaySteps(const MemoStep* __restrict steps, int k, uint64_t* __restrict out,
                       int room, int* appended) {
  // One pointer and one precomputed end: the loop's only bookkeeping.
  const MemoStep* m = steps + k;
  const MemoStep* const end = steps + (k > room ? k - room : 0);
  uint64_t* o = out;
  for (; m != end; --m) {
    // Both words unconditionally: a step that read no rbp repeats its
    // return address there (MemoStep), which holds if the first does.
    const uintptr_t ra = m->ra_val;
    if (*reinterpret_cast<const uintptr_t*>(m->ra_addr) != ra ||
        *reinterpret_cast<const uintptr_t*>(m->rbp_addr) != m->rbp_val) {
      break;
    }
    *o++ = ra;
  }
  *appended = static_cast<int>(o - out);
  return static_cast<int>(m - steps);
}

// Writes a fresh walk (its n steps, outermost first) as the whole memo.
void StoreMemo(MemoSteps& memo, const MemoStep* fresh, int n, int ended, uintptr_t high) {
  __builtin_memcpy(memo.step, fresh, sizeof(MemoStep) * static_cast<size_t>(n));
  memo.id_valid = 0;
  memo.count = n;
  memo.ended = ended;
  memo.high = high;
}

// WalkWithCfi's helpers are inlined into it: they run for every frame of
// every sampled allocation's stack, in the hook (no allocation, no lock
// but the fill lock's try, no stdio), and inlined they keep the walk's
// state in registers as one function did.
#define CROSSFREE_WALK_INLINE inline __attribute__((always_inline))

// How meeting the memo ended (CfiWalk::MeetMemo).
enum class MemoMeet {
  kWalkOn,     // not met, or replayed to a difference: walk on from (pc, sp, fp)
  kComplete,   // the frames are complete: return depth
  kDepthFull,  // replayed up to max_depth
};

// How one frame's step by its rule ended (CfiWalk::FollowRule).
enum class StepEnd {
  kTaken,    // the caller's frame: its cfa, rbp and return address
  kEnd,      // the stack ends here, or a read would leave it
  kComplex,  // a rule this walk does not follow: libunwind goes on
};

// The state of one WalkWithCfi: where the walk is (pc, sp, fp), the frames
// written, and the memo it replays and records. A local of WalkWithCfi that
// never escapes it.
struct CfiWalk {
  uintptr_t pc, sp, fp;
  // A copy: stores to frames could otherwise alias it (reloads).
  const StackBounds bounds;
  uint64_t* const frames;
  int depth;
  const int max_depth;
  WalkMemo* const memo_state;
  // The thread's front cache; a walk without a memo state (tests, the
  // check mode's second walk) looks every rule up in the shared table.
  FrontCache* const front;
  // Without a memo the walk records nothing: neither is touched then.
  // The facts of the last walk that started where this one starts (its
  // return address and stack pointer, WalkMemo): it usually holds the whole
  // stack, where the thread's previous walk shares only the outer frames.
  MemoSteps* const memo;
  // This walk's steps fill memo->fresh from its end down, innermost in the
  // last slot: the nfresh steps at fresh_end - nfresh are outermost first,
  // the memo's order, and go into it with one memcpy.
  MemoStep* const fresh_end;
  int nfresh;
  bool recording;
  // Where the memo may meet this walk: its steps by decreasing sp, so the
  // scan runs from its innermost step outward as this walk's sp grows.
  int cursor;

  // Moves the cursor to this walk's sp; where the memo's step there is this
  // state, replays it outward while every recorded read still holds.
  CROSSFREE_WALK_INLINE MemoMeet MeetMemo() {
    while (cursor >= 0 && memo->step[cursor].sp < sp) --cursor;
    if (cursor < 0 || memo->step[cursor].sp != sp || memo->step[cursor].pc != pc ||
        memo->step[cursor].fp != fp || sp < bounds.low || sp > bounds.high) {
      return MemoMeet::kWalkOn;
    }
    // Met: replay while every recorded read still holds its value.
    // Bounds: each recorded address lies in [its step's sp, high - 8]
    // (the full walk checked it, against this same high), and the
    // steps' sp only grow from the meeting one, so one check that the
    // meeting sp is in bounds covers every read of the replay.
    int appended = 0;
    const int k = ReplaySteps(memo->step, cursor, frames + depth, max_depth - depth, &appended);
    depth += appended;
    const MemoStep& last = memo->step[k];
    const bool done = depth >= max_depth ||
                      (k == 0 && memo->ended != 0 &&
                       (last.ra_addr == 0 || SameWord(last.ra_addr, last.ra_val, bounds)));
    if (done) {
      KeepMemoOuterSteps();
      return MemoMeet::kComplete;
    }
    // A difference (or the memo ends short of this walk): the steps
    // replayed so far join this walk's record and the full walk goes
    // on from state k.
    // They are memo steps k + 1 ... cursor, outermost first already.
    if (recording) {
      const int replayed = cursor - k;
      if (nfresh + replayed > kMemoSteps) {
        recording = false;
      } else {
        nfresh += replayed;
        __builtin_memcpy(fresh_end - nfresh, &memo->step[k + 1],
                         sizeof(MemoStep) * static_cast<size_t>(replayed));
      }
    }
    pc = last.pc;
    sp = last.sp;
    fp = last.fp;
    cursor = -1;
    return depth >= max_depth ? MemoMeet::kDepthFull : MemoMeet::kWalkOn;
  }

  // A walk completed by replaying the memo: the memo keeps its outer steps
  // [0, cursor] and takes this walk's new inner steps on top.
  CROSSFREE_WALK_INLINE void KeepMemoOuterSteps() {
    if (!recording || cursor + 1 + nfresh > kMemoSteps) return;
    if (nfresh == 0 && cursor + 1 == memo->count) {
      // Met at the memo's first state and replayed to its end: the
      // frames are the memo's last walk's, the memo is unchanged.
      memo_state->whole = 1;
    } else {
      __builtin_memcpy(&memo->step[cursor + 1], fresh_end - nfresh,
                       sizeof(MemoStep) * static_cast<size_t>(nfresh));
      memo->count = cursor + 1 + nfresh;
      memo->id_valid = 0;
    }
    memo_state->last = memo;
  }

  // The packed rule for pc: the thread's front cache, else the shared
  // table, else computed (and published) under the fill lock. False when
  // another thread holds that lock: the walk hands over to libunwind.
  CROSSFREE_WALK_INLINE bool LookupRule(uint64_t* out) {
    const int front_index = FrontIndex(pc);
    uint64_t packed = front != nullptr && front->pc[front_index] == pc ? front->rule[front_index]
                                                                       : CacheFind(pc);
    if (packed == kRuleEmpty) {
      if (!TryLockFill()) return false;
      packed = CacheFind(pc);  // another thread may have just added it
      if (packed == kRuleEmpty) {
        packed = Pack(ComputeRule(pc));
        CacheInsert(pc, packed);
        g_rules.fetch_add(1, std::memory_order_relaxed);
      }
      UnlockFill();
    }
    if (front != nullptr) {
      front->pc[front_index] = pc;
      front->rule[front_index] = packed;
    }
    *out = packed;
    return true;
  }

  // One frame's step by its rule, from (sp, fp): the caller's CFA, rbp and
  // return address, and the words read into *step. Every load is proven
  // inside [sp, bounds.high) first, with overflow-checked arithmetic: sp
  // only grows (cfa > sp), and sp starts at the hook's frame, so nothing
  // below the running frame is read.
  CROSSFREE_WALK_INLINE StepEnd FollowRule(const Rule& rule, MemoStep* step, uintptr_t* cfa_out,
                                           uintptr_t* next_fp_out, uintptr_t* ra_out) const {
    uintptr_t cfa;
    uintptr_t next_fp = fp;
    bool stop = false;
    switch (rule.kind) {
      case kRuleSimple: {
        const uintptr_t base = rule.cfa_rbp ? fp : sp;
        if (__builtin_add_overflow(base, static_cast<uintptr_t>(rule.cfa_offset), &cfa) ||
            cfa <= sp || cfa > bounds.high || cfa - sp < 8) {
          stop = true;
          break;
        }
        if (rule.rbp_saved) {
          // A saved register lies between this frame's sp and its CFA.
          const uintptr_t back = static_cast<uintptr_t>(-static_cast<int64_t>(rule.rbp_offset));
          if (back > cfa - sp) {
            stop = true;
            break;
          }
          const uintptr_t at = cfa - back;
          if (at < sp || at < bounds.low || bounds.high - at < 8) {
            stop = true;
            break;
          }
          next_fp = *reinterpret_cast<const uintptr_t*>(at);
          step->rbp_addr = at;
          step->rbp_val = next_fp;
        }
        break;
      }
      case kRuleNoInfo:
        // No CFI (JIT code, stripped .eh_frame): follow a sound fp record
        // only; %rbp may be any value in such code.
        if (fp < sp || !PlausibleFrame(fp, bounds)) {
          stop = true;
          break;
        }
        cfa = fp + 16;
        next_fp = *reinterpret_cast<const uintptr_t*>(fp);
        step->rbp_addr = fp;
        step->rbp_val = next_fp;
        break;
      case kRuleComplex:
        return StepEnd::kComplex;
      case kRuleOutermost:
      default:
        stop = true;
        break;
    }
    if (stop) return StepEnd::kEnd;
    const uintptr_t ra = *reinterpret_cast<const uintptr_t*>(cfa - 8);
    step->ra_addr = cfa - 8;
    step->ra_val = ra;
    if (step->rbp_addr == 0) {
      step->rbp_addr = step->ra_addr;
      step->rbp_val = ra;
    }
    *cfa_out = cfa;
    *next_fp_out = next_fp;
    *ra_out = ra;
    // Through a frame pointer (code without CFI, or a CFA rule on a rbp
    // that holds something else) the word may be no return address at
    // all (code_ranges.h). Replayed steps were checked when recorded.
    if (ra < 4096 || !InCode(ra)) return StepEnd::kEnd;
    return StepEnd::kTaken;
  }

  // A step of this walk into its record, while the record has room.
  CROSSFREE_WALK_INLINE void Record(const MemoStep& step) {
    if (!recording) return;
    if (nfresh == kMemoSteps) {
      recording = false;
    } else {
      *(fresh_end - ++nfresh) = step;
    }
  }

  // The rest of the stack by libunwind, from the state reached.
  CROSSFREE_WALK_INLINE int HandOverToLibunwind() const {
    g_fallbacks.fetch_add(1, std::memory_order_relaxed);
    return ContinueWithLibunwind(pc, sp, fp, StackBounds{sp, bounds.high}, frames, depth,
                                 max_depth);
  }

  // The walk's end (ended: the stack ended, else max_depth was reached):
  // its record becomes the memo. Returns the depth.
  CROSSFREE_WALK_INLINE int Finish(int ended) {
    if (!recording) return depth;
    if (ended == 0) {
      // Stopped for max_depth at the state (pc, sp, fp): its step not taken.
      if (nfresh == kMemoSteps) return depth;
      *(fresh_end - ++nfresh) = MemoStep{pc, sp, fp, 0, 0, 0, 0};
    }
    StoreMemo(*memo, fresh_end - nfresh, nfresh, ended, bounds.high);
    memo_state->last = memo;
    return depth;
  }
};

}  // namespace

void SetWalkMemo(bool enabled) { g_memo_enabled = enabled; }

// The walk's steps per frame: meet the memo and replay it where it holds;
// else look the frame's rule up and follow it, recording the step.
int WalkWithCfi(uintptr_t pc, uintptr_t sp, uintptr_t fp, const StackBounds& bounds_in,
                uint64_t* frames, int depth, int max_depth, WalkMemo* memo_state) {
  const bool use_memo = memo_state != nullptr && g_memo_enabled;
  MemoSteps* const memo = use_memo ? PickMemo(*memo_state, pc, sp) : nullptr;
  // Until the walk ends with the memo describing it, the recorder must not
  // trust or store a stack id there (WalkMemo::last).
  if (memo_state != nullptr) {
    memo_state->last = nullptr;
    memo_state->whole = 0;
  }
  CfiWalk w{pc,
            sp,
            fp,
            bounds_in,
            frames,
            depth,
            max_depth,
            memo_state,
            memo_state != nullptr ? &memo_state->front : nullptr,
            memo,
            use_memo ? memo_state->fresh + kMemoSteps : nullptr,
            0,
            use_memo,
            use_memo && memo->high == bounds_in.high ? memo->count - 1 : -1};
  int ended = 0;
  while (w.depth < w.max_depth) {
    if (w.cursor >= 0) {
      const MemoMeet met = w.MeetMemo();
      if (met == MemoMeet::kComplete) return w.depth;
      if (met == MemoMeet::kDepthFull) break;
    }
    uint64_t packed;
    if (!w.LookupRule(&packed)) return w.HandOverToLibunwind();
    MemoStep step{w.pc, w.sp, w.fp, 0, 0, 0, 0};
    uintptr_t cfa = 0, next_fp = w.fp, ra = 0;
    const StepEnd end = w.FollowRule(Unpack(packed), &step, &cfa, &next_fp, &ra);
    if (end == StepEnd::kComplex) return w.HandOverToLibunwind();
    w.Record(step);
    if (end == StepEnd::kEnd) {
      ended = 1;
      break;
    }
    w.frames[w.depth++] = ra;
    w.pc = ra;
    w.sp = cfa;
    w.fp = next_fp;
  }
  return w.Finish(ended);
}

#undef CROSSFREE_WALK_INLINE

bool HoldCfiFillLockForTests(bool hold) {
  if (!hold) {
    UnlockFill();
    return true;
  }
  // Stored as a pid that is not ours' would be taken over; store our own.
  int expected = 0;
  return g_fill_lock_pid.compare_exchange_strong(expected, getpid());
}

CfiStats GetCfiStats() {
  return {g_rules.load(std::memory_order_relaxed), g_fallbacks.load(std::memory_order_relaxed)};
}

}  // namespace crossfree::tracer
