// Plain C++17 reader for memgraph-tf blob format v1 (normative spec: docs/blob-format.md).
//
// No TensorFlow headers: this file is shared by the UnpackBlob op kernel, the libFuzzer target and
// the stand-alone test CLI. The reader never copies payloads; it validates a blob in place and
// hands out pointers into it.
//
// Guarantees of BlobReader::Parse:
//   * every rule of section 4 of the spec is checked, in the spec's order, and the first failure
//     is reported with the spec's message text (the Python reader memgraph_tf.blob uses the same
//     texts);
//   * nothing sized by the blob's claims is allocated before the claim is checked against the
//     blob's real length (the section vector is reserved only after the table is known to fit, and
//     holds at most 1024 entries);
//   * no read goes outside [data, data + size); multi-byte fields are read with memcpy (no
//     unaligned access), and every sum or product of blob-controlled numbers is done without
//     overflow.
#ifndef MEMGRAPH_TF_CC_BLOB_READER_H_
#define MEMGRAPH_TF_CC_BLOB_READER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace memgraph_tf {

enum class BlobDType : uint8_t {
  kBool = 1,
  kInt32 = 2,
  kInt64 = 3,
  kFloat32 = 4,
  kFloat64 = 5,
  kString = 6,
};

inline constexpr size_t kHeaderBytes = 32;
inline constexpr size_t kEntryBytes = 128;
inline constexpr uint32_t kMaxSections = 1024;
inline constexpr int kMaxRank = 8;
inline constexpr int kMaxNameBytes = 40;
inline constexpr uint64_t kMaxBlobBytes = 2147483647u;  // 2^31 - 1
inline constexpr int64_t kMaxDim = 2147483647;
inline constexpr int64_t kMaxElements = 2147483647;
inline constexpr std::string_view kRowSplitsSuffix = ".row_splits";

// "bool", "int32", ... for codes 1..6; "dtype<code>" never happens for a validated section.
const char* BlobDTypeName(BlobDType dtype);
// Parses "bool", "int32", "int64", "float32", "float64", "string"; false for anything else.
bool BlobDTypeFromName(std::string_view name, BlobDType* out);
// Bytes per element; 0 for string.
size_t BlobDTypeSize(BlobDType dtype);

// One validated section. Pointers point into the blob given to Parse (which must outlive this).
struct BlobSection {
  int index = 0;
  std::string_view name;
  BlobDType dtype = BlobDType::kBool;
  int rank = 0;
  int64_t dims[kMaxRank] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t num_elements = 1;     // product of dims[0..rank), <= kMaxElements
  uint64_t entry_offset = 0;    // absolute offset of the section table entry
  uint64_t payload_offset = 0;  // absolute offset of the payload
  uint64_t payload_length = 0;  // payload bytes, padding excluded
  const uint8_t* payload = nullptr;

  // String sections: offsets[j] (validated: 0 = offsets[0] <= ... <= offsets[n] = data length).
  uint64_t StringOffset(int64_t j) const;
  // String sections: the bytes of element j (a view into the blob).
  std::string_view StringAt(int64_t j) const;
  // String sections: total bytes of string data (payload_length - 8*(n+1)).
  uint64_t StringDataBytes() const;
};

class BlobReader {
 public:
  // Validates the blob (rules 1-27 of the spec). Returns true when valid; otherwise false and
  // error() holds the spec's message for the first rule broken. May be called again to reuse.
  bool Parse(const uint8_t* data, size_t size);

  const std::string& error() const { return error_; }
  size_t num_sections() const { return sections_.size(); }
  const BlobSection& section(size_t i) const { return sections_[i]; }
  const std::vector<BlobSection>& sections() const { return sections_; }

  // The section called `name`, or nullptr.
  const BlobSection* Find(std::string_view name) const;

  // The section called `name` with dtype `expected`; otherwise nullptr and *error holds
  //   section 'n': expected a section named 'n', got none (present: 'a', 'b')
  //   section 'n': expected dtype float32, got int64 at offset O
  const BlobSection* Lookup(std::string_view name, BlobDType expected, std::string* error) const;

  // Validates `values` (a section of this blob) as the flat values of ragged `values->name` with
  // its NAME.row_splits section (spec section 3/4). On success *row_splits points at the int64
  // splits section, whose element count is nrows + 1. On failure returns false with the spec's
  // message.
  bool ValidateRagged(const BlobSection& values, const BlobSection** row_splits,
                      std::string* error) const;

 private:
  bool Fail(std::string message);

  std::vector<BlobSection> sections_;
  std::string error_;
};

// Reads a little-endian integer at p (memcpy; no alignment needed).
uint64_t LoadU64(const uint8_t* p);
int64_t LoadI64(const uint8_t* p);

}  // namespace memgraph_tf

#endif  // MEMGRAPH_TF_CC_BLOB_READER_H_
