// CPU kernel of MemgraphTf>UnpackBlob. One pass: every blob is validated in full by the plain
// reader (blob_reader.h) and every requested section checked (dtype, ragged pair, shape agreement)
// before any output is allocated; then each blob's payload is copied straight into its slice of the
// output (large payloads by several worker threads, with non-temporal stores past 16 MB). With
// encoding="base64" each blob arrives as base64url text and is first decoded (base64url.h).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base64url.h"
#include "blob_reader.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/tensor.h"
#include "tensorflow/core/framework/tensor_shape.h"
#include "tensorflow/core/framework/types.h"
#include "tensorflow/core/util/work_sharder.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace memgraph_tf {

using ::tensorflow::DataType;
using ::tensorflow::OpKernel;
using ::tensorflow::OpKernelConstruction;
using ::tensorflow::OpKernelContext;
using ::tensorflow::PartialTensorShape;
using ::tensorflow::Tensor;
using ::tensorflow::TensorShape;
using ::tensorflow::tstring;

namespace {

// An InvalidArgument status whose message is the concatenation of `parts`.
template <typename... Parts>
absl::Status Invalid(const Parts&... parts) {
  return absl::InvalidArgumentError(absl::StrCat(parts...));
}

bool ToBlobDType(DataType dt, BlobDType* out) {
  switch (dt) {
    case tensorflow::DT_BOOL:
      *out = BlobDType::kBool;
      return true;
    case tensorflow::DT_INT32:
      *out = BlobDType::kInt32;
      return true;
    case tensorflow::DT_INT64:
      *out = BlobDType::kInt64;
      return true;
    case tensorflow::DT_FLOAT:
      *out = BlobDType::kFloat32;
      return true;
    case tensorflow::DT_DOUBLE:
      *out = BlobDType::kFloat64;
      return true;
    case tensorflow::DT_STRING:
      *out = BlobDType::kString;
      return true;
    default:
      return false;
  }
}

std::string ShapeText(const int64_t* dims, int begin, int end) {
  std::string s = "[";
  for (int k = begin; k < end; ++k) {
    if (k > begin) s += ",";
    s += std::to_string(dims[k]);
  }
  return s + "]";
}

std::string PartialShapeText(const PartialTensorShape& shape) {
  if (shape.unknown_rank()) return "<unknown>";
  std::string s = "[";
  for (int k = 0; k < shape.dims(); ++k) {
    if (k) s += ",";
    s += shape.dim_size(k) < 0 ? std::string("?") : std::to_string(shape.dim_size(k));
  }
  return s + "]";
}

bool SameDims(const BlobSection& a, const BlobSection& b, int begin) {
  if (a.rank != b.rank) return false;
  for (int k = begin; k < a.rank; ++k) {
    if (a.dims[k] != b.dims[k]) return false;
  }
  return true;
}

bool Compatible(const PartialTensorShape& want, const BlobSection& s) {
  if (want.unknown_rank()) return true;
  if (want.dims() != s.rank) return false;
  for (int k = 0; k < s.rank; ++k) {
    if (want.dim_size(k) >= 0 && want.dim_size(k) != s.dims[k]) return false;
  }
  return true;
}

// Payloads at least this large are copied by several worker threads, one contiguous range each.
constexpr uint64_t kParallelCopyBytes = 4u << 20;
constexpr uint64_t kMinCopyPartBytes = 1u << 20;
// Payloads at least this large (about the size of a server's last-level cache) are written with
// non-temporal stores: the output would not stay in cache anyway, and skipping the
// read-for-ownership of every destination line cuts the memory traffic of the copy by a third.
constexpr uint64_t kStreamCopyBytes = 16u << 20;

// How many contiguous ranges `bytes` of work is split into: at least kMinCopyPartBytes each, and at
// most eight per worker thread, so that a thread that starts late (woken from sleep, or sharing its
// core) takes fewer of them.
int64_t NumParts(int num_threads, uint64_t bytes) {
  const uint64_t most = static_cast<uint64_t>(std::max(num_threads, 1)) * 8;
  return static_cast<int64_t>(
      std::max<uint64_t>(1, std::min<uint64_t>(most, bytes / kMinCopyPartBytes)));
}

// memcpy with non-temporal (cache-bypassing) stores where the CPU has them (SSE2: every x86-64).
void StreamCopy(char* dst, const uint8_t* src, size_t n) {
#if defined(__SSE2__)
  size_t head = (16 - (reinterpret_cast<uintptr_t>(dst) & 15)) & 15;
  head = std::min(head, n);
  std::memcpy(dst, src, head);
  dst += head;
  src += head;
  n -= head;
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 48), d);
  }
  _mm_sfence();  // the streamed stores are visible before this range is reported done
  std::memcpy(dst + i, src + i, n - i);
