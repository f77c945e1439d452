// Pointwise and patch Conv / kiln.FusedConv as one cuBLASLt product, or Kiln's narrow pointwise
// kernel (gemm_conv.h).
//
// The product is a fused MatMul's: matmul_plan.h decides which parts of the epilogue cuBLASLt
// takes (bias and ReLU / GELU in its epilogue, a residual added before the activation as its C
// with beta 1) and the rest runs after it as Kiln's elementwise kernels on the NHWC result. The
// narrow kernel fuses the whole epilogue; both share the step's layout copies and strided gather.
#include "gemm_conv.h"

#include "../../../ops/fused.h"
#include "../../common/conv_geometry.h"
#include "../cublaslt_candidates.h"
#include "../cublaslt_matmul.h"
#include "../cuda_epilogue.h"
#include "../cuda_step.h"
#include "../workspace_math.h"
#include "conv_plan.h"
#include "matmul_plan.h"

#include <kernels/cuda/conv/narrow_pointwise_conv.h>
#include <kernels/cuda/layout/reformat.h>
#include <kernels/cuda/layout/strided_copy.h>

#include <kiln/error.h>

#include <optional>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;

// Ids name the window: a 1x1 (strided or not) or a wider patch.
const std::string kTacticPrefix = "cublaslt.conv1x1.";
const std::string kPatchTacticPrefix = "cublaslt.conv.patch.";
const std::string kNarrowTacticPrefix = "kiln.conv1x1.narrow.";
const std::string kNarrowPatchTacticPrefix = "kiln.conv.patch.narrow.";

bool isNarrowTactic(const std::string& tacticId) {
  return tacticId.starts_with(kNarrowTacticPrefix) || tacticId.starts_with(kNarrowPatchTacticPrefix);
}

Layer baseOf(const Layer& layer) { return layer.domain == fused::kDomain ? fused::baseLayer(layer) : layer; }

// An unpadded, undilated 2-D convolution of one group whose windows do not overlap (each kernel
// extent at most its stride): a 1x1 (ResNet's bottleneck products), a strided 1x1 (its downsampling
// shortcuts) or a patch embedding (ViT's 16x16 stride-16 stem). Its im2col is a gather that reads
// every input element at most once, [N·H'·W', C·kh·kw] in the filter's (c, i, j) order, and the
// convolution one product; a dense 1x1 reads the image as it lies.
struct PatchWindow {
  int64_t outH = 0, outW = 0, strideH = 1, strideW = 1, kernelH = 1, kernelW = 1;
  bool gathered() const { return strideH != 1 || strideW != 1 || kernelH != 1 || kernelW != 1; }
  int64_t patchSize() const { return kernelH * kernelW; }
};

std::optional<PatchWindow> patchWindowOf(const Layer& base, const std::vector<int64_t>& x,
                                         const std::vector<int64_t>& w) {
  if (x.size() != 4 || w.size() != 4 || w[1] != x[1]) return std::nullopt;
  if (base.opType != "Conv" || base.attrInt("group", 1) != 1) return std::nullopt;
  const kernels::SpatialWindow win = forwardConvShape(base, x, w).window;  // H and W at spatial indices 1 and 2
  for (int a = 1; a < 3; ++a)
    if (win.kernel[a] > win.stride[a] || win.dilation[a] != 1 || win.padBegin[a] != 0 ||
        win.out[a] != (win.in[a] - win.kernel[a]) / win.stride[a] + 1)
      return std::nullopt;
  return PatchWindow{win.out[1], win.out[2], win.stride[1], win.stride[2], win.kernel[1], win.kernel[2]};
}

// The product as a fused MatMul's: A = X [N·H·W, C], B = W [K, C] (transposed), bias along K.
MatMulSpec productSpecOf(const Layer& layer, const ConvSpec& conv, Precision precision, DataType outputDeclared) {
  MatMulSpec s;
  s.fused = layer.domain == fused::kDomain;
  s.transB = true;
  s.hasC = conv.hasBias;
  s.cConstant = conv.hasBias;
  s.hasResidual = conv.hasResidual;
  if (s.fused) s.epilogue = readFusedEpilogue(layer);
  setProductTypes(s, layer, precision, outputDeclared);
  return s;
}

