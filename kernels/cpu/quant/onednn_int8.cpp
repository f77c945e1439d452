#include "onednn_int8.h"

#include "../common/onednn_support.h"
#include "../common/parallel.h"

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace kiln::kernels {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using onednn::cpuEngine;

// How run() splits `batch` products: one of batch x m rows when every A follows the last and all
// share one B (a linear layer's weights), else one per entry.
struct Products {
  int64_t count = 1, rows = 1;
  bool oneB = true;
};

Products productsOf(int64_t batch, const int64_t* aOffsets, const int64_t* bOffsets, int64_t m, int64_t k) {
  bool stackedA = true, oneB = true;
  for (int64_t i = 0; i < batch; ++i) {
    stackedA = stackedA && aOffsets[i] == aOffsets[0] + i * m * k;
    oneB = oneB && bOffsets[i] == bOffsets[0];
  }
  return stackedA && oneB ? Products{1, batch * m, true} : Products{batch, m, oneB};
}

// Sums of B's columns, the zero point's share of each result: (a - z) B = a B - z colsum(B).
void columnSums(const int8_t* b, int64_t k, int64_t n, int32_t* sums) {
  for (int64_t j = 0; j < n; ++j) sums[j] = 0;
  for (int64_t r = 0; r < k; ++r)
    for (int64_t j = 0; j < n; ++j) sums[j] += b[r * n + j];
}

}  // namespace

bool oneDnnInt8Exact() {
  static const bool exact = [] {
    const auto isa = unsigned(dnnl::get_effective_cpu_isa()), vnni = unsigned(dnnl::cpu_isa::avx512_core_vnni);
    return (isa & vnni) == vnni;  // the ISA values are bit sets: later ones include VNNI
  }();
  return exact;
}

bool int8SumsFitInt32(int64_t length) { return length >= 0 && length <= INT32_MAX / (255 * 128); }

struct OneDnnInt8MatMul::Prepared {
  int64_t rows, k, n;
  Int8Source source;
  bool packB;
  bool ok = false;
  memory::desc a, plainB, y;
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul matmul;

  Prepared(int64_t rows_, int64_t k_, int64_t n_, Int8Source source_, bool packB_)
      : rows(rows_), k(k_), n(n_), source(source_), packB(packB_) {
    if (rows <= 0 || k <= 0 || n <= 0 || rows * k > INT_MAX || k * n > INT_MAX || rows * n > INT_MAX) return;
    try {
      a = memory::desc({rows, k}, source == Int8Source::kUnsigned ? memory::data_type::u8 : memory::data_type::s8,
                       Tag::ab);
      plainB = memory::desc({k, n}, memory::data_type::s8, Tag::ab);
      y = memory::desc({rows, n}, memory::data_type::s32, Tag::ab);
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      const memory::desc b = packB ? memory::desc({k, n}, memory::data_type::s8, Tag::any) : plainB;
      pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, y), attr, cpuEngine());
      // oneDNN's reference loops are slower than the BLAS path this one replaces.
      ok = std::string(pd.impl_info_str()).rfind("ref", 0) != 0;
    } catch (const dnnl::error&) {
    }
  }
};

OneDnnInt8MatMul::OneDnnInt8MatMul(bool weightsAreConstant)
    : weightsAreConstant_(weightsAreConstant), packedWeights_(std::make_unique<onednn::PackedWeights>()) {}
OneDnnInt8MatMul::~OneDnnInt8MatMul() = default;

OneDnnInt8MatMul::Prepared* OneDnnInt8MatMul::prepared(int64_t rows, int64_t k, int64_t n, Int8Source source,
                                                       bool packB) {
  onednn::matchThreadCount();  // before planning: oneDNN blocks its work for the team size
  Prepared& p = prepared_.findOrMake(
      [&](const Prepared& q) {
        return q.rows == rows && q.k == k && q.n == n && q.source == source && q.packB == packB;
      },
      [&] {
        auto q = std::make_unique<Prepared>(rows, k, n, source, packB);
        if (q->ok) q->matmul = dnnl::matmul(q->pd);
        return q;
      });
  return p.ok ? &p : nullptr;
}

