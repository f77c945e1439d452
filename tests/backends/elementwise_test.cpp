// Elementwise op family on the CPU backend: every expectation is computed here from the inputs with
// a naive loop in double precision (or, for Cast rounding, by searching the representable values).
#include <gtest/gtest.h>
#include <kernels/cpu/common/numeric_types.h>
#include <kiln/error.h>
#include <kiln/onnx_importer.h>
#include <kiln/reference_executor.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <random>

#include "common/test_models.h"
#include "onnx/tensor_proto.h"

using namespace kiln;
using kiln::kernels::BFloat16;
using kiln::kernels::Float16;
using kiln::test::ModelBuilder;

namespace {

using Inputs = std::vector<std::pair<std::string, HostTensor>>;
using AttributeSetter = std::function<void(onnx::NodeProto&)>;

// Builds a one-node model whose inputs are the given tensors (an empty name leaves an optional
// input out), runs it on the CPU reference executor and returns output "y".
HostTensor runNode(const std::string& opType, const Inputs& inputs, int64_t opset = 17,
                   const AttributeSetter& setAttributes = {}) {
  ModelBuilder mb(opset);
  ValueMap feeds;
  std::vector<std::string> names;
  for (const auto& [name, tensor] : inputs) {
    names.push_back(name);
    if (name.empty()) continue;
    mb.input(name, onnx_import::toOnnxType(tensor.dtype()), tensor.dims());
    feeds[name] = tensor;
  }
  auto& node = mb.node(opType, names, {"y"}, "node_under_test");
  if (setAttributes) setAttributes(node);
  mb.output("y");
  auto network = OnnxImporter().importBytes(mb.bytes());
  return ReferenceExecutor(network).run(feeds).at("y").tensor;
}

// Seeded random values in [lo, hi], never zero, stored as `type`.
HostTensor randomTensor(DataType type, std::vector<int64_t> dims, uint32_t seed, double lo = -4, double hi = 4) {
  HostTensor t(type, dims);
  if (type == DataType::kBool || (isInteger(type) && !isSigned(type))) lo = std::max(lo, 0.0);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  auto fill = [&](auto* data, auto convert) {
    for (int64_t i = 0; i < t.elementCount(); ++i) {
      double v = isInteger(type) || type == DataType::kBool ? std::round(dist(rng)) : dist(rng);
      data[i] = convert(v == 0 ? (hi > 1 ? 1.0 : 0.5) : v);
    }
  };
  switch (type) {
    case DataType::kFloat32: fill(t.data<float>(), [](double v) { return float(v); }); break;
    case DataType::kFloat64: fill(t.data<double>(), [](double v) { return v; }); break;
    case DataType::kFloat16: fill(t.data<Float16>(), [](double v) { return Float16(float(v)); }); break;
    case DataType::kBFloat16: fill(t.data<BFloat16>(), [](double v) { return BFloat16(float(v)); }); break;
    case DataType::kInt8: fill(t.data<int8_t>(), [](double v) { return int8_t(v); }); break;
    case DataType::kInt16: fill(t.data<int16_t>(), [](double v) { return int16_t(v); }); break;
    case DataType::kInt32: fill(t.data<int32_t>(), [](double v) { return int32_t(v); }); break;
    case DataType::kInt64: fill(t.data<int64_t>(), [](double v) { return int64_t(v); }); break;
    case DataType::kUInt8: fill(t.data<uint8_t>(), [](double v) { return uint8_t(v); }); break;
    case DataType::kUInt16: fill(t.data<uint16_t>(), [](double v) { return uint16_t(v); }); break;
    case DataType::kUInt32: fill(t.data<uint32_t>(), [](double v) { return uint32_t(v); }); break;
    case DataType::kUInt64: fill(t.data<uint64_t>(), [](double v) { return uint64_t(v); }); break;
    case DataType::kBool: fill(t.data<bool>(), [](double v) { return v > 1; }); break;
    default: ADD_FAILURE() << "randomTensor: unhandled type";
  }
  return t;
}

std::vector<int64_t> broadcastDims(std::vector<std::vector<int64_t>> shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto& s : shapes)
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& d = out[rank - s.size() + i];
      if (s[i] != 1) d = s[i];
    }
  return out;
}

// Flat index into an input of shape `in` (right-aligned to `out`) feeding output element `flat`.
int64_t sourceIndex(const std::vector<int64_t>& out, const std::vector<int64_t>& in, int64_t flat) {
  int64_t index = 0, stride = 1;
  for (size_t d = out.size(); d-- > 0;) {
    const int64_t coord = flat % out[d];
    flat /= out[d];
    if (d < out.size() - in.size()) continue;
    const int64_t size = in[d - (out.size() - in.size())];
    if (size != 1) index += coord * stride;
    stride *= size;
  }
  return index;
}

