// Einsum evaluation: every operand is a strided view with one label per dim. Diagonals are views
// with summed strides; labels used by one operand only are summed out first; the operands are then
// contracted left to right, each step one batched matrix product over [batch, kept, contracted].
#include <kernels/cpu/common/parallel.h>
#include <kernels/cpu/gemm/einsum.h>
#include <kernels/cpu/gemm/gemm.h>
#include <kernels/cpu/reduce/compute_type.h>

#include <algorithm>
#include <memory>
#include <set>

namespace kiln::kernels {
namespace {

template <class T>
struct Operand {
  std::shared_ptr<std::vector<T>> storage;  // set when the operand owns its (contiguous) data
  const T* data = nullptr;
  std::vector<int> labels;
  std::vector<int64_t> dims, strides;

  int find(int label) const {
    auto it = std::find(labels.begin(), labels.end(), label);
    return it == labels.end() ? -1 : int(it - labels.begin());
  }
  bool has(int label) const { return find(label) >= 0; }
  int64_t size(int label) const { return dims[find(label)]; }
};

std::vector<int64_t> contiguousStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) strides[d - 1] = strides[d] * dims[d];
  return strides;
}

int64_t product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

template <class T>
Operand<T> contiguousOperand(std::vector<int> labels, std::vector<int64_t> dims) {
  Operand<T> op;
  op.storage = std::make_shared<std::vector<T>>(size_t(product(dims)));
  op.data = op.storage->data();
  op.labels = std::move(labels);
  op.strides = contiguousStrides(dims);
  op.dims = std::move(dims);
  return op;
}

// A label repeated within one operand walks the diagonal: one dim whose stride is the sum.
template <class T>
Operand<T> diagonalView(const T* data, const std::vector<int>& labels, const std::vector<int64_t>& dims) {
  Operand<T> op;
  op.data = data;
  const auto strides = contiguousStrides(dims);
  for (size_t d = 0; d < labels.size(); ++d) {
    if (int at = op.find(labels[d]); at >= 0) {
      op.strides[at] += strides[d];
      continue;
    }
    op.labels.push_back(labels[d]);
    op.dims.push_back(dims[d]);
    op.strides.push_back(strides[d]);
  }
  return op;
}

// The dims and strides of x with its labels in `order` (a permutation of them).
template <class T>
void permutedView(const Operand<T>& x, const std::vector<int>& order, std::vector<int64_t>& dims,
                  std::vector<int64_t>& strides) {
  dims.clear();
  strides.clear();
  for (int label : order) {
    dims.push_back(x.dims[x.find(label)]);
    strides.push_back(x.strides[x.find(label)]);
  }
}

// Whether x's memory is already row-major with its labels in `order`.
template <class T>
bool inPlaceOrder(const Operand<T>& x, const std::vector<int>& order) {
  std::vector<int64_t> dims, strides;
  permutedView(x, order, dims, strides);
  const auto wanted = contiguousStrides(dims);
  for (size_t d = 0; d < dims.size(); ++d)
    if (dims[d] != 1 && strides[d] != wanted[d]) return false;
  return true;
}

// The operand with its dims in `order`, row-major; copied only when its memory is not already so.
template <class T>
Operand<T> arranged(const Operand<T>& x, const std::vector<int>& order) {
  std::vector<int64_t> dims, strides;
  permutedView(x, order, dims, strides);
  if (inPlaceOrder(x, order)) return Operand<T>{x.storage, x.data, order, dims, contiguousStrides(dims)};
  Operand<T> out = contiguousOperand<T>(order, dims);
  gatherStrided(x.data, dims, strides, out.storage->data());
  return out;
}

