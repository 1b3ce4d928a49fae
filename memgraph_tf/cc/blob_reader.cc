// Implementation of the blob format v1 reader; see blob_reader.h and docs/blob-format.md.
#include "blob_reader.h"

#include <cstdio>
#include <cstring>
#include <utility>

namespace memgraph_tf {
namespace {

uint16_t LoadU16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | (static_cast<uint16_t>(p[1]) << 8));
}

uint32_t LoadU32(const uint8_t* p) {
  uint32_t v = 0;
  for (int k = 3; k >= 0; --k) v = (v << 8) | p[k];
  return v;
}

uint64_t Align8(uint64_t n) { return (n + 7u) & ~static_cast<uint64_t>(7u); }

std::string U(uint64_t v) { return std::to_string(v); }
std::string I(int64_t v) { return std::to_string(v); }

// Decimal text of a 128-bit unsigned value (a payload end may exceed 2^64 before it is rejected).
std::string U128(unsigned __int128 v) {
  if (v == 0) return "0";
  char buf[48];
  int pos = 47;
  buf[pos] = '\0';
  while (v != 0) {
    buf[--pos] = static_cast<char>('0' + static_cast<int>(v % 10));
    v /= 10;
  }
  return std::string(buf + pos);
}

std::string HexByte(uint8_t b) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "0x%02x", b);
  return buf;
}

// Printable ASCII as itself except backslash and single quote; everything else as \xhh.
std::string Escape(const uint8_t* p, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    uint8_t b = p[i];
    if (b >= 0x20 && b <= 0x7e && b != 0x5c && b != 0x27) {
      out.push_back(static_cast<char>(b));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", b);
      out += buf;
    }
  }
  return out;
}

std::string Msg(const std::string& field, const std::string& expected, const std::string& got,
                uint64_t offset) {
  return field + ": expected " + expected + ", got " + got + " at offset " + U(offset);
}

bool NameByteOk(uint8_t b) {
  return (b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z') || (b >= '0' && b <= '9') || b == '_' ||
         b == '.' || b == '-' || b == ':' || b == '/';
}

}  // namespace

uint64_t LoadU64(const uint8_t* p) {
  uint64_t v = 0;
  for (int k = 7; k >= 0; --k) v = (v << 8) | p[k];
  return v;
}

int64_t LoadI64(const uint8_t* p) {
  uint64_t u = LoadU64(p);
  int64_t v;
  std::memcpy(&v, &u, sizeof(v));  // two's complement reinterpretation without UB
  return v;
}

const char* BlobDTypeName(BlobDType dtype) {
  switch (dtype) {
    case BlobDType::kBool:
      return "bool";
    case BlobDType::kInt32:
      return "int32";
    case BlobDType::kInt64:
      return "int64";
    case BlobDType::kFloat32:
      return "float32";
    case BlobDType::kFloat64:
      return "float64";
    case BlobDType::kString:
      return "string";
  }
  return "unknown";
}

bool BlobDTypeFromName(std::string_view name, BlobDType* out) {
  for (int code = 1; code <= 6; ++code) {
    BlobDType d = static_cast<BlobDType>(code);
    if (name == BlobDTypeName(d)) {
      *out = d;
      return true;
    }
  }
  return false;
}

size_t BlobDTypeSize(BlobDType dtype) {
  switch (dtype) {
    case BlobDType::kBool:
      return 1;
    case BlobDType::kInt32:
      return 4;
    case BlobDType::kInt64:
      return 8;
    case BlobDType::kFloat32:
      return 4;
    case BlobDType::kFloat64:
      return 8;
    case BlobDType::kString:
      return 0;
  }
  return 0;
}

uint64_t BlobSection::StringOffset(int64_t j) const {
  return LoadU64(payload + 8 * static_cast<uint64_t>(j));
}

uint64_t BlobSection::StringDataBytes() const {
  return payload_length - 8 * (static_cast<uint64_t>(num_elements) + 1);
}

