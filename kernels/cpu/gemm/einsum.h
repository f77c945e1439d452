#pragma once
// Einsum: the equation parser (shared with shape inference) and an evaluator that takes diagonals,
// sums out private labels, and contracts operands pairwise with batched matrix products.
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::kernels {

// Letters are labels 0..51 ('a'..'z', 'A'..'Z'); the dims an ellipsis stands for get labels from
// kFirstEllipsisLabel on, right-aligned across operands (NumPy broadcasting).
constexpr int kFirstEllipsisLabel = 52;

struct EinsumEquation {
  std::vector<std::vector<int>> inputLabels;  // per operand, one label per dim
  std::vector<int> outputLabels;              // explicit "->..." or NumPy's implicit output
};

// Parses `equation` for operands of the given ranks. Returns an empty string, or what is wrong.
std::string parseEinsumEquation(const std::string& equation, const std::vector<int64_t>& ranks, EinsumEquation& out);

// Size of every label (a size of 1 broadcasts against any other) and the output dims. Returns an
// empty string, or what is wrong.
std::string einsumOutputDims(const EinsumEquation& equation, const std::vector<std::vector<int64_t>>& inputDims,
                             std::vector<int64_t>& outputDims);

// Evaluates a parsed equation whose dims einsumOutputDims accepted; out has the output dims.
// T: float, double, Float16, BFloat16, int32, int64, uint32, uint64.
template <class T>
void einsum(const EinsumEquation& equation, const std::vector<const T*>& inputs,
            const std::vector<std::vector<int64_t>>& inputDims, T* out);

// Copies the strided view (dims, element strides) of src into dst in row-major order.
template <class T>
void gatherStrided(const T* src, const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, T* dst);

}  // namespace kiln::kernels
