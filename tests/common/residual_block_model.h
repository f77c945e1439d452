#pragma once
// A ResNet bottleneck for the int8 residual tests (tests/builder/int8_build_test.cpp,
// tests/gpu/quantized_agreement_test.cpp): x [N, C, H, W] -> conv0 3x3 (+ bias, Relu) -> b of
// `blockChannels`; conv1 1x1 to half as many (Relu), conv2 3x3 (Relu), conv3 1x1 back, + b, Relu ->
// out; conv4 1x1 -> y. b is read by conv1 as its input and by conv3 (the Add fused in) as its
// residual. With `floatReader` a Sigmoid of b is a second output "g"; with `shortcutConv` the Add
// takes a 1x1 convolution of b ("shortcut", as a ResNet stage's first block) in place of b.
#include "common/test_models.h"

#include <string>
#include <vector>

namespace kiln::test {

inline std::string residualBlockModel(const std::vector<int64_t>& x, int64_t blockChannels, bool floatReader = false,
                                      bool shortcutConv = false) {
  using namespace onnx_types;
  const int64_t width = blockChannels / 2;
  ModelBuilder mb(17);
  mb.input("x", kFloat, x).output("y");
  mb.initializer("w0", randomFloats({blockChannels, x[1], 3, 3}, 61, -0.3f, 0.3f))
      .initializer("b0", randomFloats({blockChannels}, 62));
  mb.initializer("w1", randomFloats({width, blockChannels, 1, 1}, 63, -0.4f, 0.4f));
  mb.initializer("w2", randomFloats({width, width, 3, 3}, 64, -0.3f, 0.3f));
  mb.initializer("w3", randomFloats({blockChannels, width, 1, 1}, 65, -0.4f, 0.4f));
  mb.initializer("w4", randomFloats({blockChannels, blockChannels, 1, 1}, 66, -0.4f, 0.4f));
  ModelBuilder::setInts(mb.node("Conv", {"x", "w0", "b0"}, {"c0"}, "conv0"), "pads", {1, 1, 1, 1});
  mb.node("Relu", {"c0"}, {"b"}, "relu0");
  mb.node("Conv", {"b", "w1"}, {"c1"}, "conv1");
  mb.node("Relu", {"c1"}, {"r1"}, "relu1");
  ModelBuilder::setInts(mb.node("Conv", {"r1", "w2"}, {"c2"}, "conv2"), "pads", {1, 1, 1, 1});
  mb.node("Relu", {"c2"}, {"r2"}, "relu2");
  mb.node("Conv", {"r2", "w3"}, {"c3"}, "conv3");
  if (shortcutConv) {
    mb.initializer("wd", randomFloats({blockChannels, blockChannels, 1, 1}, 67, -0.4f, 0.4f));
    mb.node("Conv", {"b", "wd"}, {"d"}, "shortcut");
  }
  mb.node("Add", {"c3", shortcutConv ? "d" : "b"}, {"s"}, "add");
  mb.node("Relu", {"s"}, {"out"}, "relu3");
  mb.node("Conv", {"out", "w4"}, {"y"}, "conv4");
  if (floatReader) {
    mb.node("Sigmoid", {"b"}, {"g"}, "sigmoid");
    mb.output("g");
  }
  return mb.bytes();
}

}  // namespace kiln::test
