// A 2-D convolution of few input channels (with its fused epilogue, no residual) whose output only
// a MaxPool reads -> one kiln.FusedConvPool, so the convolution's output is never stored: ResNet's
// stem (7x7 stride 2, 3 -> 64) and its 3x3 stride 2 pool, 205 MB written and read again at batch
// 128 in fp16. Only for the CUDA backend, whose small-channel kernel pools in its epilogue (other
// backends and tactics would run the two layers apart anyway), and only where that kernel's
// static limits hold (at most 8 input channels, output channels a multiple of 8); where it still
// refuses (float32, a wide output), the CUDA backend runs the convolution, then the pool. Builds
// without fp16 / bf16 keep the two apart: their convolution runs channels-last on cuDNN's graph
// (TF32), which the split form's convolution API does not.
#include "../ops/fused.h"
#include "graph_utils.h"
#include "passes.h"

namespace kiln {
namespace {

using namespace passes;

constexpr int64_t kMaxInputChannels = 8;  // kernels/cuda/conv/small_channel_conv.h's limit

// Whether tensor `name` is float32 [N, C, H, W] with C known and within `maxChannels` (and, when
// `multipleOf` > 1, a multiple of it).
bool fourDimsWithChannels(const Network& network, const std::string& name, int64_t maxChannels, int64_t multipleOf) {
  const Tensor* t = network.findTensor(name);
  if (!t || t->dtype != DataType::kFloat32 || !t->shape.hasRank() || t->shape.rank() != 4 || !t->shape[1].isKnown())
    return false;
  const int64_t channels = t->shape[1].value();
  return channels >= 1 && channels <= maxChannels && channels % multipleOf == 0;
}

class FuseConvMaxPoolPass final : public Pass {
 public:
  std::string name() const override { return "FuseConvMaxPool"; }

 private:
  void apply(Network& network, PassContext& context) override {
    if (context.backend != BackendKind::kCuda || !context.halfPrecision) return;
    GraphIndex index(network);
    Rewriter rewriter(network);
    for (size_t i : network.topologicalOrder()) {
      const Layer& conv = network.layers()[i];
      const bool fusedConv = conv.domain == fused::kDomain && conv.opType == fused::kFusedConv &&
                             conv.attrString(fused::kBase, "") == "Conv";
      if (!(fusedConv || isOp(conv, "Conv")) || conv.inputs.size() < 2 || conv.inputs.size() > 3 ||
          conv.outputs.size() != 1 || conv.attrInt("group", 1) != 1 || !constantValue(network, conv.inputs[1]))
        continue;
      if (!fourDimsWithChannels(network, conv.inputs[0], kMaxInputChannels, 1) ||
          !fourDimsWithChannels(network, conv.outputs[0], int64_t(1) << 30, 8))
        continue;
      const auto reader = index.soleConsumer(conv.outputs[0]);
      if (!reader || index.isGraphOutput(conv.outputs[0])) continue;
      const Layer& pool = network.layers()[*reader];
      if (!isOp(pool, "MaxPool") || pool.outputs.size() != 1 || pool.inputs.size() != 1) continue;
      const std::vector<size_t> group{i, *reader};
      if (rewriter.claimed(group)) continue;

      Layer fusedLayer = conv;
      fusedLayer.domain = fused::kDomain;
      fusedLayer.opType = fused::kFusedConvPool;
      if (!fusedConv) fusedLayer.attributes[fused::kBase] = std::string("Conv");
      for (const auto& [key, value] : pool.attributes) fusedLayer.attributes[fused::kPoolPrefix + key] = value;
      fusedLayer.attributes[fused::kPoolOpset] = pool.opsetVersion;
      fusedLayer.outputs = pool.outputs;
      fusedLayer.origins.clear();
      if (!context.supports(fusedLayer)) continue;
      context.note("fused " + describeLayers(network, group) + " into " + std::string(fused::kDomain) + "." +
                   fused::kFusedConvPool);
      rewriter.replace(group, std::move(fusedLayer));
    }
    rewriter.commit();
  }
};

}  // namespace

std::unique_ptr<Pass> createFuseConvMaxPoolPass() { return std::make_unique<FuseConvMaxPoolPass>(); }

}  // namespace kiln
