// Registration of MemgraphTf>UnpackBlob: decodes named sections of memgraph-tf blobs (format v1,
// docs/blob-format.md) into tensors. The Python wrapper is memgraph_tf.ops.unpack_blob; the op has
// no gradient (registered in Python with tf.no_gradient).
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tensorflow/core/framework/common_shape_fns.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace memgraph_tf {

using ::tensorflow::PartialTensorShape;
using ::tensorflow::shape_inference::DimensionHandle;
using ::tensorflow::shape_inference::InferenceContext;
using ::tensorflow::shape_inference::ShapeHandle;

namespace {

// An InvalidArgument status whose message is the concatenation of `parts`.
template <typename... Parts>
absl::Status Invalid(const Parts&... parts) {
  return absl::InvalidArgumentError(absl::StrCat(parts...));
}

absl::Status UnpackBlobShape(InferenceContext* c) {
  ShapeHandle blobs;
  TF_RETURN_IF_ERROR(c->WithRankAtMost(c->input(0), 1, &blobs));
  std::vector<std::string> names;
  TF_RETURN_IF_ERROR(c->GetAttr("names", &names));
  std::vector<tensorflow::DataType> dtypes;
  TF_RETURN_IF_ERROR(c->GetAttr("dtypes", &dtypes));
  std::vector<bool> ragged;
  TF_RETURN_IF_ERROR(c->GetAttr("ragged", &ragged));
  std::vector<PartialTensorShape> shapes;
  TF_RETURN_IF_ERROR(c->GetAttr("shapes", &shapes));
  int num_ragged = 0;
  TF_RETURN_IF_ERROR(c->GetAttr("num_ragged", &num_ragged));
  if (dtypes.size() != names.size()) {
    return Invalid("dtypes: expected ", names.size(), " entries (one per name), got ",
                   dtypes.size());
  }
  if (!ragged.empty() && ragged.size() != names.size()) {
    return Invalid("ragged: expected 0 or ", names.size(), " entries (one per name), got ",
                   ragged.size());
  }
  if (!shapes.empty() && shapes.size() != names.size()) {
    return Invalid("shapes: expected 0 or ", names.size(), " entries (one per name), got ",
                   shapes.size());
  }
  int counted = 0;
  for (bool r : ragged) counted += r ? 1 : 0;
  if (counted != num_ragged) {
    return Invalid("num_ragged: expected ", counted, " (the true entries of ragged), got ",
                   num_ragged);
  }
  const bool rank_known = c->RankKnown(blobs);
  const bool batched = rank_known && c->Rank(blobs) == 1;
  DimensionHandle batch = batched ? c->Dim(blobs, 0) : c->MakeDim(1);
  int r = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    const bool is_ragged = !ragged.empty() && ragged[i];
    ShapeHandle section = c->UnknownShape();
    if (!shapes.empty()) {
      TF_RETURN_IF_ERROR(c->MakeShapeFromPartialTensorShape(shapes[i], &section));
    }
    if (is_ragged) {
      // Values are the concatenation of all rows: [total, inner...].
      ShapeHandle values = section;
      if (c->RankKnown(section)) {
        if (c->Rank(section) < 1) {
          return Invalid("shapes[", i, "]: expected rank >= 1 for ragged section '", names[i],
                         "', got rank 0");
        }
        TF_RETURN_IF_ERROR(c->ReplaceDim(section, 0, c->UnknownDim(), &values));
      }
      c->set_output(static_cast<int>(i), rank_known ? values : c->UnknownShape());
      c->set_output(static_cast<int>(names.size()) + r, c->Vector(c->UnknownDim()));
      DimensionHandle outer;
      TF_RETURN_IF_ERROR(c->Add(batch, 1, &outer));
      c->set_output(static_cast<int>(names.size()) + num_ragged + r,
                    c->Vector(rank_known ? outer : c->UnknownDim()));
      ++r;
    } else if (!rank_known) {
      c->set_output(static_cast<int>(i), c->UnknownShape());
    } else if (batched) {
      ShapeHandle out;
      TF_RETURN_IF_ERROR(c->Concatenate(c->Vector(batch), section, &out));
      c->set_output(static_cast<int>(i), out);
    } else {
      c->set_output(static_cast<int>(i), section);
    }
  }
  return absl::OkStatus();
}

}  // namespace

REGISTER_OP("MemgraphTf>UnpackBlob")
    .Input("blobs: string")
    .Output("values: dtypes")
    .Output("row_splits: num_ragged * int64")
    .Output("batch_splits: num_ragged * int64")
    .Attr("names: list(string) >= 1")
    .Attr("dtypes: list({bool, int32, int64, float, double, string}) >= 1")
    .Attr("ragged: list(bool) = []")
    .Attr("num_ragged: int >= 0 = 0")
    .Attr("shapes: list(shape) = []")
    .Attr("encoding: {'raw', 'base64'} = 'raw'")
    .SetShapeFn(UnpackBlobShape)
    .Doc(R"doc(
Decodes named sections of memgraph-tf blobs (format v1, docs/blob-format.md).

blobs: a scalar blob, or a vector of blobs to decode and stack along a new leading dimension.
values: per name, the section's values; for a vector of blobs stacked along dimension 0 (every blob
  must have the same shape). For a ragged name, the flat values of all rows of all blobs.
row_splits: per ragged name, the row splits of the values (all blobs' rows, concatenated).
batch_splits: per ragged name, the splits of rows into blobs ([0, nrows] for a scalar blob).
names: the sections to decode.
dtypes: the dtype each section must have (float = float32, double = float64).
ragged: per name, whether it is decoded as ragged with its NAME.row_splits section (empty: none).
num_ragged: the number of true entries of ragged.
shapes: optional per-name section shapes (unknown dims allowed); checked against every blob.
encoding: 'raw' (the blobs' bytes) or 'base64' (base64url text, padded or not, as blobs leave
  Memgraph: decoded inside the op, so no decode_base64 step and no intermediate string tensor).
)doc");

}  // namespace memgraph_tf
