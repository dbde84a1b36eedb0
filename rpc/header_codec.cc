// SPDX-License-Identifier: Apache-2.0
// Hand-written RequestHeader / ResponseHeader codec. The parser follows
// protobuf 3.21's rules (parse_context.{h,cc}) so that it accepts exactly
// the headers protobuf's generated parser accepts: tags of at most 5 bytes,
// varints of at most 10 (32-bit fields keep the low bits), lengths of at
// most 5 bytes and below 2 GiB, unknown fields skipped by wire type (groups
// too, nested at most 100 deep, messages counted), field number 0 and
// unmatched end-group tags rejected, repeated uint32 packed or not, and a repeated
// embedded message merged field by field.
#include "rpc/header_codec.h"

#include <climits>
#include <cstring>

#include "rpc/serialization.h"

namespace crossfree::rpc {

namespace {

// Wire types.
constexpr uint32_t kVarint = 0;
constexpr uint32_t kFixed64 = 1;
constexpr uint32_t kLengthDelimited = 2;
constexpr uint32_t kStartGroup = 3;
constexpr uint32_t kEndGroup = 4;
constexpr uint32_t kFixed32 = 5;

constexpr uint8_t Tag(uint32_t field, uint32_t wire_type) {
  return static_cast<uint8_t>(field << 3 | wire_type);
}

// protobuf's kDefaultRecursionLimit: nesting of messages and groups.
constexpr int kMaxDepth = 100;

size_t OffsetsSize(size_t body_size, std::span<const std::string> sidecars) {
  size_t n = 0;
  size_t offset = body_size;
  for (const std::string& sc : sidecars) {
    n += 1 + VarintSize(static_cast<uint32_t>(offset));
    offset += sc.size();
  }
  return n;
}

uint8_t* WriteOffsets(uint8_t tag, size_t body_size, std::span<const std::string> sidecars,
                      uint8_t* p) {
  size_t offset = body_size;
  for (const std::string& sc : sidecars) {
    *p++ = tag;
    p = WriteVarint(static_cast<uint32_t>(offset), p);
    offset += sc.size();
  }
  return p;
}

// memcpy rather than std::copy: char to uint8_t would copy byte by byte.
uint8_t* Append(std::string_view bytes, uint8_t* p) {
  memcpy(p, bytes.data(), bytes.size());
  return p + bytes.size();
}

// int32 fields are sign-extended to 64 bits on the wire, as protobuf does.
uint64_t Int32Wire(int32_t v) { return static_cast<uint64_t>(static_cast<int64_t>(v)); }

// Tags a message may not contain: field number 0 (tag 0 included) and an
// end-group tag outside its group.
bool InvalidTag(uint32_t tag) { return (tag >> 3) == 0 || (tag & 7) == kEndGroup; }

// Reads protobuf wire format from [p, end). Every method returns false on
// malformed input, leaving the reader unusable.
class WireReader {
 public:
  WireReader(const uint8_t* p, const uint8_t* end) : p_(p), end_(end) {}
  explicit WireReader(std::string_view s)
      : WireReader(reinterpret_cast<const uint8_t*>(s.data()),
                   reinterpret_cast<const uint8_t*>(s.data()) + s.size()) {}

  bool done() const { return p_ == end_; }

