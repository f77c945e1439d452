#pragma once
// ONNX models with many op types, built in code for the view tests, the screenshot test and the
// layout benchmark. Every tensor carries its shape in value_info, so the graph shows shapes even
// where Kiln has no op schema yet (the views import with shape inference off).
#include <kiln/network.h>

#include <memory>
#include <string>

namespace kiln::test {

struct SampleNetworkOptions {
  int stages = 2;           // ResNet stages ("/layer1", "/layer2", ...)
  int blocksPerStage = 2;   // residual blocks per stage ("/layer1/0", "/layer1/1", ...): 7 layers each
  int channels = 16;        // channels of the first stage (doubles every stage)
  bool withHead = true;     // attention-style head: MatMul, Transpose, Reshape, Softmax, LayerNorm, Q/DQ, If
  bool blockNames = true;   // false: flat node names ("layer1_0_conv1_Conv"), so the views find no blocks
};

// Serialized ModelProto.
std::string sampleNetworkOnnx(const SampleNetworkOptions& options = {});
// The same model imported the way Kiln Studio does when op schemas are missing.
std::shared_ptr<Network> sampleNetwork(const SampleNetworkOptions& options = {});
// Layers in the model: 3 (stem) + 7 per block + 2 per downsampling stage + head.
int sampleNetworkLayerCount(const SampleNetworkOptions& options);

}  // namespace kiln::test