double toleranceFor(DataType type) {
  switch (type) {
    case DataType::kFloat16: return 1e-3;
    case DataType::kBFloat16: return 8e-3;
    case DataType::kFloat32: return 2e-6;
    default: return 1e-12;
  }
}

void expectNear(double actual, double expected, double relative, const std::string& where) {
  if (std::isnan(expected)) {
    EXPECT_TRUE(std::isnan(actual)) << where;
  } else if (std::isinf(expected)) {
    EXPECT_EQ(actual, expected) << where;
  } else {
    EXPECT_NEAR(actual, expected, relative * std::fabs(expected) + relative * 1e-2) << where;
  }
}

// Runs a two-input op on random data and checks every element against reference(a, b).
void checkBinary(const std::string& op, DataType type, std::vector<int64_t> dimsA, std::vector<int64_t> dimsB,
                 const std::function<double(double, double)>& reference, DataType outType = DataType::kUndefined,
                 const AttributeSetter& attributes = {}, uint32_t seed = 1) {
  HostTensor a = randomTensor(type, dimsA, seed), b = randomTensor(type, dimsB, seed + 100);
  HostTensor y = runNode(op, {{"a", a}, {"b", b}}, 17, attributes);
  const auto outDims = broadcastDims({dimsA, dimsB});
  ASSERT_EQ(y.dims(), outDims) << op;
  ASSERT_EQ(y.dtype(), outType == DataType::kUndefined ? type : outType) << op;
  const auto va = a.toDoubleVector(), vb = b.toDoubleVector(), vy = y.toDoubleVector();
  const double tolerance = toleranceFor(y.dtype());
  for (int64_t i = 0; i < y.elementCount(); ++i) {
    const double expected =
        reference(va[size_t(sourceIndex(outDims, dimsA, i))], vb[size_t(sourceIndex(outDims, dimsB, i))]);
    expectNear(vy[size_t(i)], expected, tolerance,
               op + " " + std::string(toString(type)) + " element " + std::to_string(i));
    if (::testing::Test::HasFailure()) return;
  }
}

// Runs a one-input op on random data in [lo, hi] and checks it against reference(x).
void checkUnary(const std::string& op, DataType type, const std::function<double(double)>& reference, double lo,
                double hi, double relative, const AttributeSetter& attributes = {},
                std::vector<int64_t> dims = {3, 700}) {
  HostTensor x = randomTensor(type, dims, 7, lo, hi);
  HostTensor y = runNode(op, {{"x", x}}, 20, attributes);
  ASSERT_EQ(y.dims(), dims);
  const auto vx = x.toDoubleVector(), vy = y.toDoubleVector();
  for (size_t i = 0; i < vx.size(); ++i) {
    expectNear(vy[i], reference(vx[i]), relative, op + "(" + std::to_string(vx[i]) + ")");
    if (::testing::Test::HasFailure()) return;
  }
}

void expectModelError(const std::function<void()>& run, const std::string& fragment) {
  try {
    run();
    ADD_FAILURE() << "expected a kiln::Error mentioning '" << fragment << "'";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("node_under_test"), std::string::npos) << message;
    EXPECT_NE(message.find(fragment), std::string::npos) << message;
  }
}

}  // namespace

TEST(ElementwiseBroadcast, ArithmeticOverShapePairs) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{2, 3, 4}, {2, 3, 4}},    {{2, 3, 4}, {4}}, {{2, 3, 4}, {3, 1}}, {{2, 1, 4}, {1, 3, 1}}, {{5}, {}}, {{}, {2, 3}},
      {{2, 3, 4, 5}, {3, 1, 1}}, {{1}, {2, 1, 3}}, {{3, 1}, {1, 1}},    {{4, 1, 6}, {4, 5, 1}},
  };
  for (const auto& [a, b] : shapes) {
    checkBinary("Add", DataType::kFloat32, a, b, [](double x, double y) { return x + y; });
    checkBinary("Sub", DataType::kFloat32, b, a, [](double x, double y) { return x - y; });
    checkBinary("Mul", DataType::kInt64, a, b, [](double x, double y) { return x * y; });
    checkBinary("Div", DataType::kFloat64, a, b, [](double x, double y) { return x / y; });
  }
}

TEST(ElementwiseBroadcast, LargeTensorsSplitAcrossThreadsMidRun) {
  // Runs longer than a thread's chunk, and many short rows, both with repeats on either side.
  checkBinary("Add", DataType::kFloat32, {3, 70001}, {70001}, [](double x, double y) { return x + y; });
  checkBinary("Mul", DataType::kFloat32, {50000, 7}, {50000, 1}, [](double x, double y) { return x * y; });
  checkBinary("Sub", DataType::kFloat32, {3, 1, 40000}, {1, 5, 1}, [](double x, double y) { return x - y; });
  checkBinary(
      "Greater", DataType::kInt32, {2, 90000}, {2, 1}, [](double x, double y) { return double(x > y); },
      DataType::kBool);
}

