#pragma once
// Which precision a CUDA step computes in. Library tactics name the layer's precision
// ("cublaslt.gemm.tf32.h0"): FP32 and TF32 activations are stored alike, so only the tactic tells
// the step which math to use, and which type to prepare the weights in before the first launch.
#include <kiln/builder_config.h>
#include <kiln/data_type.h>

#include "../backend.h"

namespace kiln::cuda {

const char* precisionTag(Precision precision);  // "fp32", "tf32", "fp16", "bf16"
// The precision a tactic id names; throws kInvalidArgument naming the layer when it names none
// (a plan from another Kiln: rebuild it).
Precision tacticPrecision(const Layer& layer, const Tactic& tactic);
// The storage type of a tensor declared `declared` in a layer computed in `precision`: float32
// activations are stored in the precision's type, others as declared (the builder's rule).
DataType storageOf(DataType declared, Precision precision);

}  // namespace kiln::cuda
