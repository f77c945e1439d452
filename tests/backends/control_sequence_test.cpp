// Control flow (If, Loop, Scan, SequenceMap), sequence and optional ops on the CPU reference
// backend. Bodies use only ops of this family and Identity, so the tests stand on their own.
#include <kiln/error.h>
#include <kiln/onnx_importer.h>
#include <kiln/reference_executor.h>

#include "common/test_models.h"

#include <gtest/gtest.h>

using namespace kiln;
using kiln::test::ModelBuilder;
using kiln::test::randomFloats;

namespace {

using namespace kiln::test::onnx_types;

// A graph input or output declared as a sequence of float tensors.
void declareFloatSequence(onnx::ValueInfoProto* value, const std::string& name) {
  value->set_name(name);
  value->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(kFloat);
}

ValueMap run(const ModelBuilder& mb, const ValueMap& inputs) {
  return ReferenceExecutor(OnnxImporter().importBytes(mb.bytes())).run(inputs);
}

void expectSameTensor(const HostTensor& actual, const HostTensor& expected) {
  ASSERT_EQ(actual.dims(), expected.dims());
  ASSERT_EQ(actual.dtype(), expected.dtype());
  for (int64_t i = 0; i < expected.elementCount(); ++i)
    EXPECT_EQ(actual.data<float>()[i], expected.data<float>()[i]) << "element " << i;
}

// Expects `fn` to throw a kiln::Error whose message names `node`.
template <class Fn>
void expectErrorNaming(Fn&& fn, const std::string& node) {
  try {
    fn();
    FAIL() << "expected a kiln::Error naming " << node;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(node), std::string::npos) << e.what();
  }
}

ModelBuilder ifModel(std::vector<int64_t> thenDims, std::vector<int64_t> elseDims) {
  ModelBuilder mb(16);
  mb.input("cond", kBool, {}).input("a", kFloat, thenDims).input("b", kFloat, elseDims);
  ModelBuilder thenBranch(16), elseBranch(16);
  thenBranch.node("Identity", {"a"}, {"then_out"});  // reads the enclosing graph's "a"
  thenBranch.output("then_out", kFloat);
  elseBranch.node("Identity", {"b"}, {"else_out"});
  elseBranch.output("else_out", kFloat);
  auto& node = mb.node("If", {"cond"}, {"y"}, "if0");
  ModelBuilder::setGraph(node, "then_branch", thenBranch);
  ModelBuilder::setGraph(node, "else_branch", elseBranch);
  mb.output("y");
  return mb;
}

TEST(ControlFlow, IfRunsTheBranchTheConditionPicksAndSeesOuterTensors) {
  ModelBuilder mb = ifModel({2, 3}, {2, 3});
  auto net = OnnxImporter().importBytes(mb.bytes());
  EXPECT_EQ(net->tensor("y").dtype, DataType::kFloat32);
  EXPECT_EQ(net->tensor("y").shape.toString(), "[2,3]");
  auto a = randomFloats({2, 3}, 1), b = randomFloats({2, 3}, 2);
  ReferenceExecutor executor(net);
  expectSameTensor(executor.run({{"cond", HostTensor::scalar<bool>(true)}, {"a", a}, {"b", b}}).at("y").tensor, a);
  expectSameTensor(executor.run({{"cond", HostTensor::scalar<bool>(false)}, {"a", a}, {"b", b}}).at("y").tensor, b);
}

TEST(ControlFlow, IfMergesBranchShapesThatDiffer) {
  auto net = OnnxImporter().importBytes(ifModel({2, 3}, {2, 4}).bytes());
  EXPECT_EQ(net->tensor("y").shape.toString(), "[2,?]");
}

TEST(ControlFlow, IfWithBranchesOfDifferentArityFailsNamingTheNode) {
  ModelBuilder mb = ifModel({2}, {2});
  auto* elseGraph = mb.model().mutable_graph()->mutable_node(0)->mutable_attribute(1)->mutable_g();
  auto* extra = elseGraph->add_node();
  extra->set_op_type("Identity");
  extra->add_input("a");
  extra->add_output("extra_out");
  elseGraph->add_output()->set_name("extra_out");
  expectErrorNaming([&] { OnnxImporter().importBytes(mb.bytes()); }, "if0");
}

