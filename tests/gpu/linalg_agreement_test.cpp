// CPU and CUDA engines agree on Det: one matrix, batches of several dims, 1x1 and odd sizes, in
// fp32 and fp16.
#include <kiln/shape.h>

#include "gpu/agreement_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

TEST(LinalgAgreement, Determinants) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{2, 2}, {3, 2, 2}, {2, 3, 5, 5}, {1, 1}, {7, 3, 3}})
    for (Precision precision : test::kFloatPrecisions) {
      SCOPED_TRACE(dimsToString(dims) + " " + toString(precision));
      ModelBuilder mb(11);
      mb.input("x", kFloat, dims).output("y");
      mb.node("Det", {"x"}, {"y"}, "det");
      test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats(dims, 81)}}, precision);
    }
}

}  // namespace
