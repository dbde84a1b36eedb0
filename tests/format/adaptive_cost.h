// SPDX-License-Identifier: Apache-2.0
// What an adaptive context-modelling arithmetic coder would write for a
// sequence of values, without writing it: the sum of -log2(p) of each
// value under a model that learns as it goes (the decoder learns the same
// way, so nothing is sent for the tables). An arithmetic coder's output is
// within a few bytes per chunk of this sum, so these are the sizes a coder
// with these contexts would reach, not floors with the tables for free (as
// crossfree-trace-floor's conditional entropies are).
//
// Used by crossfree-trace-fields (tests/format/trace_fields.cc) for
// docs/results/trace-size.md. Single-threaded; a measuring aid, not part of
// the format.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <unordered_map>

namespace crossfree::format::testing {

// Krichevsky-Trofimov estimate over an alphabet of `alphabet` symbols:
// p(v) = (n(v) + 1/2) / (n + alphabet/2); what an adaptive frequency model
// with a flat start codes.
class KtModel {
 public:
  explicit KtModel(double alphabet) : alphabet_(alphabet) {}
  double Code(uint64_t v) {
    auto& n = counts_[v];
    const double bits = -std::log2((n + 0.5) / (total_ + alphabet_ / 2));
    ++n;
    ++total_;
    return bits;
  }

 private:
  double alphabet_;
  double total_ = 0;
  std::unordered_map<uint64_t, uint32_t> counts_;
};

// An integer as an arithmetic coder with a log-bucket binarization codes
// it: its bit length (0-64) from an adaptive model of the context, then
// the top mantissa bits (up to kModelled, below the leading 1) from an
// adaptive model of (context, length, bits so far), the rest raw.
class NumberModel {
 public:
  static constexpr int kModelled = 3;
  double Code(uint64_t context, uint64_t v) {
    const int length = 64 - std::countl_zero(v);
    double bits = Bucket(context).Code(static_cast<uint64_t>(length));
    if (length <= 1) return bits;
    const int mantissa = length - 1;
    const int modelled = mantissa < kModelled ? mantissa : kModelled;
    uint64_t prefix = 1;
    for (int i = 0; i < modelled; ++i) {
      const uint64_t bit = (v >> (mantissa - 1 - i)) & 1;
      const uint64_t key = (context * 131 + static_cast<uint64_t>(length)) * 64 + prefix;
      auto it = mantissa_.try_emplace(key, KtModel(2)).first;
      bits += it->second.Code(bit);
      prefix = prefix << 1 | bit;
    }
    return bits + (mantissa - modelled);
  }

 private:
  KtModel& Bucket(uint64_t context) { return buckets_.try_emplace(context, KtModel(65)).first->second; }
  std::unordered_map<uint64_t, KtModel> buckets_;
  std::unordered_map<uint64_t, KtModel> mantissa_;
};

// A symbol from a large alphabet (a stack id, a size, a rank) in a
// context: PPM method C. A symbol seen in the context costs its count over
// (seen + distinct); a new one costs the escape (distinct over the same)
// and then `fallback`'s bits, supplied by the caller.
class SymbolModel {
 public:
  // Bits when v was seen in context; else the escape's bits, and *escaped.
  double Code(uint64_t context, uint64_t v, bool* escaped) {
    Context& c = contexts_[context];
    auto it = c.counts.find(v);
    const double denominator = c.total + c.counts.size();
    *escaped = it == c.counts.end();
    double bits = 0;
    if (!*escaped) {
      bits = -std::log2(it->second / denominator);
      ++it->second;
    } else {
      if (!c.counts.empty()) bits = -std::log2(c.counts.size() / denominator);
      c.counts.emplace(v, 1);
    }
    ++c.total;
    return bits;
  }
  void Clear() { contexts_.clear(); }

 private:
  struct Context {
    double total = 0;
    std::unordered_map<uint64_t, uint32_t> counts;
  };
  std::unordered_map<uint64_t, Context> contexts_;
};

}  // namespace crossfree::format::testing
