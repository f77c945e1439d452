// Type and shape inference for ops with subgraph bodies: If, Loop, Scan and SequenceMap. A body is
// inferred on a copy whose inputs take the types the op passes in; names the body reads from the
// enclosing graphs resolve through InferenceContext::scope().
#include "control_sequence.h"

namespace kiln {
namespace {

bool isUnknown(const Tensor& t) { return t.dtype == DataType::kUndefined && t.kind == ValueKind::kTensor; }

Tensor tensorType(DataType dtype, Shape shape) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  return t;
}

// The output types of `body` when its inputs have `inputTypes` (unknown entries keep the body's
// declared input types).
std::vector<Tensor> inferBody(const InferenceContext& ctx, const Network& body, const std::vector<Tensor>& inputTypes) {
  Network copy = body;
  for (size_t i = 0; i < inputTypes.size() && i < copy.inputs().size(); ++i) {
    const Tensor& given = inputTypes[i];
    if (isUnknown(given)) continue;
    Tensor& declared = copy.tensor(copy.inputs()[i]);
    declared.kind = given.kind;
    if (given.dtype != DataType::kUndefined) declared.dtype = given.dtype;
    if (given.shape.hasRank() || !declared.shape.hasRank()) declared.shape = given.shape;
  }
  try {
    copy.inferShapes(ctx.scope());
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kUnsupported)
      throw Error(e.code(), ctx.layer().describe() + ", in its subgraph: " + e.what());
    // Types only known at run time (e.g. of an empty sequence) can stop inference: the body's
    // declared outputs stand, and the kernel checks the real values.
    copy = body;
  }
  std::vector<Tensor> outputs;
  for (const auto& name : copy.outputs()) {
    const Tensor* t = &copy.tensor(name);
    if (isUnknown(*t) && ctx.scope())  // a body output may be a tensor of an enclosing graph
      if (const Tensor* outer = ctx.scope()(name)) t = outer;
    outputs.push_back(*t);
  }
  return outputs;
}

// Loop-carried values may change shape between iterations: each input type is merged with what the
// body makes of it, and the body is inferred again while that loosens anything.
std::vector<Tensor> inferWithCarried(const InferenceContext& ctx, const Network& body, std::vector<Tensor>& inputs,
                                     size_t firstInput, size_t firstOutput, size_t count) {
  auto outputs = inferBody(ctx, body, inputs);
  for (int pass = 0; pass < 2; ++pass) {
    bool loosened = false;
    for (size_t i = 0; i < count; ++i) {
      Tensor& in = inputs[firstInput + i];
      const Tensor& out = outputs[firstOutput + i];
      if (in.dtype != DataType::kUndefined && out.dtype != DataType::kUndefined && in.dtype != out.dtype)
        ctx.fail("loop-carried value " + std::to_string(i) + " enters the body as " + std::string(toString(in.dtype)) +
                 " but leaves it as " + std::string(toString(out.dtype)) + "; both must be one type");
      Shape merged = mergeShapes(in.shape, out.shape);
      if (!(merged == in.shape)) {
        in.shape = merged;
        loosened = true;
      }
    }
    if (!loosened) break;
    outputs = inferBody(ctx, body, inputs);
  }
  for (size_t i = 0; i < count; ++i) {
    Tensor& out = outputs[firstOutput + i];
    const Tensor& in = inputs[firstInput + i];
    if (isUnknown(out)) out = in;
    out.shape = mergeShapes(in.shape, out.shape);
  }
  return outputs;
}

void setOutputType(InferenceContext& ctx, size_t i, const Tensor& t) { ctx.setOutput(i, t.dtype, t.shape, t.kind); }

// Scan outputs stack one body output per iteration along `axis`.
Shape stackedShape(const InferenceContext& ctx, const Shape& item, const Dim& count, int64_t axis) {
  if (!item.hasRank()) return Shape::unknownRank();
  std::vector<Dim> dims = item.dims();
  int64_t at = ctx.normalizeAxis(axis, int64_t(dims.size()) + 1, "scan output axis");
  dims.insert(dims.begin() + at, count);
  return Shape(std::move(dims));
}

