// CPU kernels for Kiln's fused ops (semantics: engine_core/src/ops/fused.cpp). A float32 FusedConv
// over Conv applies its epilogue inside the convolution, block by block; other FusedConv and
// FusedMatMul layers run the base op's own CPU kernel, then the epilogue in one pass over its output;
// FusedConvPool runs its FusedConv, then its MaxPool, with their own kernels; Pointwise runs its
// body; Attention has its own kernel (kernels/cpu/attention); SqueezeExcitation's is in
// squeeze_excitation.cpp.
#include <kernels/cpu/attention/attention.h>
#include <kernels/cpu/fused/epilogue.h>
#include <kernels/cpu/layout/strided_copy.h>

#include "../../../ops/fused.h"
#include "../../../ops/op_families.h"
#include "../../../ops/op_schema.h"
#include "../../common/fused_epilogue.h"
#include "../cpu_kernel.h"
#include "conv_pool_common.h"
#include "fused_epilogue.h"

#include <algorithm>

namespace kiln {
namespace {

bool overlaps(const HostTensor& a, const HostTensor& b) {
  const char *aBegin = static_cast<const char*>(a.rawData()), *bBegin = static_cast<const char*>(b.rawData());
  return a.byteSize() && b.byteSize() && aBegin < bBegin + b.byteSize() && bBegin < aBegin + a.byteSize();
}

// Runs the base op on inputs [0, baseInputs) with the base op's registered kernel.
HostTensor runBase(KernelContext& ctx, size_t baseInputs) {
  Layer base = fused::baseLayer(ctx.layer());
  base.inputs.resize(std::min(base.inputs.size(), baseInputs));
  while (!base.inputs.empty() && base.inputs.back().empty()) base.inputs.pop_back();
  const CpuKernelFn* kernel = CpuKernelRegistry::instance().find("", base.opType);
  if (!kernel) ctx.fail("base op '" + base.opType + "' has no CPU kernel");
  std::vector<const Value*> inputs;
  for (size_t i = 0; i < base.inputs.size(); ++i) inputs.push_back(ctx.hasInput(i) ? &ctx.inputValue(i) : nullptr);
  KernelContext baseCtx(base, std::move(inputs), {ctx.inferredOutput(0)},
                        [&](const Network& g, const std::vector<Value>& in) { return ctx.runSubgraph(g, in); });
  // The base op writes straight into the fused layer's planned output buffer.
  baseCtx.setOutputAllocator([&](size_t i, DataType dtype, const std::vector<int64_t>& dims) {
    return i == 0 ? ctx.allocateOutput(0, dtype, dims) : HostTensor();
  });
  (*kernel)(baseCtx);
  HostTensor out = baseCtx.outputs().at(0).tensor;
  if (out.dtype() != DataType::kFloat32) ctx.fail("fused epilogues run on float32 only");
  // The epilogue writes in place; a base kernel may have returned a view of an input. (Arena
  // tensors all share one storage, so compare the bytes they cover.)
  for (size_t i = 0; i < ctx.inputCount(); ++i)
    if (ctx.hasInput(i) && overlaps(out, ctx.input(i))) return out.clone();
  return out;
}

}  // namespace

const float* float32Input(const KernelContext& ctx, size_t i, int64_t expectedCount, const char* what) {
  const HostTensor& t = ctx.input(i);
  if (t.dtype() != DataType::kFloat32) ctx.fail(std::string(what) + " must be float32");
  if (t.elementCount() != expectedCount)
    ctx.fail(std::string(what) + " has " + std::to_string(t.elementCount()) + " elements, expected " +
             std::to_string(expectedCount));
  return t.data<float>();
}

kernels::Epilogue readEpilogue(const KernelContext& ctx, const HostTensor& out) {
  return readEpilogue(ctx, out, nullptr);
}

kernels::Epilogue readEpilogue(const KernelContext& ctx, const HostTensor& out, const float* residualValues) {
  kernels::Epilogue e = kernelEpilogueOf(readFusedEpilogue(ctx.layer()));
  if (ctx.hasInput(3)) {
    if (ctx.input(3).dims() != out.dims())
      ctx.fail("the residual has shape " + dimsToString(ctx.input(3).dims()) + " but the output has shape " +
               dimsToString(out.dims()));
    e.residual = residualValues ? residualValues : float32Input(ctx, 3, out.elementCount(), "the residual");
  }
  return e;
}

namespace {

bool allFloat32(const KernelContext& ctx, size_t inputs) {
  for (size_t i = 0; i < inputs; ++i)
    if (ctx.hasInput(i) && ctx.input(i).dtype() != DataType::kFloat32) return false;
  return true;
}

void fusedConv(KernelContext& ctx) {
  const Layer base = fused::baseLayer(ctx.layer());
  if (base.opType != "Conv" || !allFloat32(ctx, 3) || ctx.inferredOutput(0).dtype != DataType::kFloat32) {
    HostTensor out = runBase(ctx, 3);  // the bias is the base op's B
    kernels::Epilogue e = readEpilogue(ctx, out);
    kernels::applyEpilogue(out.data<float>(), out.elementCount(), e);
    return ctx.setOutput(0, std::move(out));
  }
  // Float32 Conv: the epilogue runs inside the convolution, on each output block as it is made.
  const HostTensor &x = ctx.input(0), &w = ctx.input(1);
  kernels::ConvShape shape = forwardConvShape(base, x, w);
  const float* bias = ctx.hasInput(2) ? float32Input(ctx, 2, shape.outChannels, "the bias") : nullptr;
  HostTensor& out = ctx.allocateOutput(0);
  kernels::Epilogue e = readEpilogue(ctx, out);
  kernels::convolution(shape, x.data<float>(), w.data<float>(), bias, e, out.data<float>());
}

void fusedMatMul(KernelContext& ctx) {
  bool gemm = ctx.layer().attrString(fused::kBase) == "Gemm";
  HostTensor out = runBase(ctx, gemm ? 3 : 2);
  kernels::Epilogue e = readEpilogue(ctx, out);
  if (!gemm && ctx.hasInput(2)) {  // MatMul's bias runs along the last output dim
    int64_t columns = out.rank() == 0 ? 1 : out.dims().back();
    e.bias = float32Input(ctx, 2, columns, "the bias");
    e.biasLength = columns;
  }
  kernels::applyEpilogue(out.data<float>(), out.elementCount(), e);
  ctx.setOutput(0, std::move(out));
}

void pointwise(KernelContext& ctx) {
  std::vector<Value> inputs;
  for (size_t i = 0; i < ctx.inputCount(); ++i) inputs.push_back(ctx.inputValue(i));
  auto outputs = ctx.runSubgraph(ctx.layer().attrGraph("body"), inputs);
  if (outputs.size() != 1) ctx.fail("the body must have one output");
  ctx.setOutputValue(0, std::move(outputs[0]));
}

// Offsets of each (flattened) batch slice into a mask broadcast to [batch dims..., Lq, Lk].
std::vector<int64_t> maskSliceOffsets(const KernelContext& ctx, const std::vector<int64_t>& target,
                                      const HostTensor& mask, kernels::AttentionProblem& p) {
  const size_t rank = target.size();
  if (mask.rank() > rank) ctx.fail("the mask has more dims than the attention scores");
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (size_t i = 0; i < mask.rank(); ++i) {
    size_t maskDim = mask.rank() - 1 - i, dim = rank - 1 - i;
    int64_t size = mask.dim(maskDim);
    if (size != 1 && size != target[dim])
      ctx.fail("the mask of shape " + dimsToString(mask.dims()) + " does not broadcast to the scores' shape " +
               dimsToString(target));
    strides[dim] = size == 1 ? 0 : stride;
    stride *= size;
  }
  p.maskRowStride = strides[rank - 2];
  p.maskColStride = strides[rank - 1];
  std::vector<int64_t> offsets(size_t(p.batch), 0);
  for (int64_t b = 0; b < p.batch; ++b) {
    int64_t rest = b, offset = 0;
    for (size_t d = rank - 2; d-- > 0;) {
      offset += (rest % target[d]) * strides[d];
      rest /= target[d];
    }
    offsets[size_t(b)] = offset;
  }
  return offsets;
}

// A dense copy of a float32 tensor with its row dim and last batch dim swapped (kiln.Attention's
// interleaved layout to the computed one, or back: the swap is its own inverse).
// The strided copy moves elements by their size, so float32 goes as 32-bit words.
void copyFloatsStrided(const float* src, float* dst, const std::vector<int64_t>& dims,
                       const std::vector<int64_t>& srcStrides) {
  kernels::copyStrided(reinterpret_cast<const uint32_t*>(src), reinterpret_cast<uint32_t*>(dst), dims, srcStrides);
}

HostTensor swappedRowsAndHeads(const float* data, const std::vector<int64_t>& dims) {
  HostTensor swapped(DataType::kFloat32, fused::swapRowsAndHeads(dims));
  copyFloatsStrided(data, swapped.data<float>(), swapped.dims(), fused::swapRowsAndHeads(kernels::denseStrides(dims)));
  return swapped;
}

void attention(KernelContext& ctx) {
  const HostTensor &storedQ = ctx.input(0), &storedK = ctx.input(1), &storedV = ctx.input(2);
  if (storedQ.dtype() != DataType::kFloat32 || storedK.dtype() != DataType::kFloat32 ||
      storedV.dtype() != DataType::kFloat32)
    ctx.fail("Q, K and V must be float32");
  // Interleaved inputs are re-laid out into the computed layout first (the fused GPU kernels read
  // them in place through strides; here a copy keeps one kernel for both).
  HostTensor relaid[3];
  const bool packed = fused::attentionPacked(ctx.layer());
  auto computed = [&](size_t i, const HostTensor& stored) -> const HostTensor& {
    if (packed) {  // part i of [..., L, 3, H, D]: its interleaved dims, strided through the parts dim
      if (stored.rank() < fused::kPackedPartsDim + 2 || stored.dim(stored.rank() - fused::kPackedPartsDim) != 3)
        ctx.fail("the packed Q, K, V input must be [..., L, 3, H, D], got " + dimsToString(stored.dims()));
      const std::vector<int64_t> strides = kernels::denseStrides(stored.dims());
      const int64_t partStride = strides[stored.rank() - fused::kPackedPartsDim];
      relaid[i] = HostTensor(DataType::kFloat32, fused::swapRowsAndHeads(fused::packedPartDims(stored.dims())));
      copyFloatsStrided(stored.data<float>() + int64_t(i) * partStride, relaid[i].data<float>(), relaid[i].dims(),
                        fused::swapRowsAndHeads(fused::packedPartDims(strides)));
      return relaid[i];
    }
    if (!fused::attentionInterleaved(ctx.layer(), i)) return stored;
    if (stored.rank() < 3) ctx.fail("input " + std::to_string(i) + " is interleaved but has rank " + std::to_string(stored.rank()));
    relaid[i] = swappedRowsAndHeads(stored.data<float>(), stored.dims());
    return relaid[i];
  };
  const HostTensor &q = computed(0, storedQ), &k = computed(1, storedK), &v = computed(2, storedV);
  const size_t rank = q.rank();
  if (rank < 2 || k.rank() != rank || v.rank() != rank)
    ctx.fail("Q, K and V must have the same rank (2 or more); got " + dimsToString(q.dims()) + ", " +
             dimsToString(k.dims()) + ", " + dimsToString(v.dims()));
  for (size_t d = 0; d + 2 < rank; ++d)
    if (k.dim(d) != q.dim(d) || v.dim(d) != q.dim(d))
      ctx.fail("Q, K and V must have the same batch dims; got " + dimsToString(q.dims()) + ", " +
               dimsToString(k.dims()) + ", " + dimsToString(v.dims()));
  kernels::AttentionProblem p;
  p.keyTransposed = ctx.layer().attrInt("k_transposed", 0) != 0;
  p.scale = ctx.layer().attrFloat("scale", 1.0f);
  p.queryLength = q.dim(rank - 2);
  p.headDim = q.dim(rank - 1);
  p.keyLength = p.keyTransposed ? k.dim(rank - 1) : k.dim(rank - 2);
  p.valueDim = v.dim(rank - 1);
  if ((p.keyTransposed ? k.dim(rank - 2) : k.dim(rank - 1)) != p.headDim || v.dim(rank - 2) != p.keyLength)
    ctx.fail("Q " + dimsToString(q.dims()) + ", K " + dimsToString(k.dims()) + " and V " + dimsToString(v.dims()) +
             " do not agree on the head and key dims");
  p.batch = elementCount(std::vector<int64_t>(q.dims().begin(), q.dims().end() - 2));
  std::vector<int64_t> outDims(q.dims().begin(), q.dims().end() - 1);
  outDims.push_back(p.valueDim);
  const bool outInterleaved = fused::attentionInterleaved(ctx.layer(), fused::kAttentionOutput);
  if (outInterleaved && rank < 3) ctx.fail("the output is interleaved but has rank " + std::to_string(rank));
  HostTensor& out = ctx.allocateOutput(0, DataType::kFloat32, outInterleaved ? fused::swapRowsAndHeads(outDims) : outDims);
  HostTensor computedOut = outInterleaved ? HostTensor(DataType::kFloat32, outDims) : HostTensor();
  std::vector<int64_t> offsets;
  if (ctx.hasInput(3)) {
    const HostTensor& mask = ctx.input(3);
    if (mask.dtype() != DataType::kFloat32) ctx.fail("the mask must be float32");
    std::vector<int64_t> scoreDims(q.dims().begin(), q.dims().end() - 1);
    scoreDims.push_back(p.keyLength);
    offsets = maskSliceOffsets(ctx, scoreDims, mask, p);
    p.mask = mask.data<float>();
    p.maskOffsets = offsets.data();
  }
  kernels::attention(p, q.data<float>(), k.data<float>(), v.data<float>(),
                     outInterleaved ? computedOut.data<float>() : out.data<float>());
  if (outInterleaved)
    copyFloatsStrided(computedOut.data<float>(), out.data<float>(), out.dims(),
                      fused::swapRowsAndHeads(kernels::denseStrides(outDims)));
}

// The FusedConv into a buffer of its own, then the MaxPool into the layer's output.
void fusedConvPool(KernelContext& ctx) {
  const Layer conv = fused::convOfConvPool(ctx.layer()), pool = fused::poolOfConvPool(ctx.layer());
  const CpuKernelFn* convKernel = CpuKernelRegistry::instance().find(fused::kDomain, fused::kFusedConv);
  const CpuKernelFn* poolKernel = CpuKernelRegistry::instance().find("", "MaxPool");
  if (!convKernel || !poolKernel) ctx.fail("FusedConv or MaxPool has no CPU kernel");
  std::vector<Tensor> declared(ctx.inputCount());
  std::vector<const Tensor*> declaredInputs;
  std::vector<const Value*> inputs;
  for (size_t i = 0; i < ctx.inputCount(); ++i) {
    if (ctx.hasInput(i)) declared[i] = {conv.inputs[i], ctx.input(i).dtype(), Shape::fromDims(ctx.input(i).dims())};
    declaredInputs.push_back(ctx.hasInput(i) ? &declared[i] : nullptr);
    inputs.push_back(ctx.hasInput(i) ? &ctx.inputValue(i) : nullptr);
  }
  const OpSchema* convSchema = OpSchemaRegistry::instance().find(fused::kDomain, fused::kFusedConv);
  InferenceContext convShape(conv, std::move(declaredInputs),
                             [&](size_t i) -> const HostTensor* { return ctx.hasInput(i) ? &ctx.input(i) : nullptr; });
  convSchema->infer(convShape);
  auto subgraphs = [&](const Network& g, const std::vector<Value>& in) { return ctx.runSubgraph(g, in); };
  KernelContext convCtx(conv, std::move(inputs), {convShape.output(0)}, subgraphs);
  (*convKernel)(convCtx);
  const Value convOut = convCtx.outputs().at(0);
  KernelContext poolCtx(pool, {&convOut}, {ctx.inferredOutput(0)}, subgraphs);
  poolCtx.setOutputAllocator([&](size_t i, DataType dtype, const std::vector<int64_t>& dims) {
    return i == 0 ? ctx.allocateOutput(0, dtype, dims) : HostTensor();
  });
  (*poolKernel)(poolCtx);
  if (poolCtx.outputs().at(0).tensor.rawData() != ctx.outputs().at(0).tensor.rawData())
    ctx.setOutput(0, poolCtx.outputs().at(0).tensor);
}

}  // namespace

void registerSqueezeExcitationCpuKernel(CpuKernelRegistry& registry);  // squeeze_excitation.cpp

void registerFusedCpuKernels(CpuKernelRegistry& registry) {
  registry.add(fused::kDomain, fused::kFusedConv, fusedConv);
  registry.add(fused::kDomain, fused::kFusedMatMul, fusedMatMul);
  registry.add(fused::kDomain, fused::kFusedConvPool, fusedConvPool);
  registry.add(fused::kDomain, fused::kPointwise, pointwise);
  registry.add(fused::kDomain, fused::kAttention, attention);
  registerSqueezeExcitationCpuKernel(registry);
}

}  // namespace kiln
