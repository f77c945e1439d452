#pragma once
// Element types the layout kernels are instantiated for. Data movement only needs the element's
// size, so every fixed-size dtype maps to an unsigned integer of its width; strings keep their type.
#include <kernels/cpu/common/numeric_types.h>

#include <cstdint>
#include <string>

#define KILN_FOR_EACH_STORAGE_TYPE(X) X(uint8_t) X(uint16_t) X(uint32_t) X(uint64_t) X(std::string)

#define KILN_FOR_EACH_NUMERIC_TYPE(X)                                                                         \
  X(float) X(double) X(::kiln::kernels::Float16) X(::kiln::kernels::BFloat16) X(int8_t) X(int16_t) X(int32_t) \
      X(int64_t) X(uint8_t) X(uint16_t) X(uint32_t) X(uint64_t)

namespace kiln::kernels {

// Elements handed to one parallelFor task when a task copies whole rows.
inline constexpr int64_t kCopyGrainElements = 16384;

}  // namespace kiln::kernels
