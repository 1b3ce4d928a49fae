// Plain C++17 base64url decoder (see base64url.h).
#include "base64url.h"

#include <array>
#include <cstdio>

#include "blob_reader.h"

namespace memgraph_tf {
namespace {

constexpr int8_t Sextet(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return static_cast<int8_t>(c - 'A');
  if (c >= 'a' && c <= 'z') return static_cast<int8_t>(c - 'a' + 26);
  if (c >= '0' && c <= '9') return static_cast<int8_t>(c - '0' + 52);
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

// For character position k of a 4-character group, table k maps a character to its 6 bits already
// placed in the group's 24-bit output (byte 0 in bits 0-7, byte 1 in bits 8-15, byte 2 in bits
// 16-23), or to kBad for a character outside the alphabet. One group decodes with four lookups and
// three ORs; any bad character sets a bit above the 24 output bits.
constexpr uint32_t kBad = 0x01000000u;

constexpr uint32_t Placed(int position, int8_t s) {
  if (s < 0) return kBad;
  const uint32_t v = static_cast<uint32_t>(s);
  switch (position) {
    case 0:
      return v << 2;  // byte 0, bits 7..2
    case 1:
      return (v >> 4) | ((v & 0x0f) << 12);  // byte 0 bits 1..0, byte 1 bits 7..4
    case 2:
      return ((v >> 2) << 8) | ((v & 0x03) << 22);  // byte 1 bits 3..0, byte 2 bits 7..6
    default:
      return v << 16;  // byte 2, bits 5..0
  }
}

using Table = std::array<uint32_t, 256>;

constexpr Table MakeTable(int position) {
  Table t{};
  for (int c = 0; c < 256; ++c)
    t[static_cast<size_t>(c)] = Placed(position, Sextet(static_cast<unsigned char>(c)));
  return t;
}

constexpr Table kT0 = MakeTable(0);
constexpr Table kT1 = MakeTable(1);
constexpr Table kT2 = MakeTable(2);
constexpr Table kT3 = MakeTable(3);

inline uint32_t Group(const unsigned char* p) {
  return kT0[p[0]] | kT1[p[1]] | kT2[p[2]] | kT3[p[3]];
}

// The offset of the first character of p[0..n) outside the alphabet, or n.
size_t FirstBad(const unsigned char* p, size_t n) {
  for (size_t k = 0; k < n; ++k) {
    if (Sextet(p[k]) < 0) return k;
  }
  return n;
}

}  // namespace

bool Base64UrlPlanFor(std::string_view text, Base64UrlPlan* plan, std::string* error) {
  size_t chars = text.size();
  size_t padding = 0;
  while (padding < 2 && chars > 0 && text[chars - 1] == '=') {
    --chars;
    ++padding;
  }
  const size_t wanted = (4 - chars % 4) % 4;
  if (chars % 4 == 1 || (padding != 0 && padding != wanted)) {
    // A character outside the alphabet (such as misplaced padding: "QUJD=A==") is the better
    // message.
    const size_t bad = FirstBad(reinterpret_cast<const unsigned char*>(text.data()), chars);
    if (bad < chars) {
      *error = Base64UrlCharError(text, bad);
    } else if (chars % 4 == 1) {
      *error = "base64: expected a data length of 4k, 4k+2 or 4k+3 characters, got " +
               std::to_string(chars) + " at offset " + std::to_string(chars - 1);
    } else {
      *error = "base64: expected " + std::to_string(wanted) + " padding '=' after " +
               std::to_string(chars) + " data characters, got " + std::to_string(padding) +
               " at offset " + std::to_string(chars);
    }
    return false;
  }
  const uint64_t decoded =
      static_cast<uint64_t>(chars / 4) * 3 + (chars % 4 == 0 ? 0 : chars % 4 - 1);
  if (decoded > kMaxBlobBytes) {
    *error = "base64: expected at most " + std::to_string(kMaxBlobBytes) +
             " decoded bytes (the blob size limit), got " + std::to_string(decoded) +
             " at offset 0";
    return false;
  }
  plan->chars = chars;
  plan->decoded_bytes = static_cast<size_t>(decoded);
  return true;
}

bool Base64UrlDecodeRange(std::string_view text, size_t begin, size_t end, uint8_t* out,
                          size_t* bad_offset) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  uint8_t* o = out + begin / 4 * 3;
  size_t k = begin;
  // Whole groups of four characters, three bytes each.
  const size_t whole_end = begin + (end - begin) / 4 * 4;
  for (; k + 4 <= whole_end; k += 4, o += 3) {
    const uint32_t v = Group(p + k);
    if (v & kBad) {
      *bad_offset = k + FirstBad(p + k, 4);
      return false;
    }
    o[0] = static_cast<uint8_t>(v);
    o[1] = static_cast<uint8_t>(v >> 8);
    o[2] = static_cast<uint8_t>(v >> 16);
  }
  const size_t rest = end - k;  // 0, 2 or 3 characters: the text's final partial group
  if (rest >= 2) {
    uint32_t v = kT0[p[k]] | kT1[p[k + 1]] | (rest == 3 ? kT2[p[k + 2]] : 0);
    if (v & kBad) {
      *bad_offset = k + FirstBad(p + k, rest);
      return false;
    }
    o[0] = static_cast<uint8_t>(v);
    if (rest == 3) o[1] = static_cast<uint8_t>(v >> 8);
  }
  return true;
}

std::string Base64UrlCharError(std::string_view text, size_t offset) {
  const unsigned char c = static_cast<unsigned char>(text[offset]);
  char got[32];
  if (c >= 0x20 && c < 0x7f) {
    std::snprintf(got, sizeof(got), "'%c' (0x%02x)", c, c);
  } else {
    std::snprintf(got, sizeof(got), "byte 0x%02x", c);
  }
  return std::string("base64: expected a base64url character (A-Z a-z 0-9 - _), got ") + got +
         " at offset " + std::to_string(offset);
}

bool Base64UrlDecode(std::string_view text, const Base64UrlPlan& plan, uint8_t* out,
                     std::string* error) {
  size_t bad = 0;
  if (!Base64UrlDecodeRange(text, 0, plan.chars, out, &bad)) {
    *error = Base64UrlCharError(text, bad);
    return false;
  }
  return true;
}

}  // namespace memgraph_tf