  // A field tag: at most 5 bytes, 32 bits kept (callers reject InvalidTag).
  bool ReadTag(uint32_t* tag) {
    uint64_t v = 0;
    if (!ReadVarintBytes(5, &v)) return false;
    *tag = static_cast<uint32_t>(v);
    return true;
  }
  bool ReadVarint(uint64_t* v) { return ReadVarintBytes(10, v); }
  // A length: at most 5 bytes and at most INT_MAX - 16 (protobuf's limit),
  // and no more than the bytes left.
  bool ReadLength(size_t* n) {
    uint64_t v = 0;
    const uint8_t* start = p_;
    if (!ReadVarintBytes(5, &v)) return false;
    if (p_ - start == 5 && start[4] >= 8) return false;
    if (v > static_cast<uint64_t>(INT_MAX - 16) || v > static_cast<uint64_t>(end_ - p_)) {
      return false;
    }
    *n = static_cast<size_t>(v);
    return true;
  }
  bool ReadBytes(std::string_view* out) {
    size_t n;
    if (!ReadLength(&n)) return false;
    *out = std::string_view(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return true;
  }
  // A reader of the next length-delimited value; this one skips past it.
  bool ReadSub(WireReader* sub) {
    size_t n;
    if (!ReadLength(&n)) return false;
    *sub = WireReader(p_, p_ + n);
    p_ += n;
    return true;
  }
  // Skips the value of an unknown field; `depth` is the nesting left.
  bool SkipField(uint32_t tag, int depth) {
    switch (tag & 7) {
      case kVarint: {
        uint64_t v;
        return ReadVarint(&v);
      }
      case kFixed64: return Skip(8);
      case kLengthDelimited: {
        size_t n;
        return ReadLength(&n) && Skip(n);
      }
      case kStartGroup: return SkipGroup(tag, depth);
      case kFixed32: return Skip(4);
      default: return false;  // end group (unmatched), 6 and 7
    }
  }

 private:
  bool ReadVarintBytes(int max_bytes, uint64_t* v) {
    if (p_ < end_ && *p_ < 0x80) {  // one byte: every tag and most values here
      *v = *p_++;
      return true;
    }
    uint64_t r = 0;
    for (int i = 0; i < max_bytes && p_ + i < end_; ++i) {
      uint8_t b = p_[i];
      r |= uint64_t{b & 0x7fu} << (7 * i);  // bits past 64 are dropped, as protobuf does
      if ((b & 0x80) == 0) {
        p_ += i + 1;
        *v = r;
        return true;
      }
    }
    return false;
  }
  bool Skip(size_t n) {
    if (n > static_cast<size_t>(end_ - p_)) return false;
    p_ += n;
    return true;
  }
  // Up to the end-group tag of the same field number.
  bool SkipGroup(uint32_t start_tag, int depth) {
    if (--depth < 0) return false;
    for (;;) {
      uint32_t tag;
      if (!ReadTag(&tag)) return false;
      if (tag == start_tag + 1) return true;  // its end group
      if (InvalidTag(tag)) return false;
      if (!SkipField(tag, depth)) return false;
    }
  }

  const uint8_t* p_;
  const uint8_t* end_;
};

// A repeated uint32, unpacked (one varint) or packed (a run of varints).
bool ReadUint32Element(WireReader* r, uint32_t wire_type, std::vector<uint32_t>* out) {
  uint64_t v;
  if (wire_type == kVarint) {
    if (!r->ReadVarint(&v)) return false;
    out->push_back(static_cast<uint32_t>(v));
    return true;
  }
  WireReader packed(nullptr, nullptr);
  if (!r->ReadSub(&packed)) return false;
  while (!packed.done()) {
    if (!packed.ReadVarint(&v)) return false;
    out->push_back(static_cast<uint32_t>(v));
  }
  return true;
}

Status Unparsable() { return Status::Corruption("invalid frame: unparsable header"); }

Status MissingFields(const std::string& names) {
  return Status::Corruption("invalid frame: header is missing required fields: " + names);
}

void AddName(std::string* names, const char* name) {
  if (!names->empty()) *names += ", ";
  *names += name;
}

// A varint of 1 to 4 bytes (values below 2^28) at [*p, end), or false
// (longer, truncated, or none): the fast paths below take the general
// parser for anything else, so they need not handle it.
[[gnu::always_inline]] inline bool ShortVarint(const uint8_t** pp, const uint8_t* end, uint32_t* v) {
  const uint8_t* p = *pp;
  const ptrdiff_t left = end - p;
  if (left >= 1 && p[0] < 0x80) {
    *v = p[0];
    *pp = p + 1;
    return true;
  }
  if (left >= 2 && p[1] < 0x80) {
    *v = (p[0] & 0x7fu) | uint32_t{p[1]} << 7;
    *pp = p + 2;
    return true;
  }
  if (left >= 3 && p[2] < 0x80) {
    *v = (p[0] & 0x7fu) | (p[1] & 0x7fu) << 7 | uint32_t{p[2]} << 14;
    *pp = p + 3;
    return true;
  }
  if (left >= 4 && p[3] < 0x80) {
    *v = (p[0] & 0x7fu) | (p[1] & 0x7fu) << 7 | (p[2] & 0x7fu) << 14 | uint32_t{p[3]} << 21;
    *pp = p + 4;
    return true;
  }
  return false;
}

// Sidecar offsets written unpacked, one tag each, as WriteOffsets does,
// up to the end; false for anything else (the caller then parses again
// from the start with the general parser).
inline bool ShortOffsetsToEnd(uint8_t tag, const uint8_t* p, const uint8_t* end,
                              std::vector<uint32_t>* out) {
  while (p != end) {
    uint32_t v;
    if (*p != tag) return false;
    ++p;
    if (!ShortVarint(&p, end, &v)) return false;
    out->push_back(v);
  }
  return true;
}

// The request header exactly as WriteRequestHeader writes it (fields in
// number order, each once, one remote_method holding service then method
// name, short varints and lengths). Every input it accepts the general
// parser accepts with the same result; it returns false, having set
// nothing the general parser does not reset, for any other input. Why: the
// general loop costs several times as much per header, and every peer
// using this codec (or protobuf, which writes the same order) sends this
// form.
bool ParseCanonicalRequestHeader(std::string_view bytes, ParsedRequestHeader* h) {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const uint8_t* const end = p + bytes.size();
  uint32_t call_id, len, timeout = 0;
  if (p == end || *p++ != Tag(1, kVarint) || !ShortVarint(&p, end, &call_id)) return false;
  if (p == end || *p++ != Tag(2, kLengthDelimited) || !ShortVarint(&p, end, &len) ||
      len > static_cast<size_t>(end - p)) {
    return false;
  }
  const uint8_t* const m_end = p + len;
  uint32_t service_len, method_len;
  if (p == m_end || *p++ != Tag(1, kLengthDelimited) || !ShortVarint(&p, m_end, &service_len) ||
      service_len > static_cast<size_t>(m_end - p)) {
    return false;
  }
  const uint8_t* const service = p;
  p += service_len;
  if (p == m_end || *p++ != Tag(2, kLengthDelimited) || !ShortVarint(&p, m_end, &method_len) ||
      method_len != static_cast<size_t>(m_end - p)) {
    return false;
  }
  const uint8_t* const method = p;
  p = m_end;
  if (p != end && *p == Tag(3, kVarint)) {
    ++p;
    if (!ShortVarint(&p, end, &timeout)) return false;
  }
  h->sidecar_offsets.clear();
  if (!ShortOffsetsToEnd(Tag(4, kVarint), p, end, &h->sidecar_offsets)) return false;
  h->call_id = static_cast<int32_t>(call_id);
  h->has_remote_method = true;
  h->service_name = std::string_view(reinterpret_cast<const char*>(service), service_len);
  h->method_name = std::string_view(reinterpret_cast<const char*>(method), method_len);
  h->timeout_millis = timeout;
  return true;
}

// The same for WriteResponseHeader's form.
bool ParseCanonicalResponseHeader(std::string_view bytes, ParsedResponseHeader* h) {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const uint8_t* const end = p + bytes.size();
  uint32_t call_id;
  if (p == end || *p++ != Tag(1, kVarint) || !ShortVarint(&p, end, &call_id)) return false;
  bool is_error = false;
  if (end - p >= 2 && p[0] == Tag(2, kVarint) && p[1] == 1) {
    is_error = true;
    p += 2;
  }
  h->sidecar_offsets.clear();
  if (!ShortOffsetsToEnd(Tag(3, kVarint), p, end, &h->sidecar_offsets)) return false;
  h->call_id = static_cast<int32_t>(call_id);
  h->is_error = is_error;
  return true;
}

}  // namespace

std::string EncodeRemoteMethodField(std::string_view service_name, std::string_view method_name) {
  const size_t inner = 1 + VarintSize(service_name.size()) + service_name.size() + 1 +
                       VarintSize(method_name.size()) + method_name.size();
  std::string out(1 + VarintSize(inner) + inner, '\0');
  uint8_t* p = reinterpret_cast<uint8_t*>(out.data());
  *p++ = Tag(2, kLengthDelimited);
  p = WriteVarint(inner, p);
  *p++ = Tag(1, kLengthDelimited);
  p = WriteVarint(service_name.size(), p);
  p = Append(service_name, p);
  *p++ = Tag(2, kLengthDelimited);
  p = WriteVarint(method_name.size(), p);
  Append(method_name, p);
  return out;
}

// Field order as protobuf serializes: by field number.
size_t RequestHeaderSize(const RequestHeaderFields& f) {
  size_t n = 1 + VarintSize(Int32Wire(f.call_id)) + f.remote_method_field.size();
  if (f.timeout_millis > 0) n += 1 + VarintSize(f.timeout_millis);
  return n + OffsetsSize(f.body_size, f.sidecars);
}

uint8_t* WriteRequestHeader(const RequestHeaderFields& f, uint8_t* p) {
  *p++ = Tag(1, kVarint);
  p = WriteVarint(Int32Wire(f.call_id), p);
  p = Append(f.remote_method_field, p);
  if (f.timeout_millis > 0) {
    *p++ = Tag(3, kVarint);
    p = WriteVarint(f.timeout_millis, p);
  }
  return WriteOffsets(Tag(4, kVarint), f.body_size, f.sidecars, p);
}

size_t ResponseHeaderSize(const ResponseHeaderFields& f) {
  size_t n = 1 + VarintSize(Int32Wire(f.call_id));
  if (f.is_error) n += 2;
  return n + OffsetsSize(f.body_size, f.sidecars);
}

uint8_t* WriteResponseHeader(const ResponseHeaderFields& f, uint8_t* p) {
  *p++ = Tag(1, kVarint);
  p = WriteVarint(Int32Wire(f.call_id), p);
  if (f.is_error) {
    *p++ = Tag(2, kVarint);
    *p++ = 1;
  }
  return WriteOffsets(Tag(3, kVarint), f.body_size, f.sidecars, p);
}

namespace {

// The general parsers, for what the canonical fast paths do not take. Not
// inlined into ParseRequestHeader / ParseResponseHeader, so the fast path
// does not pay for their stack frame and saved registers.
[[gnu::noinline]] Status ParseAnyRequestHeader(std::string_view bytes, ParsedRequestHeader* h);
[[gnu::noinline]] Status ParseAnyResponseHeader(std::string_view bytes, ParsedResponseHeader* h);

}  // namespace

Status ParseRequestHeader(std::string_view bytes, ParsedRequestHeader* h) {
  if (ParseCanonicalRequestHeader(bytes, h)) return Status::OK();
  return ParseAnyRequestHeader(bytes, h);
}

Status ParseResponseHeader(std::string_view bytes, ParsedResponseHeader* h) {
  if (ParseCanonicalResponseHeader(bytes, h)) return Status::OK();
  return ParseAnyResponseHeader(bytes, h);
}

namespace {

// What a message's field handler did with one field.
enum class Field {
  kRead,     // it read the value
  kUnknown,  // not one of its fields (or a known number with another wire
             // type, which protobuf treats as unknown too): to be skipped
  kBad,      // malformed
};

// The one tag loop of the general parsers: for each field of the message in
// `r`, on_field(tag) reads the value or says what to do with it; unknown
// fields are skipped, `depth` being the nesting left. False on malformed
// input.
template <typename OnField>
[[gnu::always_inline]] inline bool WalkFields(WireReader* r, int depth, OnField&& on_field) {
  while (!r->done()) {
    uint32_t tag;
    if (!r->ReadTag(&tag) || InvalidTag(tag)) return false;
    switch (on_field(tag)) {
      case Field::kRead: continue;
      case Field::kUnknown:
        if (!r->SkipField(tag, depth)) return false;
        continue;
      case Field::kBad: return false;
    }
  }
  return true;
}

// The field readers the handlers share: kUnknown for a wire type the field
// cannot have.
Field Int32Field(WireReader* r, uint32_t tag, int32_t* out, bool* has) {
  if ((tag & 7) != kVarint) return Field::kUnknown;
  uint64_t v;
  if (!r->ReadVarint(&v)) return Field::kBad;
  *out = static_cast<int32_t>(static_cast<uint32_t>(v));
  *has = true;
  return Field::kRead;
}

Field Uint32Field(WireReader* r, uint32_t tag, uint32_t* out) {
  if ((tag & 7) != kVarint) return Field::kUnknown;
  uint64_t v;
  if (!r->ReadVarint(&v)) return Field::kBad;
  *out = static_cast<uint32_t>(v);
  return Field::kRead;
}

Field BoolField(WireReader* r, uint32_t tag, bool* out) {
  if ((tag & 7) != kVarint) return Field::kUnknown;
  uint64_t v;
  if (!r->ReadVarint(&v)) return Field::kBad;
  *out = v != 0;
  return Field::kRead;
}

Field BytesField(WireReader* r, uint32_t tag, std::string_view* out, bool* has) {
  if ((tag & 7) != kLengthDelimited) return Field::kUnknown;
  if (!r->ReadBytes(out)) return Field::kBad;
  *has = true;
  return Field::kRead;
}

Field Uint32sField(WireReader* r, uint32_t tag, std::vector<uint32_t>* out) {
  const uint32_t wire_type = tag & 7;
  if (wire_type != kVarint && wire_type != kLengthDelimited) return Field::kUnknown;
  return ReadUint32Element(r, wire_type, out) ? Field::kRead : Field::kBad;
}

Status ParseAnyRequestHeader(std::string_view bytes, ParsedRequestHeader* h) {
  h->call_id = 0;
  h->has_remote_method = false;
  h->service_name = h->method_name = std::string_view();
  h->timeout_millis = 0;
  h->sidecar_offsets.clear();
  bool has_call_id = false, has_service = false, has_method = false;
  WireReader r(bytes);
  const bool ok = WalkFields(&r, kMaxDepth, [&](uint32_t tag) {
    switch (tag >> 3) {
      case 1: return Int32Field(&r, tag, &h->call_id, &has_call_id);
      case 2: {
        if ((tag & 7) != kLengthDelimited) return Field::kUnknown;
        // A second remote_method merges into the first, field by field.
        WireReader m(nullptr, nullptr);
        if (!r.ReadSub(&m)) return Field::kBad;
        h->has_remote_method = true;
        const bool m_ok = WalkFields(&m, kMaxDepth - 1, [&](uint32_t t) {
          switch (t >> 3) {
            case 1: return BytesField(&m, t, &h->service_name, &has_service);
            case 2: return BytesField(&m, t, &h->method_name, &has_method);
            default: return Field::kUnknown;
          }
        });
        return m_ok ? Field::kRead : Field::kBad;
      }
      case 3: return Uint32Field(&r, tag, &h->timeout_millis);
      case 4: return Uint32sField(&r, tag, &h->sidecar_offsets);
      default: return Field::kUnknown;
    }
  });
  if (!ok) return Unparsable();
  std::string missing;
  if (!has_call_id) AddName(&missing, "call_id");
  if (h->has_remote_method && !has_service) AddName(&missing, "remote_method.service_name");
  if (h->has_remote_method && !has_method) AddName(&missing, "remote_method.method_name");
  if (!missing.empty()) return MissingFields(missing);
  return Status::OK();
}

Status ParseAnyResponseHeader(std::string_view bytes, ParsedResponseHeader* h) {
  h->call_id = 0;
  h->is_error = false;
  h->sidecar_offsets.clear();
  bool has_call_id = false;
  WireReader r(bytes);
  const bool ok = WalkFields(&r, kMaxDepth, [&](uint32_t tag) {
    switch (tag >> 3) {
      case 1: return Int32Field(&r, tag, &h->call_id, &has_call_id);
      case 2: return BoolField(&r, tag, &h->is_error);
      case 3: return Uint32sField(&r, tag, &h->sidecar_offsets);
      default: return Field::kUnknown;
    }
  });
  if (!ok) return Unparsable();
  if (!has_call_id) return MissingFields("call_id");
  return Status::OK();
}

}  // namespace

}  // namespace crossfree::rpc
