// RNN, GRU and LSTM on the GPU (semantics: ops/recurrent.cpp's attributes and the CPU kernel,
// kernels/cpu/rnn). The input projection of every step and direction is one strided-batched
// cuBLASLt product, X·Wᵀ into fp32 in the workspace (fp32 math exactly; fp16 / bf16 operands
// accumulate in fp32); then one launch of kernels/cuda/recurrent runs the time loop, a block per
// batch entry and direction, with the biases, peepholes, clip, activations, sequence lengths and
// both layouts as on the CPU.
#include "../../../ops/recurrent.h"
#include "../cublaslt_matmul.h"
#include "../cuda_ops.h"
#include "../cuda_step.h"

#include <kernels/cuda/recurrent/recurrent.h>

#include <kiln/error.h>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;


enum RecurrentInput : size_t { kX = 0, kW, kR, kB, kLengths, kInitialH, kInitialC, kPeephole };

k::RecurrentCellKind cellKind(kernels::RecurrentCell cell) {
  return cell == kernels::RecurrentCell::kRnn   ? k::RecurrentCellKind::kRnn
         : cell == kernels::RecurrentCell::kGru ? k::RecurrentCellKind::kGru
                                                : k::RecurrentCellKind::kLstm;
}

kernels::RecurrentCell cellOf(const Layer& layer) {
  return layer.opType == "RNN"   ? kernels::RecurrentCell::kRnn
         : layer.opType == "GRU" ? kernels::RecurrentCell::kGru
                                 : kernels::RecurrentCell::kLstm;
}

uint64_t roundUp(uint64_t bytes) { return (bytes + 255) / 256 * 256; }

// X's dims and R's (hidden size, directions) give the projection: [D, steps * batch, gates * H] fp32.
uint64_t projectionBytes(const std::vector<int64_t>& x, const std::vector<int64_t>& r) {
  if (x.size() != 3 || r.size() != 3) return 0;
  return roundUp(uint64_t(r[0] * x[0] * x[1] * r[1]) * sizeof(float));
}

DataType declaredX(const LayerSignature& signature) {
  return signature.inputs.empty() || !signature.inputs[kX] ? DataType::kFloat32 : signature.inputs[kX]->dtype;
}

struct ProjectionGemm {
  std::vector<int64_t> x, r;
  uint32_t alignment = 0;
  std::unique_ptr<LtGemm> gemm;
  cublasLtMatmulAlgo_t algo{};
  uint64_t workspace = 0;
};

class RecurrentState : public StepState {
 public:
  std::vector<std::unique_ptr<ProjectionGemm>> gemms;
};

class RecurrentStep : public CudaStep {
 public:
  RecurrentStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : CudaStep(layer, tactic, signature, device, storageOf(declaredX(signature), tacticPrecision(layer, tactic))),
        storage_(storageOf(declaredX(signature), tacticPrecision(layer, tactic))),
        attributes_(readRecurrentAttributes(layer, cellOf(layer))),
        name_(layer.describe()) {
    const auto type = cublasTypeOf(storage_);
    if (!type)
      throw Error(ErrorCode::kUnsupported, name_ + ": recurrent layers take float32, float16 or bfloat16, not " +
                                               std::string(toString(storage_)));
    type_ = *type;
  }

  uint64_t workspaceBytes(std::span<const TensorView> inputs, std::span<const TensorView>) const override {
    if (inputs.size() <= kR) return 0;
    return projectionBytes(inputs[kX].dims, inputs[kR].dims) + kCublasWorkspaceBytes;
  }