TEST(ElementwiseBinary, ArithmeticOnEveryNumericType) {
  for (DataType type : {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16,
                        DataType::kInt8, DataType::kInt16, DataType::kInt32, DataType::kInt64, DataType::kUInt8,
                        DataType::kUInt16, DataType::kUInt32, DataType::kUInt64}) {
    SCOPED_TRACE(std::string(toString(type)));
    const bool isFloat = isFloatingPoint(type);
    checkBinary("Add", type, {4, 5}, {5}, [](double x, double y) { return x + y; });
    checkBinary("Mul", type, {4, 5}, {4, 1}, [](double x, double y) { return x * y; });
    checkBinary("Max", type, {4, 5}, {5}, [](double x, double y) { return std::max(x, y); });
    checkBinary("Min", type, {4, 5}, {5}, [](double x, double y) { return std::min(x, y); });
    if (isFloat) {
      checkBinary("Div", type, {4, 5}, {5}, [](double x, double y) { return x / y; });
    } else {
      // Integer division truncates toward zero.
      checkBinary("Div", type, {4, 5}, {5}, [](double x, double y) { return std::trunc(x / y); });
    }
    if (isSigned(type) || isFloat) checkBinary("Sub", type, {4, 5}, {1, 5}, [](double x, double y) { return x - y; });
  }
}

TEST(ElementwiseBinary, ModFollowsDivisorSignUnlessFmod) {
  auto fmodOn = [](onnx::NodeProto& n) { ModelBuilder::setInt(n, "fmod", 1); };
  for (DataType type : {DataType::kInt8, DataType::kInt32, DataType::kInt64}) {
    checkBinary("Mod", type, {6, 7}, {7}, [](double x, double y) { return x - y * std::floor(x / y); });
    checkBinary(
        "Mod", type, {6, 7}, {7}, [](double x, double y) { return std::fmod(x, y); }, type, fmodOn);
  }
  checkBinary("Mod", DataType::kUInt16, {6, 7}, {7}, [](double x, double y) { return std::fmod(x, y); });
  for (DataType type : {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16})
    checkBinary(
        "Mod", type, {6, 7}, {6, 1}, [](double x, double y) { return std::fmod(x, y); }, type, fmodOn);
}

TEST(ElementwiseBinary, IntegerDivisionByZeroGivesZeroInsteadOfTrapping) {
  HostTensor a = HostTensor::fromVector<int32_t>({4}, {7, -7, std::numeric_limits<int32_t>::min(), 5});
  HostTensor b = HostTensor::fromVector<int32_t>({4}, {0, 2, -1, 0});
  HostTensor y = runNode("Div", {{"a", a}, {"b", b}});
  EXPECT_EQ(y.toInt64Vector(), (std::vector<int64_t>{0, -3, std::numeric_limits<int32_t>::min(), 0}));
}

TEST(ElementwiseBinary, PowWithMixedTypes) {
  // Integer bases are raised exactly; the output keeps the base's type.
  const std::vector<int64_t> powers = {0, 1, 3, 7};
  const std::vector<HostTensor> exponents = {
      HostTensor::fromVector<int64_t>({4}, powers), HostTensor::fromVector<float>({4}, {0, 1, 3, 7}),
      HostTensor::fromVector<uint8_t>({4}, {0, 1, 3, 7}), HostTensor::fromVector<int32_t>({4}, {-1, -2, 2, 1})};
  for (const HostTensor& exponent : exponents) {
    HostTensor base = randomTensor(DataType::kInt64, {3, 4}, 3, -5, 5);
    HostTensor y = runNode("Pow", {{"a", base}, {"b", exponent}});
    ASSERT_EQ(y.dtype(), DataType::kInt64);
    const auto vb = base.toInt64Vector(), ve = exponent.toInt64Vector(), vy = y.toInt64Vector();
    for (size_t i = 0; i < 12; ++i) {
      const int64_t b = vb[i], e = ve[i % 4];
      int64_t expected = 1;
      for (int64_t k = 0; k < e; ++k) expected *= b;
      if (e < 0) expected = b == 1 ? 1 : b == -1 ? (e % 2 ? -1 : 1) : 0;  // exact integer results only
      EXPECT_EQ(vy[i], expected) << b << "^" << e;
    }
  }
  checkBinary("Pow", DataType::kFloat32, {5, 6}, {6}, [](double x, double y) { return std::pow(x, y); });
  // Scalar exponents with their own fast paths, and the general one.
  for (float e : {2.0f, 3.0f, 0.5f, -1.0f, -0.5f, 1.0f, 1.7f}) {
    for (DataType type : {DataType::kFloat32, DataType::kFloat16}) {
      HostTensor x = randomTensor(type, {2, 3000}, 9, 0.1, 3);
      HostTensor y = runNode("Pow", {{"x", x}, {"e", HostTensor::scalar(e)}});
      const auto vx = x.toDoubleVector(), vy = y.toDoubleVector();
      for (size_t i = 0; i < vx.size(); ++i)
        expectNear(vy[i], std::pow(vx[i], double(e)), toleranceFor(type) * 2, "x^" + std::to_string(e));
    }
  }
}

