// Plain C++17 decoder for the Memgraph transport of blobs: base64url text (RFC 4648 section 5,
// alphabet A-Z a-z 0-9 - _), with or without '=' padding (docs/blob-format.md, section 6).
//
// No TensorFlow headers: shared by the UnpackBlob kernel (encoding="base64"), the libFuzzer target
// and the test CLI. Decoding is split in two so that a caller can decode one text with several
// threads: Base64UrlPlan checks the length and the padding and gives the decoded size, then
// Base64UrlDecodeRange decodes any range of whole 4-character groups on its own.
//
// Guarantees: no read outside the text, no write outside [out, out + plan.decoded_bytes); every
// rejection is a message of the form "base64: expected X, got Y at offset N" (N counts characters
// of the text). The unused low bits of a final partial group are ignored, as Python's decoder does.
#ifndef MEMGRAPH_TF_CC_BASE64URL_H_
#define MEMGRAPH_TF_CC_BASE64URL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace memgraph_tf {

struct Base64UrlPlan {
  size_t chars = 0;          // characters that carry data (the text without its padding)
  size_t decoded_bytes = 0;  // bytes the text decodes to
};

// Checks the text's length and padding ('=' only at the end, at most two, completing a multiple of
// four characters; a data length of 4k+1 is impossible). On failure returns false and sets *error.
// Characters other than padding are checked by Base64UrlDecodeRange.
bool Base64UrlPlanFor(std::string_view text, Base64UrlPlan* plan, std::string* error);

// Decodes characters [begin, end) of the text's data characters into out + begin / 4 * 3. `begin`
// must be a multiple of 4 and `end` a multiple of 4 or plan.chars. Returns false at the first
// character outside the alphabet, with its offset in *bad_offset (bytes before it may be written).
bool Base64UrlDecodeRange(std::string_view text, size_t begin, size_t end, uint8_t* out,
                          size_t* bad_offset);

// The message for a character outside the alphabet at `offset`:
//   base64: expected a base64url character (A-Z a-z 0-9 - _), got '+' (0x2b) at offset 17
std::string Base64UrlCharError(std::string_view text, size_t offset);

// Plan, then decode the whole text with one thread into out (which must hold plan.decoded_bytes).
bool Base64UrlDecode(std::string_view text, const Base64UrlPlan& plan, uint8_t* out,
                     std::string* error);

}  // namespace memgraph_tf

#endif  // MEMGRAPH_TF_CC_BASE64URL_H_
