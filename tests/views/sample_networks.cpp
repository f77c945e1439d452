#include "sample_networks.h"

#include "common/test_models.h"

#include <kiln/onnx_importer.h>

#include <algorithm>

namespace kiln::test {
namespace {

using namespace kiln::test::onnx_types;
constexpr int kHeadLayers = 15;  // top-level layers of head(); the If bodies add two more

class SampleBuilder {
 public:
  explicit SampleBuilder(const SampleNetworkOptions& options) : options_(options) {}

  std::string build() {
    builder_.model().set_producer_name("kiln-view-tests");
    builder_.model().mutable_graph()->set_name("resnet_like");
    int64_t channels = options_.channels, size = 56;
    builder_.input("input", kFloat, {1, 3, size * 4, size * 4});
    std::string x = conv("/conv1/Conv", "input", 3, channels, 7, 2, size * 2);
    x = batchNorm("/bn1/BatchNormalization", x, channels, size * 2);
    x = unary("Relu", "/relu/Relu", x, {1, channels, size * 2, size * 2});
    auto& pool = builder_.node("MaxPool", {x}, {"/maxpool/MaxPool_output_0"}, "/maxpool/MaxPool");
    ModelBuilder::setInts(pool, "kernel_shape", {3, 3});
    ModelBuilder::setInts(pool, "strides", {2, 2});
    ModelBuilder::setInts(pool, "pads", {1, 1, 1, 1});
    x = shaped(pool.output(0), {1, channels, size, size});
    for (int stage = 0; stage < options_.stages; ++stage) {
      const int64_t outChannels = stage == 0 ? channels : channels * 2;
      const int64_t outSize = stage == 0 ? size : std::max<int64_t>(1, size / 2);
      for (int block = 0; block < options_.blocksPerStage; ++block) {
        const bool downsample = block == 0 && stage > 0;
        x = residualBlock("/layer" + std::to_string(stage + 1) + "/" + std::to_string(block), x, channels,
                          outChannels, downsample ? size : outSize, outSize);
        channels = outChannels;
      }
      size = outSize;
    }
    if (options_.withHead) x = head(x, channels, size);
    builder_.output(x, kFloat, {1, 10}, true);
    if (!options_.blockNames)
      for (auto& node : *builder_.model().mutable_graph()->mutable_node()) node.set_name(flatName(node.name()));
    return builder_.bytes();
  }

 private:
  std::string shaped(const std::string& name, std::vector<int64_t> dims, int32_t type = kFloat) {
    auto* info = builder_.model().mutable_graph()->add_value_info();
    info->set_name(name);
    auto* tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(type);
    for (int64_t d : dims) tensor->mutable_shape()->add_dim()->set_dim_value(d);
    return name;
  }

  // "/layer1/0/conv1/Conv" -> "layer1_0_conv1_Conv".
  static std::string flatName(std::string name) {
    if (!name.empty() && name[0] == '/') name.erase(0, 1);
    std::replace(name.begin(), name.end(), '/', '_');
    return name;
  }

  std::string weight(const std::string& name, std::vector<int64_t> dims) {
    builder_.initializer(name, randomFloats(std::move(dims), seed_++, -0.5f, 0.5f));
    return name;
  }

  std::string conv(const std::string& name, const std::string& x, int64_t in, int64_t out, int64_t kernel,
                   int64_t stride, int64_t outSize) {
    const std::string prefix = name.substr(0, name.rfind('/'));
    const std::string w = weight(prefix + ".weight", {out, in, kernel, kernel});
    const std::string b = weight(prefix + ".bias", {out});
    auto& node = builder_.node("Conv", {x, w, b}, {name + "_output_0"}, name);
    ModelBuilder::setInts(node, "kernel_shape", {kernel, kernel});
    ModelBuilder::setInts(node, "strides", {stride, stride});
    ModelBuilder::setInts(node, "pads", {kernel / 2, kernel / 2, kernel / 2, kernel / 2});
    ModelBuilder::setInts(node, "dilations", {1, 1});
    return shaped(node.output(0), {1, out, outSize, outSize});
  }