// Loop body: (iteration, cond, sequence) -> (cond, sequence + [x], iteration as scan output).
ModelBuilder appendingLoop() {
  ModelBuilder mb(16);
  mb.input("trip_count", kInt64, {}).input("x", kFloat, {3});
  mb.initializer("keep_going", HostTensor::scalar<bool>(true));
  mb.node("SequenceEmpty", {}, {"empty"});
  ModelBuilder body(16);
  body.input("iteration", kInt64, {}).input("cond_in", kBool, {});
  declareFloatSequence(body.model().mutable_graph()->add_input(), "seq_in");
  body.node("Identity", {"cond_in"}, {"cond_out"});
  body.node("SequenceInsert", {"seq_in", "x"}, {"seq_out"});
  body.node("Identity", {"iteration"}, {"iteration_out"});
  body.output("cond_out", kBool);
  declareFloatSequence(body.model().mutable_graph()->add_output(), "seq_out");
  body.output("iteration_out", kInt64);
  auto& loop = mb.node("Loop", {"trip_count", "keep_going", "empty"}, {"sequence", "iterations"}, "loop0");
  ModelBuilder::setGraph(loop, "body", body);
  mb.output("sequence").output("iterations");
  return mb;
}

TEST(ControlFlow, LoopCarriesASequenceAndStacksScanOutputs) {
  auto x = randomFloats({3}, 3);
  auto out = run(appendingLoop(), {{"trip_count", HostTensor::scalar<int64_t>(4)}, {"x", x}});
  const Value& sequence = out.at("sequence");
  ASSERT_TRUE(sequence.isSequence());
  ASSERT_EQ(sequence.sequence.size(), 4u);
  for (const auto& item : sequence.sequence) expectSameTensor(item, x);
  const HostTensor& iterations = out.at("iterations").tensor;
  ASSERT_EQ(iterations.dims(), (std::vector<int64_t>{4}));
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(iterations.data<int64_t>()[i], i);
}

TEST(ControlFlow, LoopWithZeroTripsReturnsTheInitialValuesAndEmptyScans) {
  auto out = run(appendingLoop(), {{"trip_count", HostTensor::scalar<int64_t>(0)}, {"x", randomFloats({3}, 4)}});
  EXPECT_TRUE(out.at("sequence").sequence.empty());
  EXPECT_EQ(out.at("iterations").tensor.dims(), (std::vector<int64_t>{0}));
}

TEST(ControlFlow, LoopStopsWhenTheBodyConditionTurnsFalse) {
  ModelBuilder mb(16);
  mb.input("trip_count", kInt64, {});
  mb.initializer("yes", HostTensor::scalar<bool>(true)).initializer("no", HostTensor::scalar<bool>(false));
  mb.node("SequenceConstruct", {"yes", "yes", "no", "yes"}, {"flags"});
  ModelBuilder body(16);
  body.input("iteration", kInt64, {}).input("cond_in", kBool, {});
  body.node("SequenceAt", {"flags", "iteration"}, {"cond_out"});  // outer-scope sequence
  body.node("Identity", {"iteration"}, {"iteration_out"});
  body.output("cond_out", kBool).output("iteration_out", kInt64);
  auto& loop = mb.node("Loop", {"trip_count", ""}, {"iterations"});
  ModelBuilder::setGraph(loop, "body", body);
  mb.output("iterations");
  auto out = run(mb, {{"trip_count", HostTensor::scalar<int64_t>(10)}});
  EXPECT_EQ(out.at("iterations").tensor.dims(), (std::vector<int64_t>{3}));  // the third pass returns false
}

TEST(ControlFlow, LoopWhoseBodyTakesTheWrongInputsFailsNamingTheNode) {
  ModelBuilder mb = appendingLoop();
  auto* loop = mb.model().mutable_graph()->mutable_node(1);
  ASSERT_EQ(loop->op_type(), "Loop");
  loop->mutable_attribute(0)->mutable_g()->mutable_input()->RemoveLast();
  expectErrorNaming([&] { OnnxImporter().importBytes(mb.bytes()); }, "loop0");
}

TEST(ControlFlow, ScanWalksItsAxisInTheGivenDirection) {
  ModelBuilder mb(11);
  mb.input("initial", kFloat, {2}).input("x", kFloat, {2, 3});
  ModelBuilder body(11);
  body.input("state_in", kFloat, {2}).input("column", kFloat, {2});
  body.node("Identity", {"column"}, {"state_out"});
  body.node("Identity", {"column"}, {"scan_out"});
  body.output("state_out", kFloat).output("scan_out", kFloat);
  auto& scan = mb.node("Scan", {"initial", "x"}, {"final", "columns"});
  ModelBuilder::setGraph(scan, "body", body);
  ModelBuilder::setInt(scan, "num_scan_inputs", 1);
  ModelBuilder::setInts(scan, "scan_input_axes", {1});
  ModelBuilder::setInts(scan, "scan_input_directions", {1});
  mb.output("final").output("columns");
  auto x = randomFloats({2, 3}, 5);
  auto out = run(mb, {{"initial", randomFloats({2}, 6)}, {"x", x}});
  const HostTensor& columns = out.at("columns").tensor;
  ASSERT_EQ(columns.dims(), (std::vector<int64_t>{3, 2}));
  const float* xs = x.data<float>();
  for (int64_t t = 0; t < 3; ++t)
    for (int64_t r = 0; r < 2; ++r) EXPECT_EQ(columns.data<float>()[t * 2 + r], xs[r * 3 + (2 - t)]);
  const HostTensor& final = out.at("final").tensor;
  for (int64_t r = 0; r < 2; ++r) EXPECT_EQ(final.data<float>()[r], xs[r * 3]);  // reversed: column 0 comes last
}

