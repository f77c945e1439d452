// CPU kernels for the ops with subgraph bodies: If, Loop, Scan and SequenceMap. Bodies run through
// KernelContext::runSubgraph, which lets them read the enclosing graphs' tensors.
#include "../cpu_kernel.h"
#include "control_sequence_tensors.h"

#include <algorithm>
#include <limits>

namespace kiln {
namespace {

const HostTensor& bodyTensor(const KernelContext& ctx, const Value& v, size_t output) {
  if (v.isSequence() || !v.hasElement)
    ctx.fail("body output " + std::to_string(output) + " must be a tensor here, got a " + std::string(toString(v.kind)));
  return v.tensor;
}

std::vector<Value> runBody(const KernelContext& ctx, const Network& body, const std::vector<Value>& inputs) {
  std::vector<Value> results = ctx.runSubgraph(body, inputs);
  if (results.size() != body.outputs().size())
    ctx.fail("the body returned " + std::to_string(results.size()) + " values for its " +
             std::to_string(body.outputs().size()) + " outputs");
  return results;
}

// A stacked output after zero iterations: an empty tensor whose other dims come from inference.
HostTensor emptyStack(const KernelContext& ctx, size_t output) {
  const Tensor& inferred = ctx.inferredOutput(output);
  std::vector<int64_t> dims{0};
  if (inferred.shape.hasRank()) {
    dims.clear();
    for (const Dim& d : inferred.shape.dims()) dims.push_back(d.isKnown() ? d.value() : 0);
  }
  return HostTensor(inferred.dtype == DataType::kUndefined ? DataType::kFloat32 : inferred.dtype, dims);
}

HostTensor stackOrEmpty(const KernelContext& ctx, const std::vector<HostTensor>& items, size_t axis, size_t output) {
  return items.empty() ? emptyStack(ctx, output) : stackAlongAxis(ctx, items, axis);
}

size_t normalizedAxis(const KernelContext& ctx, int64_t axis, size_t rank, const char* what) {
  int64_t r = int64_t(rank);
  if (axis < -r || axis >= r)
    ctx.fail(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return size_t(axis < 0 ? axis + r : axis);
}

void ifKernel(KernelContext& ctx) {
  bool taken = scalarInput(ctx, 0, "cond") != 0;
  const Network& branch = ctx.layer().attrGraph(taken ? "then_branch" : "else_branch");
  std::vector<Value> results = runBody(ctx, branch, {});
  if (results.size() < ctx.outputCount())
    ctx.fail("the branch gives " + std::to_string(results.size()) + " values for " +
             std::to_string(ctx.outputCount()) + " outputs");
  for (size_t i = 0; i < ctx.outputCount(); ++i)
    if (ctx.hasOutput(i)) ctx.setOutputValue(i, std::move(results[i]));
}

void loopKernel(KernelContext& ctx) {
  const Network& body = ctx.layer().attrGraph("body");
  size_t carried = ctx.inputCount() - 2;
  if (body.outputs().size() < carried + 1) ctx.fail("the body has too few outputs for the loop-carried values");
  size_t scans = body.outputs().size() - 1 - carried;
  int64_t tripLimit = ctx.hasInput(0) ? scalarInput(ctx, 0, "M (trip count)") : std::numeric_limits<int64_t>::max();
  bool keepGoing = ctx.hasInput(1) ? scalarInput(ctx, 1, "cond") != 0 : true;
  std::vector<Value> state;
  for (size_t i = 0; i < carried; ++i) state.push_back(ctx.inputValue(2 + i));
  std::vector<std::vector<HostTensor>> scanItems(scans);
  for (int64_t iteration = 0; iteration < tripLimit && keepGoing; ++iteration) {
    std::vector<Value> inputs{Value(HostTensor::scalar<int64_t>(iteration)), Value(HostTensor::scalar<bool>(keepGoing))};
    for (auto& v : state) inputs.push_back(std::move(v));
    std::vector<Value> results = runBody(ctx, body, inputs);
    const HostTensor& cond = bodyTensor(ctx, results[0], 0);
    if (cond.elementCount() != 1 || cond.dtype() != DataType::kBool)
      ctx.fail("the body's cond output must be one bool, got " + std::string(toString(cond.dtype())) + " " +
               dimsToString(cond.dims()));
    keepGoing = cond.data<bool>()[0];
    for (size_t i = 0; i < carried; ++i) state[i] = std::move(results[1 + i]);
    for (size_t k = 0; k < scans; ++k) scanItems[k].push_back(bodyTensor(ctx, results[1 + carried + k], 1 + carried + k));
  }
  for (size_t i = 0; i < carried && i < ctx.outputCount(); ++i)
    if (ctx.hasOutput(i)) ctx.setOutputValue(i, std::move(state[i]));
  for (size_t k = 0; k < scans && carried + k < ctx.outputCount(); ++k)
    if (ctx.hasOutput(carried + k)) ctx.setOutput(carried + k, stackOrEmpty(ctx, scanItems[k], 0, carried + k));
}

struct ScanRun {
  std::vector<Value> states;
  std::vector<std::vector<HostTensor>> items;  // per scan output, one tensor per step
};

// Runs the body `steps` times on one slice of each scanned tensor (taken along `axes`, from the end
// where `reversed`), threading the states through.
ScanRun runScanSteps(const KernelContext& ctx, const Network& body, std::vector<Value> states,
                     const std::vector<HostTensor>& scanned, const std::vector<size_t>& axes,
                     const std::vector<int64_t>& reversed, int64_t steps) {
  size_t stateCount = states.size();
  if (body.outputs().size() < stateCount) ctx.fail("the body has fewer outputs than the Scan has states");
  ScanRun run;
  run.items.resize(body.outputs().size() - stateCount);
  for (int64_t t = 0; t < steps; ++t) {
    std::vector<Value> inputs = std::move(states);
    for (size_t j = 0; j < scanned.size(); ++j)
      inputs.emplace_back(itemAlongAxis(scanned[j], axes[j], reversed[j] ? steps - 1 - t : t));
    std::vector<Value> results = runBody(ctx, body, inputs);
    states.assign(std::make_move_iterator(results.begin()), std::make_move_iterator(results.begin() + int64_t(stateCount)));
    for (size_t k = 0; k < run.items.size(); ++k)
      run.items[k].push_back(bodyTensor(ctx, results[stateCount + k], stateCount + k));
  }
  run.states = std::move(states);
  return run;
}

std::vector<int64_t> intsAttr(const KernelContext& ctx, const char* name, size_t count) {
  auto values = ctx.layer().attrInts(name, std::vector<int64_t>(count, 0));
  if (values.size() != count)
    ctx.fail("attribute '" + std::string(name) + "' needs " + std::to_string(count) + " entries, got " +
             std::to_string(values.size()));
  return values;
}

// Opset 9+: state inputs, then scanned inputs, each scanned along its own axis and direction.
void scanKernel(KernelContext& ctx, const Network& body, size_t scanCount) {
  size_t stateCount = ctx.inputCount() - scanCount;
  std::vector<Value> states;
  for (size_t i = 0; i < stateCount; ++i) states.push_back(ctx.inputValue(i));
  auto inputAxes = intsAttr(ctx, "scan_input_axes", scanCount);
  auto inputReversed = intsAttr(ctx, "scan_input_directions", scanCount);
  std::vector<HostTensor> scanned;
  std::vector<size_t> axes;
  int64_t steps = 0;
  for (size_t j = 0; j < scanCount; ++j) {
    scanned.push_back(ctx.input(stateCount + j));
    if (scanned[j].rank() == 0) ctx.fail("scan input " + std::to_string(j) + " needs an axis to scan over");
    axes.push_back(normalizedAxis(ctx, inputAxes[j], scanned[j].rank(), "scan_input_axes entry"));
    int64_t length = scanned[j].dim(axes[j]);
    if (j == 0) steps = length;
    if (length != steps)
      ctx.fail("scan input " + std::to_string(j) + " has " + std::to_string(length) + " steps but scan input 0 has " +
               std::to_string(steps));
  }
  ScanRun run = runScanSteps(ctx, body, std::move(states), scanned, axes, inputReversed, steps);
  auto outputAxes = intsAttr(ctx, "scan_output_axes", run.items.size());
  auto outputReversed = intsAttr(ctx, "scan_output_directions", run.items.size());
  for (size_t i = 0; i < stateCount && i < ctx.outputCount(); ++i)
    if (ctx.hasOutput(i)) ctx.setOutputValue(i, std::move(run.states[i]));
  for (size_t k = 0; k < run.items.size() && stateCount + k < ctx.outputCount(); ++k) {
    if (!ctx.hasOutput(stateCount + k)) continue;
    auto& items = run.items[k];
    if (outputReversed[k]) std::reverse(items.begin(), items.end());
    size_t rank = items.empty() ? 0 : items.front().rank();
    size_t axis = items.empty() ? 0 : normalizedAxis(ctx, outputAxes[k], rank + 1, "scan_output_axes entry");
    ctx.setOutput(stateCount + k, stackOrEmpty(ctx, items, axis, stateCount + k));
  }
}

// Opset 8: input 0 is the optional sequence_lens; every other input is batched on axis 0 and scanned
// inputs run over axis 1. Steps past a batch entry's length give zeros.
void batchedScanKernel(KernelContext& ctx, const Network& body, size_t scanCount) {
  size_t stateCount = ctx.inputCount() - 1 - scanCount;
  const HostTensor& first = ctx.input(1 + stateCount);
  if (first.rank() < 2) ctx.fail("scan inputs need a batch and a sequence axis, got shape " + dimsToString(first.dims()));
  int64_t batch = first.dim(0), steps = first.dim(1);
  for (size_t i = 1; i < ctx.inputCount(); ++i) {
    const HostTensor& in = ctx.input(i);
    bool isScanned = i > stateCount;
    if (in.rank() < (isScanned ? 2u : 1u) || in.dim(0) != batch || (isScanned && in.dim(1) != steps))
      ctx.fail("input " + std::to_string(i) + " has shape " + dimsToString(in.dims()) + "; it needs batch " +
               std::to_string(batch) + (isScanned ? " and " + std::to_string(steps) + " steps" : ""));
  }
  std::vector<int64_t> lengths = ctx.hasInput(0) ? ctx.input(0).toInt64Vector() : std::vector<int64_t>(size_t(batch), steps);
  if (int64_t(lengths.size()) != batch)
    ctx.fail("sequence_lens has " + std::to_string(lengths.size()) + " entries for a batch of " + std::to_string(batch));
  auto reversed = intsAttr(ctx, "directions", scanCount);
  std::vector<size_t> axes(scanCount, 0);
  size_t outputCount = body.outputs().size();
  std::vector<std::vector<HostTensor>> perBatch(outputCount);
  for (int64_t b = 0; b < batch; ++b) {
    if (lengths[size_t(b)] < 1 || lengths[size_t(b)] > steps)
      ctx.fail("sequence_lens[" + std::to_string(b) + "] is " + std::to_string(lengths[size_t(b)]) +
               "; it must be between 1 and " + std::to_string(steps));
    std::vector<Value> states;
    for (size_t i = 0; i < stateCount; ++i) states.emplace_back(itemAlongAxis(ctx.input(1 + i), 0, b));
    std::vector<HostTensor> scanned;
    for (size_t j = 0; j < scanCount; ++j) scanned.push_back(itemAlongAxis(ctx.input(1 + stateCount + j), 0, b));
    ScanRun run = runScanSteps(ctx, body, std::move(states), scanned, axes, reversed, lengths[size_t(b)]);
    for (size_t i = 0; i < stateCount; ++i) perBatch[i].push_back(bodyTensor(ctx, run.states[i], i));
    for (size_t k = 0; k < run.items.size(); ++k) {
      auto& items = run.items[k];
      while (int64_t(items.size()) < steps) items.emplace_back(items.front().dtype(), items.front().dims());
      perBatch[stateCount + k].push_back(stackAlongAxis(ctx, items, 0));
    }
  }
  for (size_t o = 0; o < outputCount && o < ctx.outputCount(); ++o)
    if (ctx.hasOutput(o)) ctx.setOutput(o, stackOrEmpty(ctx, perBatch[o], 0, o));
}

void scanDispatch(KernelContext& ctx) {
  const Network& body = ctx.layer().attrGraph("body");
  int64_t scanCount = ctx.layer().attrInt("num_scan_inputs");
  size_t firstState = ctx.opset() < 9 ? 1 : 0;
  if (scanCount < 1 || size_t(scanCount) + firstState > ctx.inputCount())
    ctx.fail("num_scan_inputs " + std::to_string(scanCount) + " does not fit the node's " +
             std::to_string(ctx.inputCount()) + " inputs");
  if (ctx.opset() < 9) batchedScanKernel(ctx, body, size_t(scanCount));
  else scanKernel(ctx, body, size_t(scanCount));
}

void sequenceMapKernel(KernelContext& ctx) {
  const Network& body = ctx.layer().attrGraph("body");
  const Value& first = ctx.inputValue(0);
  if (!first.isSequence()) ctx.fail("input 0 must be a sequence, got a " + std::string(toString(first.kind)));
  size_t count = first.sequence.size();
  for (size_t i = 1; i < ctx.inputCount(); ++i) {
    const Value& v = ctx.inputValue(i);
    if (v.isSequence() && v.sequence.size() != count)
      ctx.fail("input " + std::to_string(i) + " is a sequence of " + std::to_string(v.sequence.size()) +
               " tensors but input 0 has " + std::to_string(count));
  }
  std::vector<std::vector<HostTensor>> outputs(body.outputs().size());
  for (size_t n = 0; n < count; ++n) {
    std::vector<Value> inputs;
    for (size_t i = 0; i < ctx.inputCount(); ++i) {
      const Value& v = ctx.inputValue(i);
      inputs.push_back(v.isSequence() ? Value(v.sequence[n]) : v);
    }
    std::vector<Value> results = runBody(ctx, body, inputs);
    for (size_t k = 0; k < results.size(); ++k) outputs[k].push_back(bodyTensor(ctx, results[k], k));
  }
  for (size_t k = 0; k < outputs.size() && k < ctx.outputCount(); ++k)
    if (ctx.hasOutput(k)) ctx.setOutputValue(k, Value::ofSequence(std::move(outputs[k])));
}

}  // namespace

void registerControlFlowCpuKernels(CpuKernelRegistry& registry) {
  registry.add("If", ifKernel);
  registry.add("Loop", loopKernel);
  registry.add("Scan", scanDispatch);
  registry.add("SequenceMap", sequenceMapKernel);
}

}  // namespace kiln
