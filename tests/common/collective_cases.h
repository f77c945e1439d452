#pragma once
// The collective layers' test cases and their reference results, shared by the CPU ranks' tests
// (tests/runtime/collective_test.cpp) and the CUDA ones (tests/gpu/collective_*_test.cpp): a
// one-layer network per case, random non-zero inputs per rank, and every rank's expected output
// worked out from all ranks' inputs.
#include <kiln/host_tensor.h>
#include <kiln/network.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace kiln::test {

using CollectiveAttrs = std::map<std::string, Attribute>;

// x -> kiln.<op> -> y, with `world_size` and the other attributes given.
Network collectiveNetwork(const std::string& op, DataType type, std::vector<int64_t> dims, int64_t worldSize,
                          CollectiveAttrs attrs = {});

// Random non-zero inputs per rank: floats in [0.5, 1.5) (products stay tame) with random signs,
// integers in [-9, 9] without zero.
HostTensor collectiveRankInput(DataType type, const std::vector<int64_t>& dims, uint32_t seed);

// Values as doubles (fp16 / bf16 widened exactly).
std::vector<double> collectiveValues(const HostTensor& t);

struct CollectiveCase {
  std::string op;
  std::vector<int64_t> dims;
  CollectiveAttrs attrs;
  std::string describe(DataType type, int ranks) const;
};

// Every layer with each attribute that matters, on odd sizes and inner axes, for `ranks` ranks.
std::vector<CollectiveCase> collectiveCases(int ranks);

// Every rank's expected output for `c` given all ranks' inputs (as doubles).
std::vector<std::vector<double>> expectedCollectiveOutputs(const CollectiveCase& c,
                                                           const std::vector<std::vector<double>>& x);

// Whether `got` equals `want` within the storage type's rounding of the result (gtest failures).
void expectCollectiveClose(const std::vector<double>& got, const std::vector<double>& want, DataType type,
                           const std::string& what);

// Builds case `c` for `ranks` ranks with `build`, runs it with `runRanks` (every rank's input in,
// every rank's y out; inputs seeded from `seed`) and checks each rank's y against the reference.
using CollectivePlanBuilder = std::function<std::vector<uint8_t>(const Network&, DataType)>;
using CollectiveRanksRunner =
    std::function<std::vector<HostTensor>(const std::vector<uint8_t>& plan, const std::vector<HostTensor>& inputs)>;
void checkCollectiveCase(const CollectiveCase& c, DataType type, int ranks, uint32_t seed,
                         const CollectivePlanBuilder& build, const CollectiveRanksRunner& runRanks);

}  // namespace kiln::test
