// CUDA steps of the collective layers (ops/collective.h) over the execution context's
// communicator, which must exchange device buffers (NCCL): each calls it with device pointers and
// the step's stream. The layouts are the CPU kernels' (backends/cpu/ops/collective.cpp): a tensor
// split or joined along an axis with dims outside it is laid out as world_size contiguous blocks
// in the workspace with the block-copy kernels (kernels/cuda/layout/concat_split.h) around the
// flat call. A layer of world_size 1 without a communicator is a copy, so single-rank engines run
// anywhere. The communicator waits for each collective on the host with a deadline, so the
// builder reports these layers as synchronising (no CUDA graph capture).
#include "../../../ops/collective.h"
#include "../../../ops/fused.h"
#include "cuda_data_step.h"

#include <kiln/communicator.h>
#include <kiln/error.h>

#include <kernels/cuda/layout/concat_split.h>

namespace kiln::cuda {
namespace {

using namespace collective;
namespace k = kernels::cuda;

enum class Kind { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kReduce, kAllToAll, kGather, kScatter };

bool reduces(Kind kind) { return kind == Kind::kAllReduce || kind == Kind::kReduceScatter || kind == Kind::kReduce; }
bool alongAxis(Kind kind) {
  return kind == Kind::kAllGather || kind == Kind::kReduceScatter || kind == Kind::kAllToAll || kind == Kind::kGather ||
         kind == Kind::kScatter;
}

class CollectiveStep : public DataStep {
 public:
  CollectiveStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device,
                 Kind kind)
      : DataStep(layer, tactic, signature, device), kind_(kind) {
    if (reduces(kind)) {
      const std::string name = layer.attrString(kReduction, "sum");
      const auto op = parseReduceOp(name);
      if (!op)
        throw Error(ErrorCode::kInvalidModel,
                    layer.describe() + ": attribute reduction must be sum, max, min or prod, got '" + name + "'");
      op_ = *op;
    }
  }

  uint64_t workspaceBytes(std::span<const TensorView> inputs, std::span<const TensorView> outputs) const override {
    if (!alongAxis(kind_) || inputs.empty() || outputs.empty() || inputs[0].dims.empty()) return 0;
    if (axisView(inputs[0]).outer == 1) return 0;  // the tensor is its blocks already
    switch (kind_) {
      case Kind::kAllGather:
      case Kind::kGather:
        return outputs[0].byteSize();  // the ranks' blocks as received
      case Kind::kAllToAll:
        return 2 * workspaceAligned(inputs[0].byteSize());  // blocks sent, blocks received
      default:
        return inputs[0].byteSize();  // the blocks to scatter
    }
  }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    Communicator* comm = communicatorFor(args);
    if (!comm) return copyInput(args, 0, stream);
    const TensorView& x = args.inputs[0];
    const TensorView& y = args.outputs[0];
    const void* in = input(args, 0);
    void* s = streamOf(stream);
    const int root = int(layer_.attrInt(kRoot, 0));
    switch (kind_) {
      case Kind::kAllReduce:
        return communicate([&] { comm->allReduce(in, y.data, x.elementCount(), x.dtype, op_, s); });
      case Kind::kBroadcast:
        return communicate([&] { comm->broadcast(in, y.data, x.elementCount(), x.dtype, root, s); });
      case Kind::kReduce:
        if (comm->rank() != root) copyInput(args, 0, stream);  // what ranks other than the root keep
        return communicate([&] { comm->reduce(in, y.data, x.elementCount(), x.dtype, op_, root, s); });
      case Kind::kAllGather:
        return gatherAlongAxis(args, comm->size(), stream, true,
                               [&](void* recv) { comm->allGather(in, recv, x.elementCount(), x.dtype, s); });
      case Kind::kGather:
        if (comm->rank() != root && y.byteSize())  // defined, not stale
          check(cudaMemsetAsync(y.data, 0, y.byteSize(), streamOf(stream)), "zeroing its output");
        return gatherAlongAxis(args, comm->size(), stream, comm->rank() == root,
                               [&](void* recv) { comm->gather(in, recv, x.elementCount(), x.dtype, root, s); });
      case Kind::kScatter: {
        const void* blocks = comm->rank() == root ? blocksAlongAxis(args, comm->size(), stream) : nullptr;
        return communicate([&] { comm->scatter(blocks, y.data, y.elementCount(), x.dtype, root, s); });
      }
      case Kind::kReduceScatter: {
        const void* blocks = blocksAlongAxis(args, comm->size(), stream);
        return communicate([&] { comm->reduceScatter(blocks, y.data, y.elementCount(), x.dtype, op_, s); });
      }
      case Kind::kAllToAll:
        return allToAll(args, *comm, stream);
    }
  }

 private:
  // The communicator the layer runs on, checked against its world_size; null for a lone rank.
  Communicator* communicatorFor(const StepArgs& args) const {
    const int64_t size = worldSizeOf(layer_);
    Communicator* comm = args.communicator;
    if (!comm) {
      if (size == 1) return nullptr;
      fail("it was built for world_size " + std::to_string(size) +
           " but the execution context has no communicator: call ExecutionContext::setCommunicator with this "
           "rank's NCCL communicator (createNcclCommunicator)");
    }
    if (!comm->exchangesDeviceBuffers())
      fail("it runs on the GPU, in device memory, but the communicator (" + comm->describe() +
           ") exchanges host buffers: give CUDA engines an NCCL communicator (createNcclCommunicator)");
    if (comm->size() != size)
      fail("it was built for world_size " + std::to_string(size) + " but the communicator (" + comm->describe() +
           ") has " + std::to_string(comm->size()) + " ranks");
    return comm;
  }

