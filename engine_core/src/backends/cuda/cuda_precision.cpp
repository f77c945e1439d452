#include "cuda_precision.h"

#include <kiln/error.h>

#include "../../builder/conversion_layers.h"

namespace kiln::cuda {

const char* precisionTag(Precision precision) {
  switch (precision) {
    case Precision::kTF32:
      return "tf32";
    case Precision::kFP16:
      return "fp16";
    case Precision::kBF16:
      return "bf16";
    default:
      return "fp32";
  }
}

Precision tacticPrecision(const Layer& layer, const Tactic& tactic) {
  for (Precision p : {Precision::kFP32, Precision::kTF32, Precision::kFP16, Precision::kBF16}) {
    const std::string tag = std::string(".") + precisionTag(p);
    const size_t at = tactic.id.find(tag);
    if (at != std::string::npos && (at + tag.size() == tactic.id.size() || tactic.id[at + tag.size()] == '.')) return p;
  }
  throw Error(ErrorCode::kInvalidArgument,
              layer.describe() + ": the CUDA backend has no tactic '" + tactic.id +
                  "' (it names no precision); the plan was made by another Kiln: rebuild it");
}

DataType storageOf(DataType declared, Precision precision) {
  return declared == DataType::kFloat32 ? storageTypeOf(precision) : declared;
}

}  // namespace kiln::cuda