Shape withoutAxis(const Shape& shape, size_t axis) {
  if (!shape.hasRank()) return shape;
  std::vector<Dim> dims = shape.dims();
  dims.erase(dims.begin() + int64_t(axis));
  return Shape(std::move(dims));
}

void requireScalarOf(const InferenceContext& ctx, size_t i, DataType type, const char* what) {
  if (!ctx.hasInput(i)) return;
  const Tensor& t = ctx.input(i);
  if (t.kind != ValueKind::kTensor || (t.dtype != DataType::kUndefined && t.dtype != type))
    ctx.fail(std::string(what) + " (input " + std::to_string(i) + ") must be a " + std::string(toString(type)) +
             " tensor, got " + std::string(toString(t.dtype)) + " " + std::string(toString(t.kind)));
  if (t.shape.isFullyKnown() && t.shape.elementCount() != 1)
    ctx.fail(std::string(what) + " (input " + std::to_string(i) + ") must hold one value, got shape " +
             t.shape.toString());
}

void requireOutputCount(const InferenceContext& ctx, size_t available, const char* what) {
  if (ctx.outputCount() > available)
    ctx.fail("the node has " + std::to_string(ctx.outputCount()) + " outputs but its " + what + " gives only " +
             std::to_string(available));
}

void inferIf(InferenceContext& ctx) {
  requireScalarOf(ctx, 0, DataType::kBool, "cond");
  const Network& thenBranch = ctx.layer().attrGraph("then_branch");
  const Network& elseBranch = ctx.layer().attrGraph("else_branch");
  if (!thenBranch.inputs().empty() || !elseBranch.inputs().empty())
    ctx.fail("If branches take no inputs (they read the enclosing graph's tensors by name)");
  if (thenBranch.outputs().size() != elseBranch.outputs().size())
    ctx.fail("then_branch has " + std::to_string(thenBranch.outputs().size()) + " outputs and else_branch " +
             std::to_string(elseBranch.outputs().size()) + "; they must match");
  requireOutputCount(ctx, thenBranch.outputs().size(), "then_branch");
  auto thenTypes = inferBody(ctx, thenBranch, {});
  auto elseTypes = inferBody(ctx, elseBranch, {});
  for (size_t i = 0; i < ctx.outputCount(); ++i) {
    const Tensor& a = thenTypes[i];
    const Tensor& b = elseTypes[i];
    if (!isUnknown(a) && !isUnknown(b) && (a.dtype != b.dtype || a.kind != b.kind) &&
        a.dtype != DataType::kUndefined && b.dtype != DataType::kUndefined)
      ctx.fail("output " + std::to_string(i) + " is " + std::string(toString(a.dtype)) + " " +
               std::string(toString(a.kind)) + " in then_branch but " + std::string(toString(b.dtype)) + " " +
               std::string(toString(b.kind)) + " in else_branch");
    const Tensor& known = isUnknown(a) ? b : a;
    DataType dtype = a.dtype != DataType::kUndefined ? a.dtype : b.dtype;
    ctx.setOutput(i, dtype, mergeShapes(a.shape, b.shape), known.kind);
  }
}

