// libFuzzer target over the plain blob reader (memgraph_tf/cc/blob_reader.{h,cc}) and the plain
// base64url decoder (memgraph_tf/cc/base64url.{h,cc}): every input is read as a blob, then as
// base64url text (decoded whole and in three ranges, which must agree) whose decoded bytes are read
// as a blob.
//
// Built by scripts/fuzz.sh with -fsanitize=fuzzer,address,undefined. For every input it parses the
// blob; on success it exercises every accessor the op kernel uses: Find/Lookup of every section
// with every dtype, the ragged validation of every section, and it reads every payload byte and
// every string element, so an out-of-bounds pointer handed out by the reader is caught by ASan.
// Invariants the reader guarantees are checked with __builtin_trap():
//   * a rejected blob has a non-empty message of the form "...: expected ..., got ...";
//   * accepted sections lie inside the blob, in table order, without overlap;
//   * string offsets are non-decreasing and end at the data length.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "../base64url.h"
#include "../blob_reader.h"

namespace {

volatile uint64_t g_sink;

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

void FuzzBlob(const uint8_t* data, size_t size);

// Reads the input as base64url text: an error names "base64: expected ..., got ..."; on success the
// whole-text decode and a three-range decode (as the op's threads split it) give the same bytes, in
// exact-size buffers so that ASan catches a write past the decoded size.
void FuzzBase64(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  memgraph_tf::Base64UrlPlan plan;
  std::string error;
  if (!memgraph_tf::Base64UrlPlanFor(text, &plan, &error)) {
    Check(error.rfind("base64: expected ", 0) == 0 && error.find(", got ") != std::string::npos);
    return;
  }
  Check(plan.chars <= size && plan.chars % 4 != 1);
  Check(plan.decoded_bytes == plan.chars / 4 * 3 + (plan.chars % 4 ? plan.chars % 4 - 1 : 0));
  std::vector<uint8_t> whole(plan.decoded_bytes);
  const bool ok = memgraph_tf::Base64UrlDecode(text, plan, whole.data(), &error);
  std::vector<uint8_t> parts(plan.decoded_bytes);
  const size_t groups = plan.chars / 4;
  const size_t cuts[4] = {0, groups / 3 * 4, groups * 2 / 3 * 4, plan.chars};
  size_t first_bad = plan.chars;
  for (int r = 2; r >= 0; --r) {
    size_t bad = plan.chars;
    if (!memgraph_tf::Base64UrlDecodeRange(text, cuts[r], cuts[r + 1], parts.data(), &bad)) {
      Check(bad >= cuts[r] && bad < cuts[r + 1]);
      first_bad = bad;
    }
  }
  Check(ok == (first_bad == plan.chars));
  if (!ok) {
    Check(error == memgraph_tf::Base64UrlCharError(text, first_bad));
    return;
  }
  Check(whole == parts);
  FuzzBlob(whole.data(), whole.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzBlob(data, size);
  FuzzBase64(data, size);
  return 0;
}

namespace {

void FuzzBlob(const uint8_t* data, size_t size) {
  using memgraph_tf::BlobDType;
  using memgraph_tf::BlobReader;
  using memgraph_tf::BlobSection;
  BlobReader reader;
  if (!reader.Parse(data, size)) {
    const std::string& e = reader.error();
    Check(!e.empty());
    Check(e.find(": expected ") != std::string::npos);
    Check(e.find(", got ") != std::string::npos);
    Check(reader.num_sections() == 0);
    return;
  }
  uint64_t sum = 0;
  uint64_t prev_end = 32 + 128 * static_cast<uint64_t>(reader.num_sections());
  for (size_t i = 0; i < reader.num_sections(); ++i) {
    const BlobSection& s = reader.section(i);
    Check(s.payload_offset >= prev_end);
    Check(s.payload_offset + s.payload_length <= size);
    Check(s.payload == data + s.payload_offset);
    prev_end = s.payload_offset + s.payload_length;
    for (uint64_t j = 0; j < s.payload_length; ++j) sum += s.payload[j];
    if (s.dtype == BlobDType::kString) {
      uint64_t last = 0;
      for (int64_t j = 0; j < s.num_elements; ++j) {
        const uint64_t off = s.StringOffset(j);
        Check(off >= last);
        last = off;
        const std::string_view v = s.StringAt(j);
        for (char c : v) sum += static_cast<uint8_t>(c);
      }
      Check(s.StringOffset(s.num_elements) == s.StringDataBytes());
    } else {
      Check(s.payload_length ==
            static_cast<uint64_t>(s.num_elements) * memgraph_tf::BlobDTypeSize(s.dtype));
    }
    Check(reader.Find(s.name) == &s);
    for (int code = 1; code <= 6; ++code) {
      std::string error;
      const BlobSection* found = reader.Lookup(s.name, static_cast<BlobDType>(code), &error);
      Check((found != nullptr) == (static_cast<int>(s.dtype) == code));
      Check(found != nullptr || !error.empty());
    }
    std::string error;
    const BlobSection* splits = nullptr;
    if (reader.ValidateRagged(s, &splits, &error)) {
      Check(splits != nullptr && splits->dtype == BlobDType::kInt64 && splits->rank == 1);
      for (int64_t j = 0; j < splits->dims[0]; ++j) {
        const int64_t v = memgraph_tf::LoadI64(splits->payload + 8 * j);
        Check(v >= 0 && v <= s.dims[0]);
      }
    } else {
      Check(!error.empty());
    }
  }
  std::string error;
  Check(reader.Lookup("no such section", BlobDType::kFloat32, &error) == nullptr);
  g_sink = sum;
}

}  // namespace