  std::string batchNorm(const std::string& name, const std::string& x, int64_t channels, int64_t size) {
    const std::string prefix = name.substr(0, name.rfind('/'));
    std::vector<std::string> inputs = {x};
    for (const char* part : {".weight", ".bias", ".running_mean", ".running_var"})
      inputs.push_back(weight(prefix + part, {channels}));
    auto& node = builder_.node("BatchNormalization", inputs, {name + "_output_0"}, name);
    ModelBuilder::setFloat(node, "epsilon", 1e-5f);
    return shaped(node.output(0), {1, channels, size, size});
  }

  std::string unary(const std::string& op, const std::string& name, const std::string& x, std::vector<int64_t> dims) {
    auto& node = builder_.node(op, {x}, {name + "_output_0"}, name);
    return shaped(node.output(0), std::move(dims));
  }

  std::string binary(const std::string& op, const std::string& name, const std::string& a, const std::string& b,
                     std::vector<int64_t> dims) {
    auto& node = builder_.node(op, {a, b}, {name + "_output_0"}, name);
    return shaped(node.output(0), std::move(dims));
  }

  std::string residualBlock(const std::string& path, const std::string& x, int64_t in, int64_t out, int64_t inSize,
                            int64_t outSize) {
    const int64_t stride = inSize == outSize ? 1 : 2;
    std::string y = conv(path + "/conv1/Conv", x, in, out, 3, stride, outSize);
    y = batchNorm(path + "/bn1/BatchNormalization", y, out, outSize);
    y = unary("Relu", path + "/relu/Relu", y, {1, out, outSize, outSize});
    y = conv(path + "/conv2/Conv", y, out, out, 3, 1, outSize);
    y = batchNorm(path + "/bn2/BatchNormalization", y, out, outSize);
    std::string shortcut = x;
    if (stride != 1 || in != out) {
      shortcut = conv(path + "/downsample/0/Conv", x, in, out, 1, stride, outSize);
      shortcut = batchNorm(path + "/downsample/1/BatchNormalization", shortcut, out, outSize);
    }
    y = binary("Add", path + "/Add", y, shortcut, {1, out, outSize, outSize});
    return unary("Relu", path + "/relu_1/Relu", y, {1, out, outSize, outSize});
  }

