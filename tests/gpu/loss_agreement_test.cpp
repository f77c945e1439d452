// CPU and CUDA engines agree on NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: every
// reduction, with and without class weights (as a weight and as a graph input), ignore_index
// (negative, a class, one no target has), [N, C] and N-d inputs, batch 1, int32 and int64
// targets, SoftmaxCrossEntropyLoss with and without its log_prob output; fp32, fp16, bf16 and
// double.
#include <kiln/shape.h>

#include "gpu/agreement_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

constexpr int32_t kDouble = onnx::TensorProto::DOUBLE;

struct LossCase {
  std::vector<int64_t> dims;  // [N, C, d...]
  std::optional<int64_t> ignore;
};

const std::vector<LossCase> kCases = {
    {{3, 5}, std::nullopt},   {{1, 4}, 2},           {{2, 3, 7}, -1},       {{4, 6, 3, 5}, 0},
    {{1, 5, 33}, std::nullopt}, {{2, 7, 2, 3, 2}, 11}, {{8, 3, 600}, -100},
};

std::vector<int64_t> targetDims(const std::vector<int64_t>& dims) {
  std::vector<int64_t> t{dims[0]};
  t.insert(t.end(), dims.begin() + 2, dims.end());
  return t;
}

// Class indices in [0, C), with ignore_index at every fifth position (from the second) where it is given.
HostTensor targets(const LossCase& c, DataType type) {
  const std::vector<int64_t> dims = targetDims(c.dims);
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  std::vector<int64_t> values;
  for (int64_t p = 0; p < count; ++p) values.push_back(c.ignore && p % 5 == 1 ? *c.ignore : (p * 7 + 3) % c.dims[1]);
  return type == DataType::kInt32 ? test::int32s(dims, values) : test::int64s(dims, values);
}

// Both losses with each reduction on one input; weights from an initializer and from a graph input.
void checkLosses(const LossCase& c, DataType targetType, Precision precision) {
  const int64_t classes = c.dims[1];
  ModelBuilder mb(13);
  mb.input("x", kFloat, c.dims).input("t", targetType == DataType::kInt32 ? kInt32 : kInt64, targetDims(c.dims));
  mb.input("w_in", kFloat, {classes}).input("log_p", kFloat, c.dims);  // NLL reads any values as log-probabilities
  mb.initializer("w", test::randomFloats({classes}, 141, 0.2f, 2.0f));
  for (const char* reduction : {"none", "sum", "mean"}) {
    const std::string r = reduction;
    auto loss = [&](const char* op, std::vector<std::string> inputs, std::vector<std::string> outputs) {
      for (const std::string& out : outputs) mb.output(out);
      auto& node = mb.node(op, std::move(inputs), outputs, outputs[0]);
      ModelBuilder::setString(node, "reduction", reduction);
      if (c.ignore) ModelBuilder::setInt(node, "ignore_index", *c.ignore);
    };
    loss("NegativeLogLikelihoodLoss", {"log_p", "t"}, {"nll_" + r});
    loss("NegativeLogLikelihoodLoss", {"log_p", "t", "w"}, {"nll_weighted_" + r});
    loss("SoftmaxCrossEntropyLoss", {"x", "t"}, {"sce_" + r});
    loss("SoftmaxCrossEntropyLoss", {"x", "t", "w_in"}, {"sce_weighted_" + r, "sce_log_prob_" + r});
  }
  test::expectBackendsAgree(mb.bytes(),
                            {{"x", test::randomFloats(c.dims, 142, -3.0f, 3.0f)},
                             {"log_p", test::randomFloats(c.dims, 145, -5.0f, -0.01f)},
                             {"t", targets(c, targetType)},
                             {"w_in", test::randomFloats({classes}, 143, 0.2f, 2.0f)}},
                            precision);
}

TEST(LossAgreement, EveryReductionWeightAndIgnoreIndex) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const LossCase& c : kCases)
    for (DataType targetType : {DataType::kInt64, DataType::kInt32})
      for (Precision precision : {Precision::kFP32, Precision::kFP16, Precision::kBF16}) {
        SCOPED_TRACE(dimsToString(c.dims) + " ignore " + (c.ignore ? std::to_string(*c.ignore) : "none") + " " +
                     std::string(toString(targetType)) + " " + toString(precision));
        checkLosses(c, targetType, precision);
      }
}

TEST(LossAgreement, DoubleScores) {
  KILN_REQUIRE_CUDA_BACKEND();
  const LossCase c{{2, 5, 3}, 1};
  HostTensor x(DataType::kFloat64, c.dims);
  const HostTensor f = test::randomFloats(c.dims, 144, -3.0f, 3.0f);
  for (int64_t i = 0; i < x.elementCount(); ++i) x.data<double>()[i] = double(f.data<float>()[i]);
  HostTensor w(DataType::kFloat64, {5});
  for (int64_t i = 0; i < 5; ++i) w.data<double>()[i] = 0.5 + 0.25 * double(i);
  for (const char* reduction : {"none", "sum", "mean"}) {
    SCOPED_TRACE(reduction);
    ModelBuilder mb(13);
    mb.input("x", kDouble, c.dims).input("t", kInt64, targetDims(c.dims)).input("w", kDouble, {5});
    mb.output("sce").output("log_prob").output("nll");
    auto& sce = mb.node("SoftmaxCrossEntropyLoss", {"x", "t", "w"}, {"sce", "log_prob"}, "sce");
    ModelBuilder::setString(sce, "reduction", reduction);
    ModelBuilder::setInt(sce, "ignore_index", 1);
    auto& nll = mb.node("NegativeLogLikelihoodLoss", {"log_prob", "t"}, {"nll"}, "nll");
    ModelBuilder::setString(nll, "reduction", reduction);
    test::expectBackendsAgree(mb.bytes(), {{"x", x}, {"t", targets(c, DataType::kInt64)}, {"w", w}});
  }
}

}  // namespace