// Loop inputs: M, cond, then N loop-carried values. Body inputs: iteration number, cond, the N
// values. Body outputs: cond, the N values, then K scan outputs stacked over the iterations.
void inferLoop(InferenceContext& ctx) {
  const Network& body = ctx.layer().attrGraph("body");
  if (ctx.inputCount() < 2) ctx.fail("Loop takes M and cond (either may be empty) before its loop-carried values");
  size_t carried = ctx.inputCount() - 2;
  requireScalarOf(ctx, 0, DataType::kInt64, "M (trip count)");
  requireScalarOf(ctx, 1, DataType::kBool, "cond");
  if (body.inputs().size() != carried + 2)
    ctx.fail("the body takes " + std::to_string(body.inputs().size()) + " inputs but the Loop passes " +
             std::to_string(carried + 2) + " (iteration number, cond and " + std::to_string(carried) +
             " loop-carried values)");
  if (body.outputs().size() < carried + 1)
    ctx.fail("the body has " + std::to_string(body.outputs().size()) + " outputs; it needs cond and the " +
             std::to_string(carried) + " loop-carried values");
  size_t scans = body.outputs().size() - 1 - carried;
  requireOutputCount(ctx, carried + scans, "body");
  std::vector<Tensor> inputs{tensorType(DataType::kInt64, Shape{}), tensorType(DataType::kBool, Shape{})};
  for (size_t i = 0; i < carried; ++i) inputs.push_back(ctx.input(2 + i));
  auto outputs = inferWithCarried(ctx, body, inputs, 2, 1, carried);
  for (size_t i = 0; i < carried; ++i) setOutputType(ctx, i, outputs[1 + i]);
  for (size_t k = 0; k < scans; ++k) {
    const Tensor& item = outputs[1 + carried + k];
    ctx.setOutput(carried + k, item.dtype, stackedShape(ctx, item.shape, Dim::unknown(), 0));
  }
}

struct ScanLayout {
  size_t firstState = 0;  // 1 in opset 8, where input 0 is sequence_lens
  size_t states = 0, scanInputs = 0, scanOutputs = 0;
  bool batched = false;  // opset 8: every input has a leading batch axis
  std::vector<int64_t> inputAxes, outputAxes;
};

ScanLayout scanLayout(const InferenceContext& ctx, const Network& body) {
  const Layer& layer = ctx.layer();
  ScanLayout s;
  s.batched = ctx.opset() < 9;
  s.firstState = s.batched ? 1 : 0;
  if (!layer.hasAttr("num_scan_inputs")) ctx.fail("attribute 'num_scan_inputs' is required");
  int64_t numScan = layer.attrInt("num_scan_inputs");
  int64_t available = int64_t(ctx.inputCount()) - int64_t(s.firstState);
  if (numScan < 1 || numScan > available)
    ctx.fail("num_scan_inputs is " + std::to_string(numScan) + " but the node has " + std::to_string(available) +
             " state and scan inputs");
  s.scanInputs = size_t(numScan);
  s.states = size_t(available) - s.scanInputs;
  if (body.inputs().size() != s.states + s.scanInputs)
    ctx.fail("the body takes " + std::to_string(body.inputs().size()) + " inputs but the Scan passes " +
             std::to_string(s.states + s.scanInputs));
  if (body.outputs().size() < s.states)
    ctx.fail("the body has " + std::to_string(body.outputs().size()) + " outputs, fewer than the " +
             std::to_string(s.states) + " state values");
  s.scanOutputs = body.outputs().size() - s.states;
  auto axesAttr = [&](const char* name, size_t count) {
    auto values = layer.attrInts(name, std::vector<int64_t>(count, 0));
    if (values.size() != count)
      ctx.fail("attribute '" + std::string(name) + "' has " + std::to_string(values.size()) + " entries; it needs " +
               std::to_string(count));
    return values;
  };
  s.inputAxes = s.batched ? std::vector<int64_t>(s.scanInputs, 0) : axesAttr("scan_input_axes", s.scanInputs);
  s.outputAxes = s.batched ? std::vector<int64_t>(s.scanOutputs, 0) : axesAttr("scan_output_axes", s.scanOutputs);
  axesAttr(s.batched ? "directions" : "scan_input_directions", s.scanInputs);
  if (!s.batched) axesAttr("scan_output_directions", s.scanOutputs);
  return s;
}

