// CPU kernels of Cast and CastLike.
#include "elementwise.h"

#include "../dispatch.h"

#include <kernels/cpu/elementwise/cast.h>

#include <string>
#include <type_traits>

namespace kiln {
namespace {

// Converts input 0 to the type the schema inferred for output 0 (Cast's `to`, CastLike's input 1).
void cast(KernelContext& ctx) {
  const HostTensor& in = ctx.input(0);
  const int64_t n = in.elementCount();
  dispatchAny(in.dtype(), [&](auto sourceTag) {
    using Src = decltype(sourceTag);
    dispatchAny(ctx.inferredOutput(0).dtype, [&](auto targetTag) {
      using Dst = decltype(targetTag);
      if constexpr (std::is_same_v<Src, Dst>) {
        ctx.setOutput(0, in);  // nothing to convert: share the buffer
      } else if constexpr (std::is_same_v<Src, std::string>) {
        kernels::castFromString<Dst>(in.data<std::string>(), ctx.allocateOutput(0).data<Dst>(), n);
      } else if constexpr (std::is_same_v<Dst, std::string>) {
        kernels::castToString<Src>(in.data<Src>(), ctx.allocateOutput(0).data<std::string>(), n);
      } else {
        kernels::cast<Src, Dst>(in.data<Src>(), ctx.allocateOutput(0).data<Dst>(), n);
      }
    });
  });
}

}  // namespace

void registerElementwiseCastCpuKernels(CpuKernelRegistry& registry) {
  registry.add("Cast", cast);
  registry.add("CastLike", cast);
}

}  // namespace kiln
