#pragma once
// Each op family registers its schemas here (engine_core/src/ops/<family>.cpp) and its CPU kernels
// in engine_core/src/backends/cpu/ops/<family>.cpp.
namespace kiln {
class OpSchemaRegistry;
class CpuKernelRegistry;

#define KILN_OP_FAMILIES(X) \
  X(Elementwise)            \
  X(ConvPool)               \
  X(Normalization)          \
  X(MatMulQuant)            \
  X(ReductionSoftmax)       \
  X(TensorShape)            \
  X(ControlSequence)        \
  X(Recurrent)              \
  X(SignalMisc)             \
  X(Fused)                  \
  X(Quantized)              \
  X(WeightOnly)             \
  X(Conversion)             \
  X(Collective)

#define KILN_DECLARE_FAMILY(Family)                        \
  void register##Family##Schemas(OpSchemaRegistry& registry); \
  void register##Family##CpuKernels(CpuKernelRegistry& registry);
KILN_OP_FAMILIES(KILN_DECLARE_FAMILY)
#undef KILN_DECLARE_FAMILY

}  // namespace kiln
