// SPDX-License-Identifier: Apache-2.0
// InlineFunction: a move-only callable with fixed inline storage and no heap
// fallback. Used for reactor tasks and response callbacks (fix 1 of KUDU-1865).
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace crossfree::rpc {

template <typename Signature, size_t kCapacity = 48>
class InlineFunction;

// Stores any callable whose size is at most kCapacity bytes (and whose
// alignment is at most that of max_align_t) inside the object itself. A
// capture that does not fit is a compile error (static_assert), never a silent
// heap allocation: std::function and boost::function fall back to the heap,
// and that fallback was the cross-thread allocation KUDU-1865 part 1 removed.
// Move-only, so captures may hold unique_ptr. Not thread-safe: one owner at a
// time; ownership moves with the value.
template <typename R, typename... Args, size_t kCapacity>
class InlineFunction<R(Args...), kCapacity> {
 public:
  InlineFunction() = default;
  InlineFunction(std::nullptr_t) {}  // NOLINT(runtime/explicit)

  template <typename F,
            typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, InlineFunction>>>
  InlineFunction(F&& f) {  // NOLINT(runtime/explicit)
    using Fn = std::decay_t<F>;
    static_assert(sizeof(Fn) <= kCapacity,
                  "InlineFunction: the capture does not fit the inline storage; "
                  "capture less (e.g. one pointer) or raise the capacity");
    static_assert(alignof(Fn) <= alignof(std::max_align_t), "InlineFunction: over-aligned capture");
    static_assert(std::is_nothrow_move_constructible_v<Fn>,
                  "InlineFunction: the capture must be nothrow-movable");
    new (storage_) Fn(std::forward<F>(f));
    ops_ = &kOps<Fn>;
  }

  InlineFunction(InlineFunction&& other) noexcept { MoveFrom(other); }
  InlineFunction& operator=(InlineFunction&& other) noexcept {
    if (this != &other) {
      Reset();
      MoveFrom(other);
    }
    return *this;
  }
  InlineFunction(const InlineFunction&) = delete;
  InlineFunction& operator=(const InlineFunction&) = delete;
  ~InlineFunction() { Reset(); }

  explicit operator bool() const { return ops_ != nullptr; }

  R operator()(Args... args) { return ops_->invoke(storage_, std::forward<Args>(args)...); }

  // Destroys the stored callable (and its captures) now.
  void Reset() {
    if (ops_ != nullptr) {
      ops_->destroy(storage_);
      ops_ = nullptr;
    }
  }

 private:
  struct Ops {
    R (*invoke)(void*, Args&&...);
    void (*move)(void* dst, void* src);
    void (*destroy)(void*);
  };

  template <typename Fn>
  static constexpr Ops kOps = {
      [](void* p, Args&&... args) -> R { return (*static_cast<Fn*>(p))(std::forward<Args>(args)...); },
      [](void* dst, void* src) {
        new (dst) Fn(std::move(*static_cast<Fn*>(src)));
        static_cast<Fn*>(src)->~Fn();
      },
      [](void* p) { static_cast<Fn*>(p)->~Fn(); },
  };

  void MoveFrom(InlineFunction& other) {
    ops_ = other.ops_;
    if (ops_ != nullptr) {
      ops_->move(storage_, other.storage_);
      other.ops_ = nullptr;
    }
  }

  alignas(std::max_align_t) unsigned char storage_[kCapacity];
  const Ops* ops_ = nullptr;
};

}  // namespace crossfree::rpc