// Scan inputs: N state values, then M scanned tensors (opset 8: sequence_lens first, and every input
// batched on axis 0). Body: the N states and one slice of each scanned tensor in, the N states and K
// per-iteration outputs out.
void inferScan(InferenceContext& ctx) {
  const Network& body = ctx.layer().attrGraph("body");
  ScanLayout s = scanLayout(ctx, body);
  requireOutputCount(ctx, s.states + s.scanOutputs, "body");
  std::vector<Tensor> inputs;
  Dim batch = Dim::unknown(), steps = Dim::unknown();
  for (size_t i = 0; i < s.states; ++i) {
    Tensor t = ctx.input(s.firstState + i);
    if (s.batched && t.shape.hasRank()) {
      if (t.shape.rank() == 0) ctx.fail("state input " + std::to_string(i) + " needs a batch axis");
      batch = t.shape[0];
      t.shape = withoutAxis(t.shape, 0);
    }
    inputs.push_back(std::move(t));
  }
  for (size_t j = 0; j < s.scanInputs; ++j) {
    Tensor t = ctx.input(s.firstState + s.states + j);
    if (t.shape.hasRank()) {
      size_t needed = s.batched ? 2 : 1;
      if (t.shape.rank() < needed) ctx.fail("scan input " + std::to_string(j) + " has rank " + std::to_string(t.shape.rank()) + "; it needs a scan axis");
      if (s.batched) {
        batch = t.shape[0];
        t.shape = withoutAxis(t.shape, 0);
      }
      size_t axis = size_t(ctx.normalizeAxis(s.inputAxes[j], int64_t(t.shape.rank()), "scan input axis"));
      if (j == 0) steps = t.shape[axis];
      t.shape = withoutAxis(t.shape, axis);
    }
    inputs.push_back(std::move(t));
  }
  auto outputs = inferWithCarried(ctx, body, inputs, 0, 0, s.states);
  auto batchedShape = [&](const Shape& shape) { return s.batched ? stackedShape(ctx, shape, batch, 0) : shape; };
  for (size_t i = 0; i < s.states; ++i)
    ctx.setOutput(i, outputs[i].dtype, batchedShape(outputs[i].shape), outputs[i].kind);
  for (size_t k = 0; k < s.scanOutputs; ++k) {
    const Tensor& item = outputs[s.states + k];
    ctx.setOutput(s.states + k, item.dtype, batchedShape(stackedShape(ctx, item.shape, steps, s.outputAxes[k])));
  }
}

// SequenceMap runs the body once per item of its first input; further inputs are sequences (walked
// alongside) or tensors (passed whole). Every body output becomes a sequence.
void inferSequenceMap(InferenceContext& ctx) {
  const Network& body = ctx.layer().attrGraph("body");
  if (body.inputs().size() != ctx.inputCount())
    ctx.fail("the body takes " + std::to_string(body.inputs().size()) + " inputs but the node has " +
             std::to_string(ctx.inputCount()));
  const Tensor& first = ctx.input(0);
  if (first.kind != ValueKind::kSequence && first.dtype != DataType::kUndefined)
    ctx.fail("input 0 must be a sequence, got a " + std::string(toString(first.kind)));
  requireOutputCount(ctx, body.outputs().size(), "body");
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < ctx.inputCount(); ++i) {
    Tensor t = ctx.input(i);
    t.kind = ValueKind::kTensor;  // the body sees one item of a sequence
    inputs.push_back(std::move(t));
  }
  auto outputs = inferBody(ctx, body, inputs);
  for (size_t i = 0; i < ctx.outputCount(); ++i)
    ctx.setOutput(i, outputs[i].dtype, outputs[i].shape, ValueKind::kSequence);
}

}  // namespace

void registerControlFlowSchemas(OpSchemaRegistry& registry) {
  registry.add({"", "If", inferIf, 1, 1});
  registry.add({"", "Loop", inferLoop, 2, -1});
  registry.add({"", "Scan", inferScan, 1, -1});
  registry.add({"", "SequenceMap", inferSequenceMap, 1, -1});
}

}  // namespace kiln
