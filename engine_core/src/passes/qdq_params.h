#pragma once
// The quantization a QuantizeLinear / DequantizeLinear layer of a Q/DQ model states, read as the
// quantized layers can take it (passes/fuse_qdq.cpp): constant scales and zero points, int8, uint8
// or fp8 e4m3fn (zero point 0).
#include <kiln/builder_config.h>
#include <kiln/network.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::passes {

bool isQuantizeLinear(const Layer& layer);
bool isDequantizeLinear(const Layer& layer);

struct QdqParams {
  std::vector<float> scales;   // one (per tensor) or one per position of `axis`
  std::vector<int32_t> zeros;  // as many as scales; zeros when the layer has no zero point
  DataType type = DataType::kUndefined;  // the quantized side's type: int8, uint8 or float8e4m3
  int64_t axis = 1;            // normalised against the data's rank (when known)

  bool perTensor() const { return scales.size() == 1; }
  bool symmetric() const;      // every zero point is 0
  bool sameAs(const QdqParams& other) const;  // the same type, scales and zero points
  // Constants holding the first scale (float32 scalar) and zero point (scalar of `type`), named
  // after `base`; the per-tensor form the int8 layers take.
  std::string addScaleConstant(Network& network, const std::string& base) const;
  std::string addZeroPointConstant(Network& network, const std::string& base) const;
  Precision precision() const;  // of the layers that take it: int8 (int8, uint8) or fp8
};

// Reads the layer's constant scale and zero point into `params`; returns why the int8 layers cannot
// use them ("" when they can): a scale that is not a constant, not positive and finite, blocked
// quantization, a type other than int8 / uint8 / float8e4m3, a float8 zero point other than 0, or
// a QuantizeLinear that does not saturate.
std::string readQdqParams(const Network& network, const Layer& qdq, QdqParams& params);

}  // namespace kiln::passes
