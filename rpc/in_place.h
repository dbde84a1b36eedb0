// SPDX-License-Identifier: Apache-2.0
// InPlace: storage for an object of a type the header does not define, inside
// the object that owns it. The public headers use it to keep the RPC core's
// internals (OutboundCall, the proxy's connection cache) out of what a
// program includes, without the heap allocation a pointer to an
// implementation would cost per controller or proxy.
#pragma once

#include <cstddef>
#include <new>
#include <utility>

namespace crossfree::rpc {

// Holds one T in kSize bytes aligned to kAlign. T needs to be complete only
// where an InPlace<T> is constructed or destroyed: the owner defines its
// constructor and destructor in its .cc file, which includes T's header, and
// there the static_asserts check that T fits. Not copyable or movable.
// Threads: as T's.
template <typename T, size_t kSize, size_t kAlign>
class InPlace {
 public:
  template <typename... Args>
  explicit InPlace(Args&&... args) {
    static_assert(sizeof(T) <= kSize, "InPlace: T has outgrown its storage; raise kSize");
    static_assert(alignof(T) <= kAlign, "InPlace: T needs a larger alignment");
    new (storage_) T(std::forward<Args>(args)...);
  }
  ~InPlace() { get()->~T(); }
  InPlace(const InPlace&) = delete;
  InPlace& operator=(const InPlace&) = delete;

  T* get() { return std::launder(reinterpret_cast<T*>(storage_)); }
  const T* get() const { return std::launder(reinterpret_cast<const T*>(storage_)); }
  T* operator->() { return get(); }
  const T* operator->() const { return get(); }

 private:
  alignas(kAlign) unsigned char storage_[kSize];
};

}  // namespace crossfree::rpc
