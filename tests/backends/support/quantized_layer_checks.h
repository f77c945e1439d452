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

// A kiln.QuantizedConv of `precision` (nullptr: int8) over x [2, 4, 9, 7] with weights `w` [6, 2,
// 3, 3] of that precision's type, scales `xScale` and `wScales` (6), a random bias and residual,
// group 2, odd pads, stride 2 and LeakyRelu, against kiln.FusedConv on `xSeen` and `wSeen`: what
// the quantized layer should see of X and W, as floats.
void expectQuantizedConvMatches(const char* precision, const HostTensor& x, const HostTensor& w, float xScale,
                                const std::vector<float>& wScales, const HostTensor& xSeen, const HostTensor& wSeen);

}  // namespace kiln::test
