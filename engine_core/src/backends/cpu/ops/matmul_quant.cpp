// CPU kernels for the matmul_quant family: Gemm, MatMul, MatMulInteger, QLinearMatMul and Det here;
// Einsum and the quantize ops in matmul_quant_*.cpp.
#include "matmul_quant.h"

#include <kernels/cpu/gemm/determinant.h>
#include <kernels/cpu/gemm/gemm.h>
#include <kernels/cpu/quant/quantize.h>

#include "../../../ops/op_families.h"

#include <algorithm>

namespace kiln {

MatMulPlan planMatMul(std::vector<int64_t> aDims, std::vector<int64_t> bDims) {
  const MatMulGeometry g = matMulGeometry(std::move(aDims), std::move(bDims));
  MatMulPlan plan;
  plan.M = g.M;
  plan.K = g.K;
  plan.N = g.N;
  const int64_t batch = g.batchCount();
  plan.aOffsets.resize(size_t(batch));
  plan.bOffsets.resize(size_t(batch));
  for (int64_t i = 0; i < batch; ++i) {
    int64_t rest = i, aOff = 0, bOff = 0;
    for (size_t d = g.batchDims.size(); d-- > 0;) {
      const int64_t index = rest % g.batchDims[d];
      rest /= g.batchDims[d];
      aOff += index * g.aStrides[d];
      bOff += index * g.bStrides[d];
    }
    plan.aOffsets[size_t(i)] = aOff;
    plan.bOffsets[size_t(i)] = bOff;
  }
  return plan;
}

namespace {

void runMatMul(KernelContext& ctx) {
  const HostTensor &a = ctx.input(0), &b = ctx.input(1);
  HostTensor& y = ctx.allocateOutput(0);
  const MatMulPlan plan = planMatMul(a.dims(), b.dims());
  dispatchGemmType(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    kernels::batchedMatMul<T>(a.data<T>(), b.data<T>(), y.data<T>(), int64_t(plan.aOffsets.size()),
                              plan.aOffsets.data(), plan.bOffsets.data(), plan.M, plan.N, plan.K);
  });
}

void runGemm(KernelContext& ctx) {
  const Layer& layer = ctx.layer();
  const HostTensor &a = ctx.input(0), &b = ctx.input(1);
  const bool transA = layer.attrInt("transA", 0) != 0, transB = layer.attrInt("transB", 0) != 0;
  const float alpha = layer.attrFloat("alpha", 1.0f);
  float beta = layer.attrFloat("beta", 1.0f);
  const int64_t M = a.dim(transA ? 1 : 0), K = a.dim(transA ? 0 : 1), N = b.dim(transB ? 0 : 1);
  HostTensor& y = ctx.allocateOutput(0);
  if (!ctx.hasInput(2)) beta = 0.0f;
  dispatchGemmType(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* out = y.data<T>();
    if (beta != 0.0f) {  // Y = broadcast C, then the product accumulates onto it with beta
      const HostTensor& c = ctx.input(2);
      const T* cData = c.data<T>();
      const int64_t cRows = c.rank() == 2 ? c.dim(0) : 1, cCols = c.rank() >= 1 ? c.dim(c.rank() - 1) : 1;
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) out[i * N + j] = cData[(cRows == 1 ? 0 : i) * cCols + (cCols == 1 ? 0 : j)];
    }
    kernels::gemm<T>(transA, transB, M, N, K, alpha, a.data<T>(), a.dim(1), b.data<T>(), b.dim(1), beta, out, N);
  });
}

// Zero points / scales of the quantized matmuls hold 1 value (per tensor) or one per row / column.
int64_t perRowOrColumnCount(const KernelContext& ctx, size_t input, int64_t length, const char* what) {
  const int64_t count = ctx.input(input).elementCount();
  if (count != 1 && count != length)
    ctx.fail("input " + std::to_string(input) + " holds " + std::to_string(count) + " values; expected 1 or " +
             std::to_string(length) + " (" + what + ")");
  return count;
}

