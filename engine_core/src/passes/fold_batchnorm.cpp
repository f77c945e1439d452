// Folds an inference BatchNormalization into the Conv / ConvTranspose / Gemm before it:
//   bn(y) = (y - mean) * s + beta with s = scale / sqrt(var + eps)
// so each output channel's weights are multiplied by s and the bias becomes (b - mean) * s + beta.
// New weight constants are made (the originals may be shared); dead-code elimination drops the old.
#include "graph_utils.h"
#include "passes.h"

#include <cmath>

namespace kiln {
namespace {

using namespace passes;

struct BatchNormParams {
  std::vector<float> scale;  // s per channel
  std::vector<float> shift;  // beta - mean * s per channel
};

// The per-channel affine form of an inference BatchNormalization with constant float32 parameters.
std::optional<BatchNormParams> batchNormParams(const Network& network, const Layer& bn) {
  if (bn.inputs.size() < 5 || bn.attrInt("training_mode", 0) != 0) return std::nullopt;
  std::vector<std::vector<double>> params;
  for (size_t i = 1; i < 5; ++i) {
    const HostTensor* t = constantValue(network, bn.inputs[i]);
    if (!t || t->dtype() != DataType::kFloat32) return std::nullopt;
    params.push_back(t->toDoubleVector());
    if (params.back().size() != params.front().size()) return std::nullopt;
  }
  double eps = bn.attrFloat("epsilon", 1e-5f);
  BatchNormParams p;
  for (size_t c = 0; c < params[0].size(); ++c) {
    double s = params[0][c] / std::sqrt(params[3][c] + eps);
    p.scale.push_back(float(s));
    p.shift.push_back(float(params[1][c] - params[2][c] * s));
  }
  return p;
}

// Weights scaled per output channel; `channelOf(i)` maps a flat weight index to its channel.
template <class ChannelOf>
HostTensor scaledWeights(const HostTensor& weights, const BatchNormParams& p, ChannelOf channelOf) {
  HostTensor out = weights.clone();
  float* w = out.data<float>();
  for (int64_t i = 0; i < out.elementCount(); ++i) w[i] *= p.scale[size_t(channelOf(i))];
  return out;
}

// (b - mean) * s + beta per channel, b = 0 when the layer had no bias.
HostTensor foldedBias(const std::vector<float>* bias, const BatchNormParams& p) {
  std::vector<float> values(p.scale.size());
  for (size_t c = 0; c < values.size(); ++c) values[c] = (bias ? (*bias)[c] : 0.0f) * p.scale[c] + p.shift[c];
  return HostTensor::fromVector<float>({int64_t(values.size())}, values);
}

class FoldBatchNormPass final : public Pass {
 public:
  std::string name() const override { return "FoldBatchNorm"; }

 private:
  void apply(Network& network, PassContext& context) override {
    GraphIndex index(network);
    std::set<size_t> removed;
    for (size_t b : network.topologicalOrder()) {
      const Layer& bn = network.layers()[b];
      if (!isOp(bn, "BatchNormalization") || !bn.hasInput(0) || removed.count(b)) continue;
      bool extraOutputs = false;
      for (size_t o = 1; o < bn.outputs.size(); ++o) extraOutputs |= bn.hasOutput(o);
      auto producer = index.producer(bn.inputs[0]);
      if (extraOutputs || !producer || removed.count(*producer) || !index.onlyConsumerIs(bn.inputs[0], b)) continue;
      auto params = batchNormParams(network, bn);
      Layer& anchor = network.layers()[*producer];
      if (!params || !fold(network, anchor, *params)) continue;
      context.note("folded " + describeLayers(network, {b}) + " into " + describeLayers(network, {*producer}));
      anchor.origins = mergedOrigins(network, {*producer, b});
      anchor.outputs[0] = bn.outputs[0];
      removed.insert(b);
    }
    eraseLayers(network, removed);
  }

  // Rewrites `anchor`'s weights and bias; false when its form is not one this pass handles.
  static bool fold(Network& network, Layer& anchor, const BatchNormParams& p) {
    const int64_t channels = int64_t(p.scale.size());
    const HostTensor* w = anchor.hasInput(1) ? constantValue(network, anchor.inputs[1]) : nullptr;
    if (!w || w->dtype() != DataType::kFloat32 || w->rank() < 2 || anchor.outputs.size() != 1) return false;
    std::vector<float> bias;
    if (anchor.hasInput(2)) {
      const HostTensor* b = constantValue(network, anchor.inputs[2]);
      if (!b || b->dtype() != DataType::kFloat32 || (b->elementCount() != channels && b->elementCount() != 1))
        return false;
      for (int64_t c = 0; c < channels; ++c) bias.push_back(b->data<float>()[b->elementCount() == 1 ? 0 : c]);
    }
    HostTensor newWeights;
    if (isOp(anchor, "Conv")) {
      if (w->dim(0) != channels) return false;
      int64_t perChannel = w->elementCount() / channels;
      newWeights = scaledWeights(*w, p, [&](int64_t i) { return i / perChannel; });
    } else if (isOp(anchor, "ConvTranspose")) {
      // W is [C, M/group, k...]; output channel = group index * M/group + the second index.
      int64_t group = anchor.attrInt("group", 1), perGroup = w->dim(1);
      if (perGroup * group != channels || w->dim(0) % group != 0) return false;
      int64_t kernel = w->elementCount() / (w->dim(0) * perGroup), inPerGroup = w->dim(0) / group;
      newWeights = scaledWeights(*w, p, [&](int64_t i) {
        int64_t inChannel = i / (perGroup * kernel), j = (i / kernel) % perGroup;
        return (inChannel / inPerGroup) * perGroup + j;
      });
    } else if (isOp(anchor, "Gemm")) {
      // Columns of op(B) are the channels; C must be per-column for the fold to stay a Gemm.
      bool transB = anchor.attrInt("transB", 0) != 0;
      if (w->rank() != 2 || (transB ? w->dim(0) : w->dim(1)) != channels) return false;
      float beta = anchor.attrFloat("beta", 1.0f);
      for (auto& v : bias) v *= beta;
      int64_t cols = w->dim(1);
      newWeights = scaledWeights(*w, p, [&](int64_t i) { return transB ? i / cols : i % cols; });
      anchor.attributes["beta"] = 1.0f;
    } else {
      return false;
    }
    std::string weightName = uniqueTensorName(network, anchor.inputs[1] + "_bn_folded");
    network.addConstant(weightName, newWeights);
    std::string biasName = uniqueTensorName(network, anchor.name + "_bn_folded_bias");
    network.addConstant(biasName, foldedBias(bias.empty() ? nullptr : &bias, p));
    anchor.inputs[1] = weightName;
    if (anchor.inputs.size() < 3) anchor.inputs.resize(3);
    anchor.inputs[2] = biasName;
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> createFoldBatchNormPass() { return std::make_unique<FoldBatchNormPass>(); }

}  // namespace kiln