TEST(ElementwiseBinary, ComparisonsLogicAndBitwise) {
  for (DataType type : {DataType::kFloat32, DataType::kInt64, DataType::kFloat16, DataType::kUInt8}) {
    checkBinary(
        "Less", type, {3, 4}, {4}, [](double x, double y) { return double(x < y); }, DataType::kBool);
    checkBinary(
        "GreaterOrEqual", type, {3, 1}, {4}, [](double x, double y) { return double(x >= y); }, DataType::kBool);
    checkBinary(
        "Equal", type, {3, 4}, {3, 4}, [](double x, double y) { return double(x == y); }, DataType::kBool);
  }
  checkBinary("And", DataType::kBool, {3, 4}, {4}, [](double x, double y) { return double(x && y); });
  checkBinary("Xor", DataType::kBool, {2, 3, 4}, {3, 1}, [](double x, double y) { return double(x != y); });
  checkBinary("Equal", DataType::kBool, {3, 4}, {4}, [](double x, double y) { return double(x == y); });
  checkBinary("BitwiseXor", DataType::kInt32, {3, 4}, {4},
              [](double x, double y) { return double(int32_t(x) ^ int32_t(y)); });
  auto left = [](onnx::NodeProto& n) { ModelBuilder::setString(n, "direction", "LEFT"); };
  checkBinary(
      "BitShift", DataType::kUInt32, {3, 4}, {4}, [](double x, double y) { return x * std::pow(2.0, y); },
      DataType::kUndefined, left);
}

TEST(ElementwiseVariadic, SumMeanMaxBroadcastThreeInputs) {
  HostTensor a = randomTensor(DataType::kFloat32, {2, 1, 4}, 1), b = randomTensor(DataType::kFloat32, {3, 1}, 2),
             c = randomTensor(DataType::kFloat32, {4}, 3);
  const std::vector<int64_t> out = {2, 3, 4};
  const auto va = a.toDoubleVector(), vb = b.toDoubleVector(), vc = c.toDoubleVector();
  for (const std::string op : {"Sum", "Mean", "Max"}) {
    HostTensor y = runNode(op, {{"a", a}, {"b", b}, {"c", c}});
    ASSERT_EQ(y.dims(), out);
    const auto vy = y.toDoubleVector();
    for (int64_t i = 0; i < 24; ++i) {
      double x0 = va[size_t(sourceIndex(out, a.dims(), i))], x1 = vb[size_t(sourceIndex(out, b.dims(), i))],
             x2 = vc[size_t(sourceIndex(out, c.dims(), i))];
      double expected = op == "Max" ? std::max({x0, x1, x2}) : (x0 + x1 + x2) / (op == "Mean" ? 3 : 1);
      expectNear(vy[size_t(i)], expected, 1e-6, op);
    }
  }
  HostTensor single = runNode("Sum", {{"a", a}});
  EXPECT_EQ(single.toDoubleVector(), va);
  // The first two inputs both repeat along the output's innermost dimension.
  HostTensor p = randomTensor(DataType::kInt32, {2, 1}, 4), q = randomTensor(DataType::kInt32, {2, 1}, 5),
             r = randomTensor(DataType::kInt32, {2, 3}, 6);
  const auto vp = p.toInt64Vector(), vq = q.toInt64Vector(), vr = r.toInt64Vector();
  const auto vmax = runNode("Max", {{"p", p}, {"q", q}, {"r", r}}).toInt64Vector();
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(vmax[i], std::max({vp[i / 3], vq[i / 3], vr[i]}));
}

TEST(ElementwiseBroadcast, LegacyBroadcastAttributeBeforeOpset7) {
  HostTensor a = randomTensor(DataType::kFloat32, {2, 3, 4, 5}, 1), b = randomTensor(DataType::kFloat32, {3, 4}, 2);
  HostTensor y = runNode("Add", {{"a", a}, {"b", b}}, 6, [](onnx::NodeProto& n) {
    ModelBuilder::setInt(n, "broadcast", 1);
    ModelBuilder::setInt(n, "axis", 1);
  });
  ASSERT_EQ(y.dims(), a.dims());
  const auto va = a.toDoubleVector(), vb = b.toDoubleVector(), vy = y.toDoubleVector();
  for (size_t i = 0; i < va.size(); ++i) EXPECT_FLOAT_EQ(float(vy[i]), float(va[i] + vb[(i / 5) % 12]));
}