// Opset 8 body: (state, slice) -> (slice, state): the scan output at step t is the state before it.
TEST(ControlFlow, Opset8ScanRunsEachBatchEntry) {
  ModelBuilder mb(8);
  mb.input("initial", kFloat, {2, 2}).input("x", kFloat, {2, 3, 2});
  ModelBuilder body(8);
  body.input("state_in", kFloat, {2}).input("slice", kFloat, {2});
  body.node("Identity", {"slice"}, {"state_out"});
  body.node("Identity", {"state_in"}, {"scan_out"});
  body.output("state_out", kFloat).output("scan_out", kFloat);
  auto& scan = mb.node("Scan", {"", "initial", "x"}, {"final", "previous"});
  ModelBuilder::setGraph(scan, "body", body);
  ModelBuilder::setInt(scan, "num_scan_inputs", 1);
  mb.output("final").output("previous");
  auto initial = randomFloats({2, 2}, 7), x = randomFloats({2, 3, 2}, 8);
  auto out = run(mb, {{"initial", initial}, {"x", x}});
  const float* prev = out.at("previous").tensor.data<float>();
  const float* fin = out.at("final").tensor.data<float>();
  ASSERT_EQ(out.at("previous").tensor.dims(), (std::vector<int64_t>{2, 3, 2}));
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t k = 0; k < 2; ++k) {
      EXPECT_EQ(prev[(b * 3 + 0) * 2 + k], initial.data<float>()[b * 2 + k]);
      for (int64_t t = 1; t < 3; ++t) EXPECT_EQ(prev[(b * 3 + t) * 2 + k], x.data<float>()[(b * 3 + t - 1) * 2 + k]);
      EXPECT_EQ(fin[b * 2 + k], x.data<float>()[(b * 3 + 2) * 2 + k]);
    }
}

TEST(ControlFlow, SequenceMapWalksSequencesAndRepeatsTensors) {
  ModelBuilder mb(17);
  mb.input("a", kFloat, {2}).input("b", kFloat, {3}).input("c", kFloat, {4});
  mb.node("SequenceConstruct", {"a", "b"}, {"items"});
  ModelBuilder body(17);
  body.input("item", kFloat, {-1}).input("extra", kFloat, {4});
  body.node("Identity", {"item"}, {"item_out"});
  body.node("Identity", {"extra"}, {"extra_out"});
  body.output("item_out", kFloat).output("extra_out", kFloat);
  auto& map = mb.node("SequenceMap", {"items", "c"}, {"mapped", "repeated"});
  ModelBuilder::setGraph(map, "body", body);
  mb.output("mapped").output("repeated");
  auto a = randomFloats({2}, 9), b = randomFloats({3}, 10), c = randomFloats({4}, 11);
  auto out = run(mb, {{"a", a}, {"b", b}, {"c", c}});
  ASSERT_EQ(out.at("mapped").sequence.size(), 2u);
  expectSameTensor(out.at("mapped").sequence[0], a);
  expectSameTensor(out.at("mapped").sequence[1], b);
  ASSERT_EQ(out.at("repeated").sequence.size(), 2u);
  for (const auto& item : out.at("repeated").sequence) expectSameTensor(item, c);
}