#else
  std::memcpy(dst, src, n);
#endif
}

// Copies section `s` into `out`, starting at element `at` of out's flat buffer.
void CopySection(OpKernelContext* ctx, const BlobSection& s, Tensor* out, int64_t at) {
  if (s.dtype == BlobDType::kString) {
    auto flat = out->flat<tstring>();
    for (int64_t j = 0; j < s.num_elements; ++j) {
      const std::string_view v = s.StringAt(j);
      flat(at + j).assign(v.data(), v.size());
    }
    return;
  }
  if (s.payload_length == 0) return;
  const size_t size = BlobDTypeSize(s.dtype);
  char* dst = static_cast<char*>(out->data()) + static_cast<size_t>(at) * size;
  const uint8_t* src = s.payload;
  const uint64_t length = s.payload_length;
  if (length < kParallelCopyBytes) {
    std::memcpy(dst, src, length);
    return;
  }
  const bool stream = length >= kStreamCopyBytes;
  auto copy_range = [dst, src, stream](uint64_t from, uint64_t to) {
    if (stream) {
      StreamCopy(dst + from, src + from, to - from);
    } else {
      std::memcpy(dst + from, src + from, to - from);
    }
  };
  const auto* workers = ctx->device()->tensorflow_cpu_worker_threads();
  const int64_t parts = NumParts(workers->num_threads, length);
  // parts * step >= length: step is ceil(length / parts) rounded up to a cache line.
  const uint64_t step =
      ((length + static_cast<uint64_t>(parts) - 1) / static_cast<uint64_t>(parts) + 63) &
      ~uint64_t{63};
  tensorflow::Shard(
      workers->num_threads, workers->workers, parts, static_cast<int64_t>(step),
      [&copy_range, step, length](int64_t begin, int64_t end) {
        const uint64_t from = std::min<uint64_t>(static_cast<uint64_t>(begin) * step, length);
        copy_range(from, std::min<uint64_t>(static_cast<uint64_t>(end) * step, length));
      });
}

// Decodes base64url `text` into a new uint8 temp tensor *out (texts of at least kParallelCopyBytes
// characters are decoded by several worker threads, each a range of whole 4-character groups; the
// first bad character of the text is reported whichever thread found it).
absl::Status DecodeBase64(OpKernelContext* ctx, std::string_view text, Tensor* out) {
  Base64UrlPlan plan;
  std::string error;
  if (!Base64UrlPlanFor(text, &plan, &error)) return absl::InvalidArgumentError(error);
  TF_RETURN_IF_ERROR(ctx->allocate_temp(
      tensorflow::DT_UINT8, TensorShape({static_cast<int64_t>(plan.decoded_bytes)}), out));
  uint8_t* dst = out->flat<uint8_t>().data();
  if (plan.chars < kParallelCopyBytes) {
    if (!Base64UrlDecode(text, plan, dst, &error)) return absl::InvalidArgumentError(error);
    return absl::OkStatus();
  }
  const auto* workers = ctx->device()->tensorflow_cpu_worker_threads();
  const uint64_t groups = plan.chars / 4;
  const int64_t parts = NumParts(workers->num_threads, plan.chars);
  const uint64_t step =
      (groups + static_cast<uint64_t>(parts) - 1) / static_cast<uint64_t>(parts) * 4;
  std::vector<size_t> bad(static_cast<size_t>(parts), plan.chars);
  tensorflow::Shard(
      workers->num_threads, workers->workers, parts, static_cast<int64_t>(step),
      [&](int64_t begin, int64_t end) {
        for (int64_t part = begin; part < end; ++part) {
          const uint64_t from = std::min<uint64_t>(static_cast<uint64_t>(part) * step, plan.chars);
          const uint64_t to =
              part + 1 == parts
                  ? plan.chars
                  : std::min<uint64_t>(static_cast<uint64_t>(part + 1) * step, plan.chars);
          size_t at = plan.chars;
          if (!Base64UrlDecodeRange(text, from, to, dst, &at)) bad[static_cast<size_t>(part)] = at;
        }
      });
  const size_t first = *std::min_element(bad.begin(), bad.end());
  if (first < plan.chars) return absl::InvalidArgumentError(Base64UrlCharError(text, first));
  return absl::OkStatus();
}

