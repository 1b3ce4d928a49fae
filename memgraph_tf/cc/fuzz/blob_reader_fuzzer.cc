// libFuzzer target over the plain blob reader (memgraph_tf/cc/blob_reader.{h,cc}).
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

#include "../blob_reader.h"

namespace {

volatile uint64_t g_sink;

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
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
    return 0;
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
  return 0;
}