  [[noreturn]] void fail(const std::string& why) const {
    throw Error(ErrorCode::kRuntimeError, layer_.describe() + ": " + why);
  }

  // Runs a communicator call, naming the layer in its errors (timeouts, a failed group).
  template <class Call>
  void communicate(Call call) const {
    try {
      call();
    } catch (const Error& e) {
      throw Error(e.code(), layer_.describe() + ": " + e.what());
    }
  }

  AxisView axisView(const TensorView& x) const { return axisViewOf(layer_, x.dims); }

  // [outer, blocks · rows, inner] <-> `blocks` contiguous [outer, rows, inner] blocks.
  void splitIntoBlocks(const void* src, void* dst, const TensorView& x, const AxisView& v, int64_t blocks, int64_t rows,
                       Stream& stream) const {
    const uint64_t blockBytes = uint64_t(v.outer * rows * v.inner) * byteSize(x.dtype);
    std::vector<void*> parts;
    for (int64_t b = 0; b < blocks; ++b) parts.push_back(static_cast<char*>(dst) + uint64_t(b) * blockBytes);
    check(k::split(src, parts, std::vector<int64_t>(size_t(blocks), rows), v.outer, v.inner, elementType(x),
                   streamOf(stream)),
          "laying its input out in rank blocks");
  }
  void joinBlocks(const void* src, void* dst, const TensorView& x, const AxisView& v, int64_t blocks, int64_t rows,
                  Stream& stream) const {
    const uint64_t blockBytes = uint64_t(v.outer * rows * v.inner) * byteSize(x.dtype);
    std::vector<const void*> parts;
    for (int64_t b = 0; b < blocks; ++b) parts.push_back(static_cast<const char*>(src) + uint64_t(b) * blockBytes);
    check(k::concat(parts, std::vector<int64_t>(size_t(blocks), rows), dst, v.outer, v.inner, elementType(x),
                    streamOf(stream)),
          "joining the ranks' blocks along its axis");
  }

  // Gathers X along the axis into Y: `call(recv)` fills recv with the ranks' blocks in rank order
  // (the output itself when nothing lies outside the axis); `receives` says whether this rank gets them.
  template <class Call>
  void gatherAlongAxis(const StepArgs& args, int64_t ranks, Stream& stream, bool receives, Call call) const {
    const TensorView& x = args.inputs[0];
    const TensorView& y = args.outputs[0];
    const AxisView v = axisView(x);
    void* gathered = v.outer == 1 ? y.data : args.workspace;
    communicate([&] { call(gathered); });
    if (receives && v.outer != 1) joinBlocks(gathered, y.data, x, v, ranks, v.rows, stream);
  }

  // X's data as `ranks` contiguous blocks along the axis (X itself when nothing lies outside it).
  const void* blocksAlongAxis(const StepArgs& args, int64_t ranks, Stream& stream) const {
    const TensorView& x = args.inputs[0];
    const AxisView v = axisView(x);
    const int64_t rows = rowsPerRank(layer_, v.rows, ranks);
    if (v.outer == 1) return input(args, 0);
    splitIntoBlocks(input(args, 0), args.workspace, x, v, ranks, rows, stream);
    return args.workspace;
  }

  void allToAll(const StepArgs& args, Communicator& comm, Stream& stream) const {
    const TensorView& x = args.inputs[0];
    const AxisView v = axisView(x);
    const int64_t ranks = comm.size(), rows = rowsPerRank(layer_, v.rows, ranks);
    const int64_t count = x.elementCount() / ranks;
    void* s = streamOf(stream);
    if (v.outer == 1)
      return communicate([&] { comm.allToAll(input(args, 0), args.outputs[0].data, count, x.dtype, s); });
    auto* packed = static_cast<char*>(args.workspace);
    char* received = packed + workspaceAligned(x.byteSize());
    splitIntoBlocks(input(args, 0), packed, x, v, ranks, rows, stream);
    communicate([&] { comm.allToAll(packed, received, count, x.dtype, s); });
    joinBlocks(received, args.outputs[0].data, x, v, ranks, rows, stream);
  }

  Kind kind_;
  ReduceOp op_ = ReduceOp::kSum;
};

// Any tensor the kernels move (the schema limits reductions to the types they take).
CudaOp collectiveOp(Kind kind) {
  return {movableTensors,
          [kind](const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device) {
            return std::make_unique<CollectiveStep>(layer, tactic, signature, device, kind);
          },
          {}};
}

}  // namespace

void registerCollectiveCudaOps(CudaOpRegistry& registry) {
  registry.add(fused::kDomain, kAllReduce, collectiveOp(Kind::kAllReduce));
  registry.add(fused::kDomain, kAllGather, collectiveOp(Kind::kAllGather));
  registry.add(fused::kDomain, kReduceScatter, collectiveOp(Kind::kReduceScatter));
  registry.add(fused::kDomain, kBroadcast, collectiveOp(Kind::kBroadcast));
  registry.add(fused::kDomain, kReduce, collectiveOp(Kind::kReduce));
  registry.add(fused::kDomain, kAllToAll, collectiveOp(Kind::kAllToAll));
  registry.add(fused::kDomain, kGather, collectiveOp(Kind::kGather));
  registry.add(fused::kDomain, kScatter, collectiveOp(Kind::kScatter));
}

}  // namespace kiln::cuda
