// SPDX-License-Identifier: Apache-2.0
// Simulate: a vector of records addressed by dense 32-bit ids whose freed
// ids are reused, so a long replay's slabs, pages or stored costs take as
// much memory as the most that were alive at once. Used by the models
// (jemalloc's slabs, mimalloc's pages) and the cost replay (allocation
// costs waiting for their object's free).
//
// A plain container: no locking, one thread.
#pragma once

#include <cstdint>
#include <vector>

namespace crossfree::analyzer::simulate {

template <typename T>
class IdPool {
 public:
  // The id of a fresh record (T's default), a released one's if any.
  uint32_t Acquire() {
    uint32_t id;
    if (!released_.empty()) {
      id = released_.back();
      released_.pop_back();
      items_[id] = T();
    } else {
      id = static_cast<uint32_t>(items_.size());
      items_.emplace_back();
    }
    return id;
  }
  // The id may be handed out again; its record stays readable until then.
  void Release(uint32_t id) { released_.push_back(id); }

  T& operator[](uint32_t id) { return items_[id]; }
  const T& operator[](uint32_t id) const { return items_[id]; }
  // Every id ever handed out is below size(), released ones included.
  size_t size() const { return items_.size(); }

 private:
  std::vector<T> items_;
  std::vector<uint32_t> released_;
};

}  // namespace crossfree::analyzer::simulate