  std::unique_ptr<StepState> createState() const override { return std::make_unique<RecurrentState>(); }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    const cudaStream_t s = streamOf(stream);
    const std::vector<int64_t>&x = args.inputs[kX].dims, &r = args.inputs[kR].dims;
    if (x.size() != 3 || r.size() != 3)
      throw Error(ErrorCode::kInvalidArgument, name_ + ": X and R must have rank 3, got " + dimsToString(x) + " and " +
                                                   dimsToString(r));
    const k::RecurrentCellKind cell = cellKind(attributes_.cell);
    const int64_t D = attributes_.directions, H = r[2], GH = k::recurrentGates(cell) * H;
    const int64_t steps = x[attributes_.batchMajor ? 1 : 0], batch = x[attributes_.batchMajor ? 0 : 1];
    const int64_t inputSize = x[2];
    if (r[0] != D || r[1] != GH)
      throw Error(ErrorCode::kInvalidArgument, name_ + ": R has shape " + dimsToString(r) + "; the layer needs [" +
                                                   std::to_string(D) + ", " + std::to_string(GH) + ", " +
                                                   std::to_string(H) + "]");
    for (size_t o = 0; o < args.outputs.size(); ++o)
      if (layer_.hasOutput(o) && args.outputs[o].data && args.outputs[o].byteSize())
        check(cudaMemsetAsync(args.outputs[o].data, 0, args.outputs[o].byteSize(), s), "zeroing its outputs");
    const uint64_t projection = projectionBytes(x, r);
    if (args.workspaceBytes < projection)
      throw Error(ErrorCode::kInternal, name_ + ": its workspace of " + std::to_string(args.workspaceBytes) +
                                            " bytes is smaller than the " + std::to_string(projection) +
                                            " its input projection needs");
    float* projected = static_cast<float*>(args.workspace);
    if (steps * batch * GH > 0) {
      if (inputSize == 0) {
        check(cudaMemsetAsync(projected, 0, projection, s), "zeroing its input projection");
      } else {
        auto* state = dynamic_cast<RecurrentState*>(args.state);
        if (!state) throw Error(ErrorCode::kInternal, name_ + ": enqueued without the state its step made");
        const void* xData = input(args, kX);
        const void* wData = input(args, kW);
        const uint32_t alignment = commonAlignment({address(xData), address(wData), address(projected)});
        ProjectionGemm& g = gemmFor(*state, x, r, alignment, args.workspaceBytes - projection);
        g.gemm->run(cublasLtHandle(device_), g.algo, 1.0f, xData, wData, 0.0f, projected, projected, nullptr,
                    static_cast<char*>(args.workspace) + projection, g.workspace, s, name_);
      }
    }
    k::RecurrentShape shape;
    shape.cell = cell;
    shape.steps = steps;
    shape.batch = batch;
    shape.hidden = H;
    shape.directions = int(D);
    shape.reverse = attributes_.reverse;
    shape.batchMajor = attributes_.batchMajor;
    shape.clip = attributes_.clip;
    shape.linearBeforeReset = attributes_.linearBeforeReset;
    shape.inputForget = attributes_.inputForget;
    for (int64_t d = 0; d < D; ++d)
      for (size_t f = 0; f < attributes_.activations[size_t(d)].size() && f < 3; ++f)
        shape.activations[d][f] = attributes_.activations[size_t(d)][f];
    k::RecurrentTensorsDevice t;
    t.projected = projected;
    t.r = input(args, kR);
    auto optional = [&](size_t i) { return layer_.hasInput(i) ? input(args, i) : nullptr; };
    t.bias = optional(kB);
    t.lengths = static_cast<const int32_t*>(optional(kLengths));
    t.initialH = optional(kInitialH);
    t.initialC = optional(kInitialC);
    t.peephole = optional(kPeephole);
    auto output = [&](size_t o) { return layer_.hasOutput(o) && o < args.outputs.size() ? args.outputs[o].data : nullptr; };
    t.y = output(0);
    t.finalH = output(1);
    t.finalC = cell == k::RecurrentCellKind::kLstm ? output(2) : nullptr;
    check(k::recurrentSequence(shape, t, *elementTypeOf(storage_), s), "running its time steps");
  }

 private:
  static uint64_t address(const void* p) { return uint64_t(reinterpret_cast<uintptr_t>(p)); }

  // X [steps * batch, inputSize] · W[d]ᵀ for each direction d, into fp32.
  GemmShape projectionShape(const std::vector<int64_t>& x, const std::vector<int64_t>& r) const {
    GemmShape g;
    g.m = x[0] * x[1];
    g.n = r[1];
    g.k = x[2];
    g.transB = true;
    g.batch = r[0];
    g.strideA = 0;
    g.strideB = r[1] * x[2];
    g.strideC = g.strideD = g.m * g.n;
    g.abType = type_;
    g.cdType = CUDA_R_32F;
    g.compute = CUBLAS_COMPUTE_32F;
    return g;
  }

  ProjectionGemm& gemmFor(RecurrentState& state, const std::vector<int64_t>& x, const std::vector<int64_t>& r,
                          uint32_t alignment, uint64_t budget) const {
    for (auto& g : state.gemms)
      if (g->x == x && g->r == r && g->alignment == alignment) return *g;
    auto g = std::make_unique<ProjectionGemm>();
    g->x = x;
    g->r = r;
    g->alignment = alignment;
    const GemmShape shape = projectionShape(x, r);
    g->gemm = std::make_unique<LtGemm>(shape);
    const auto results =
        g->gemm->heuristics(cublasLtHandle(device_), 1, std::min(budget, kCublasWorkspaceBytes), alignment);
    if (results.empty())
      throw Error(ErrorCode::kUnsupported, name_ + ": cuBLASLt has no algorithm for its " + shape.describe() +
                                               " input projection");
    g->algo = results[0].algo;
    g->workspace = results[0].workspaceSize;
    state.gemms.push_back(std::move(g));
    return *state.gemms.back();
  }

  DataType storage_;
  cudaDataType_t type_ = CUDA_R_32F;
  RecurrentAttributes attributes_;
  std::string name_;
};

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<Tactic> recurrentTactics(const Layer& layer, Precision precision, const LayerInputs& inputs, CudaDevice&) {
  Tactic tactic;
  tactic.id = "cuda." + lower(layer.opType) + "." + precisionTag(precision);
  tactic.workspaceBytes = kCublasWorkspaceBytes;
  if (inputs.dims.size() > kR) tactic.workspaceBytes += projectionBytes(inputs.dims[kX], inputs.dims[kR]);
  return {tactic};
}