std::optional<uint64_t> OneDnnInt8MatMul::prepare(int64_t batch, const int64_t* aOffsets, const int64_t* bOffsets,
                                                  int64_t m, int64_t k, int64_t n, Int8Source source) {
  if (batch <= 0 || !oneDnnInt8Exact() || !int8SumsFitInt32(k)) return std::nullopt;
  const Products products = productsOf(batch, aOffsets, bOffsets, m, k);
  const Prepared* p = prepared(products.rows, k, n, source, weightsAreConstant_ && products.oneB);
  if (!p) return std::nullopt;
  return p->pd.scratchpad_desc().get_size();
}

std::optional<uint64_t> OneDnnInt8MatMul::workspaceBytes(int64_t batch, const int64_t* aOffsets,
                                                         const int64_t* bOffsets, int64_t m, int64_t k, int64_t n,
                                                         Int8Source source) const {
  if (batch <= 0 || !oneDnnInt8Exact()) return std::nullopt;
  onednn::matchThreadCount();  // scratchpads are sized per thread
  const Products products = productsOf(batch, aOffsets, bOffsets, m, k);
  const Prepared p(products.rows, k, n, source, weightsAreConstant_ && products.oneB);
  if (!p.ok) return std::nullopt;
  return p.pd.scratchpad_desc().get_size();
}

const std::vector<int32_t>& OneDnnInt8MatMul::constantColumnSums(const int8_t* b, int64_t k, int64_t n) {
  std::lock_guard lock(columnSumsMutex_);
  if (columnSums_.empty()) {
    columnSums_.resize(size_t(n));
    columnSums(b, k, n, columnSums_.data());
  }
  return columnSums_;
}

void OneDnnInt8MatMul::run(int64_t batch, const int64_t* aOffsets, const int64_t* bOffsets, int64_t m, int64_t k,
                           int64_t n, const void* a, Int8Source source, int32_t zero, const int8_t* b, int32_t* acc,
                           const std::function<void*(uint64_t)>& workspace) {
  if (!prepare(batch, aOffsets, bOffsets, m, k, n, source))
    throw std::invalid_argument("oneDNN has no exact int8 matmul for this shape");
  const Products products = productsOf(batch, aOffsets, bOffsets, m, k);
  const bool packB = weightsAreConstant_ && products.oneB;
  Prepared& p = *prepared(products.rows, k, n, source, packB);
  dnnl::stream stream(cpuEngine());
  const memory scratchpad = onednn::wrap(p.pd.scratchpad_desc(), workspace(p.pd.scratchpad_desc().get_size()));
  const size_t elementBytes = 1;  // int8 and uint8 alike
  std::vector<int32_t> sums;
  for (int64_t i = 0; i < products.count; ++i) {
    const int8_t* bi = b + bOffsets[i];
    memory weights = onednn::wrap(p.plainB, bi);
    if (packB && p.pd.weights_desc() != p.plainB) weights = packedWeights_->get(weights, p.pd.weights_desc());
    int32_t* out = acc + i * products.rows * n;
    p.matmul.execute(stream,
                     {{DNNL_ARG_SRC, onednn::wrap(p.a, static_cast<const char*>(a) + aOffsets[i] * elementBytes)},
                      {DNNL_ARG_WEIGHTS, weights},
                      {DNNL_ARG_DST, onednn::wrap(p.y, out)},
                      {DNNL_ARG_SCRATCHPAD, scratchpad}});
    stream.wait();
    if (zero == 0) continue;
    const int32_t* colsum = packB ? constantColumnSums(bi, k, n).data() : nullptr;
    if (!colsum) {
      sums.resize(size_t(n));
      columnSums(bi, k, n, sums.data());
      colsum = sums.data();
    }
    // In uint32: the wrapped difference is the exact sum, which int8SumsFitInt32 keeps in range.
    parallelFor(products.rows, std::max<int64_t>(1, 16384 / n), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r)
        for (int64_t j = 0; j < n; ++j)
          out[r * n + j] = int32_t(uint32_t(out[r * n + j]) - uint32_t(zero) * uint32_t(colsum[j]));
    });
  }
}

}  // namespace kiln::kernels