Geometry patchGeometryOf(const MatMulSpec& s, const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                         const PatchWindow& window) {
  Geometry g;
  g.m = x[0] * window.outH * window.outW;
  g.n = w[0];
  g.k = x[1] * window.patchSize();
  g.outputElements = g.m * g.n;
  g.empty = g.outputElements == 0;
  if (s.hasC) {
    g.c = CRole::kBias;
    g.cDims = {1, 1, 1, w[0]};  // along the NHWC output's channels
  }
  return g;
}

struct Formats {
  bool x = false, residual = false, y = false;  // channels-last as bound
  bool gatherX = false;                         // a strided or patch window: X's patches gathered
};

// Workspace: the NHWC copies of a linear input, residual and output, the epilogue's scratch, then
// cuBLASLt's.
struct WorkspaceLayout {
  uint64_t x = 0, residual = 0, y = 0, scratch = 0, cublas = 0;
  uint64_t xAt() const { return 0; }
  uint64_t residualAt() const { return x; }
  uint64_t yAt() const { return residualAt() + residual; }
  uint64_t scratchAt() const { return yAt() + y; }
  uint64_t cublasAt() const { return scratchAt() + scratch; }
  uint64_t total() const { return cublasAt() + cublas; }
};

// The narrow kernel's problem for the product (it needs no scratch: its epilogue is whole).
k::NarrowPointwiseConvProblem narrowProblemOf(const MatMulSpec& s, const Geometry& g) {
  k::NarrowPointwiseConvProblem p;
  p.rows = g.m, p.channels = g.k, p.outChannels = g.n;
  p.type = s.storage == DataType::kBFloat16 ? k::ElementType::kBFloat16 : k::ElementType::kFloat16;
  p.activation = s.epilogue.activation, p.alpha = s.epilogue.alpha, p.beta = s.epilogue.beta;
  p.residualBeforeActivation = s.epilogue.residualBeforeActivation;
  return p;
}

bool narrowKernelTakes(const MatMulSpec& s, const Geometry& g) {
  return (s.storage == DataType::kFloat16 || s.storage == DataType::kBFloat16) &&
         !k::narrowPointwiseConvRefusal(narrowProblemOf(s, g));
}

// Without cuBLASLt (cublasBytes nullopt: the narrow kernel) there is no epilogue scratch either.
WorkspaceLayout layoutOf(const MatMulSpec& s, const Geometry& g, const Formats& formats,
                         std::optional<uint64_t> cublasBytes) {
  const uint64_t element = byteSize(s.storage);
  WorkspaceLayout l;
  if (!formats.x || formats.gatherX) l.x = alignUp(uint64_t(g.m * g.k) * element);
  if (s.hasResidual && !formats.residual) l.residual = alignUp(uint64_t(g.outputElements) * element);
  if (!formats.y) l.y = alignUp(uint64_t(g.outputElements) * element);
  if (cublasBytes) l.scratch = alignUp(ElementwiseEpilogue::scratchBytes(s.epilogue, g.outputElements, s.storage));
  l.cublas = cublasBytes.value_or(0);
  return l;
}

// The product at one set of dims and pointer alignment: the epilogue split and the algorithm.
struct ShapeEntry {
  std::vector<int64_t> x;
  uint32_t alignment = 0;
  PatchWindow window;
  Geometry geometry;
  Fusion fusion;
  std::unique_ptr<LtGemm> gemm;
  cublasLtMatmulAlgo_t algo{};
  uint64_t cublasBytes = 0;
  WorkspaceLayout layout;
};

class GemmConvState : public StepState {
 public:
  std::vector<std::unique_ptr<ShapeEntry>> shapes;
};

class GemmConvStep : public CudaStep {
 public:
  GemmConvStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : CudaStep(layer, tactic, signature, device,
                 storageOf(outputDeclared(signature), tacticPrecision(layer, tactic))),
        base_(baseOf(layer)),
        conv_(convSpecOf(layer, tacticPrecision(layer, tactic), outputDeclared(signature))),
        spec_(productSpecOf(layer, conv_, tacticPrecision(layer, tactic), outputDeclared(signature))),
        epilogue_(layer, spec_.storage, device),
        narrow_(isNarrowTactic(tactic.id)),
        stored_(decodeAlgo(tactic.payload)),
        formats_{tactic.inputFormat(kConvX) == TensorFormat::kNHWC,
                 tactic.inputFormat(kConvResidual) == TensorFormat::kNHWC, tactic.outputFormat == TensorFormat::kNHWC},
        name_(layer.describe()) {
    const HostTensor* w = weight(kConvW);
    if (!w || w->rank() != 4)
      throw Error(ErrorCode::kInvalidArgument, name_ + ": the product tactic needs a constant [K, C, kh, kw] filter");
    formats_.gatherX = isStrided(layer) || w->dims()[2] != 1 || w->dims()[3] != 1;
  }