TEST(ElementwiseBinary, PReluBroadcastsSlopeAndWhereSelects) {
  checkBinary("PRelu", DataType::kFloat32, {2, 3, 4, 5}, {3, 1, 1},
              [](double x, double slope) { return x < 0 ? x * slope : x; });
  HostTensor condition = randomTensor(DataType::kBool, {3, 1}, 5);
  HostTensor x = randomTensor(DataType::kInt64, {4}, 6), y = randomTensor(DataType::kInt64, {2, 1, 1}, 7);
  HostTensor out = runNode("Where", {{"c", condition}, {"x", x}, {"z", y}});
  const std::vector<int64_t> dims = {2, 3, 4};
  ASSERT_EQ(out.dims(), dims);
  const auto vc = condition.toInt64Vector(), vx = x.toInt64Vector(), vy = y.toInt64Vector(), vo = out.toInt64Vector();
  for (int64_t i = 0; i < 24; ++i)
    EXPECT_EQ(vo[size_t(i)], vc[size_t(sourceIndex(dims, {3, 1}, i))] ? vx[size_t(sourceIndex(dims, {4}, i))]
                                                                      : vy[size_t(sourceIndex(dims, {2, 1, 1}, i))]);
  HostTensor words = HostTensor::fromVector<std::string>({2}, {"yes", "also yes"});
  HostTensor other = HostTensor::fromVector<std::string>({1}, {"no"});
  HostTensor flags = HostTensor::fromVector<bool>({2}, {true, false});
  HostTensor picked = runNode("Where", {{"c", flags}, {"x", words}, {"z", other}});
  EXPECT_EQ(picked.data<std::string>()[0], "yes");
  EXPECT_EQ(picked.data<std::string>()[1], "no");
}

TEST(ElementwiseUnary, MathFunctionsMatchLibm) {
  const std::vector<std::tuple<std::string, std::function<double(double)>, double, double>> cases = {
      {"Exp", [](double x) { return std::exp(x); }, -80, 80},
      {"Log", [](double x) { return std::log(x); }, 0.01, 100},
      {"Sqrt", [](double x) { return std::sqrt(x); }, 0, 100},
      {"Reciprocal", [](double x) { return 1 / x; }, 0.1, 10},
      {"Tanh", [](double x) { return std::tanh(x); }, -10, 10},
      {"Erf", [](double x) { return std::erf(x); }, -5, 5},
      {"Sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }, -30, 30},
      {"Sin", [](double x) { return std::sin(x); }, -6, 6},
      {"Acos", [](double x) { return std::acos(x); }, -1, 1},
      {"Atanh", [](double x) { return std::atanh(x); }, -0.99, 0.99},
      {"Floor", [](double x) { return std::floor(x); }, -10, 10},
      {"Ceil", [](double x) { return std::ceil(x); }, -10, 10},
      {"Round", [](double x) { return std::nearbyint(x); }, -10, 10},
      {"Abs", [](double x) { return std::fabs(x); }, -10, 10},
      {"Neg", [](double x) { return -x; }, -10, 10},
      {"Sign", [](double x) { return double((x > 0) - (x < 0)); }, -10, 10},
      {"Softplus", [](double x) { return std::log1p(std::exp(x)); }, -20, 20},
      {"Softsign", [](double x) { return x / (1 + std::fabs(x)); }, -20, 20},
      {"HardSwish", [](double x) { return x * std::clamp(double(1.0f / 6) * x + 0.5, 0.0, 1.0); }, -5, 5},
  };
  for (const auto& [op, reference, lo, hi] : cases) {
    for (DataType type : {DataType::kFloat32, DataType::kFloat64}) checkUnary(op, type, reference, lo, hi, 4e-6);
    checkUnary(op, DataType::kFloat16, reference, std::max(lo, -10.0), std::min(hi, 10.0), 1e-3);  // no overflow
  }
}

TEST(ElementwiseUnary, RoundHalvesToEvenAndSpecialValuesSurvive) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  HostTensor x = HostTensor::fromVector<float>({6}, {0.5f, 1.5f, 2.5f, -2.5f, -0.5f, 3.5f});
  EXPECT_EQ(runNode("Round", {{"x", x}}).toDoubleVector(), (std::vector<double>{0, 2, 2, -2, -0.0, 4}));
  HostTensor special = HostTensor::fromVector<float>({4}, {inf, -inf, nan, 100.0f});
  auto exp = runNode("Exp", {{"x", special}}).toDoubleVector();
  EXPECT_EQ(exp[0], inf);
  EXPECT_EQ(exp[1], 0.0);
  EXPECT_TRUE(std::isnan(exp[2]));
  EXPECT_EQ(exp[3], inf);  // overflows float
  for (const std::string op : {"Tanh", "Sigmoid", "Erf", "Relu", "Gelu"})
    EXPECT_TRUE(std::isnan(runNode(op, {{"x", special}}, 20).toDoubleVector()[2])) << op;
  EXPECT_EQ(runNode("Tanh", {{"x", special}}).toDoubleVector()[1], -1.0);
  EXPECT_EQ(runNode("Sigmoid", {{"x", special}}).toDoubleVector()[1], 0.0);
}