TEST(Sequences, SplitAndConcatRoundTrip) {
  ModelBuilder mb(17);
  mb.input("x", kFloat, {5, 2});
  mb.initializer("sizes", HostTensor::fromVector<int64_t>({2}, {2, 3}));
  mb.node("SplitToSequence", {"x", "sizes"}, {"pieces"});
  auto& concat = mb.node("ConcatFromSequence", {"pieces"}, {"joined"});
  ModelBuilder::setInt(concat, "axis", 0);
  auto& columns = mb.node("SplitToSequence", {"x"}, {"columns"});
  ModelBuilder::setInt(columns, "axis", 1);
  ModelBuilder::setInt(columns, "keepdims", 0);
  auto& stacked = mb.node("ConcatFromSequence", {"columns"}, {"stacked"});
  ModelBuilder::setInt(stacked, "axis", -1);
  ModelBuilder::setInt(stacked, "new_axis", 1);
  mb.output("pieces").output("joined").output("columns").output("stacked");
  auto x = randomFloats({5, 2}, 12);
  auto out = run(mb, {{"x", x}});
  const auto& pieces = out.at("pieces").sequence;
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0].dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(pieces[1].dims(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(pieces[1].data<float>()[0], x.data<float>()[4]);
  const auto& cols = out.at("columns").sequence;
  ASSERT_EQ(cols.size(), 2u);
  ASSERT_EQ(cols[1].dims(), (std::vector<int64_t>{5}));
  for (int64_t r = 0; r < 5; ++r) EXPECT_EQ(cols[1].data<float>()[r], x.data<float>()[r * 2 + 1]);
  expectSameTensor(out.at("joined").tensor, x);
  expectSameTensor(out.at("stacked").tensor, x);
}

TEST(Sequences, InsertEraseAtAndLengthHonourPositions) {
  ModelBuilder mb(17);
  mb.input("a", kFloat, {2}).input("b", kFloat, {2}).input("c", kFloat, {2});
  mb.initializer("before_last", HostTensor::scalar<int64_t>(-1)).initializer("first", HostTensor::scalar<int32_t>(0));
  mb.node("SequenceConstruct", {"a", "b"}, {"ab"});
  mb.node("SequenceInsert", {"ab", "c", "before_last"}, {"acb"});
  mb.node("SequenceErase", {"acb", "first"}, {"cb"});
  mb.node("SequenceAt", {"cb", "before_last"}, {"last"});
  mb.node("SequenceLength", {"cb"}, {"length"});
  mb.output("acb").output("cb").output("last").output("length");
  auto a = randomFloats({2}, 13), b = randomFloats({2}, 14), c = randomFloats({2}, 15);
  auto out = run(mb, {{"a", a}, {"b", b}, {"c", c}});
  const auto& acb = out.at("acb").sequence;
  ASSERT_EQ(acb.size(), 3u);
  expectSameTensor(acb[1], c);
  expectSameTensor(acb[2], b);
  ASSERT_EQ(out.at("cb").sequence.size(), 2u);
  expectSameTensor(out.at("cb").sequence[0], c);
  expectSameTensor(out.at("last").tensor, b);
  EXPECT_EQ(out.at("length").tensor.data<int64_t>()[0], 2);
}

TEST(Sequences, PositionOutOfRangeFailsNamingTheNode) {
  ModelBuilder mb(17);
  mb.input("a", kFloat, {2}).input("position", kInt64, {});
  mb.node("SequenceConstruct", {"a", "a"}, {"pair"});
  mb.node("SequenceAt", {"pair", "position"}, {"item"}, "pick");
  mb.output("item");
  expectErrorNaming([&] { run(mb, {{"a", randomFloats({2}, 16)}, {"position", HostTensor::scalar<int64_t>(5)}}); }, "pick");
}

TEST(Optionals, WrapTestAndUnwrap) {
  ModelBuilder mb(16);
  mb.input("x", kFloat, {3});
  mb.node("Optional", {"x"}, {"full"});
  mb.node("OptionalHasElement", {"full"}, {"full_has"});
  mb.node("OptionalGetElement", {"full"}, {"unwrapped"});
  auto& empty = mb.node("Optional", {}, {"empty"});
  auto* type = empty.add_attribute();
  type->set_name("type");
  type->set_type(onnx::AttributeProto::TYPE_PROTO);
  type->mutable_tp()->mutable_tensor_type()->set_elem_type(kFloat);
  mb.node("OptionalHasElement", {"empty"}, {"empty_has"});
  mb.output("full_has").output("unwrapped").output("empty_has");
  auto x = randomFloats({3}, 17);
  auto out = run(mb, {{"x", x}});
  EXPECT_TRUE(out.at("full_has").tensor.data<bool>()[0]);
  EXPECT_FALSE(out.at("empty_has").tensor.data<bool>()[0]);
  expectSameTensor(out.at("unwrapped").tensor, x);
}

TEST(Optionals, GettingFromAnEmptyOptionalFailsNamingTheNode) {
  ModelBuilder mb(16);
  auto& empty = mb.node("Optional", {}, {"empty"});
  auto* type = empty.add_attribute();
  type->set_name("type");
  type->set_type(onnx::AttributeProto::TYPE_PROTO);
  type->mutable_tp()->mutable_tensor_type()->set_elem_type(kFloat);
  mb.node("OptionalGetElement", {"empty"}, {"value"}, "unwrap");
  mb.output("value");
  expectErrorNaming([&] { run(mb, {}); }, "unwrap");
}

}  // namespace