  uint64_t workspaceBytes(std::span<const TensorView> inputs, std::span<const TensorView>) const override {
    if (inputs.size() <= kConvW || inputs[kConvX].dims.size() != 4) return 0;
    const auto window = patchWindowOf(base_, inputs[kConvX].dims, inputs[kConvW].dims);
    if (!window) return 0;  // the launch reports it
    const Geometry g = patchGeometryOf(spec_, inputs[kConvX].dims, inputs[kConvW].dims, *window);
    return layoutOf(spec_, g, formats_, cublasBytes()).total();
  }

  std::unique_ptr<StepState> createState() const override { return std::make_unique<GemmConvState>(); }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    auto* state = dynamic_cast<GemmConvState*>(args.state);
    if (!state) throw Error(ErrorCode::kInternal, name_ + ": enqueued without the state its step made");
    const TensorView& out = args.outputs[0];
    if (elementCount(out.dims) == 0) return;
    const void* x = input(args, kConvX);
    const void* w = input(args, kConvW);
    const void* bias = conv_.hasBias ? input(args, kConvBias) : nullptr;
    const void* residual = conv_.hasResidual ? input(args, kConvResidual) : nullptr;
    const uint32_t alignment = commonAlignment({address(x), address(w), address(bias), address(residual),
                                                address(out.data)});
    const ShapeEntry& entry = shapeFor(*state, args, alignment);
    const WorkspaceLayout& l = entry.layout;
    char* workspace = static_cast<char*>(args.workspace);
    const cudaStream_t s = streamOf(stream);
    const k::ElementType type = elementType(out);
    const std::vector<int64_t>& xd = args.inputs[kConvX].dims;
    const std::vector<int64_t>& yd = out.dims;  // [N, K, H', W'] whatever its format
    const int64_t channels = entry.geometry.n;
    if (formats_.gatherX) {  // dense [N, H', W', C, kh, kw]: each output pixel's patch, the filter's order
      const PatchWindow& win = entry.window;
      const int64_t c = xd[1], h = xd[2], w = xd[3];
      const std::vector<int64_t> strides =
          formats_.x ? std::vector<int64_t>{h * w * c, win.strideH * w * c, win.strideW * c, 1, w * c, c}
                     : std::vector<int64_t>{c * h * w, win.strideH * w, win.strideW, h * w, w, 1};
      check(k::copyStrided(x, workspace + l.xAt(), {xd[0], win.outH, win.outW, c, win.kernelH, win.kernelW}, strides,
                           type, s),
            "gathering its input's patches");
      x = workspace + l.xAt();
    } else if (l.x) {
      check(k::nchwToNhwc(x, workspace + l.xAt(), xd[0], xd[1], xd[2], xd[3], type, s), "re-laying out its input");
      x = workspace + l.xAt();
    }
    if (l.residual) {
      check(k::nchwToNhwc(residual, workspace + l.residualAt(), yd[0], channels, yd[2], yd[3], type, s),
            "re-laying out its residual");
      residual = workspace + l.residualAt();
    }
    void* y = l.y ? workspace + l.yAt() : out.data;
    if (narrow_) {
      if (weightType(kConvW) != spec_.storage)  // the uploaded copy: the bound view keeps the plan's type
        throw Error(ErrorCode::kInternal, name_ + ": its uploaded filter is " +
                                              std::string(toString(weightType(kConvW))) + ", not its activations' " +
                                              std::string(toString(spec_.storage)));
      check(k::narrowPointwiseConv(narrowProblemOf(spec_, entry.geometry), x, w, bias, residual, y, s));
      if (l.y) check(k::nhwcToNchw(y, out.data, yd[0], channels, yd[2], yd[3], type, s), "re-laying out its output");
      return;
    }
    const Fusion& f = entry.fusion;
    entry.gemm->run(cublasLtHandle(device_), entry.algo, 1.0f, x, w, f.residualInC ? 1.0f : 0.0f,
                    f.residualInC ? residual : y, y, entry.gemm->shape().hasBias() ? bias : nullptr,
                    workspace + l.cublasAt(), entry.cublasBytes, s, name_);
    if (f.elementwiseBias || f.elementwiseResidualBefore || f.elementwiseActivation || f.elementwiseResidualAfter) {
      ElementwiseEpilogue::Work work;
      work.bias = f.elementwiseBias ? bias : nullptr;
      work.biasDims = entry.geometry.cDims;
      work.residualBefore = f.elementwiseResidualBefore ? residual : nullptr;
      work.activate = f.elementwiseActivation;
      work.residualAfter = f.elementwiseResidualAfter ? residual : nullptr;
      epilogue_.apply(y, {yd[0], yd[2], yd[3], channels}, work, workspace + l.scratchAt(), s);
    }
    if (l.y) check(k::nhwcToNchw(y, out.data, yd[0], channels, yd[2], yd[3], type, s), "re-laying out its output");
  }

 private:
  static uint64_t address(const void* p) { return uint64_t(reinterpret_cast<uintptr_t>(p)); }

  // cuBLASLt's workspace; none for the narrow kernel.
  std::optional<uint64_t> cublasBytes() const {
    if (narrow_) return std::nullopt;
    return stored_ ? stored_->workspaceBytes : kCublasWorkspaceBytes;
  }

  // The product for these dims and alignment, made at their first launch: the stored algorithm
  // where cuBLASLt still takes it here, else the heuristic's first (fusing less if it must).
  const ShapeEntry& shapeFor(GemmConvState& state, const StepArgs& args, uint32_t alignment) const {
    const std::vector<int64_t>& x = args.inputs[kConvX].dims;
    for (auto& entry : state.shapes)
      if (entry->x == x && entry->alignment == alignment) return *entry;
    auto entry = std::make_unique<ShapeEntry>();
    entry->x = x;
    entry->alignment = alignment;
    const auto window = patchWindowOf(base_, x, args.inputs[kConvW].dims);
    if (!window || window->gathered() != formats_.gatherX)
      throw Error(ErrorCode::kInvalidArgument, name_ + ": X " + dimsToString(x) + " and its filter " +
                                                   dimsToString(args.inputs[kConvW].dims) +
                                                   " do not make the unpadded convolution it was built for");
    entry->window = *window;
    entry->geometry = patchGeometryOf(spec_, x, args.inputs[kConvW].dims, *window);
    const Geometry& g = entry->geometry;
    if (g.outputElements != args.outputs[0].elementCount())
      throw Error(ErrorCode::kInternal, name_ + ": its product makes " + std::to_string(g.outputElements) +
                                            " elements but the output " + dimsToString(args.outputs[0].dims) +
                                            " has " + std::to_string(args.outputs[0].elementCount()));
    const uint64_t copies = layoutOf(spec_, g, formats_, narrow_ ? std::nullopt : std::optional<uint64_t>(0)).total();
    if (args.workspaceBytes < copies)
      throw Error(ErrorCode::kInternal, name_ + ": its workspace of " + std::to_string(args.workspaceBytes) +
                                            " bytes is smaller than the " + std::to_string(copies) + " it needs");
    if (narrow_) {
      if (!narrowKernelTakes(spec_, g))
        throw Error(
            ErrorCode::kUnsupported,
            name_ + ": X " + dimsToString(x) + " is not a product the narrow pointwise kernel takes; rebuild the plan");
      entry->layout = layoutOf(spec_, g, formats_, std::nullopt);
      state.shapes.push_back(std::move(entry));
      return *state.shapes.back();
    }
    const uint64_t budget = std::min(args.workspaceBytes - copies, kCublasWorkspaceBytes);
    cublasLtHandle_t handle = cublasLtHandle(device_);
    std::string tried;
    for (int level = 0; level < 2 && !entry->gemm; ++level) {
      entry->fusion = fusionOf(spec_, g, level, false);
      auto gemm = std::make_unique<LtGemm>(gemmShapeOf(spec_, g, entry->fusion));
      if (stored_ && stored_->variant == uint32_t(level) && alignment >= stored_->alignment)
        if (auto needs = gemm->check(handle, stored_->algo); needs && *needs <= budget) {
          entry->algo = stored_->algo;
          entry->cublasBytes = *needs;
          entry->gemm = std::move(gemm);
          break;
        }
      const auto results = gemm->heuristics(handle, 1, budget, alignment);
      if (!results.empty()) {
        entry->algo = results[0].algo;
        entry->cublasBytes = results[0].workspaceSize;
        entry->gemm = std::move(gemm);
        break;
      }
      tried += (tried.empty() ? "" : ", then ") + gemm->shape().describe();
    }
    if (!entry->gemm)
      throw Error(ErrorCode::kUnsupported, name_ + ": cuBLASLt has no algorithm for its product (" + tried +
                                               ") with pointers aligned to " + std::to_string(alignment) +
                                               " bytes; build this layer with another tactic");
    entry->layout = layoutOf(spec_, g, formats_, entry->cublasBytes);
    state.shapes.push_back(std::move(entry));
    return *state.shapes.back();
  }

  // Whether the layer's window has a stride (fixed by its attributes, whatever the dims).
  static bool isStrided(const Layer& layer) {
    for (int64_t stride : baseOf(layer).attrInts("strides", {}))
      if (stride != 1) return true;
    return false;
  }

  Layer base_;
  ConvSpec conv_;
  MatMulSpec spec_;
  ElementwiseEpilogue epilogue_;
  bool narrow_;  // Kiln's narrow pointwise kernel, not cuBLASLt
  std::optional<StoredAlgo> stored_;
  Formats formats_;
  std::string name_;
};

}  // namespace