std::string_view BlobSection::StringAt(int64_t j) const {
  const uint64_t begin = StringOffset(j);
  const uint64_t end = StringOffset(j + 1);
  const uint8_t* data = payload + 8 * (static_cast<uint64_t>(num_elements) + 1);
  return std::string_view(reinterpret_cast<const char*>(data + begin), end - begin);
}

bool BlobReader::Fail(std::string message) {
  error_ = std::move(message);
  sections_.clear();
  return false;
}

bool BlobReader::Parse(const uint8_t* data, size_t size) {
  sections_.clear();
  error_.clear();
  // Rule 1.
  if (size < kHeaderBytes) {
    return Fail(Msg("header", "at least 32 bytes", U(size), 0));
  }
  // Rules 2-9.
  if (std::memcmp(data, "MGTF", 4) != 0) {
    return Fail(Msg("magic", "'MGTF'", "'" + Escape(data, 4) + "'", 0));
  }
  const uint16_t version = LoadU16(data + 4);
  if (version != 1) return Fail(Msg("version", "1", U(version), 4));
  const uint16_t flags = LoadU16(data + 6);
  if (flags != 0) return Fail(Msg("flags", "0", U(flags), 6));
  const uint32_t count = LoadU32(data + 8);
  if (count > kMaxSections) return Fail(Msg("section_count", "<= 1024", U(count), 8));
  const uint32_t reserved0 = LoadU32(data + 12);
  if (reserved0 != 0) return Fail(Msg("reserved0", "0", U(reserved0), 12));
  const uint64_t total = LoadU64(data + 16);
  if (total != size) return Fail(Msg("total_length", U(size) + " (the blob's size)", U(total), 16));
  if (total > kMaxBlobBytes) return Fail(Msg("total_length", "<= 2147483647", U(total), 16));
  const uint64_t reserved1 = LoadU64(data + 24);
  if (reserved1 != 0) return Fail(Msg("reserved1", "0", U(reserved1), 24));
  // Rule 10. count <= 1024, so this cannot overflow.
  const uint64_t table_end = kHeaderBytes + kEntryBytes * static_cast<uint64_t>(count);
  if (table_end > size) {
    return Fail(Msg("section table",
                    "at least " + U(table_end) + " bytes for " + U(count) + " sections", U(size),
                    32));
  }
  // The table is known to fit in the blob: the allocation is bounded by size / 128 and by 1024.
  sections_.reserve(count);

  uint64_t expected_offset = table_end;
  for (uint32_t i = 0; i < count; ++i) {
    const uint64_t e = kHeaderBytes + kEntryBytes * static_cast<uint64_t>(i);
    const uint8_t* entry = data + e;
    std::string where = "section " + U(i);
    // Rules 11-14.
    const uint8_t code = entry[0];
    if (code < 1 || code > 6) return Fail(Msg(where + " dtype", "1..6", U(code), e));
    const uint8_t rank = entry[1];
    if (rank > kMaxRank) return Fail(Msg(where + " rank", "<= 8", U(rank), e + 1));
    const uint16_t name_len = LoadU16(entry + 2);
    if (name_len < 1 || name_len > kMaxNameBytes) {
      return Fail(Msg(where + " name_length", "1..40", U(name_len), e + 2));
    }
    const uint32_t reserved = LoadU32(entry + 4);
    if (reserved != 0) return Fail(Msg(where + " reserved", "0", U(reserved), e + 4));
    // Rules 15-16.
    const uint8_t* raw_name = entry + 88;
    for (int j = 0; j < name_len; ++j) {
      if (!NameByteOk(raw_name[j])) {
        return Fail(
            Msg(where + " name", "[A-Za-z0-9_.:/-]", "byte " + HexByte(raw_name[j]), e + 88 + j));
      }
    }
    for (int j = name_len; j < kMaxNameBytes; ++j) {
      if (raw_name[j] != 0) {
        return Fail(Msg(where + " name padding", "0", "byte " + HexByte(raw_name[j]), e + 88 + j));
      }
    }
    const std::string_view name(reinterpret_cast<const char*>(raw_name), name_len);
    // Rule 17 (at most 1024 sections of at most 40 bytes: a linear scan is cheap).
    for (const BlobSection& earlier : sections_) {
      if (earlier.name == name) {
        return Fail(Msg(where + " ('" + std::string(name) + "') name", "a unique name",
                        "a duplicate", e + 88));
      }
    }
    where += " ('" + std::string(name) + "')";
    // Rules 18-19.
    BlobSection s;
    s.index = static_cast<int>(i);
    s.name = name;
    s.dtype = static_cast<BlobDType>(code);
    s.rank = rank;
    s.entry_offset = e;
    for (int k = 0; k < kMaxRank; ++k) {
      const int64_t d = LoadI64(entry + 24 + 8 * k);
      if (k < rank) {
        if (d < 0 || d > kMaxDim) {
          return Fail(Msg(where + " dims[" + I(k) + "]", "0..2147483647", I(d), e + 24 + 8 * k));
        }
      } else if (d != 0) {
        return Fail(Msg(where + " dims[" + I(k) + "]", "0 (unused)", I(d), e + 24 + 8 * k));
      }
      s.dims[k] = d;
    }
    // Rule 20.
    const uint64_t p_off = LoadU64(entry + 8);
    if (p_off != expected_offset) {
      return Fail(Msg(where + " payload_offset", U(expected_offset), U(p_off), e + 8));
    }
    // Rule 21: each dim <= 2^31 - 1 and the running product stays <= 2^31 - 1, so the product of
    // two such numbers (< 2^62) never overflows int64. A zero dim makes the count 0.
    int64_t n = 1;
    bool too_many = false;
    for (int k = 0; k < rank; ++k) {
      if (s.dims[k] == 0) {
        n = 0;
        too_many = false;
        break;
      }
      if (!too_many) {
        n *= s.dims[k];
        if (n > kMaxElements) too_many = true;
      }
    }
    if (too_many) {
      return Fail(Msg(where + " dims", "<= 2147483647 elements", "more", e + 24));
    }
    s.num_elements = n;
    // Rule 22. n <= 2^31 - 1, so 8 * (n + 1) < 2^35: no overflow.
    const uint64_t p_len = LoadU64(entry + 16);
    const uint64_t un = static_cast<uint64_t>(n);
    if (s.dtype == BlobDType::kString) {
      const uint64_t min_len = 8 * (un + 1);
      if (p_len < min_len) {
        return Fail(Msg(where + " payload_length", ">= " + U(min_len), U(p_len), e + 16));
      }
    } else {
      const uint64_t want = un * BlobDTypeSize(s.dtype);
      if (p_len != want) return Fail(Msg(where + " payload_length", U(want), U(p_len), e + 16));
    }
    // Rule 23. p_off <= size here (it is the canonical position and earlier payloads fit), but
    // p_len may be anything up to 2^64 - 1: compare without forming the sum in 64 bits.
    if (p_off > size || p_len > size - p_off) {
      const unsigned __int128 end = static_cast<unsigned __int128>(p_off) + p_len;
      return Fail(Msg(where + " payload", "to end by " + U(size), "end " + U128(end), e + 16));
    }
    const uint64_t end = p_off + p_len;
    // Rule 24: padding bytes that exist in the blob are zero (a short tail is rule 27's business).
    const uint64_t pad_end = Align8(end) < size ? Align8(end) : size;
    for (uint64_t j = end; j < pad_end; ++j) {
      if (data[j] != 0) return Fail(Msg("padding", "0", "byte " + HexByte(data[j]), j));
    }
    s.payload_offset = p_off;
    s.payload_length = p_len;
    s.payload = data + p_off;
    // Rule 25.
    if (s.dtype == BlobDType::kBool) {
      for (uint64_t j = 0; j < p_len; ++j) {
        if (s.payload[j] > 1) {
          return Fail(Msg(where + " bool", "0 or 1", U(s.payload[j]), p_off + j));
        }
      }
    }
    // Rule 26: offsets[0] = 0; offsets[j] in [offsets[j-1], data_len]; offsets[n] = data_len.
    if (s.dtype == BlobDType::kString) {
      const uint64_t data_len = p_len - 8 * (un + 1);
      const uint64_t first = LoadU64(s.payload);
      if (first != 0) return Fail(Msg(where + " offsets[0]", "0..0", U(first), p_off));
      uint64_t prev = 0;
      for (uint64_t j = 1; j <= un; ++j) {
        const uint64_t v = LoadU64(s.payload + 8 * j);
        if (v < prev || v > data_len) {
          return Fail(Msg(where + " offsets[" + U(j) + "]", U(prev) + ".." + U(data_len), U(v),
                          p_off + 8 * j));
        }
        prev = v;
      }
      if (prev != data_len) {
        return Fail(Msg(where + " offsets[" + U(un) + "]", U(data_len) + ".." + U(data_len),
                        U(prev), p_off + 8 * un));
      }
    }
    sections_.push_back(s);
    expected_offset = Align8(end);
  }
  // Rule 27.
  if (expected_offset != total) {
    return Fail(Msg("total_length", U(expected_offset), U(total), 16));
  }
  return true;
}

