// Test harness for the plain C++ blob reader (no TensorFlow).
//
//   blob_reader_cli FILE...
//       one JSON line per file
//   blob_reader_cli --truncations FILE
//       one JSON line per proper prefix of FILE (lengths 0..size-1)
//   blob_reader_cli --frames
//       one JSON line per frame read from stdin; a frame is a u32 little-endian length then that
//       many bytes (file: "frame N")
//   blob_reader_cli --base64-frames
//       frames of base64url text, decoded by base64url.h (in three ranges, as the op's threads
//       would): {"file", "ok": true, "decoded": "<hex>"} or {"file", "ok": false, "error": ...}
//   blob_reader_cli --base64-plan-size N
//       the plan's verdict on a text of N characters ('A'... as far as the plan may look: a
//       reserved, never-touched mapping), as {"ok": true, "decoded_bytes": D} or {"ok": false,
//       "error": ...}; shows the size limit is enforced before anything is allocated
//
// Each line is {"file": ..., "length": L, "ok": true, "sections": [...]} or
// {"file": ..., "length": L, "ok": false, "error": "<the reader's message>"}. A section is
// {"name", "dtype", "shape", "values" (flat, row-major)}; strings are JSON strings whose code
// points are the raw bytes (\u00XX for bytes outside printable ASCII, so Python's
// .encode("latin-1") gives the bytes back); floats are printed with enough digits to round-trip
// (NaN / Infinity as Python's json module writes them). As memgraph_tf.blob.unpack does, every
// NAME / NAME.row_splits pair is validated as ragged; its failure is reported like a format error.
// Exit status: 0 when every blob was processed (valid or not), 2 on usage or I/O errors.
#include <sys/mman.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "../base64url.h"
#include "../blob_reader.h"

namespace {

using memgraph_tf::BlobDType;
using memgraph_tf::BlobReader;
using memgraph_tf::BlobSection;

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c >= 0x20 && c <= 0x7e) {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    }
  }
  return out + "\"";
}

std::string JsonDouble(double v, int digits) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*g", digits, v);
  std::string out(buf);
  // Keep floats floats in JSON ("-0" would read back as the integer 0).
  if (out.find_first_of(".e") == std::string::npos) out += ".0";
  return out;
}

template <typename T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

std::string SectionJson(const BlobSection& s) {
  std::string out = "{\"name\": " + JsonString(s.name) + ", \"dtype\": \"" +
                    memgraph_tf::BlobDTypeName(s.dtype) + "\", \"shape\": [";
  for (int k = 0; k < s.rank; ++k) {
    if (k) out += ", ";
    out += std::to_string(s.dims[k]);
  }
  out += "], \"values\": [";
  for (int64_t j = 0; j < s.num_elements; ++j) {
    if (j) out += ", ";
    switch (s.dtype) {
      case BlobDType::kBool:
        out += s.payload[j] ? "true" : "false";
        break;
      case BlobDType::kInt32:
        out += std::to_string(Load<int32_t>(s.payload + 4 * j));
        break;
      case BlobDType::kInt64:
        out += std::to_string(Load<int64_t>(s.payload + 8 * j));
        break;
      case BlobDType::kFloat32:
        out += JsonDouble(Load<float>(s.payload + 4 * j), 9);
        break;
      case BlobDType::kFloat64:
        out += JsonDouble(Load<double>(s.payload + 8 * j), 17);
        break;
      case BlobDType::kString:
        out += JsonString(s.StringAt(j));
        break;
    }
  }
  return out + "]}";
}

std::string Report(const std::string& file, const uint8_t* data, size_t size) {
  BlobReader reader;
  std::string head = "{\"file\": " + JsonString(file) + ", \"length\": " + std::to_string(size);
  if (!reader.Parse(data, size)) {
    return head + ", \"ok\": false, \"error\": " + JsonString(reader.error()) + "}";
  }
  for (const BlobSection& s : reader.sections()) {
    const std::string_view name = s.name;
    const std::string_view suffix = memgraph_tf::kRowSplitsSuffix;
    if (name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix &&
        reader.Find(name.substr(0, name.size() - suffix.size())) != nullptr) {
      continue;  // the row splits of a ragged pair, validated with its values
    }
    const std::string splits = std::string(name) + std::string(memgraph_tf::kRowSplitsSuffix);
    if (reader.Find(splits) != nullptr) {
      const BlobSection* rs = nullptr;
      std::string error;
      if (!reader.ValidateRagged(s, &rs, &error)) {
        return head + ", \"ok\": false, \"error\": " + JsonString(error) + "}";
      }
    }
  }
  std::string out = head + ", \"ok\": true, \"sections\": [";
  for (size_t i = 0; i < reader.num_sections(); ++i) {
    if (i) out += ", ";
    out += SectionJson(reader.section(i));
  }
  return out + "]}";
}

