// CPU kernels for the random generator ops. With a `seed` attribute a node draws the same values on
// every run; without one, each run draws fresh values.
#include "../dispatch.h"
#include "signal_misc.h"

#include <kernels/cpu/random/random_stream.h>

#include <bit>
#include <type_traits>

namespace kiln {
namespace {

kernels::RandomStream streamFor(const KernelContext& ctx) {
  if (!ctx.layer().hasAttr("seed")) return kernels::RandomStream::fromEntropy();
  return kernels::RandomStream(std::bit_cast<uint32_t>(ctx.layer().attrFloat("seed")));  // distinct seeds stay distinct
}

// Allocates output 0 with its inferred type and `dims` and fills it with draw() per element.
template <class Draw>
void fillOutput(KernelContext& ctx, std::vector<int64_t> dims, Draw&& draw) {
  HostTensor& out = ctx.allocateOutput(0, ctx.inferredOutput(0).dtype, std::move(dims));
  auto fill = [&](auto tag) {
    using T = decltype(tag);
    T* dst = out.data<T>();
    for (int64_t i = 0; i < out.elementCount(); ++i) {
      double v = draw();
      if constexpr (std::is_arithmetic_v<T>) dst[i] = static_cast<T>(v);
      else dst[i] = kernels::fromFloat<T>(float(v));
    }
  };
  if (out.dtype() == DataType::kBool) fill(bool{});
  else dispatchNumeric(out.dtype(), fill);
}

std::vector<int64_t> outputDims(const KernelContext& ctx) {
  return ctx.hasInput(0) ? ctx.input(0).dims() : ctx.layer().attrInts("shape");
}

void randomNormalKernel(KernelContext& ctx) {
  double mean = ctx.layer().attrFloat("mean", 0.0f), scale = ctx.layer().attrFloat("scale", 1.0f);
  kernels::RandomStream stream = streamFor(ctx);
  fillOutput(ctx, outputDims(ctx), [&] { return mean + scale * stream.normal(); });
}

void randomUniformKernel(KernelContext& ctx) {
  double low = ctx.layer().attrFloat("low", 0.0f), high = ctx.layer().attrFloat("high", 1.0f);
  if (high < low) ctx.fail("high (" + std::to_string(high) + ") must not be below low (" + std::to_string(low) + ")");
  kernels::RandomStream stream = streamFor(ctx);
  fillOutput(ctx, outputDims(ctx), [&] { return low + (high - low) * stream.uniform(); });
}

void bernoulliKernel(KernelContext& ctx) {
  const HostTensor& probabilities = ctx.input(0);
  std::vector<double> p = probabilities.toDoubleVector();
  for (double v : p)
    if (!(v >= 0.0 && v <= 1.0)) ctx.fail("probabilities must be in [0, 1], got " + std::to_string(v));
  kernels::RandomStream stream = streamFor(ctx);
  size_t i = 0;
  fillOutput(ctx, probabilities.dims(), [&] { return stream.uniform() < p[i++] ? 1.0 : 0.0; });
}

void multinomialKernel(KernelContext& ctx) {
  const HostTensor& logits = ctx.input(0);
  if (logits.rank() != 2 || logits.dim(1) < 1)
    ctx.fail("the input must be [batch, classes] with at least one class, got shape " + dimsToString(logits.dims()));
  int64_t samples = ctx.layer().attrInt("sample_size", 1);
  std::vector<int64_t> drawn(size_t(logits.dim(0) * samples));
  kernels::RandomStream stream = streamFor(ctx);
  kernels::sampleMultinomial(logits.toDoubleVector().data(), logits.dim(0), logits.dim(1), samples, stream, drawn.data());
  size_t i = 0;
  fillOutput(ctx, {logits.dim(0), samples}, [&] { return double(drawn[i++]); });
}

}  // namespace

void registerRandomCpuKernels(CpuKernelRegistry& registry) {
  registry.add("RandomNormal", randomNormalKernel);
  registry.add("RandomNormalLike", randomNormalKernel);
  registry.add("RandomUniform", randomUniformKernel);
  registry.add("RandomUniformLike", randomUniformKernel);
  registry.add("Bernoulli", bernoulliKernel);
  registry.add("Multinomial", multinomialKernel);
}

}  // namespace kiln
