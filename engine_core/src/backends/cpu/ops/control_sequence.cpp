// CPU reference kernels for the control_sequence op family: sequences and optionals here, If / Loop /
// Scan / SequenceMap in control_sequence_flow.cpp. Sequence items share storage with the tensors they
// came from (kernels never write into their inputs), so building and editing sequences copies no data.
#include "../../../ops/op_families.h"
#include "../cpu_kernel.h"
#include "control_sequence_tensors.h"

namespace kiln {

void registerControlFlowCpuKernels(CpuKernelRegistry& registry);

namespace {

const std::vector<HostTensor>& sequenceInput(const KernelContext& ctx, size_t i) {
  const Value& v = ctx.inputValue(i);
  if (!v.isSequence() || !v.hasElement)
    ctx.fail("input " + std::to_string(i) + " ('" + ctx.layer().inputs[i] + "') must be a sequence, got a " +
             std::string(toString(v.kind)));
  return v.sequence;
}

// A position in [-size, size - 1] (or up to `size` where inserting at the end is allowed), normalised.
size_t sequencePosition(const KernelContext& ctx, size_t input, int64_t size, bool allowEnd) {
  int64_t position = scalarInput(ctx, input, "position");
  int64_t limit = allowEnd ? size : size - 1;
  if (position < -size || position > limit)
    ctx.fail("position " + std::to_string(position) + " is out of range for a sequence of " + std::to_string(size) +
             " tensors (valid: " + std::to_string(-size) + " to " + std::to_string(limit) + ")");
  return size_t(position < 0 ? position + size : position);
}

size_t normalizedAxis(const KernelContext& ctx, int64_t axis, size_t rank) {
  int64_t r = int64_t(rank);
  if (axis < -r || axis >= r)
    ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return size_t(axis < 0 ? axis + r : axis);
}

void sequenceConstruct(KernelContext& ctx) {
  std::vector<HostTensor> items;
  for (size_t i = 0; i < ctx.inputCount(); ++i) items.push_back(ctx.input(i));
  ctx.setOutputValue(0, Value::ofSequence(std::move(items)));
}

void sequenceAt(KernelContext& ctx) {
  const auto& items = sequenceInput(ctx, 0);
  ctx.setOutput(0, items[sequencePosition(ctx, 1, int64_t(items.size()), false)]);
}

void sequenceInsert(KernelContext& ctx) {
  std::vector<HostTensor> items = sequenceInput(ctx, 0);
  const HostTensor& item = ctx.input(1);
  if (!items.empty() && items.front().dtype() != item.dtype())
    ctx.fail("the inserted tensor is " + std::string(toString(item.dtype())) + " but the sequence holds " +
             std::string(toString(items.front().dtype())));
  size_t at = ctx.hasInput(2) ? sequencePosition(ctx, 2, int64_t(items.size()), true) : items.size();
  items.insert(items.begin() + int64_t(at), item);
  ctx.setOutputValue(0, Value::ofSequence(std::move(items)));
}

void sequenceErase(KernelContext& ctx) {
  std::vector<HostTensor> items = sequenceInput(ctx, 0);
  if (items.empty()) ctx.fail("cannot erase from an empty sequence");
  size_t at = ctx.hasInput(1) ? sequencePosition(ctx, 1, int64_t(items.size()), false) : items.size() - 1;
  items.erase(items.begin() + int64_t(at));
  ctx.setOutputValue(0, Value::ofSequence(std::move(items)));
}

void splitToSequence(KernelContext& ctx) {
  const HostTensor& in = ctx.input(0);
  if (in.rank() == 0) ctx.fail("the input must have rank 1 or more to be split");
  size_t axis = normalizedAxis(ctx, ctx.layer().attrInt("axis", 0), in.rank());
  int64_t extent = in.dim(axis);
  std::vector<int64_t> sizes;
  bool keepAxis = true;
  if (!ctx.hasInput(1)) {
    sizes.assign(size_t(extent), 1);
    keepAxis = ctx.layer().attrInt("keepdims", 1) != 0;
  } else if (ctx.input(1).rank() == 0) {
    int64_t piece = scalarInput(ctx, 1, "split");
    if (piece <= 0) ctx.fail("split must be positive, got " + std::to_string(piece));
    for (int64_t start = 0; start < extent; start += piece) sizes.push_back(std::min(piece, extent - start));
  } else {
    sizes = ctx.input(1).toInt64Vector();
    int64_t sum = 0;
    for (int64_t s : sizes) {
      if (s < 0) ctx.fail("split sizes must not be negative, got " + std::to_string(s));
      sum += s;
    }
    if (sum != extent)
      ctx.fail("split sizes add up to " + std::to_string(sum) + " but axis " + std::to_string(axis) + " has " +
               std::to_string(extent) + " elements");
  }
  std::vector<HostTensor> items;
  int64_t start = 0;
  for (int64_t size : sizes) {
    items.push_back(keepAxis ? sliceAlongAxis(in, axis, start, size) : itemAlongAxis(in, axis, start));
    start += size;
  }
  ctx.setOutputValue(0, Value::ofSequence(std::move(items)));
}

void concatFromSequence(KernelContext& ctx) {
  const auto& items = sequenceInput(ctx, 0);
  if (items.empty()) ctx.fail("cannot concatenate an empty sequence (the result's shape is undefined)");
  bool newAxis = ctx.layer().attrInt("new_axis", 0) != 0;
  size_t axis = normalizedAxis(ctx, ctx.layer().attrInt("axis"), items.front().rank() + (newAxis ? 1 : 0));
  ctx.setOutput(0, newAxis ? stackAlongAxis(ctx, items, axis) : concatAlongAxis(ctx, items, axis));
}

void makeOptional(KernelContext& ctx) {
  if (!ctx.hasInput(0)) {
    ctx.setOutputValue(0, Value::emptyOptional(ctx.inferredOutput(0).kind));
    return;
  }
  Value v = ctx.inputValue(0);
  v.kind = v.isSequence() ? ValueKind::kOptionalSequence : ValueKind::kOptionalTensor;
  ctx.setOutputValue(0, std::move(v));
}

void optionalHasElement(KernelContext& ctx) {
  bool has = ctx.hasInput(0) && ctx.inputValue(0).hasElement;
  ctx.setOutput(0, HostTensor::scalar<bool>(has));
}

void optionalGetElement(KernelContext& ctx) {
  Value v = ctx.inputValue(0);
  if (!v.hasElement) ctx.fail("the optional input is empty; test it with OptionalHasElement first");
  v.kind = v.isSequence() ? ValueKind::kSequence : ValueKind::kTensor;
  ctx.setOutputValue(0, std::move(v));
}

}  // namespace

void registerControlSequenceCpuKernels(CpuKernelRegistry& registry) {
  registry.add("SequenceEmpty", [](KernelContext& ctx) { ctx.setOutputValue(0, Value::ofSequence({})); });
  registry.add("SequenceConstruct", sequenceConstruct);
  registry.add("SequenceAt", sequenceAt);
  registry.add("SequenceInsert", sequenceInsert);
  registry.add("SequenceErase", sequenceErase);
  registry.add("SequenceLength", [](KernelContext& ctx) {
    ctx.setOutput(0, HostTensor::scalar<int64_t>(int64_t(sequenceInput(ctx, 0).size())));
  });
  registry.add("SplitToSequence", splitToSequence);
  registry.add("ConcatFromSequence", concatFromSequence);
  registry.add("Optional", makeOptional);
  registry.add("OptionalHasElement", optionalHasElement);
  registry.add("OptionalGetElement", optionalGetElement);
  registerControlFlowCpuKernels(registry);
}

}  // namespace kiln