SupportVerdict recurrentTensors(const Layer& layer, Precision, const LayerSignature& tensors) {
  if (auto v = ranksWithinLimit(tensors); !v.supported) return v;
  for (size_t i = 0; i < tensors.inputs.size(); ++i) {
    const Tensor* t = tensors.inputs[i];
    if (!t || i == kLengths) continue;
    if (t->dtype != DataType::kFloat32 && t->dtype != DataType::kFloat16 && t->dtype != DataType::kBFloat16)
      return {false, layer.opType + " on the GPU takes float32, float16 or bfloat16, not " +
                         std::string(toString(t->dtype))};
  }
  if (tensors.inputs.size() > kLengths && tensors.inputs[kLengths] && tensors.inputs[kLengths]->dtype != DataType::kInt32)
    return {false, "sequence_lens must be int32"};
  const kernels::RecurrentCell cell = cellOf(layer);
  int64_t hidden = layer.attrInt("hidden_size", -1);
  const Tensor* r = tensors.inputs.size() > kR ? tensors.inputs[kR] : nullptr;
  if (hidden < 0 && r && r->shape.hasRank() && r->shape.rank() == 3 && r->shape[2].isKnown()) hidden = r->shape[2].value();
  if (hidden > 0 && !k::recurrentFits(cellKind(cell), hidden))
    return {false, layer.opType + " with hidden_size " + std::to_string(hidden) +
                       " has no CUDA kernel (its state must fit in a block's 48 KiB of shared memory)"};
  return {};
}

}  // namespace

void registerRecurrentCudaOps(CudaOpRegistry& registry) {
  for (const char* name : {"RNN", "GRU", "LSTM"}) {
    CudaOp op = stepOp<RecurrentStep>(recurrentTensors);
    op.tactics = recurrentTactics;
    registry.add(name, op);
  }
}

}  // namespace kiln::cuda
