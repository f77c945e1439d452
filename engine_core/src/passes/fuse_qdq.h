#pragma once
// Explicit quantization: the QuantizeLinear / DequantizeLinear pairs of a Q/DQ model (as
// onnxruntime.quantization's QDQ format or pytorch-quantization export them) fused into Kiln's
// int8 layers with the model's own scales, no calibration. After propagation
// (qdq_propagation.h), a Conv / MatMul / Gemm (plain or with its fused epilogue) whose input is
// dequantized and whose weights are a DequantizeLinear of int8 (or float8e4m3fn: an fp8 layer)
// constants becomes kiln.QuantizedConv / kiln.QuantizedMatMul: it reads the 8-bit values with their
// scale and zero point, takes the weights as int8 or fp8 (per tensor or per output channel), a bias through
// DequantizeLinear dequantized once here, and a QuantizeLinear that alone reads its result as its
// output quantization; a QuantizeLinear whose 8-bit values only that layer reads is done on its
// entry. Whatever cannot be fused stays a float QuantizeLinear / DequantizeLinear layer with the
// ONNX semantics, and the outcome says why.
#include "pass.h"
#include "quantize_layers.h"

#include <map>
#include <memory>
#include <string>

namespace kiln {

struct QdqFusionOptions {
  std::map<std::string, Precision> layerPrecisions;  // a layer held to a float precision stays float
  Int8Refusal refusal;                               // the engine's backend's verdict on a quantized layer
};

struct QdqFusionOutcome {
  // Conv / MatMul / Gemm layers of the Q/DQ model that stay float, with why.
  std::map<std::string, std::string> keptFloat;
  // QuantizeLinear / DequantizeLinear layers left in the network (by layer name), with why.
  std::map<std::string, std::string> unfused;
  // ONNX Q/DQ nodes that vanished without becoming part of an int8 layer, with how.
  std::map<std::string, std::string> removed;
};

std::unique_ptr<Pass> createFuseQdqPass(QdqFusionOptions options, QdqFusionOutcome& outcome);

}  // namespace kiln
