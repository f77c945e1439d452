#include "common/attention_models.h"

#include <cmath>

namespace kiln::test {
namespace {

constexpr auto F = onnx::TensorProto::FLOAT;

void setInts(ModelBuilder& mb, const std::string& name, std::vector<int64_t> values) {
  mb.initializer(name, HostTensor::fromVector<int64_t>({int64_t(values.size())}, values));
}

}  // namespace

void addScaledDotProductAttention(ModelBuilder& mb, const std::string& q, const std::string& k, const std::string& v,
                                  const std::string& y, const std::string& prefix) {
  ModelBuilder::setInts(mb.node("Transpose", {k}, {prefix + "kt"}, prefix + "k_transpose"), "perm", {0, 1, 3, 2});
  mb.node("MatMul", {q, prefix + "kt"}, {prefix + "scores"}, prefix + "qk");
  mb.node("Mul", {prefix + "scores", "scale"}, {prefix + "scaled"}, prefix + "scale");
  ModelBuilder::setInt(mb.node("Softmax", {prefix + "scaled"}, {prefix + "p"}, prefix + "softmax"), "axis", -1);
  mb.node("MatMul", {prefix + "p", v}, {y}, prefix + "pv");
}

ModelBuilder bertSelfAttention(const AttentionBlockDims& d) {
  const int64_t width = d.width();
  ModelBuilder mb;
  mb.input("x", F, {d.batch, d.length, width});
  mb.initializer("scale", HostTensor::scalar<float>(1.0f / std::sqrt(float(d.depth))));
  setInts(mb, "heads_shape", {d.batch, d.length, d.heads, d.depth});
  setInts(mb, "flat_shape", {d.batch, d.length, width});
  uint32_t seed = 20;
  for (const std::string name : {"q", "k", "v"}) {
    mb.initializer(name + "_w", randomFloats({width, width}, seed++, -0.5f, 0.5f));
    mb.initializer(name + "_b", randomFloats({width}, seed++));
    mb.node("MatMul", {"x", name + "_w"}, {name + "_mm"}, name + "_proj");
    mb.node("Add", {name + "_mm", name + "_b"}, {name + "_lin"}, name + "_bias");
    mb.node("Reshape", {name + "_lin", "heads_shape"}, {name + "_heads"}, name + "_view");
    ModelBuilder::setInts(mb.node("Transpose", {name + "_heads"}, {name}, name + "_move"), "perm", {0, 2, 1, 3});
  }
  addScaledDotProductAttention(mb, "q", "k", "v", "o");
  ModelBuilder::setInts(mb.node("Transpose", {"o"}, {"o_rows"}, "o_move"), "perm", {0, 2, 1, 3});
  mb.node("Reshape", {"o_rows", "flat_shape"}, {"y"}, "o_flat");
  mb.output("y");
  return mb;
}

ModelBuilder multiheadAttentionExport(const AttentionBlockDims& d) {
  const int64_t width = d.width();
  ModelBuilder mb;
  mb.input("x", F, {d.batch, d.length, width});
  mb.initializer("scale", HostTensor::scalar<float>(1.0f / std::sqrt(float(d.depth))));
  mb.initializer("in_w", randomFloats({width, 3 * width}, 30, -0.5f, 0.5f));
  mb.initializer("in_b", randomFloats({3 * width}, 31));
  mb.initializer("out_w", randomFloats({width, width}, 32, -0.5f, 0.5f));
  mb.initializer("out_b", randomFloats({width}, 33));
  setInts(mb, "unflatten_shape", {d.length, d.batch, 3, width});
  setInts(mb, "zero_axis", {0});
  setInts(mb, "parts_axis", {3});
  setInts(mb, "fold_shape", {d.length, d.batch * d.heads, d.depth});
  setInts(mb, "heads_shape", {d.batch, d.heads, d.length, d.depth});
  setInts(mb, "rows_shape", {d.length * d.batch, width});
  setInts(mb, "seq_shape", {d.length, d.batch, width});
  ModelBuilder::setInts(mb.node("Transpose", {"x"}, {"xs"}, "to_seq"), "perm", {1, 0, 2});
  mb.node("MatMul", {"xs", "in_w"}, {"proj_mm"}, "in_proj");
  mb.node("Add", {"proj_mm", "in_b"}, {"proj"}, "in_bias");
  mb.node("Reshape", {"proj", "unflatten_shape"}, {"proj3"}, "unflatten");
  mb.node("Unsqueeze", {"proj3", "zero_axis"}, {"proj4"}, "unsqueeze");
  ModelBuilder::setInts(mb.node("Transpose", {"proj4"}, {"proj5"}, "parts_first"), "perm", {3, 1, 2, 0, 4});
  mb.node("Squeeze", {"proj5", "parts_axis"}, {"parts"}, "squeeze");
  for (int64_t part = 0; part < 3; ++part) {
    const std::string name = std::string(1, "qkv"[part]);
    mb.initializer(name + "_index", HostTensor::scalar<int64_t>(part));
    mb.node("Gather", {"parts", name + "_index"}, {name + "_seq"}, name + "_gather");
    mb.node("Reshape", {name + "_seq", "fold_shape"}, {name + "_folded"}, name + "_fold");
    ModelBuilder::setInts(mb.node("Transpose", {name + "_folded"}, {name + "_batch"}, name + "_move"), "perm",
                          {1, 0, 2});
    mb.node("Reshape", {name + "_batch", "heads_shape"}, {name}, name + "_heads");
  }
  addScaledDotProductAttention(mb, "q", "k", "v", "o");
  ModelBuilder::setInts(mb.node("Transpose", {"o"}, {"o_seq"}, "o_to_seq"), "perm", {2, 0, 1, 3});
  mb.node("Reshape", {"o_seq", "rows_shape"}, {"o_rows"}, "o_rows");
  ModelBuilder::setInt(mb.node("Gemm", {"o_rows", "out_w", "out_b"}, {"out_rows"}, "out_proj"), "transB", 1);
  mb.node("Reshape", {"out_rows", "seq_shape"}, {"out_seq"}, "out_unflatten");
  ModelBuilder::setInts(mb.node("Transpose", {"out_seq"}, {"attn"}, "to_batch"), "perm", {1, 0, 2});
  mb.node("Add", {"x", "attn"}, {"y"}, "residual");
  mb.output("y");
  return mb;
}

}  // namespace kiln::test