class UnpackBlobOp : public OpKernel {
 public:
  explicit UnpackBlobOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("names", &names_));
    std::vector<DataType> dtypes;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("dtypes", &dtypes));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("ragged", &ragged_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("num_ragged", &num_ragged_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("shapes", &shapes_));
    std::string encoding;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("encoding", &encoding));
    OP_REQUIRES(ctx, encoding == "raw" || encoding == "base64",
                Invalid("encoding: expected 'raw' or 'base64', got '", encoding, "'"));
    base64_ = encoding == "base64";
    OP_REQUIRES(ctx, dtypes.size() == names_.size(),
                Invalid("dtypes: expected ", names_.size(), " entries (one per name), got ",
                        dtypes.size()));
    OP_REQUIRES(ctx, ragged_.empty() || ragged_.size() == names_.size(),
                Invalid("ragged: expected 0 or ", names_.size(), " entries (one per name), got ",
                        ragged_.size()));
    OP_REQUIRES(ctx, shapes_.empty() || shapes_.size() == names_.size(),
                Invalid("shapes: expected 0 or ", names_.size(), " entries (one per name), got ",
                        shapes_.size()));
    if (ragged_.empty()) ragged_.assign(names_.size(), false);
    int counted = 0;
    for (bool r : ragged_) counted += r ? 1 : 0;
    OP_REQUIRES(ctx, counted == num_ragged_,
                Invalid("num_ragged: expected ", counted, " (the true entries of ragged), got ",
                        num_ragged_));
    for (DataType dt : dtypes) {
      BlobDType b;
      OP_REQUIRES(ctx, ToBlobDType(dt, &b),
                  Invalid("dtypes: expected bool, int32, int64, float, double or "
                          "string, got ",
                          tensorflow::DataTypeString(dt)));
      dtypes_.push_back(b);
    }
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& blobs = ctx->input(0);
    OP_REQUIRES(ctx, blobs.dims() <= 1,
                Invalid("blobs: expected a scalar or a vector of blobs, got shape ",
                        blobs.shape().DebugString()));
    const bool batched = blobs.dims() == 1;
    const int64_t batch = batched ? blobs.dim_size(0) : 1;
    // Section shapes come from the blobs, so an empty vector has no shape to give its outputs.
    OP_REQUIRES(ctx, batch >= 1,
                Invalid("blobs: expected a scalar or a vector of at least 1 blob, "
                        "got an empty vector"));
    auto flat = blobs.flat<tstring>();
    auto where = [batched](int64_t b) {
      return batched ? "blob " + std::to_string(b) : std::string("blob");
    };

    // Pass 1: validate every blob and look up every section. Nothing is allocated but the readers
    // (bounded by the blobs' own sizes), one pointer per (name, blob) and, with encoding="base64",
    // each text's decoded bytes (a temp tensor of the size the text implies, checked against the
    // blob size limit first) that the readers, and so the outputs' copies, read from.
    std::vector<BlobReader> readers(static_cast<size_t>(batch));
    std::vector<Tensor> decoded(base64_ ? static_cast<size_t>(batch) : 0);
    for (int64_t b = 0; b < batch; ++b) {
      const tstring& blob = flat(b);
      const uint8_t* data = reinterpret_cast<const uint8_t*>(blob.data());
      size_t size = blob.size();
      if (base64_) {
        const absl::Status st =
            DecodeBase64(ctx, std::string_view(blob.data(), blob.size()), &decoded[b]);
        OP_REQUIRES(ctx, st.ok(),
                    st.code() == absl::StatusCode::kInvalidArgument
                        ? Invalid(where(b), ": ", st.message())
                        : st);
        data = decoded[b].flat<uint8_t>().data();
        size = static_cast<size_t>(decoded[b].NumElements());
      }
      const bool ok = readers[b].Parse(data, size);
      OP_REQUIRES(ctx, ok, Invalid(where(b), ": ", readers[b].error()));
    }
    const size_t n = names_.size();
    std::vector<std::vector<const BlobSection*>> found(n);
    std::vector<std::vector<const BlobSection*>> splits(n);
    for (size_t i = 0; i < n; ++i) {
      found[i].resize(static_cast<size_t>(batch));
      if (ragged_[i]) splits[i].resize(static_cast<size_t>(batch));
      for (int64_t b = 0; b < batch; ++b) {
        std::string error;
        const BlobSection* s = readers[b].Lookup(names_[i], dtypes_[i], &error);
        OP_REQUIRES(ctx, s != nullptr, Invalid(where(b), ": ", error));
        if (ragged_[i]) {
          const BlobSection* rs = nullptr;
          OP_REQUIRES(ctx, readers[b].ValidateRagged(*s, &rs, &error),
                      Invalid(where(b), ": ", error));
          splits[i][b] = rs;
        }
        if (!shapes_.empty()) {
          OP_REQUIRES(ctx, Compatible(shapes_[i], *s),
                      Invalid(where(b), " section '", names_[i], "': expected shape ",
                              PartialShapeText(shapes_[i]), " (the shapes attr), got ",
                              ShapeText(s->dims, 0, s->rank)));
        }
        if (b > 0) {
          const BlobSection* first = found[i][0];
          // Dense sections must agree on the whole shape, ragged values on the inner dims.
          const int begin = ragged_[i] ? 1 : 0;
          OP_REQUIRES(ctx, SameDims(*first, *s, begin),
                      Invalid(where(b), " section '", names_[i], "': expected shape ",
                              ragged_[i] ? "[*" + std::string(first->rank > 1 ? "," : "") +
                                               ShapeText(first->dims, 1, first->rank).substr(1)
                                         : ShapeText(first->dims, 0, first->rank),
                              ", got ",
                              ragged_[i] ? "[*" + std::string(s->rank > 1 ? "," : "") +
                                               ShapeText(s->dims, 1, s->rank).substr(1)
                                         : ShapeText(s->dims, 0, s->rank),
                              " (as blob 0)"));
        }
        found[i][b] = s;
      }
    }

    // Pass 2: allocate each output once and copy every blob's payload into its slice.
    int r = 0;
    for (size_t i = 0; i < n; ++i) {
      const BlobSection& first = *found[i][0];
      if (!ragged_[i]) {
        TensorShape shape;
        if (batched) OP_REQUIRES_OK(ctx, shape.AddDimWithStatus(batch));
        for (int k = 0; k < first.rank; ++k)
          OP_REQUIRES_OK(ctx, shape.AddDimWithStatus(first.dims[k]));
        Tensor* out = nullptr;
        OP_REQUIRES_OK(ctx, ctx->allocate_output(static_cast<int>(i), shape, &out));
        for (int64_t b = 0; b < batch; ++b)
          CopySection(ctx, *found[i][b], out, b * first.num_elements);
        continue;
      }
      // Ragged: values of all blobs concatenated; row splits shifted by the values before them.
      int64_t total_values = 0;
      int64_t total_rows = 0;
      for (int64_t b = 0; b < batch; ++b) {
        total_values += found[i][b]->dims[0];
        total_rows += splits[i][b]->dims[0] - 1;
      }
      TensorShape vshape;
      OP_REQUIRES_OK(ctx, vshape.AddDimWithStatus(total_values));
      int64_t inner = 1;
      for (int k = 1; k < first.rank; ++k) {
        OP_REQUIRES_OK(ctx, vshape.AddDimWithStatus(first.dims[k]));
        inner *= first.dims[k];
      }
      Tensor* values = nullptr;
      Tensor* row_splits = nullptr;
      Tensor* batch_splits = nullptr;
      OP_REQUIRES_OK(ctx, ctx->allocate_output(static_cast<int>(i), vshape, &values));
      OP_REQUIRES_OK(ctx, ctx->allocate_output(static_cast<int>(n) + r,
                                               TensorShape({total_rows + 1}), &row_splits));
      OP_REQUIRES_OK(ctx, ctx->allocate_output(static_cast<int>(n) + num_ragged_ + r,
                                               TensorShape({batch + 1}), &batch_splits));
      auto rs = row_splits->flat<int64_t>();
      auto bs = batch_splits->flat<int64_t>();
      int64_t value_base = 0;
      int64_t row_base = 0;
      rs(0) = 0;
      bs(0) = 0;
      for (int64_t b = 0; b < batch; ++b) {
        const BlobSection& s = *found[i][b];
        const BlobSection& sp = *splits[i][b];
        CopySection(ctx, s, values, value_base * inner);
        const int64_t rows = sp.dims[0] - 1;
        for (int64_t j = 1; j <= rows; ++j)
          rs(row_base + j) = value_base + LoadI64(sp.payload + 8 * j);
        row_base += rows;
        value_base += s.dims[0];
        bs(b + 1) = row_base;
      }
      ++r;
    }
  }

 private:
  std::vector<std::string> names_;
  std::vector<BlobDType> dtypes_;
  std::vector<bool> ragged_;
  int num_ragged_ = 0;
  std::vector<PartialTensorShape> shapes_;
  bool base64_ = false;
};

}  // namespace

REGISTER_KERNEL_BUILDER(Name("MemgraphTf>UnpackBlob").Device(tensorflow::DEVICE_CPU), UnpackBlobOp);

}  // namespace memgraph_tf
