// CPU reference kernels for the recurrent op family: RNN, GRU, LSTM. The numeric work (float32, one
// direction at a time) is in kernels/cpu/rnn/; other float types are converted at the edges.
#include "../../../ops/op_families.h"
#include "../../../ops/recurrent.h"
#include "../cpu_kernel.h"
#include "../dispatch.h"

namespace kiln {
namespace {

using kernels::RecurrentCell;

// A float32 view of a float tensor: its own data, or a converted copy held in `storage`.
const float* asFloat32(const HostTensor& t, std::vector<float>& storage) {
  if (t.dtype() == DataType::kFloat32) return t.data<float>();
  storage.resize(size_t(t.elementCount()));
  dispatchFloat(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* src = t.data<T>();
    for (int64_t i = 0; i < t.elementCount(); ++i) storage[size_t(i)] = kernels::toFloat(src[i]);
  });
  return storage.data();
}

// An output computed in float32: written in place when the output is float32, else converted at the
// end. Starts as zeros: steps past a batch entry's sequence length are never written.
class FloatOutput {
 public:
  FloatOutput(KernelContext& ctx, size_t index, DataType dtype, std::vector<int64_t> dims) {
    if (!ctx.hasOutput(index)) return;
    tensor_ = &ctx.allocateZeroedOutput(index, dtype, std::move(dims));
    if (dtype == DataType::kFloat32) data_ = tensor_->data<float>();
    else {
      buffer_.assign(size_t(tensor_->elementCount()), 0.0f);
      data_ = buffer_.data();
    }
  }
  float* data() const { return data_; }
  float* at(int64_t offset) const { return data_ ? data_ + offset : nullptr; }
  void finish() {
    if (!tensor_ || tensor_->dtype() == DataType::kFloat32) return;
    dispatchFloat(tensor_->dtype(), [&](auto tag) {
      using T = decltype(tag);
      T* out = tensor_->data<T>();
      for (size_t i = 0; i < buffer_.size(); ++i) out[i] = kernels::fromFloat<T>(buffer_[i]);
    });
  }