std::string Base64Report(const std::string& file, const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string head = "{\"file\": " + JsonString(file);
  memgraph_tf::Base64UrlPlan plan;
  std::string error;
  if (!memgraph_tf::Base64UrlPlanFor(text, &plan, &error)) {
    return head + ", \"ok\": false, \"error\": " + JsonString(error) + "}";
  }
  std::vector<uint8_t> out(plan.decoded_bytes);  // exact size: ASan catches any overwrite
  // Three ranges split at whole groups (the last takes the partial group), decoded last to first.
  const size_t groups = plan.chars / 4;
  const size_t cuts[4] = {0, groups / 3 * 4, groups * 2 / 3 * 4, plan.chars};
  size_t first_bad = plan.chars;
  for (int r = 2; r >= 0; --r) {
    size_t bad = 0;
    if (!memgraph_tf::Base64UrlDecodeRange(text, cuts[r], cuts[r + 1], out.data(), &bad))
      first_bad = bad;
  }
  if (first_bad < plan.chars) {
    return head + ", \"ok\": false, \"error\": " +
           JsonString(memgraph_tf::Base64UrlCharError(text, first_bad)) + "}";
  }
  std::string hex;
  static const char* kHex = "0123456789abcdef";
  for (uint8_t b : out) {
    hex.push_back(kHex[b >> 4]);
    hex.push_back(kHex[b & 15]);
  }
  return head + ", \"ok\": true, \"decoded\": \"" + hex + "\"}";
}

bool ReadFile(const char* path, std::vector<uint8_t>* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE... | --truncations FILE | --frames | --base64-frames\n",
                 argv[0]);
    return 2;
  }
  if (std::strcmp(argv[1], "--base64-plan-size") == 0 && argc == 3) {
    const size_t n = static_cast<size_t>(std::strtoull(argv[2], nullptr, 10));
    // Address space only (MAP_NORESERVE, never written): the plan reads the last two characters.
    void* map = mmap(nullptr, n, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (map == MAP_FAILED) {
      std::fprintf(stderr, "cannot reserve %zu bytes of address space\n", n);
      return 2;
    }
    char* text = static_cast<char*>(map);
    text[n - 1] = 'A';
    if (n > 1) text[n - 2] = 'A';
    memgraph_tf::Base64UrlPlan plan;
    std::string error;
    if (memgraph_tf::Base64UrlPlanFor(std::string_view(text, n), &plan, &error)) {
      std::printf("{\"ok\": true, \"decoded_bytes\": %zu}\n", plan.decoded_bytes);
    } else {
      std::printf("{\"ok\": false, \"error\": %s}\n", JsonString(error).c_str());
    }
    munmap(map, n);
    return 0;
  }
  const bool base64 = std::strcmp(argv[1], "--base64-frames") == 0;
  if (base64 || std::strcmp(argv[1], "--frames") == 0) {
    std::vector<uint8_t> all((std::istreambuf_iterator<char>(std::cin)),
                             std::istreambuf_iterator<char>());
    size_t pos = 0;
    for (int frame = 0; pos < all.size(); ++frame) {
      if (all.size() - pos < 4) {
        std::fprintf(stderr, "frame %d: truncated length prefix\n", frame);
        return 2;
      }
      const uint32_t len =
          static_cast<uint32_t>(all[pos]) | (static_cast<uint32_t>(all[pos + 1]) << 8) |
          (static_cast<uint32_t>(all[pos + 2]) << 16) | (static_cast<uint32_t>(all[pos + 3]) << 24);
      pos += 4;
      if (all.size() - pos < len) {
        std::fprintf(stderr, "frame %d: expected %u bytes, got %zu\n", frame, len,
                     all.size() - pos);
        return 2;
      }
      // An exact-size copy, so AddressSanitizer builds catch any overread.
      std::vector<uint8_t> data(all.begin() + static_cast<std::ptrdiff_t>(pos),
                                all.begin() + static_cast<std::ptrdiff_t>(pos + len));
      pos += len;
      const std::string name = "frame " + std::to_string(frame);
      std::printf("%s\n", (base64 ? Base64Report(name, data.data(), data.size())
                                  : Report(name, data.data(), data.size()))
                              .c_str());
    }
    return 0;
  }
  if (std::strcmp(argv[1], "--truncations") == 0) {
    if (argc != 3) {
      std::fprintf(stderr, "--truncations takes exactly one FILE\n");
      return 2;
    }
    std::vector<uint8_t> data;
    if (!ReadFile(argv[2], &data)) {
      std::fprintf(stderr, "cannot read %s\n", argv[2]);
      return 2;
    }
    for (size_t len = 0; len < data.size(); ++len) {
      // A fresh exact-size copy per prefix, so AddressSanitizer builds catch any overread.
      std::vector<uint8_t> prefix(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(len));
      std::printf("%s\n", Report(argv[2], prefix.data(), prefix.size()).c_str());
    }
    return 0;
  }
  for (int i = 1; i < argc; ++i) {
    std::vector<uint8_t> data;
    if (!ReadFile(argv[i], &data)) {
      std::fprintf(stderr, "cannot read %s\n", argv[i]);
      return 2;
    }
    std::printf("%s\n", Report(argv[i], data.data(), data.size()).c_str());
  }
  return 0;
}
