#pragma once
// Device types of the copy units of copy_unit.h (uint2 / uint4 move 8 / 16 bytes in one access).
#include "copy_unit.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace kiln::kernels::cuda {

template <class Fn>
cudaError_t dispatchCopyUnit(int unitBytes, Fn&& fn) {
  switch (unitBytes) {
    case 1: return fn(uint8_t{});
    case 2: return fn(uint16_t{});
    case 4: return fn(uint32_t{});
    case 8: return fn(uint2{});
    case 16: return fn(uint4{});
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace kiln::kernels::cuda
