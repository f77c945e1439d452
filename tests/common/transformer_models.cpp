#include "common/transformer_models.h"

#include <cmath>

namespace kiln::test {
namespace {

using namespace onnx_types;

class Writer {
 public:
  explicit Writer(const TransformerDims& d) : d_(d) {
    if (d.dynamicBatch)
      mb_.symbolicInput("input_ids", kInt64, {"batch", std::to_string(d.length)});
    else
      mb_.input("input_ids", kInt64, {d.batch, d.length});
    for (const auto& [name, value] : {std::pair{"half", 0.5f},
                                      {"one", 1.0f},
                                      {"three", 3.0f},
                                      {"sqrt2", std::sqrt(2.0f)},
                                      {"cubic", 0.044715f},
                                      {"sqrt_2_over_pi", std::sqrt(2.0f / 3.14159265f)},
                                      {"sqrt_depth", std::sqrt(float(d.depth))},
                                      {"sdpa_scale", 1.0f / std::sqrt(std::sqrt(float(d.depth)))},
                                      {"masked", -10000.0f}})
      mb_.initializer(name, HostTensor::scalar<float>(value));
  }
  ModelBuilder& mb() { return mb_; }
  const TransformerDims& dims() const { return d_; }

  void ints(const std::string& name, std::vector<int64_t> values) {
    mb_.initializer(name, HostTensor::fromVector<int64_t>({int64_t(values.size())}, values));
  }
  std::string node(const std::string& op, std::vector<std::string> inputs, const std::string& name) {
    mb_.node(op, std::move(inputs), {name + "_output_0"}, name);
    return name + "_output_0";
  }
  // Reshape `x` [B, L, ...] to [B, L, tail...]: the constant `whole` (all of it), or with a
  // dynamic batch Concat(x's dims 0 and 1 read by Shape, tail).
  std::string target(const std::string& x, const std::string& whole, std::vector<int64_t> tail,
                     const std::string& name) {
    if (!d_.dynamicBatch) return whole;
    const std::string dims = node("Shape", {x}, name + "/Shape");
    std::vector<std::string> pieces;
    for (const std::string axis : {"0", "1"}) {
      mb_.initializer(name + "/index" + axis, HostTensor::scalar<int64_t>(std::stoll(axis)));
      ints(name + "/axes" + axis, {0});
      pieces.push_back(node(
          "Unsqueeze", {node("Gather", {dims, name + "/index" + axis}, name + "/Gather" + axis), name + "/axes" + axis},
          name + "/Unsqueeze" + axis));
    }
    ints(name + "/tail", std::move(tail));
    pieces.push_back(name + "/tail");
    auto& concat = mb_.node("Concat", pieces, {name + "/Concat_output_0"}, name + "/Concat");
    ModelBuilder::setInt(concat, "axis", 0);
    return name + "/Concat_output_0";
  }
  std::string transpose(const std::string& x, std::vector<int64_t> perm, const std::string& name) {
    ModelBuilder::setInts(mb_.node("Transpose", {x}, {name + "_output_0"}, name), "perm", std::move(perm));
    return name + "_output_0";
  }
  // Weights scaled by 1 / sqrt(fan-in), so activations stay near one through the blocks.
  std::string weights(const std::string& name, std::vector<int64_t> dims, int64_t fanIn) {
    const float s = 1.5f / std::sqrt(float(fanIn));
    mb_.initializer(name, randomFloats(std::move(dims), seed_++, -s, s));
    return name;
  }
  std::string bias(const std::string& name, int64_t n) {
    mb_.initializer(name, randomFloats({n}, seed_++, -0.2f, 0.2f));
    return name;
  }
  // torch's Linear on a 3-D activation: MatMul by the [in, out] weights, then Add of the bias.
  std::string linear(const std::string& prefix, const std::string& x, int64_t in, int64_t out, bool biasFirst) {
    const std::string mm = node("MatMul", {x, weights(prefix + ".weight", {in, out}, in)}, prefix + "/MatMul");
    const std::string b = bias(prefix + ".bias", out);
    return node("Add", biasFirst ? std::vector{b, mm} : std::vector{mm, b}, prefix + "/Add");
  }
  // GPT-2's Conv1D: rows of the activation through Gemm with [in, out] weights, reshaped back.
  std::string conv1d(const std::string& prefix, const std::string& x, int64_t in, int64_t out,
                     const std::string& rowsShape, const std::string& outShape) {
    if (d_.conv1dAsMatMul) return linear(prefix, x, in, out, false);
    const std::string rows = node("Reshape", {x, rowsShape}, prefix + "/Reshape");
    const std::string gemm =
        node("Gemm", {rows, weights(prefix + ".weight", {in, out}, in), bias(prefix + ".bias", out)}, prefix + "/Gemm");
    return node("Reshape", {gemm, outShape}, prefix + "/Reshape_1");
  }
  std::string layerNorm(const std::string& prefix, const std::string& x) {
    const int64_t w = d_.width();
    mb_.initializer(prefix + ".weight", randomFloats({w}, seed_++, 0.5f, 1.5f));
    mb_.initializer(prefix + ".bias", randomFloats({w}, seed_++, -0.2f, 0.2f));
    auto& n = mb_.node("LayerNormalization", {x, prefix + ".weight", prefix + ".bias"}, {prefix + "_output_0"}, prefix);
    ModelBuilder::setInt(n, "axis", -1);
    ModelBuilder::setFloat(n, "epsilon", 1e-5f);
    return prefix + "_output_0";
  }
  // Softmax(Q·Kᵀ / sqrt(D) masked) · V over [B, H, L, D] heads, back to [B, L, H, D].
  std::string attention(const std::string& p, const std::string& q, const std::string& kt, const std::string& v,
                        const std::string& mask, bool causal) {
    std::string scaled;
    if (d_.sdpa)  // torch.onnx's scaled_dot_product_attention: both operands scaled, then the product
      scaled = node("MatMul", {node("Mul", {q, "sdpa_scale"}, p + "Mul"), node("Mul", {kt, "sdpa_scale"}, p + "Mul_1")},
                    p + "MatMul");
    else
      scaled = node("Div", {node("MatMul", {q, kt}, p + "MatMul"), "sqrt_depth"}, p + "Div");
    const std::string masked =
        causal ? node("Where", {mask, scaled, "masked"}, p + "Where") : node("Add", {scaled, mask}, p + "Add");
    auto& softmax = mb_.node("Softmax", {masked}, {p + "Softmax_output_0"}, p + "Softmax");
    ModelBuilder::setInt(softmax, "axis", -1);
    const std::string context = node("MatMul", {p + "Softmax_output_0", v}, p + "MatMul_1");
    return transpose(context, {0, 2, 1, 3}, p + "Transpose_3");
  }