template <class T>
Operand<T> sumOut(const Operand<T>& x, const std::set<int>& summed) {
  std::vector<int> kept, order;
  std::vector<int64_t> keptDims;
  for (size_t d = 0; d < x.labels.size(); ++d)
    if (!summed.count(x.labels[d])) {
      kept.push_back(x.labels[d]);
      keptDims.push_back(x.dims[d]);
    }
  order = kept;
  for (int label : x.labels)
    if (summed.count(label)) order.push_back(label);
  const Operand<T> src = arranged(x, order);
  Operand<T> out = contiguousOperand<T>(kept, keptDims);
  const int64_t rows = product(keptDims), rowLen = rows == 0 ? 0 : product(src.dims) / rows;
  T* dst = out.storage->data();
  parallelFor(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, rowLen)), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      ComputeType<T> acc(0);
      for (int64_t i = 0; i < rowLen; ++i) acc += widenValue(src.data[r * rowLen + i]);
      dst[r] = narrowValue<T>(acc);
    }
  });
  return out;
}

template <class T>
Operand<T> dropUnitDim(Operand<T> x, int label) {
  const int at = x.find(label);
  x.labels.erase(x.labels.begin() + at);
  x.dims.erase(x.dims.begin() + at);
  x.strides.erase(x.strides.begin() + at);
  return x;
}

// Contracts x and y; labels in `later` (the output and the operands still to come) are kept.
template <class T>
Operand<T> contract(Operand<T> x, Operand<T> y, const std::set<int>& later) {
  // A label summed away here whose size is 1 on one side is just a sum on the other.
  std::set<int> sumX, sumY;
  for (int label : std::vector<int>(x.labels)) {
    if (later.count(label)) continue;
    if (!y.has(label)) {
      sumX.insert(label);
    } else if (x.size(label) != y.size(label)) {
      if (x.size(label) == 1) {
        x = dropUnitDim(x, label);
        sumY.insert(label);
      } else {
        y = dropUnitDim(y, label);
        sumX.insert(label);
      }
    }
  }
  for (int label : y.labels)
    if (!later.count(label) && !x.has(label)) sumY.insert(label);
  if (!sumX.empty()) x = sumOut(x, sumX);
  if (!sumY.empty()) y = sumOut(y, sumY);

  std::vector<int> batch, xOnly, summed, yOnly;
  for (int label : x.labels) (y.has(label) ? (later.count(label) ? batch : summed) : xOnly).push_back(label);
  for (int label : y.labels)
    if (!x.has(label)) yOnly.push_back(label);
  auto concat = [](std::vector<int> a, const std::vector<int>& b, const std::vector<int>& c) {
    a.insert(a.end(), b.begin(), b.end());
    a.insert(a.end(), c.begin(), c.end());
    return a;
  };
  // Prefer a transposed operand over a copy when its memory already has that order.
  const bool transA = !inPlaceOrder(x, concat(batch, xOnly, summed)) && inPlaceOrder(x, concat(batch, summed, xOnly));
  const bool transB = !inPlaceOrder(y, concat(batch, summed, yOnly)) && inPlaceOrder(y, concat(batch, yOnly, summed));
  const Operand<T> a = arranged(x, transA ? concat(batch, summed, xOnly) : concat(batch, xOnly, summed));
  const Operand<T> b = arranged(y, transB ? concat(batch, yOnly, summed) : concat(batch, summed, yOnly));

  int64_t M = 1, N = 1, K = 1;
  for (int label : xOnly) M *= x.size(label);
  for (int label : yOnly) N *= y.size(label);
  for (int label : summed) K *= x.size(label);
  std::vector<int64_t> batchDims;
  for (int label : batch) batchDims.push_back(std::max(x.size(label), y.size(label)));
  const int64_t batchCount = product(batchDims);
  std::vector<int64_t> aOffsets(static_cast<size_t>(batchCount)), bOffsets(static_cast<size_t>(batchCount));
  for (int64_t i = 0; i < batchCount; ++i) {
    int64_t rest = i, aOff = 0, bOff = 0, aStride = M * K, bStride = K * N;
    for (size_t d = batch.size(); d-- > 0;) {
      const int64_t index = rest % batchDims[d];
      rest /= batchDims[d];
      const int64_t xs = x.size(batch[d]), ys = y.size(batch[d]);
      if (xs != 1) aOff += index * aStride;
      if (ys != 1) bOff += index * bStride;
      aStride *= xs;
      bStride *= ys;
    }
    aOffsets[i] = aOff;
    bOffsets[i] = bOff;
  }
  std::vector<int64_t> outDims = batchDims;
  for (int label : xOnly) outDims.push_back(x.size(label));
  for (int label : yOnly) outDims.push_back(y.size(label));
  Operand<T> out = contiguousOperand<T>(concat(batch, xOnly, yOnly), outDims);
  batchedMatMul<T>(a.data, b.data, out.storage->data(), batchCount, aOffsets.data(), bOffsets.data(), M, N, K,
                   transA, transB);
  return out;
}

}  // namespace

