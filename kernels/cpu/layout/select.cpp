#include "select.h"

#include "element_types.h"

#include <algorithm>
#include <numeric>

namespace kiln::kernels {
namespace {

// The value as something with the usual comparisons (reduced-precision floats compare as float).
template <class T>
auto comparable(const T& v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) return toFloat(v);
  else return v;
}

}  // namespace

template <class T>
std::vector<int64_t> nonZeroCoordinates(const T* src, const std::vector<int64_t>& dims) {
  size_t rank = dims.size();
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < total; ++i)
    if (comparable(src[i]) != comparable(T{})) hits.push_back(i);
  int64_t count = int64_t(hits.size());
  std::vector<int64_t> coordinates(rank * size_t(count));
  for (int64_t h = 0; h < count; ++h) {
    int64_t rest = hits[h];
    for (size_t d = rank; d-- > 0;) {
      coordinates[d * size_t(count) + size_t(h)] = rest % dims[d];
      rest /= dims[d];
    }
  }
  return coordinates;
}

template <class T>
UniqueSlices uniqueSlices(const T* src, int64_t outer, int64_t axisDim, int64_t inner, bool sorted) {
  auto element = [&](int64_t slice, int64_t o, int64_t i) { return comparable(src[(o * axisDim + slice) * inner + i]); };
  // Returns <0, 0, >0 like a three-way compare of slices a and b.
  auto compare = [&](int64_t a, int64_t b) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        auto x = element(a, o, i), y = element(b, o, i);
        if (x < y) return -1;
        if (y < x) return 1;
      }
    return 0;
  };
  std::vector<int64_t> order(static_cast<size_t>(axisDim));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return compare(a, b) < 0; });

  // Groups of equal slices, each represented by its first occurrence (stable sort keeps it first).
  std::vector<int64_t> groupOf(static_cast<size_t>(axisDim));
  std::vector<int64_t> groupFirst, groupCount;
  for (size_t k = 0; k < order.size(); ++k) {
    if (k == 0 || compare(order[k - 1], order[k]) != 0) {
      groupFirst.push_back(order[k]);
      groupCount.push_back(0);
    }
    groupOf[order[k]] = int64_t(groupFirst.size()) - 1;
    ++groupCount.back();
  }
  std::vector<int64_t> groupOrder(groupFirst.size());
  std::iota(groupOrder.begin(), groupOrder.end(), 0);
  if (!sorted)
    std::sort(groupOrder.begin(), groupOrder.end(), [&](int64_t a, int64_t b) { return groupFirst[a] < groupFirst[b]; });
  std::vector<int64_t> position(groupFirst.size());
  UniqueSlices result;
  for (size_t p = 0; p < groupOrder.size(); ++p) {
    position[groupOrder[p]] = int64_t(p);
    result.firstOccurrence.push_back(groupFirst[groupOrder[p]]);
    result.counts.push_back(groupCount[groupOrder[p]]);
  }
  for (int64_t s = 0; s < axisDim; ++s) result.inverse.push_back(position[groupOf[s]]);
  return result;
}

#define KILN_INSTANTIATE(T)                                                                   \
  template std::vector<int64_t> nonZeroCoordinates<T>(const T*, const std::vector<int64_t>&); \
  template UniqueSlices uniqueSlices<T>(const T*, int64_t, int64_t, int64_t, bool);
KILN_FOR_EACH_NUMERIC_TYPE(KILN_INSTANTIATE)
#undef KILN_INSTANTIATE
template UniqueSlices uniqueSlices<std::string>(const std::string*, int64_t, int64_t, int64_t, bool);

}  // namespace kiln::kernels