 private:
  TransformerDims d_;
  ModelBuilder mb_;
  uint32_t seed_ = 100;
};

}  // namespace

ModelBuilder bertLikeModel(const TransformerDims& d) {
  Writer w(d);
  const int64_t width = d.width();
  w.weights("word_embeddings", {d.vocab, width}, 1);
  w.mb().initializer("position_embeddings", randomFloats({1, d.length, width}, 7, -0.5f, 0.5f));
  w.mb().initializer("mask", randomFloats({d.dynamicBatch ? 1 : d.batch, 1, 1, d.length}, 8, -3.0f, 0.0f));
  w.ints("heads_shape", {d.batch, d.length, d.heads, d.depth});
  w.ints("heads_shape_inferred", {d.batch, d.length, -1, d.depth});  // transformers' (*shape, -1, head_dim)
  w.ints("flat_shape", {d.batch, d.length, width});
  const std::string words = w.node("Gather", {"word_embeddings", "input_ids"}, "/embeddings/word_embeddings/Gather");
  std::string x =
      w.layerNorm("/embeddings/LayerNorm", w.node("Add", {words, "position_embeddings"}, "/embeddings/Add"));
  for (int64_t i = 0; i < d.layers; ++i) {
    const std::string p = "/encoder/layer." + std::to_string(i) + "/";
    const std::string self = p + "attention/self/";
    auto split = [&](const std::string& name, std::vector<int64_t> perm) {
      const std::string lin = w.linear(self + name, x, width, width, name != "value");
      const std::string heads = i % 2 ? w.target(lin, "heads_shape_inferred", {-1, d.depth}, self + name + "/target")
                                      : w.target(lin, "heads_shape", {d.heads, d.depth}, self + name + "/target");
      return w.transpose(w.node("Reshape", {lin, heads}, self + name + "/Reshape"), std::move(perm),
                         self + name + "/Transpose");
    };
    const std::string q = split("query", {0, 2, 1, 3}), kt = split("key", {0, 2, 3, 1}),
                      v = split("value", {0, 2, 1, 3});
    const std::string heads = w.attention(self, q, kt, v, "mask", false);
    const std::string context =
        w.node("Reshape", {heads, w.target(heads, "flat_shape", {width}, self + "target")}, self + "Reshape_3");
    const std::string projected = w.linear(p + "attention/output/dense", context, width, width, false);
    const std::string attended =
        w.layerNorm(p + "attention/output/LayerNorm", w.node("Add", {projected, x}, p + "attention/output/Add"));
    const std::string h = w.linear(p + "intermediate/dense", attended, width, d.mlp, true);
    const std::string erf =
        w.node("Erf", {w.node("Div", {h, "sqrt2"}, p + "intermediate/Div")}, p + "intermediate/Erf");
    const std::string gelu = w.node(
        "Mul",
        {w.node("Mul", {h, w.node("Add", {erf, "one"}, p + "intermediate/Add")}, p + "intermediate/Mul"), "half"},
        p + "intermediate/Mul_1");
    const std::string out = w.linear(p + "output/dense", gelu, d.mlp, width, true);
    x = w.layerNorm(p + "output/LayerNorm", w.node("Add", {out, attended}, p + "output/Add"));
  }
  w.mb().node("Identity", {x}, {"y"}, "output");
  w.mb().output("y");
  return w.mb();
}

ModelBuilder gpt2LikeModel(const TransformerDims& d) {
  Writer w(d);
  const int64_t width = d.width();
  w.weights("wte", {d.vocab, width}, 1);
  w.weights("wpe", {d.length, width}, 1);
  std::vector<int64_t> positions;
  for (int64_t i = 0; i < d.length; ++i) positions.push_back(i);
  w.mb().initializer("position_ids", HostTensor::fromVector<int64_t>({1, d.length}, positions));
  HostTensor causal(DataType::kBool, {1, 1, d.length, d.length});
  for (int64_t r = 0; r < d.length; ++r)
    for (int64_t c = 0; c <= r; ++c) causal.data<bool>()[r * d.length + c] = true;
  w.mb().initializer("causal_mask", causal);
  w.ints("rows_shape", {-1, width});
  w.ints("qkv_shape", {d.batch, d.length, 3 * width});
  w.ints("split_sizes", {width, width, width});
  w.ints("heads_shape", {d.batch, d.length, -1, d.depth});  // (*shape[:-1], -1, head_dim)
  w.ints("heads_shape_explicit", {d.batch, d.length, d.heads, d.depth});
  w.ints("merged_shape", {d.batch, d.length, -1});
  w.ints("hidden_shape", {d.batch, d.length, width});
  w.ints("mlp_rows_shape", {-1, d.mlp});
  w.ints("mlp_shape", {d.batch, d.length, d.mlp});
  std::string x = w.node(
      "Add",
      {w.node("Gather", {"wte", "input_ids"}, "/wte/Gather"), w.node("Gather", {"wpe", "position_ids"}, "/wpe/Gather")},
      "/Add");
  for (int64_t i = 0; i < d.layers; ++i) {
    const std::string p = "/h." + std::to_string(i) + "/";
    const std::string a = p + "attn/";
    const std::string qkv =
        w.conv1d(a + "c_attn", w.layerNorm(p + "ln_1", x), width, 3 * width, "rows_shape", "qkv_shape");
    auto& split = w.mb().node("Split", {qkv, "split_sizes"}, {a + "q", a + "k", a + "v"}, a + "Split");
    ModelBuilder::setInt(split, "axis", 2);
    const std::string heads = i % 2 ? "heads_shape_explicit" : "heads_shape";
    auto toHeads = [&](const std::string& t) {
      return w.transpose(w.node("Reshape", {a + t, heads}, a + t + "/Reshape"), {0, 2, 1, 3}, a + t + "/Transpose");
    };
    const std::string q = toHeads("q"), v = toHeads("v");
    const std::string kt = w.transpose(toHeads("k"), {0, 1, 3, 2}, a + "k/Transpose_1");
    const std::string merged =
        w.node("Reshape", {w.attention(a, q, kt, v, "causal_mask", true), i % 2 ? "hidden_shape" : "merged_shape"},
               a + "Reshape_3");
    const std::string projected = w.conv1d(a + "c_proj", merged, width, width, "rows_shape", "hidden_shape");
    const std::string attended = w.node("Add", {projected, x}, p + "Add");
    const std::string h =
        w.conv1d(p + "mlp/c_fc", w.layerNorm(p + "ln_2", attended), width, d.mlp, "rows_shape", "mlp_shape");
    const std::string m = p + "mlp/act/";
    const std::string inner = w.node(
        "Mul",
        {"sqrt_2_over_pi",
         w.node("Add", {h, w.node("Mul", {"cubic", w.node("Pow", {h, "three"}, m + "Pow")}, m + "Mul")}, m + "Add")},
        m + "Mul_1");
    const std::string gelu = w.node("Mul",
                                    {w.node("Mul", {"half", h}, m + "Mul_2"),
                                     w.node("Add", {"one", w.node("Tanh", {inner}, m + "Tanh")}, m + "Add_1")},
                                    m + "Mul_3");
    const std::string out = w.conv1d(p + "mlp/c_proj", gelu, d.mlp, width, "mlp_rows_shape", "hidden_shape");
    x = w.node("Add", {attended, out}, p + "Add_1");
  }
  const std::string last = w.layerNorm("/ln_f", x);
  w.mb().node("Identity", {last}, {"y"}, "output");
  w.mb().output("y");
  return w.mb();
}

}  // namespace kiln::test