template <class T>
void gatherStrided(const T* src, const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, T* dst) {
  if (dims.empty()) {
    *dst = *src;
    return;
  }
  const int64_t inner = dims.back(), innerStride = strides.back();
  const int64_t rows = inner == 0 ? 0 : product(dims) / inner;
  parallelFor(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, inner)), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      int64_t rest = r, offset = 0;
      for (size_t d = dims.size() - 1; d-- > 0;) {
        offset += (rest % dims[d]) * strides[d];
        rest /= dims[d];
      }
      const T* s = src + offset;
      T* o = dst + r * inner;
      if (innerStride == 1)
        std::copy(s, s + inner, o);
      else
        for (int64_t i = 0; i < inner; ++i) o[i] = s[i * innerStride];
    }
  });
}

template <class T>
void einsum(const EinsumEquation& equation, const std::vector<const T*>& inputs,
            const std::vector<std::vector<int64_t>>& inputDims, T* out) {
  const size_t count = inputs.size();
  std::vector<Operand<T>> ops;
  for (size_t i = 0; i < count; ++i) ops.push_back(diagonalView(inputs[i], equation.inputLabels[i], inputDims[i]));
  const std::set<int> output(equation.outputLabels.begin(), equation.outputLabels.end());

  // Labels only one operand uses (and the output does not) are summed out before any product.
  for (size_t i = 0; i < count; ++i) {
    std::set<int> own;
    for (int label : ops[i].labels) {
      bool shared = output.count(label) > 0;
      for (size_t j = 0; j < count && !shared; ++j) shared = j != i && ops[j].has(label);
      if (!shared) own.insert(label);
    }
    if (!own.empty()) ops[i] = sumOut(ops[i], own);
  }
  Operand<T> result = ops[0];
  for (size_t i = 1; i < count; ++i) {
    std::set<int> later = output;
    for (size_t j = i + 1; j < count; ++j) later.insert(ops[j].labels.begin(), ops[j].labels.end());
    result = contract(result, ops[i], later);
  }
  const Operand<T> final = arranged(result, equation.outputLabels);
  gatherStrided(final.data, final.dims, final.strides, out);
}

#define KILN_INSTANTIATE_EINSUM(T)                                                                        \
  template void einsum<T>(const EinsumEquation&, const std::vector<const T*>&,                            \
                          const std::vector<std::vector<int64_t>>&, T*);                                  \
  template void gatherStrided<T>(const T*, const std::vector<int64_t>&, const std::vector<int64_t>&, T*);
KILN_INSTANTIATE_EINSUM(float)
KILN_INSTANTIATE_EINSUM(double)
KILN_INSTANTIATE_EINSUM(Float16)
KILN_INSTANTIATE_EINSUM(BFloat16)
KILN_INSTANTIATE_EINSUM(int32_t)
KILN_INSTANTIATE_EINSUM(int64_t)
KILN_INSTANTIATE_EINSUM(uint32_t)
KILN_INSTANTIATE_EINSUM(uint64_t)
#undef KILN_INSTANTIATE_EINSUM

}  // namespace kiln::kernels