TEST(ElementwiseUnary, ActivationsWithAttributes) {
  auto withFloat = [](const char* name, float value) {
    return [=](onnx::NodeProto& n) { ModelBuilder::setFloat(n, name, value); };
  };
  const double selu = 1.0507009873554805, seluAlpha = 1.6732632423543772;
  checkUnary(
      "Relu", DataType::kFloat32, [](double x) { return std::max(x, 0.0); }, -5, 5, 0);
  checkUnary(
      "LeakyRelu", DataType::kFloat32, [](double x) { return x < 0 ? 0.3 * x : x; }, -5, 5, 1e-6,
      withFloat("alpha", 0.3f));
  checkUnary(
      "Elu", DataType::kFloat32, [](double x) { return x < 0 ? 2 * std::expm1(x) : x; }, -5, 5, 1e-6,
      withFloat("alpha", 2.0f));
  checkUnary(
      "Selu", DataType::kFloat32, [=](double x) { return selu * (x > 0 ? x : seluAlpha * std::expm1(x)); }, -5, 5,
      1e-6);
  checkUnary(
      "Celu", DataType::kFloat32, [](double x) { return x > 0 ? x : 0.5 * std::expm1(x / 0.5); }, -5, 5, 1e-6,
      withFloat("alpha", 0.5f));
  checkUnary(
      "HardSigmoid", DataType::kFloat32, [](double x) { return std::clamp(0.2 * x + 0.5, 0.0, 1.0); }, -5, 5, 1e-6);
  checkUnary(
      "ThresholdedRelu", DataType::kFloat32, [](double x) { return x > 1.5 ? x : 0; }, -5, 5, 0,
      withFloat("alpha", 1.5f));
  checkUnary(
      "Shrink", DataType::kFloat32, [](double x) { return x < -1  ? x + 0.25
                                                          : x > 1 ? x - 0.25
                                                                  : 0; }, -5, 5, 1e-6,
      [](onnx::NodeProto& n) {
        ModelBuilder::setFloat(n, "lambd", 1.0f);
        ModelBuilder::setFloat(n, "bias", 0.25f);
      });
  // Gelu of negative x cancels in 1 + erf(x / sqrt 2), so its error is absolute (as in other runtimes).
  checkUnary(
      "Gelu", DataType::kFloat32, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, -8, 8, 3e-4);
  checkUnary(
      "Gelu", DataType::kFloat32,
      [](double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }, -8, 8, 3e-4,
      [](onnx::NodeProto& n) { ModelBuilder::setString(n, "approximate", "tanh"); });
  checkUnary(
      "Relu", DataType::kInt32, [](double x) { return std::max(x, 0.0); }, -50, 50, 0);
  checkUnary(
      "Abs", DataType::kInt8, [](double x) { return std::fabs(x); }, -100, 100, 0);
}

TEST(ElementwiseUnary, ClipAcrossOpsets) {
  HostTensor x = randomTensor(DataType::kFloat32, {4, 50}, 11, -3, 3);
  const auto vx = x.toDoubleVector();
  auto expectClipped = [&](const HostTensor& y, double lo, double hi) {
    const auto vy = y.toDoubleVector();
    for (size_t i = 0; i < vx.size(); ++i) EXPECT_EQ(vy[i], std::min(std::max(vx[i], lo), hi)) << vx[i];
  };
  // Opset 6: attributes.
  expectClipped(runNode("Clip", {{"x", x}}, 6,
                        [](onnx::NodeProto& n) {
                          ModelBuilder::setFloat(n, "min", -1.0f);
                          ModelBuilder::setFloat(n, "max", 0.5f);
                        }),
                -1.0, 0.5);
  expectClipped(runNode("Clip", {{"x", x}}, 6, [](onnx::NodeProto& n) { ModelBuilder::setFloat(n, "max", 0.0f); }),
                -INFINITY, 0.0);
  // Opset 11+: optional inputs.
  expectClipped(runNode("Clip", {{"x", x}, {"lo", HostTensor::scalar(-0.25f)}, {"hi", HostTensor::scalar(2.0f)}}, 11),
                -0.25, 2.0);
  expectClipped(runNode("Clip", {{"x", x}, {"", {}}, {"hi", HostTensor::scalar(1.0f)}}, 13), -INFINITY, 1.0);
  expectClipped(runNode("Clip", {{"x", x}}, 13), -INFINITY, INFINITY);
  // min > max: everything becomes max.
  expectClipped(runNode("Clip", {{"x", x}, {"lo", HostTensor::scalar(2.0f)}, {"hi", HostTensor::scalar(1.0f)}}, 13),
                2.0, 1.0);
  // Opset 12+: integers.
  HostTensor xi = randomTensor(DataType::kInt8, {30}, 12, -100, 100);
  auto vi =
      runNode("Clip", {{"x", xi}, {"lo", HostTensor::scalar<int8_t>(-10)}, {"hi", HostTensor::scalar<int8_t>(20)}}, 13)
          .toInt64Vector();
  const auto vxi = xi.toInt64Vector();
  for (size_t i = 0; i < vi.size(); ++i) EXPECT_EQ(vi[i], std::clamp<int64_t>(vxi[i], -10, 20));
}

