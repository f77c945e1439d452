// CPU kernels of the collective layers (semantics: ops/collective.h) over the execution context's
// communicator. Tensors split or joined along an axis other than the outermost are laid out as
// world_size contiguous blocks in the workspace first (the communicator's buffers are flat). A
// layer of world_size 1 without a communicator is a copy, so single-rank engines run anywhere.
#include <kiln/communicator.h>
#include <kernels/cpu/layout/strided_copy.h>

#include "../../../ops/collective.h"
#include "../../../ops/fused.h"
#include "../../../ops/op_families.h"
#include "../../../ops/op_schema.h"
#include "../cpu_kernel.h"

#include <cstring>

namespace kiln {
namespace {

using namespace collective;

// The communicator the layer runs on, checked against its world_size; null for a lone rank.
Communicator* communicatorFor(const KernelContext& ctx) {
  const int64_t size = worldSizeOf(ctx.layer());
  Communicator* comm = ctx.communicator();
  if (!comm) {
    if (size == 1) return nullptr;
    ctx.fail("it was built for world_size " + std::to_string(size) +
             " but the execution context has no communicator: call ExecutionContext::setCommunicator with this "
             "rank's member of the group");
  }
  if (comm->exchangesDeviceBuffers())
    ctx.fail("it runs on the CPU, in host memory, but the communicator (" + comm->describe() +
             ") exchanges device buffers: give CPU engines an in-process communicator (createInProcessCommunicators)");
  if (comm->size() != size)
    ctx.fail("it was built for world_size " + std::to_string(size) + " but the communicator (" + comm->describe() +
             ") has " + std::to_string(comm->size()) + " ranks");
  return comm;
}

// Runs a communicator call, naming the layer in its errors (timeouts, a failed group).
template <class Call>
void communicate(const KernelContext& ctx, Call call) {
  try {
    call();
  } catch (const Error& e) {
    ctx.fail(e.what());
  }
}

ReduceOp reductionOf(const KernelContext& ctx) {
  const std::string name = ctx.layer().attrString(kReduction, "sum");
  const auto op = parseReduceOp(name);
  if (!op) ctx.fail("attribute reduction must be sum, max, min or prod, got '" + name + "'");
  return *op;
}

int rootOf(const KernelContext& ctx) { return int(ctx.layer().attrInt(kRoot, 0)); }

void copyInput(const HostTensor& in, HostTensor& out) {
  if (in.byteSize()) std::memcpy(out.rawData(), in.rawData(), in.byteSize());
}

// The layer's input, its output and the communicator; without one (a lone rank) the output is
// already the input's copy.
struct Operands {
  const HostTensor& x;
  HostTensor& y;
  Communicator* comm;
};
Operands operandsOf(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  HostTensor& y = ctx.allocateOutput(0);
  Communicator* comm = communicatorFor(ctx);
  if (!comm) copyInput(x, y);
  return {x, y, comm};
}

// X viewed as [outer, rows, inner bytes] around the layer's axis.
struct ByteAxisView {
  int64_t outer = 1, rows = 1, innerBytes = 1;
};

ByteAxisView axisView(const KernelContext& ctx, const HostTensor& x) {
  const AxisView v = axisViewOf(ctx.layer(), x.dims());
  return {v.outer, v.rows, v.inner * int64_t(byteSize(x.dtype()))};
}

// [outer, blocks · rows, inner] <-> `blocks` contiguous [outer, rows, inner] blocks.
void splitIntoBlocks(const void* src, void* dst, const ByteAxisView& v, int64_t blocks, int64_t rows) {
  std::vector<uint8_t*> parts;
  for (int64_t b = 0; b < blocks; ++b) parts.push_back(static_cast<uint8_t*>(dst) + b * v.outer * rows * v.innerBytes);
  kernels::splitBlocks(static_cast<const uint8_t*>(src), parts, std::vector<int64_t>(size_t(blocks), rows), v.outer,
                       v.innerBytes);
}
void joinBlocks(const void* src, void* dst, const ByteAxisView& v, int64_t blocks, int64_t rows) {
  std::vector<const uint8_t*> parts;
  for (int64_t b = 0; b < blocks; ++b)
    parts.push_back(static_cast<const uint8_t*>(src) + b * v.outer * rows * v.innerBytes);
  kernels::concatBlocks(parts, std::vector<int64_t>(size_t(blocks), rows), static_cast<uint8_t*>(dst), v.outer,
                        v.innerBytes);
}

void allReduceKernel(KernelContext& ctx) {
  const auto [x, y, comm] = operandsOf(ctx);
  if (!comm) return;
  const ReduceOp op = reductionOf(ctx);
  communicate(ctx, [&] { comm->allReduce(x.rawData(), y.rawData(), x.elementCount(), x.dtype(), op); });
}

void broadcastKernel(KernelContext& ctx) {
  const auto [x, y, comm] = operandsOf(ctx);
  if (!comm) return;
  communicate(ctx, [&] { comm->broadcast(x.rawData(), y.rawData(), x.elementCount(), x.dtype(), rootOf(ctx)); });
}

void reduceKernel(KernelContext& ctx) {
  const auto [x, y, comm] = operandsOf(ctx);
  if (!comm) return;
  if (comm->rank() != rootOf(ctx)) copyInput(x, y);  // what ranks other than the root keep
  const ReduceOp op = reductionOf(ctx);
  communicate(ctx, [&] { comm->reduce(x.rawData(), y.rawData(), x.elementCount(), x.dtype(), op, rootOf(ctx)); });
}

// Gathers X along the axis into Y: `call(recv)` fills recv with the ranks' blocks in rank order
// (the output itself when nothing lies outside the axis); `receives` says whether this rank gets them.
template <class Call>
void gatherAlongAxis(KernelContext& ctx, const HostTensor& x, HostTensor& y, int64_t ranks, bool receives, Call call) {
  const ByteAxisView v = axisView(ctx, x);
  void* gathered = v.outer == 1 ? y.rawData() : ctx.workspace(y.byteSize());
  communicate(ctx, [&] { call(gathered); });
  if (receives && v.outer != 1) joinBlocks(gathered, y.rawData(), v, ranks, v.rows);
}

// X's data as `ranks` contiguous blocks along the axis (X itself when nothing lies outside it).
const void* blocksAlongAxis(KernelContext& ctx, const HostTensor& x, int64_t ranks) {
  const ByteAxisView v = axisView(ctx, x);
  const int64_t rows = rowsPerRank(ctx.layer(), v.rows, ranks);
  if (v.outer == 1) return x.rawData();
  void* packed = ctx.workspace(x.byteSize());
  splitIntoBlocks(x.rawData(), packed, v, ranks, rows);
  return packed;
}

void allGatherKernel(KernelContext& ctx) {
  const auto [x, y, comm] = operandsOf(ctx);
  if (!comm) return;
  gatherAlongAxis(ctx, x, y, comm->size(), true,
                  [&](void* recv) { comm->allGather(x.rawData(), recv, x.elementCount(), x.dtype()); });
}

void gatherKernel(KernelContext& ctx) {
  const auto [x, y, comm] = operandsOf(ctx);
  if (!comm) return;
  const int root = rootOf(ctx);
  if (comm->rank() != root && y.byteSize()) std::memset(y.rawData(), 0, y.byteSize());  // defined, not stale
  gatherAlongAxis(ctx, x, y, comm->size(), comm->rank() == root,
                  [&](void* recv) { comm->gather(x.rawData(), recv, x.elementCount(), x.dtype(), root); });
}

void scatterKernel(KernelContext& ctx) {
  const auto [x, y, comm] = operandsOf(ctx);
  if (!comm) return;
  const int root = rootOf(ctx);
  const void* blocks = comm->rank() == root ? blocksAlongAxis(ctx, x, comm->size()) : nullptr;
  communicate(ctx, [&] { comm->scatter(blocks, y.rawData(), y.elementCount(), x.dtype(), root); });
}

void reduceScatterKernel(KernelContext& ctx) {
  const auto [x, y, comm] = operandsOf(ctx);
  if (!comm) return;
  const void* blocks = blocksAlongAxis(ctx, x, comm->size());
  const ReduceOp op = reductionOf(ctx);
  communicate(ctx, [&] { comm->reduceScatter(blocks, y.rawData(), y.elementCount(), x.dtype(), op); });
}

void allToAllKernel(KernelContext& ctx) {
  const auto [x, y, comm] = operandsOf(ctx);
  if (!comm) return;
  const ByteAxisView v = axisView(ctx, x);
  const int64_t ranks = comm->size(), rows = rowsPerRank(ctx.layer(), v.rows, ranks);
  const int64_t count = x.elementCount() / ranks;
  if (v.outer == 1) return communicate(ctx, [&] { comm->allToAll(x.rawData(), y.rawData(), count, x.dtype()); });
  auto* packed = static_cast<uint8_t*>(ctx.workspace(2 * x.byteSize()));
  uint8_t* received = packed + x.byteSize();
  splitIntoBlocks(x.rawData(), packed, v, ranks, rows);
  communicate(ctx, [&] { comm->allToAll(packed, received, count, x.dtype()); });
  joinBlocks(received, y.rawData(), v, ranks, rows);
}

}  // namespace

void registerCollectiveCpuKernels(CpuKernelRegistry& registry) {
  registry.add(fused::kDomain, kAllReduce, allReduceKernel);
  registry.add(fused::kDomain, kAllGather, allGatherKernel);
  registry.add(fused::kDomain, kReduceScatter, reduceScatterKernel);
  registry.add(fused::kDomain, kBroadcast, broadcastKernel);
  registry.add(fused::kDomain, kReduce, reduceKernel);
  registry.add(fused::kDomain, kAllToAll, allToAllKernel);
  registry.add(fused::kDomain, kGather, gatherKernel);
  registry.add(fused::kDomain, kScatter, scatterKernel);
}

}  // namespace kiln