const BlobSection* BlobReader::Find(std::string_view name) const {
  for (const BlobSection& s : sections_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const BlobSection* BlobReader::Lookup(std::string_view name, BlobDType expected,
                                      std::string* error) const {
  const BlobSection* s = Find(name);
  const std::string quoted = "'" + std::string(name) + "'";
  if (s == nullptr) {
    std::string present;
    for (const BlobSection& t : sections_) {
      if (!present.empty()) present += ", ";
      present += "'" + std::string(t.name) + "'";
    }
    *error = "section " + quoted + ": expected a section named " + quoted +
             ", got none (present: " + present + ")";
    return nullptr;
  }
  if (s->dtype != expected) {
    *error = "section " + quoted + ": expected dtype " + BlobDTypeName(expected) + ", got " +
             BlobDTypeName(s->dtype) + " at offset " + U(s->entry_offset);
    return nullptr;
  }
  return s;
}

bool BlobReader::ValidateRagged(const BlobSection& values, const BlobSection** row_splits,
                                std::string* error) const {
  const std::string vname(values.name);
  const std::string sname = vname + std::string(kRowSplitsSuffix);
  const BlobSection* s = Find(sname);
  if (s == nullptr) {
    *error = "section '" + sname + "': expected an int64 row-splits section for ragged '" + vname +
             "', got none";
    return false;
  }
  if (s->dtype != BlobDType::kInt64 || s->rank != 1 || s->dims[0] < 1) {
    *error = "section '" + sname + "': expected int64 rank 1 with >= 1 element, got " +
             BlobDTypeName(s->dtype) + " rank " + U(s->rank) + " at offset " + U(s->entry_offset);
    return false;
  }
  if (values.rank < 1) {
    *error = "section '" + vname + "': expected rank >= 1 for ragged values, got 0 at offset " +
             U(values.entry_offset + 1);
    return false;
  }
  const int64_t nvalues = values.dims[0];
  const int64_t count = s->dims[0];
  const int64_t first = LoadI64(s->payload);
  if (first != 0) {
    *error = "section '" + sname + "' [0]: expected 0..0, got " + I(first) + " at offset " +
             U(s->payload_offset);
    return false;
  }
  int64_t prev = 0;
  for (int64_t j = 1; j < count; ++j) {
    const int64_t v = LoadI64(s->payload + 8 * j);
    if (v < prev || v > nvalues) {
      *error = "section '" + sname + "' [" + I(j) + "]: expected " + I(prev) + ".." + I(nvalues) +
               ", got " + I(v) + " at offset " +
               U(s->payload_offset + 8 * static_cast<uint64_t>(j));
      return false;
    }
    prev = v;
  }
  if (prev != nvalues) {
    *error = "section '" + sname + "' [" + I(count - 1) + "]: expected " + I(nvalues) + ".." +
             I(nvalues) + ", got " + I(prev) + " at offset " +
             U(s->payload_offset + 8 * static_cast<uint64_t>(count - 1));
    return false;
  }
  *row_splits = s;
  return true;
}

}  // namespace memgraph_tf
