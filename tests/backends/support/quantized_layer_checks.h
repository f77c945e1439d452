#pragma once
// What the tests of the quantized layers' CPU kernels share (quantized_kernels_test.cpp for int8,
// small_float_layers_test.cpp for fp8 and fp4): one-layer networks run on the reference executor.
#include <kiln/host_tensor.h>
#include <kiln/network.h>

#include <map>
#include <string>
#include <vector>

namespace kiln::test {

// Adds `inputs` as graph inputs of `network` (whose layer writes "y"), runs it, returns y.
HostTensor runOne(Network& network, const std::map<std::string, HostTensor>& inputs);

// A layer named "layer" writing "y": domain kiln for Quantized* and Fused* ops, with the
// quantized layers' precision attribute when `precision` is given.
Layer oneLayer(const std::string& op, std::vector<std::string> inputs, const char* precision = nullptr);

// Every element within 1e-5 * (1 + the largest |expected|): float sums in another order.
void expectClose(const HostTensor& actual, const HostTensor& expected);

}  // namespace kiln::test