TEST(ElementwiseUnary, IsInfFlagsAndIsNaN) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  HostTensor x = HostTensor::fromVector<float>({5}, {inf, -inf, nan, 1.0f, -2.0f});
  EXPECT_EQ(runNode("IsInf", {{"x", x}}).toInt64Vector(), (std::vector<int64_t>{1, 1, 0, 0, 0}));
  EXPECT_EQ(runNode("IsInf", {{"x", x}}, 17, [](onnx::NodeProto& n) { ModelBuilder::setInt(n, "detect_negative", 0); })
                .toInt64Vector(),
            (std::vector<int64_t>{1, 0, 0, 0, 0}));
  EXPECT_EQ(runNode("IsNaN", {{"x", x}}).toInt64Vector(), (std::vector<int64_t>{0, 0, 1, 0, 0}));
}

namespace {

// The value of a binary16 / bfloat16 bit pattern, decoded from its fields (independent of Kiln).
double decodeHalf(uint16_t bits, int exponentBits, int mantissaBits) {
  const int bias = (1 << (exponentBits - 1)) - 1;
  const int exponent = (bits >> mantissaBits) & ((1 << exponentBits) - 1);
  const int mantissa = bits & ((1 << mantissaBits) - 1);
  const double sign = (bits >> 15) ? -1 : 1;
  if (exponent == (1 << exponentBits) - 1) return mantissa ? NAN : sign * INFINITY;
  if (exponent == 0) return sign * std::ldexp(mantissa, 1 - bias - mantissaBits);
  return sign * std::ldexp(mantissa + (1 << mantissaBits), exponent - bias - mantissaBits);
}

// Round-to-nearest-even by search over every finite pattern: the closest one, ties to an even
// mantissa; values half an ulp or more beyond the largest finite one become infinity.
uint16_t nearestHalf(double value, int exponentBits, int mantissaBits) {
  const uint16_t infinity = uint16_t(((1 << exponentBits) - 1) << mantissaBits);
  static std::map<int, std::vector<double>> tables;
  auto& table = tables[exponentBits];
  if (table.empty())
    for (uint16_t bits = 0; bits < infinity; ++bits) table.push_back(decodeHalf(bits, exponentBits, mantissaBits));
  const double magnitude = std::fabs(value);
  uint16_t best = 0;
  for (uint16_t bits = 1; bits < infinity; ++bits) {
    const double d = std::fabs(table[bits] - magnitude), bestD = std::fabs(table[best] - magnitude);
    if (d < bestD || (d == bestD && (bits & 1) == 0)) best = bits;
  }
  const double halfUlp = (table[infinity - 1] - table[infinity - 2]) / 2;
  if (magnitude >= table[infinity - 1] + halfUlp) best = infinity;
  return uint16_t((std::signbit(value) ? 0x8000 : 0) | best);
}

}  // namespace

TEST(ElementwiseCast, Float16AndBFloat16RoundToNearestEven) {
  std::vector<float> values = {0.0f,          1.0f,    65504.0f,   65519.0f, 65520.0f,
                               1e-7f,         6e-8f,   2.98e-8f,   -3.0e-5f, 1.00048828125f /* exact fp16 tie */,
                               1.0009765625f, 3.0e38f, 1.00390625f /* bf16 tie */};
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> unit(-1, 1);
  for (int i = 0; i < 200; ++i) values.push_back(unit(rng) * std::pow(10.0f, float(i % 12) - 6));
  HostTensor x = HostTensor::fromVector<float>({int64_t(values.size())}, values);
  auto castTo = [&](int32_t onnxType) {
    return runNode("Cast", {{"x", x}}, 17, [=](onnx::NodeProto& n) { ModelBuilder::setInt(n, "to", onnxType); });
  };
  HostTensor half = castTo(onnx::TensorProto::FLOAT16);
  HostTensor bfloat = castTo(onnx::TensorProto::BFLOAT16);
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(half.data<Float16>()[i].bits, nearestHalf(values[i], 5, 10)) << values[i];
    EXPECT_EQ(bfloat.data<BFloat16>()[i].bits, nearestHalf(values[i], 8, 7)) << values[i];
  }
  // And back: every value widens exactly.
  HostTensor back = runNode("Cast", {{"h", half}}, 17, [](onnx::NodeProto& n) { ModelBuilder::setInt(n, "to", 1); });
  for (size_t i = 0; i < values.size(); ++i)
    EXPECT_EQ(double(back.data<float>()[i]), decodeHalf(half.data<Float16>()[i].bits, 5, 10));
}