  // Pooling, a token projection with attention-like reshapes, normalization, quantization and a
  // data-dependent If: one of each remaining op category.
  std::string head(const std::string& x, int64_t channels, int64_t size) {
    const int64_t tokens = size * size;
    builder_.initializer("/head/shape", HostTensor::fromVector<int64_t>({3}, {1, channels, tokens}));
    std::string t = binary("Reshape", "/head/Reshape", x, "/head/shape", {1, channels, tokens});
    auto& transpose = builder_.node("Transpose", {t}, {"/head/Transpose_output_0"}, "/head/Transpose");
    ModelBuilder::setInts(transpose, "perm", {0, 2, 1});
    t = shaped(transpose.output(0), {1, tokens, channels});
    const std::string q = binary("MatMul", "/head/q/MatMul", t, weight("/head/q.weight", {channels, channels}),
                                 {1, tokens, channels});
    auto& keys = builder_.node("Transpose", {t}, {"/head/k/Transpose_output_0"}, "/head/k/Transpose");
    ModelBuilder::setInts(keys, "perm", {0, 2, 1});
    shaped(keys.output(0), {1, channels, tokens});
    std::string scores = binary("MatMul", "/head/scores/MatMul", q, keys.output(0), {1, tokens, tokens});
    auto& softmax = builder_.node("Softmax", {scores}, {"/head/Softmax_output_0"}, "/head/Softmax");
    ModelBuilder::setInt(softmax, "axis", -1);
    scores = shaped(softmax.output(0), {1, tokens, tokens});
    t = binary("MatMul", "/head/context/MatMul", scores, t, {1, tokens, channels});
    auto& norm = builder_.node("LayerNormalization",
                               {t, weight("/head/norm.weight", {channels}), weight("/head/norm.bias", {channels})},
                               {"/head/norm/LayerNormalization_output_0"}, "/head/norm/LayerNormalization");
    ModelBuilder::setInt(norm, "axis", -1);
    ModelBuilder::setFloat(norm, "epsilon", 1e-5f);
    t = shaped(norm.output(0), {1, tokens, channels});
    auto& mean = builder_.node("ReduceMean", {t}, {"/head/ReduceMean_output_0"}, "/head/ReduceMean");
    ModelBuilder::setInts(mean, "axes", {1});
    ModelBuilder::setInt(mean, "keepdims", 0);
    t = shaped(mean.output(0), {1, channels});
    builder_.initializer("/head/scale", HostTensor::fromVector<float>({}, {0.05f}));
    builder_.initializer("/head/zero_point", HostTensor::fromVector<int8_t>({}, {0}));
    auto& quantize = builder_.node("QuantizeLinear", {t, "/head/scale", "/head/zero_point"},
                                   {"/head/QuantizeLinear_output_0"}, "/head/QuantizeLinear");
    shaped(quantize.output(0), {1, channels}, onnx::TensorProto::INT8);
    t = binary("DequantizeLinear", "/head/DequantizeLinear", quantize.output(0), "/head/scale", {1, channels});
    auto& gemm = builder_.node("Gemm", {t, weight("/fc.weight", {10, channels}), weight("/fc.bias", {10})},
                               {"/fc/Gemm_output_0"}, "/fc/Gemm");
    ModelBuilder::setInt(gemm, "transB", 1);
    const std::string logits = shaped(gemm.output(0), {1, 10});
    return branchOnConfidence(logits);
  }

  // If the top logit is confident, Softmax; else Sigmoid (a toy, but a real If with two bodies).
  std::string branchOnConfidence(const std::string& logits) {
    auto& top = builder_.node("ReduceMax", {logits}, {"/gate/ReduceMax_output_0"}, "/gate/ReduceMax");
    ModelBuilder::setInt(top, "keepdims", 0);
    shaped(top.output(0), {});
    builder_.initializer("/gate/threshold", HostTensor::fromVector<float>({}, {0.5f}));
    const std::string condition = binary("Greater", "/gate/Greater", top.output(0), "/gate/threshold", {});
    shaped(condition, {}, kBool);
    auto& branch = builder_.node("If", {condition}, {"probabilities"}, "/gate/If");
    auto body = [&](const char* attribute, const char* op) {
      auto* a = branch.add_attribute();
      a->set_name(attribute);
      a->set_type(onnx::AttributeProto::GRAPH);
      onnx::GraphProto* graph = a->mutable_g();
      graph->set_name(attribute);
      auto* node = graph->add_node();
      node->set_op_type(op);
      node->set_name(std::string("/gate/") + op);
      node->add_input(logits);
      node->add_output(std::string(op) + "_probabilities");
      auto* out = graph->add_output();
      out->set_name(node->output(0));
      out->mutable_type()->mutable_tensor_type()->set_elem_type(kFloat);
    };
    body("then_branch", "Softmax");
    body("else_branch", "Sigmoid");
    return "probabilities";
  }

  SampleNetworkOptions options_;
  ModelBuilder builder_{17};
  uint32_t seed_ = 1;
};

}  // namespace

std::string sampleNetworkOnnx(const SampleNetworkOptions& options) { return SampleBuilder(options).build(); }

std::shared_ptr<Network> sampleNetwork(const SampleNetworkOptions& options) {
  return OnnxImporter({.inferShapes = false, .expandFunctions = false}).importBytes(sampleNetworkOnnx(options));
}

int sampleNetworkLayerCount(const SampleNetworkOptions& options) {
  const int downsamplingStages = std::max(0, options.stages - 1);
  return 4 + 7 * options.stages * options.blocksPerStage + 2 * downsamplingStages + (options.withHead ? kHeadLayers : 0);
}

}  // namespace kiln::test