// Exact int32 products of (A - aZero) and (B - bZero); A, B and zero points at the given inputs.
std::vector<int32_t> integerProducts(const KernelContext& ctx, size_t aIn, size_t aZeroIn, size_t bIn, size_t bZeroIn,
                                     MatMulPlan& plan) {
  const HostTensor &a = ctx.input(aIn), &b = ctx.input(bIn);
  plan = planMatMul(a.dims(), b.dims());
  std::vector<int32_t> acc(plan.aOffsets.size() * size_t(plan.M * plan.N));
  dispatchEightBit(a.dtype(), [&](auto aTag) {
    dispatchEightBit(b.dtype(), [&](auto bTag) {
      using TA = decltype(aTag);
      using TB = decltype(bTag);
      const bool hasAZero = ctx.hasInput(aZeroIn), hasBZero = ctx.hasInput(bZeroIn);
      const TA* aZero = hasAZero ? ctx.input(aZeroIn).data<TA>() : nullptr;
      const TB* bZero = hasBZero ? ctx.input(bZeroIn).data<TB>() : nullptr;
      const int64_t aZeroCount = hasAZero ? perRowOrColumnCount(ctx, aZeroIn, plan.M, "one per row of A") : 1;
      const int64_t bZeroCount = hasBZero ? perRowOrColumnCount(ctx, bZeroIn, plan.N, "one per column of B") : 1;
      kernels::integerMatMul<TA, TB>(a.data<TA>(), b.data<TB>(), acc.data(), int64_t(plan.aOffsets.size()),
                                     plan.aOffsets.data(), plan.bOffsets.data(), plan.M, plan.N, plan.K, aZero,
                                     aZeroCount, bZero, bZeroCount);
    });
  });
  return acc;
}

void runMatMulInteger(KernelContext& ctx) {
  MatMulPlan plan;
  const std::vector<int32_t> acc = integerProducts(ctx, 0, 2, 1, 3, plan);
  HostTensor& y = ctx.allocateOutput(0);
  std::copy(acc.begin(), acc.end(), y.data<int32_t>());
}

void runQLinearMatMul(KernelContext& ctx) {
  MatMulPlan plan;
  const std::vector<int32_t> acc = integerProducts(ctx, 0, 2, 3, 5, plan);
  const HostTensor &aScale = ctx.input(1), &bScale = ctx.input(4);
  const int64_t aScaleCount = perRowOrColumnCount(ctx, 1, plan.M, "one per row of A");
  const int64_t bScaleCount = perRowOrColumnCount(ctx, 4, plan.N, "one per column of B");
  const float yScale = ctx.input(6).data<float>()[0];
  HostTensor& y = ctx.allocateOutput(0);
  dispatchEightBit(y.dtype(), [&](auto tag) {
    using Q = decltype(tag);
    kernels::requantizeProducts<Q>(acc.data(), int64_t(plan.aOffsets.size()), plan.M, plan.N, aScale.data<float>(),
                                   aScaleCount, bScale.data<float>(), bScaleCount, yScale, ctx.input(7).data<Q>()[0],
                                   y.data<Q>());
  });
}

void runDet(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  HostTensor& y = ctx.allocateOutput(0);
  const int64_t n = x.dim(x.rank() - 1);
  dispatchFloat(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    kernels::determinants<T>(x.data<T>(), y.data<T>(), y.elementCount(), n);
  });
}

}  // namespace

void registerMatMulTactics(CpuKernelRegistry& registry);

void registerMatMulQuantCpuKernels(CpuKernelRegistry& registry) {
  registerMatMulTactics(registry);
  registry.add("Gemm", runGemm);
  registry.add("MatMul", runMatMul);
  registry.add("MatMulInteger", runMatMulInteger);
  registry.add("QLinearMatMul", runQLinearMatMul);
  registry.add("Det", runDet);
  registerEinsumCpuKernel(registry);
  registerQuantizeCpuKernels(registry);
}

}  // namespace kiln