TEST(ElementwiseCast, NumbersBoolsAndStrings) {
  HostTensor x = HostTensor::fromVector<float>({6}, {-2.7f, -0.5f, 0.0f, 0.75f, 3e9f, NAN});
  auto castTo = [](const HostTensor& in, int32_t onnxType) {
    return runNode("Cast", {{"x", in}}, 13, [=](onnx::NodeProto& n) { ModelBuilder::setInt(n, "to", onnxType); });
  };
  // Truncation toward zero, saturation at the range, NaN to 0.
  EXPECT_EQ(castTo(x, onnx::TensorProto::INT32).toInt64Vector(),
            (std::vector<int64_t>{-2, 0, 0, 0, std::numeric_limits<int32_t>::max(), 0}));
  EXPECT_EQ(castTo(x, onnx::TensorProto::BOOL).toInt64Vector(), (std::vector<int64_t>{1, 1, 0, 1, 1, 1}));
  HostTensor strings = castTo(x, onnx::TensorProto::STRING);
  EXPECT_EQ(strings.data<std::string>()[0], "-2.7");
  EXPECT_EQ(strings.data<std::string>()[5], "NaN");
  HostTensor parsed =
      castTo(HostTensor::fromVector<std::string>({4}, {"1.5", "+INF", "-inf", " 42 "}), onnx::TensorProto::DOUBLE);
  EXPECT_EQ(parsed.toDoubleVector(), (std::vector<double>{1.5, INFINITY, -INFINITY, 42}));
  EXPECT_EQ(castTo(HostTensor::fromVector<std::string>({2}, {"-17", "300"}), onnx::TensorProto::INT16).toInt64Vector(),
            (std::vector<int64_t>{-17, 300}));
  // CastLike takes the type of its second input.
  HostTensor like = runNode("CastLike", {{"x", x}, {"like", HostTensor::scalar<int8_t>(1)}});
  EXPECT_EQ(like.dtype(), DataType::kInt8);
  EXPECT_EQ(like.toInt64Vector()[0], -2);
}

TEST(ElementwiseErrors, BadModelsNameTheNode) {
  HostTensor f = randomTensor(DataType::kFloat32, {3}, 1);
  HostTensor i = randomTensor(DataType::kInt32, {3}, 2);
  expectModelError([&] { runNode("Add", {{"a", f}, {"b", i}}); }, "insert a Cast");
  expectModelError(
      [&] {
        runNode("Mul", {{"a", f}, {"b", randomTensor(DataType::kFloat32, {4}, 3)}});
      },
      "cannot be broadcast");
  expectModelError([&] { runNode("Mod", {{"a", f}, {"b", f}}); }, "fmod=1");
  expectModelError([&] { runNode("BitShift", {{"a", i}, {"b", i}}); }, "direction");
  expectModelError([&] { runNode("Sqrt", {{"x", i}}); }, "floating-point");
  expectModelError(
      [&] {
        runNode("Clip", {{"x", f}, {"lo", randomTensor(DataType::kFloat32, {2}, 4)}}, 13);
      },
      "must be a scalar");
  expectModelError(
      [&] {
        runNode("Gelu", {{"x", f}}, 20, [](onnx::NodeProto& n) { ModelBuilder::setString(n, "approximate", "erf"); });
      },
      "approximate");
  expectModelError([&] { runNode("Where", {{"c", f}, {"x", f}, {"z", f}}); }, "must be bool");
  expectModelError(
      [&] {
        runNode("Cast", {{"x", f}}, 13, [](onnx::NodeProto& n) { ModelBuilder::setInt(n, "to", 99); });
      },
      "to");
  expectModelError(
      [&] {
        runNode("PRelu", {{"x", f}, {"slope", randomTensor(DataType::kFloat32, {2, 3}, 5)}});
      },
      "slope");
}

TEST(ElementwiseErrors, UnparseableStringFailsAtRunTimeNamingTheNode) {
  HostTensor words = HostTensor::fromVector<std::string>({2}, {"1", "one"});
  expectModelError(
      [&] {
        runNode("Cast", {{"x", words}}, 13, [](onnx::NodeProto& n) { ModelBuilder::setInt(n, "to", 1); });
      },
      "'one'");
}
