// The CUDA Einsum contraction (kernels/cuda/einsum) against the CPU's evaluator
// (kernels/cpu/gemm/einsum.h): transposes, sums, inner and batched products, diagonals under an
// ellipsis, three operands, implicit outputs and size-1 broadcasting, in float and integer types.
#include "cuda/layout_test_support.h"

#include <kernels/cpu/gemm/einsum.h>
#include <kernels/cuda/einsum/einsum.h>

using namespace kiln::kernels::cuda;
using namespace kiln::test;
namespace cpu = kiln::kernels;

namespace {

struct EinsumCase {
  std::string equation;
  std::vector<std::vector<int64_t>> dims;
};

const std::vector<EinsumCase> kCases{
    {"ij->ji", {{3, 4}}},
    {"ij->i", {{3, 4}}},
    {"i,i", {{5}, {5}}},
    {"bij, bjk -> bik", {{5, 2, 3}, {5, 3, 4}}},
    {"...ii ->...i", {{3, 5, 5}}},
    {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}},
    {"ij,jk", {{3, 7}, {7, 2}}},
    {"ij,ij->ij", {{3, 4}, {1, 4}}},
    {"bn,anm,bm->ba", {{2, 3}, {4, 3, 5}, {2, 5}}},
    {"ii", {{4, 4}}},
    {"i,j->ij", {{1}, {6}}},
    {"ij->", {{0, 3}}},
};

template <class T>
void runCase(const EinsumCase& c, ElementType type) {
  SCOPED_TRACE(c.equation + " " + toString(type));
  std::vector<int64_t> ranks;
  for (const auto& d : c.dims) ranks.push_back(int64_t(d.size()));
  cpu::EinsumEquation equation;
  ASSERT_EQ(cpu::parseEinsumEquation(c.equation, ranks, equation), "");
  std::vector<int64_t> outDims;
  ASSERT_EQ(cpu::einsumOutputDims(equation, c.dims, outDims), "");
  std::vector<Bytes> inputs;
  std::vector<std::vector<T>> typed;
  for (size_t i = 0; i < c.dims.size(); ++i) {
    inputs.push_back(randomElements(type, countOf(c.dims[i]), uint32_t(20 + i)));
    typed.emplace_back(inputs.back().size() / sizeof(T));
    std::memcpy(typed.back().data(), inputs.back().data(), inputs.back().size());
  }
  std::vector<const T*> pointers;
  for (const auto& t : typed) pointers.push_back(t.data());
  std::vector<T> want(size_t(countOf(outDims)));
  cpu::einsum<T>(equation, pointers, c.dims, want.data());
  Bytes wantBytes(want.size() * sizeof(T));
  std::memcpy(wantBytes.data(), want.data(), wantBytes.size());

  EinsumContraction contraction;
  ASSERT_EQ(planEinsum(equation, c.dims, contraction), "");
  EXPECT_EQ(contraction.outputCount, countOf(outDims));
  std::vector<std::unique_ptr<DeviceBuffer>> buffers;
  std::vector<const void*> operands;
  for (const Bytes& b : inputs) {
    buffers.push_back(std::make_unique<DeviceBuffer>(b));
    operands.push_back(buffers.back()->get());
  }
  DeviceBuffer out(wantBytes.size());
  EXPECT_TRUE(launchOverPoison(out, [&] { return einsum(operands.data(), out.get(), contraction, type, nullptr); }));
  if (type == ElementType::kInt64)
    EXPECT_TRUE(sameElements(out.download(), wantBytes, sizeof(T)));
  else
    EXPECT_TRUE(closeValues(valuesOf(out.download(), type), valuesOf(wantBytes, type),
                            type == ElementType::kFloat16 ? 3e-3 : toleranceFor(type)));
}

TEST(EinsumKernel, MatchesTheCpu) {
  KILN_REQUIRE_GPU();
  for (const EinsumCase& c : kCases) {
    runCase<float>(c, ElementType::kFloat32);
    runCase<double>(c, ElementType::kFloat64);
    runCase<kiln::kernels::Float16>(c, ElementType::kFloat16);
    runCase<int64_t>(c, ElementType::kInt64);
  }
}

TEST(EinsumKernel, PlansRefuseWhatTheKernelCannotTake) {
  cpu::EinsumEquation equation;
  ASSERT_EQ(cpu::parseEinsumEquation("i,i,i,i,i", {1, 1, 1, 1, 1}, equation), "");
  EinsumContraction contraction;
  EXPECT_NE(planEinsum(equation, {{2}, {2}, {2}, {2}, {2}}, contraction), "");
  ASSERT_EQ(cpu::parseEinsumEquation("ij,ij->ij", {2, 2}, equation), "");
  EXPECT_NE(planEinsum(equation, {{2, 3}, {2, 4}}, contraction), "");
  EXPECT_EQ(einsum(nullptr, nullptr, EinsumContraction{}, ElementType::kFloat32, nullptr), cudaErrorInvalidValue);
}

}  // namespace