 private:
  HostTensor* tensor_ = nullptr;
  float* data_ = nullptr;
  std::vector<float> buffer_;
};

void expectDims(const KernelContext& ctx, size_t input, const char* name, const std::vector<int64_t>& dims) {
  if (!ctx.hasInput(input)) return;
  if (ctx.input(input).dims() != dims)
    ctx.fail(std::string(name) + " (input " + std::to_string(input) + ") has shape " +
             dimsToString(ctx.input(input).dims()) + "; the layer needs " + dimsToString(dims));
}

void recurrentKernel(KernelContext& ctx, RecurrentCell cell) {
  RecurrentAttributes a = readRecurrentAttributes(ctx.layer(), cell);
  const HostTensor& x = ctx.input(0);
  const HostTensor& r = ctx.input(2);
  if (x.rank() != 3 || r.rank() != 3)
    ctx.fail("X and R must have rank 3, got shapes " + dimsToString(x.dims()) + " and " + dimsToString(r.dims()));
  const int64_t D = a.directions, H = r.dim(2), G = kernels::gateCount(cell);
  const int64_t steps = x.dim(a.batchMajor ? 1 : 0), batch = x.dim(a.batchMajor ? 0 : 1), inputSize = x.dim(2);
  if (a.hiddenSize > 0 && a.hiddenSize != H)
    ctx.fail("hidden_size is " + std::to_string(a.hiddenSize) + " but R has " + std::to_string(H) + " columns");
  std::vector<int64_t> stateDims = a.batchMajor ? std::vector<int64_t>{batch, D, H} : std::vector<int64_t>{D, batch, H};
  expectDims(ctx, 1, "W", {D, G * H, inputSize});
  expectDims(ctx, 2, "R", {D, G * H, H});
  expectDims(ctx, 3, "B", {D, 2 * G * H});
  expectDims(ctx, 4, "sequence_lens", {batch});
  expectDims(ctx, 5, "initial_h", stateDims);
  expectDims(ctx, 6, "initial_c", stateDims);
  expectDims(ctx, 7, "P", {D, 3 * H});
  const int32_t* lengths = nullptr;
  if (ctx.hasInput(4)) {
    lengths = ctx.input(4).data<int32_t>();
    for (int64_t b = 0; b < batch; ++b)
      if (lengths[b] < 0 || lengths[b] > steps)
        ctx.fail("sequence_lens[" + std::to_string(b) + "] is " + std::to_string(lengths[b]) + "; it must be in [0, " +
                 std::to_string(steps) + "]");
  }

  std::vector<float> xs, ws, rs, bs, hs, cs, ps;
  auto optionalFloats = [&](size_t i, std::vector<float>& storage) {
    return ctx.hasInput(i) ? asFloat32(ctx.input(i), storage) : nullptr;
  };
  const float* xf = asFloat32(x, xs);
  const float* wf = asFloat32(ctx.input(1), ws);
  const float* rf = asFloat32(r, rs);
  const float* bf = optionalFloats(3, bs);
  const float* h0 = optionalFloats(5, hs);
  const float* c0 = optionalFloats(6, cs);
  const float* pf = optionalFloats(7, ps);

  DataType dtype = x.dtype();
  FloatOutput y(ctx, 0, dtype, a.batchMajor ? std::vector<int64_t>{batch, steps, D, H} : std::vector<int64_t>{steps, D, batch, H});
  FloatOutput yh(ctx, 1, dtype, stateDims);
  FloatOutput yc(ctx, 2, dtype, stateDims);
  for (int64_t d = 0; d < D; ++d) {
    kernels::RecurrentConfig config;
    config.cell = cell;
    config.steps = steps;
    config.batch = batch;
    config.inputSize = inputSize;
    config.hidden = H;
    config.reverse = a.reverse || d == 1;
    config.batchMajor = a.batchMajor;
    config.clip = a.clip;
    config.linearBeforeReset = a.linearBeforeReset;
    config.inputForget = a.inputForget;
    const auto& f = a.activations[size_t(d)];
    config.f = f[0];
    if (f.size() > 1) config.g = f[1];
    if (f.size() > 2) config.h = f[2];

    kernels::RecurrentTensors t;
    t.x = xf;
    t.w = wf + d * G * H * inputSize;
    t.r = rf + d * G * H * H;
    t.bias = bf ? bf + d * 2 * G * H : nullptr;
    t.peephole = pf ? pf + d * 3 * H : nullptr;
    t.lengths = lengths;
    int64_t stateOffset = a.batchMajor ? d * H : d * batch * H;
    t.stateStride = a.batchMajor ? D * H : H;
    t.initialH = h0 ? h0 + stateOffset : nullptr;
    t.initialC = c0 ? c0 + stateOffset : nullptr;
    t.finalH = yh.at(stateOffset);
    t.finalC = yc.at(stateOffset);
    t.y = y.at(a.batchMajor ? d * H : d * batch * H);
    t.yStepStride = a.batchMajor ? D * H : D * batch * H;
    t.yBatchStride = a.batchMajor ? steps * D * H : H;
    kernels::runRecurrentDirection(config, t);
  }
  y.finish();
  yh.finish();
  yc.finish();
}

}  // namespace

void registerRecurrentCpuKernels(CpuKernelRegistry& registry) {
  registry.add("RNN", [](KernelContext& ctx) { recurrentKernel(ctx, RecurrentCell::kRnn); });
  registry.add("GRU", [](KernelContext& ctx) { recurrentKernel(ctx, RecurrentCell::kGru); });
  registry.add("LSTM", [](KernelContext& ctx) { recurrentKernel(ctx, RecurrentCell::kLstm); });
}

}  // namespace kiln