bool isGemmConvTactic(const std::string& tacticId) {
  return tacticId.starts_with(kTacticPrefix) || tacticId.starts_with(kPatchTacticPrefix) || isNarrowTactic(tacticId);
}

std::vector<Tactic> gemmConvTactics(const Layer& layer, Precision precision, const LayerInputs& inputs,
                                    CudaDevice& device) {
  if (!isForwardConv(layer) || inputs.dims.size() <= kConvW || inputs.weights.size() <= kConvW ||
      !inputs.weights[kConvW])
    return {};
  const std::vector<int64_t>&x = inputs.dims[kConvX], &w = inputs.dims[kConvW];
  const auto window = patchWindowOf(baseOf(layer), x, w);
  if (!window || elementCount(x) == 0) return {};
  std::vector<Tactic> tactics;
  try {
    const DataType declared = inputs.types.empty() ? DataType::kFloat32 : inputs.types[0];
    const ConvSpec conv = convSpecOf(layer, precision, declared);
    const MatMulSpec spec = productSpecOf(layer, conv, precision, declared);
    const Geometry g = patchGeometryOf(spec, x, w, *window);
    const bool patch = window->patchSize() != 1;
    if (narrowKernelTakes(spec, g)) {
      Tactic& t = tactics.emplace_back();
      t.id = (patch ? kNarrowPatchTacticPrefix : kNarrowTacticPrefix) + std::string(precisionTag(precision));
      t.workspaceBytes = layoutOf(spec, g, Formats{}, std::nullopt).total();
      t.takesChannelsLast = true;
    }
    // The workspace covers linear neighbours too (the copies), whatever formats the plan gives.
    const uint64_t copies = layoutOf(spec, g, Formats{}, 0).total();
    LtSearch search = LtSearch::forBudget(inputs.candidateBudget);
    search.alignment = 256;  // arena and weight pointers are 256-aligned
    search.smCount = device.properties.multiProcessorCount;
    const size_t narrowCount = tactics.size();  // cuBLASLt's fuse less at level 1 only where level 0 has none
    for (int level = 0; level < 2 && tactics.size() == narrowCount; ++level) {
      LtGemm gemm(gemmShapeOf(spec, g, fusionOf(spec, g, level, false)));
      for (const LtCandidate& candidate : ltCandidates(gemm, cublasLtHandle(device), search)) {
        Tactic& t = tactics.emplace_back();
        t.id =
            (patch ? kPatchTacticPrefix : kTacticPrefix) + std::string(precisionTag(precision)) + "." + candidate.name;
        t.payload = encodeAlgo({candidate.algo, candidate.workspaceBytes, search.alignment, uint32_t(level)});
        t.workspaceBytes = copies + candidate.workspaceBytes;
        t.takesChannelsLast = true;
      }
    }
  } catch (const Error&) {
    return tactics;  // those found so far; the layer keeps cuDNN's tactics too
  }
  return tactics;
}

std::unique_ptr<Step> makeGemmConvStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature,
                                       CudaDevice& device) {
  return std::make_unique<GemmConvStep>(layer, tactic, signature, device);
}

}  // namespace kiln::cuda
