#pragma once
// Seeded random tensors for the inputs a user does not give (`kiln run/compare/profile`, Studio's
// accuracy run). The same seed, name and shape give the same values on every platform (SplitMix64,
// not the std distributions). Values are never zero, so no result hides behind a multiply by 0:
// floats in [-1, 1) kept at least 1/64 from 0, integers in [1, 4] (valid token ids, divisors and
// indices into axes of five or more), booleans mixed, strings "kiln<k>".
#include <kiln/host_tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

// A tensor of `dtype` and `dims` filled from `seed`; throws kInvalidArgument for kUndefined.
HostTensor randomTensor(DataType dtype, std::vector<int64_t> dims, uint64_t seed);

// A per-tensor seed, so inputs drawn with one user seed differ from each other and do not change
// when other inputs are added.
uint64_t seedForTensor(uint64_t seed, const std::string& tensorName);

}  // namespace kiln
